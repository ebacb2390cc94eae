"""write_table never leaves a partial file or a file without its filters: real process kills and a
real file size limit (EFBIG from RLIMIT_FSIZE, as a full disk) in a child process.

After every fault the directory holds nothing but what was there before (the O_TMPFILE output
has no name until it is published). The KMS failing at each of its calls is tested in
tests/unit/test_parquet_write.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.parquet_files import TESTING_KEY_LIST, read_encrypted
from support.paths import REPO_DIR

from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess, ParquetBloomReader

CHILD = textwrap.dedent("""
    import os, resource, signal, sys
    import pyarrow.parquet.encryption as pe
    from secure_bloom.fileio import AtomicOutput
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import write as write_module
    from support.parquet_files import sample_table

    dst, stage, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if limit:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    def die_at(name):
        if name == stage:
            os.kill(os.getpid(), signal.SIGKILL)

    real = {name: getattr(write_module.ParquetWriter, name) for name in ("_write_row_group", "_finish", "_publish")}
    real_truncate, real_publish = AtomicOutput.truncate, AtomicOutput.publish

    def wrap(name):
        def run(self, *args):
            die_at("before" + name)
            result = real[name](self, *args)
            die_at("after" + name)
            return result
        return run

    for name in real:
        setattr(write_module.ParquetWriter, name, wrap(name))

    def truncate(self, size):
        real_truncate(self, size)
        die_at("truncated")

    def publish(self, target, **kwargs):
        die_at("before_link")
        real_publish(self, target, **kwargs)
        die_at("after_link")

    AtomicOutput.truncate, AtomicOutput.publish = truncate, publish
    config = pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["ssn"], "kc2": ["ts"]},
                                        internal_key_material=os.environ.get("EXTERNAL") != "1")
    write_module.write_table(sample_table(20_000), dst, encryption=config, kms=KeyListKms(os.environ["KEYS"]),
                             bloom_filter_options={"ssn": True, "id": True}, row_group_size=5000)
    print("finished")
""")

STAGES = ["before_write_row_group", "after_write_row_group", "before_finish", "truncated", "before_publish",
          "before_link"]


def _run(dst: Path, stage: str, limit: int = 0, external: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KEYS": TESTING_KEY_LIST, "EXTERNAL": "1" if external else "0",
           "PYTHONPATH": os.pathsep.join([str(REPO_DIR), str(REPO_DIR / "tests")])}
    return subprocess.run([sys.executable, "-c", CHILD, str(dst), stage, str(limit)], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.parametrize("external", [False, True], ids=["internal-key-material", "external-key-material"])
@pytest.mark.parametrize("stage", STAGES)
def test_sigkill_at_every_stage_leaves_nothing(tmp_path: Path, stage: str, external: bool) -> None:
    result = _run(tmp_path / "out.parquet", stage, external=external)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert list(tmp_path.iterdir()) == []


def test_sigkill_after_publishing_leaves_a_complete_file(tmp_path: Path) -> None:
    result = _run(tmp_path / "out.parquet", "after_link")
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]
    assert read_encrypted(tmp_path / "out.parquet").num_rows == 20_000
    with ParquetBloomReader(tmp_path / "out.parquet", KeyAccess(kms=KeyListKms(TESTING_KEY_LIST))) as reader:
        assert all(bf is not None for _, bf in reader.iter_filters("ssn"))


@pytest.mark.parametrize("limit", [4096, 400_000, 900_000])
def test_file_size_limit_leaves_nothing(tmp_path: Path, limit: int) -> None:
    """EFBIG while pyarrow writes pages (small limits) or while the filters and footer are appended
    (a limit just under the final size): an error, and no file."""
    complete = _run(tmp_path / "probe.parquet", "none")
    assert complete.returncode == 0, complete.stderr
    size = (tmp_path / "probe.parquet").stat().st_size
    (tmp_path / "probe.parquet").unlink()
    folder = tmp_path / "limited"
    folder.mkdir()
    result = _run(folder / "out.parquet", "none", limit=min(limit, size - 16))
    assert result.returncode == 1 and "finished" not in result.stdout
    assert "File too large" in result.stderr or "EFBIG" in result.stderr or "error" in result.stderr.lower()
    assert list(folder.iterdir()) == []
