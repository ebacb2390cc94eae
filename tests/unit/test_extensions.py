"""A compiled extension that cannot be loaded is visible: one warning per process, both backends in
``--version`` (issue 24: a wheel built without a C compiler fell back silently)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from secure_bloom.extensions import ExtensionFallbackWarning, load_extension

# The interpreter finds neither extension (None in sys.modules makes their import fail as an
# unbuilt module's does), then uses both backends twice and prints --version.
_WITHOUT_EXTENSIONS = """
import sys
sys.modules["secure_bloom.native_kernels"] = None
sys.modules["secure_bloom.native_thrift"] = None
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


def test_missing_extensions_warn_once_each_and_version_names_both() -> None:
    proc = _run({"SECURE_BLOOM_KERNEL": "auto", "SECURE_BLOOM_THRIFT": "auto"})
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "ExtensionFallbackWarning" in line]
    assert len(warned) == 2, proc.stderr
    assert "secure_bloom.native_kernels is not built" in warned[0] and "the numpy kernels" in warned[0]
    assert "secure_bloom.native_thrift is not built" in warned[1] and "Python (thriftpy2)" in warned[1]
    assert "SECURE_BLOOM_KERNEL=numpy" in warned[0] and "SECURE_BLOOM_THRIFT=python" in warned[1]
    assert proc.stdout.startswith("secure-bloom ")
    assert "(kernel: numpy fallback (secure_bloom.native_kernels is not built" in proc.stdout
    assert "; thrift decoder: python fallback (secure_bloom.native_thrift is not built" in proc.stdout


def test_choosing_the_fallback_is_silent() -> None:
    proc = _run({"SECURE_BLOOM_KERNEL": "numpy", "SECURE_BLOOM_THRIFT": "python"})
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr
    assert "(kernel: numpy fallback (SECURE_BLOOM_KERNEL=numpy); " \
           "thrift decoder: python fallback (SECURE_BLOOM_THRIFT=python))" in proc.stdout


def test_load_extension_warns_with_its_category(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SB_TEST_SWITCH", "auto")
    with pytest.warns(ExtensionFallbackWarning, match=r"secure_bloom\.no_such_extension is not built .* "
                                                      r"using the twin, which is slower.*SB_TEST_SWITCH=twin"):
        module, why = load_extension("no_such_extension", "SB_TEST_SWITCH", "twin", fallback_text="the twin")
    assert module is None and why is not None and why.startswith("secure_bloom.no_such_extension is not built")
