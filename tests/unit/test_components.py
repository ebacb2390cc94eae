"""The suite's policy for missing real components (tests/support/components.py): a missing OpenBao binary
fails the run unless the user deselects the ``kms`` marker or opts out by name; a skip says why."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from support.paths import TESTS_DIR

TESTS = TESTS_DIR
ONE_KMS_TEST = "interop/test_kms_openbao.py::test_token_from_environment"


def _pytest(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "SECURE_BLOOM_ALLOW_SKIP")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-ra", "--no-header",
                           *args], cwd=TESTS, env={**environ, "SECURE_BLOOM_BAO": "/nonexistent/bao", **env},
                          capture_output=True, text=True, timeout=300)


def test_missing_openbao_fails_without_ci_set() -> None:
    result = _pytest(ONE_KMS_TEST)
    assert result.returncode == 1, result.stdout[-3000:]
    assert "openbao missing: bao binary '/nonexistent/bao' is not an executable file" in result.stdout
    assert "1 error" in result.stdout                      # the fixture failed: not a skip, not a pass


def test_missing_openbao_skips_only_when_named_and_says_why() -> None:
    result = _pytest(ONE_KMS_TEST, SECURE_BLOOM_ALLOW_SKIP="spark, openbao")
    assert result.returncode == 0, result.stdout[-3000:]
    assert re.search(r"SKIPPED \[1\] interop/test_kms_openbao.py:\d+: openbao missing \(bao binary '/nonexistent/bao' "
                     r"is not an executable file\); skipped because SECURE_BLOOM_ALLOW_SKIP names it", result.stdout)
    assert "1 skipped" in result.stdout


@pytest.mark.parametrize("allow", ["", "spark"])
def test_deselecting_the_kms_marker_runs_none_of_them(allow: str) -> None:
    result = _pytest(ONE_KMS_TEST, "-m", "not kms", SECURE_BLOOM_ALLOW_SKIP=allow)
    assert result.returncode == 5 and "1 deselected" in result.stdout, result.stdout[-3000:]
