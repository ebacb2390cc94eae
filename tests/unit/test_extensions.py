"""A compiled extension that cannot be loaded is visible: one warning per process, both backends in
``--version`` (issue 24: a wheel built without a C compiler fell back silently)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from secure_bloom.extensions import ExtensionFallbackWarning, load_extension

# The interpreter finds none of the three extensions (None in sys.modules makes their import fail
# as an unbuilt module's does), then uses the backends twice and prints --version.
_WITHOUT_EXTENSIONS = """
import sys
sys.modules["secure_bloom.native_kernels"] = None
sys.modules["secure_bloom.native_thrift"] = None
sys.modules["secure_bloom.native_gcm"] = None
from secure_bloom.filter import SplitBlockBloomFilter
for _ in range(2):
    f = SplitBlockBloomFilter.for_ndv(100)
    f.insert([1, 2, 3], "INT64")
    assert SplitBlockBloomFilter.from_bytes(f.to_bytes()).might_contain(2, "INT64")
from secure_bloom.cli import main
main(["--version"])
"""


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-W", "default", "-c", _WITHOUT_EXTENSIONS], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env}, check=False)


def test_missing_extensions_warn_once_each_and_version_names_them() -> None:
    proc = _run({"SECURE_BLOOM_KERNEL": "auto", "SECURE_BLOOM_THRIFT": "auto", "SECURE_BLOOM_GCM": "auto"})
    assert proc.returncode == 0, proc.stderr
    warned = sorted((line for line in proc.stderr.splitlines() if "ExtensionFallbackWarning" in line),
                    key=lambda line: ("native_gcm" in line, "native_thrift" in line))
    assert len(warned) == 3, proc.stderr
    assert "secure_bloom.native_gcm is not built" in warned[2] and "cryptography's AES-GCM" in warned[2]
    assert "SECURE_BLOOM_GCM=cryptography" in warned[2]
    assert "; AES-GCM: cryptography fallback (secure_bloom.native_gcm is not built" in proc.stdout
    assert "secure_bloom.native_kernels is not built" in warned[0] and "the numpy kernels" in warned[0]
    assert "secure_bloom.native_thrift is not built" in warned[1] and "Python (thriftpy2)" in warned[1]
    assert "SECURE_BLOOM_KERNEL=numpy" in warned[0] and "SECURE_BLOOM_THRIFT=python" in warned[1]
    assert proc.stdout.startswith("secure-bloom ")
    assert "; kernel: numpy fallback (secure_bloom.native_kernels is not built" in proc.stdout
    assert "; thrift decoder: python fallback (secure_bloom.native_thrift is not built" in proc.stdout


def test_choosing_the_fallback_is_silent() -> None:
    proc = _run({"SECURE_BLOOM_KERNEL": "numpy", "SECURE_BLOOM_THRIFT": "python", "SECURE_BLOOM_GCM": "cryptography"})
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr
    assert "; kernel: numpy fallback (SECURE_BLOOM_KERNEL=numpy); " \
           "thrift decoder: python fallback (SECURE_BLOOM_THRIFT=python); " \
           "AES-GCM: cryptography fallback (SECURE_BLOOM_GCM=cryptography); " in proc.stdout


def test_load_extension_warns_with_its_category(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SB_TEST_SWITCH", "auto")
    with pytest.warns(ExtensionFallbackWarning, match=r"secure_bloom\.no_such_extension is not built .* "
                                                      r"using the twin, which is slower.*SB_TEST_SWITCH=twin"):
        module, why = load_extension("no_such_extension", "SB_TEST_SWITCH", "twin", fallback_text="the twin")
    assert module is None and why is not None and why.startswith("secure_bloom.no_such_extension is not built")


# The AES-GCM extension not built, or built but finding no libcrypto to load at run time (a path
# that does not exist in SECURE_BLOOM_LIBCRYPTO): the same reader prunes an encrypted file with
# cryptography's AES-GCM, with the same answer and bytes read as with the extension, and says once
# that it falls back.
_WITHOUT_PRUNE = """
import sys, json
if sys.argv[1] == "missing":
    sys.modules["secure_bloom.native_gcm"] = None
sys.path.insert(0, sys.argv[3])
import pyarrow as pa, pyarrow.compute as pc
from support.parquet_files import vector_kms, write_encrypted
from secure_bloom.parquet import KeyAccess, attach_bloom_filters
from secure_bloom.crypto import gcm
from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
from secure_bloom.parquet.read.prune import prune_files
keys = KeyAccess(kms=vector_kms())
table = pa.table({"key": [f"k{i}" for i in range(400)], "n": list(range(400))})
src, dst = sys.argv[2] + "/src.parquet", sys.argv[2] + "/dst.parquet"
write_encrypted(src, table, row_group_size=100, column_keys={"kc1": ["key"], "kc2": ["n"]})
attach_bloom_filters(src, dst, ["key"], keys)
out = []
for value in ("k5", "k50x"):  # k50x: inside every row group's min/max, absent
    tree = predicate_tree(to_expression(pc.field("key") == value), table.schema)
    (result,) = prune_files([dst], tree, keys=keys, schema=table.schema, progress=False)
    out.append([list(result.row_groups), list(result.pruned_by_bloom), result.metadata_bytes_read,
                result.metadata_requests])
print(json.dumps({"native": gcm.NATIVE_GCM, "results": out}))
"""


def test_without_the_gcm_extension_the_same_reader_prunes_with_cryptography(tmp_path: Path) -> None:
    from support.paths import TESTS_DIR

    runs = {}
    for mode in ("missing", "no_libcrypto", "built"):
        folder = tmp_path / mode
        folder.mkdir()
        env = {**os.environ, "SECURE_BLOOM_GCM": "auto"}
        if mode == "no_libcrypto":
            env["SECURE_BLOOM_LIBCRYPTO"] = str(folder / "nowhere" / "libcrypto.so.3")
        proc = subprocess.run([sys.executable, "-W", "default", "-c", _WITHOUT_PRUNE, mode, str(folder),
                               str(TESTS_DIR)], capture_output=True, text=True, timeout=300, cwd=folder,
                              env=env, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs[mode] = (json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr)
    built, quiet = runs["built"]
    assert built["native"] is True and "ExtensionFallbackWarning" not in quiet
    for mode, why in (("missing", "import of secure_bloom.native_gcm halted"),
                      ("no_libcrypto", "cannot load OpenSSL's libcrypto")):
        python, warned = runs[mode]
        assert python["native"] is False
        assert python["results"] == built["results"]
        assert python["results"][0][0] and not python["results"][1][0]  # k5 kept, the absent key pruned
        assert python["results"][1][1]  # ... by its Bloom filters
        lines = [line for line in warned.splitlines() if "ExtensionFallbackWarning" in line]
        assert len(lines) == 1 and "secure_bloom.native_gcm is not built" in lines[0], warned
        assert why in lines[0], lines[0]
        assert "cryptography's AES-GCM" in lines[0] and "SECURE_BLOOM_GCM=cryptography" in lines[0]
