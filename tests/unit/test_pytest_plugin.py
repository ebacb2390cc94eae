"""The pytest plugin (secure_bloom.pytest_plugin) and the compliance helpers of
secure_bloom.testing, run through pytest's own ``pytester``: one item per file, violations and
could-not-check results as failures naming file, row group, column and code, the fixture, and
an inactive plugin without its options."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from support import leaky_writer as lw
from support.paths import REPO_DIR
from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess
from secure_bloom.testing import assert_compliant, assert_filter_encrypted, assert_probe

pytest_plugins = ["pytester"]

PLUGIN = ["-p", "secure_bloom.pytest_plugin"]
POLICY = '[[column]]\npath = "ssn"\nmaster_keys = ["kc1"]\nfilter = "required"\n' \
         '[[column]]\npath = "email"\nmaster_keys = ["kc2"]\n'


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """good/: a compliant file; bad/: ssn with a plaintext filter; notes.txt beside them."""
    d = tmp_path_factory.mktemp("lake")
    src = d / "src.parquet.encrypted"
    lw.write_pyarrow_encrypted(src)
    keys = KeyAccess(kms=KeyListKms(lw.key_list()))
    (d / "good").mkdir()
    (d / "bad").mkdir()
    lw.inject_filters(src, d / "good" / "part-0.parquet", {"ssn": "column_key", "email": "column_key"}, keys,
                      values=lw.table_values())
    lw.inject_filters(src, d / "bad" / "part-0.parquet", {"ssn": "plaintext"}, keys, values=lw.table_values())
    src.unlink()
    policy = d / "compliance.toml"
    policy.write_text(POLICY)
    return {"root": d, "good": d / "good" / "part-0.parquet", "bad": d / "bad" / "part-0.parquet",
            "policy": policy}


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST", lw.key_list())
    monkeypatch.delenv("SECURE_BLOOM_KEY_LIST_FILE", raising=False)


def test_one_item_per_file_and_violations_fail_with_file_row_group_column_code(
        pytester: pytest.Pytester, lake: dict[str, Path], key_env: None) -> None:
    result = pytester.runpytest(*PLUGIN, "--secure-bloom-audit", str(lake["root"]),
                                "--secure-bloom-policy", str(lake["policy"]), "-v")
    result.assert_outcomes(passed=2, failed=1)  # good, policy coverage; bad
    result.stdout.fnmatch_lines([
        f"*secure_bloom_audit[[]{lake['bad']}[]] FAILED*",    # files in discover's (sorted) order
        f"*secure_bloom_audit[[]{lake['good']}[]] PASSED*",
        "*secure_bloom_audit[[]policy-coverage[]] PASSED*",
        f"{lake['bad']}: row groups 0, 1, column 'ssn': PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN: *",
        f"{lake['bad']}: row groups 0, 1, column 'ssn': FILTER_WRONG_MASTER_KEY: *(the filter is not encrypted at all)",
    ])


def test_could_not_check_is_a_failure_never_a_skip(pytester: pytest.Pytester, lake: dict[str, Path],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SECURE_BLOOM_KEY_LIST", raising=False)
    monkeypatch.delenv("SECURE_BLOOM_KEY_LIST_FILE", raising=False)
    missing = lake["root"] / "no-such-dir"
    result = pytester.runpytest(*PLUGIN, "--secure-bloom-audit", str(lake["good"]), "--secure-bloom-audit",
                                str(missing), "--secure-bloom-sensitive", "ssn")
    result.assert_outcomes(failed=3)  # the keyless file, the missing path, and coverage (nothing readable)
    out = result.stdout.str()
    assert "skipped" not in out
    assert "COULD NOT CHECK [MISSING_KEY]" in out
    assert f"COULD NOT CHECK [FILE_NOT_FOUND] {missing}: No such file or directory" in out


def test_policy_coverage_fails_a_misspelt_rule(pytester: pytest.Pytester, lake: dict[str, Path],
                                               key_env: None) -> None:
    result = pytester.runpytest(*PLUGIN, "--secure-bloom-audit", str(lake["good"]),
                                "--secure-bloom-sensitive", "ssn,emial")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*policy rule(s) matching no column in any audited file (misspelt?): 'emial'*"])


def test_policy_coverage_is_per_rule_a_glob_does_not_cover_a_literal_of_the_same_text(
        pytester: pytest.Pytester, lake: dict[str, Path], key_env: None) -> None:
    """glob "emai?" matches email; the literal path "emai?" matches nothing and fails coverage."""
    both = pytester.path / "both.toml"
    both.write_text('[[column]]\nglob = "emai?"\n[[column]]\npath = "emai?"\n')
    result = pytester.runpytest(*PLUGIN, "--secure-bloom-audit", str(lake["good"]), "--secure-bloom-policy", str(both))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*policy rule(s) matching no column in any audited file (misspelt?): 'emai?' (line 3)"])
    glob = pytester.path / "glob.toml"
    glob.write_text('[[column]]\nglob = "emai?"\n')
    pytester.runpytest(*PLUGIN, "--secure-bloom-audit", str(lake["good"]), "--secure-bloom-policy",
                       str(glob)).assert_outcomes(passed=2)


def test_bad_policy_and_missing_policy_are_usage_errors(pytester: pytest.Pytester, lake: dict[str, Path],
                                                        key_env: None) -> None:
    bad = pytester.path / "bad.toml"
    bad.write_text('[[column]]\npath = "ssn"\nfilter = "maybe"\n')
    result = pytester.runpytest(*PLUGIN, "--secure-bloom-audit", str(lake["good"]), "--secure-bloom-policy", str(bad))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f'*secure-bloom: {bad}:3: column rule 1: filter must be "required"*'])
    result = pytester.runpytest(*PLUGIN, "--secure-bloom-audit", str(lake["good"]))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--secure-bloom-audit needs --secure-bloom-policy FILE or --secure-bloom-sensitive*"])


def test_plugin_is_inactive_without_its_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok():\n    assert True\n")
    result = pytester.runpytest(*PLUGIN, "-v")
    result.assert_outcomes(passed=1)
    assert "secure_bloom_audit" not in result.stdout.str()


def test_fixture_and_helpers_in_hand_written_tests(pytester: pytest.Pytester, lake: dict[str, Path],
                                                   key_env: None) -> None:
    pytester.makepyfile(f'''
        import pytest
        from secure_bloom.testing import assert_compliant

        def test_good(secure_bloom_audit):
            report = secure_bloom_audit.assert_compliant({str(lake["good"])!r}, {str(lake["policy"])!r})
            assert report.is_compliant

        def test_bad(secure_bloom_audit):
            report = secure_bloom_audit({str(lake["bad"])!r}, sensitive=["ssn"])
            assert [f.code.value for f in report.violations] == ["PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"]
            with pytest.raises(AssertionError, match="PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"):
                secure_bloom_audit.assert_compliant({str(lake["bad"])!r}, sensitive=["ssn"])
    ''')
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=2)


HEAVY = ("numpy", "cryptography", "thriftpy2", "pyarrow", "pyspark", "pandas", "xxhash", "secure_bloom.filter")


def test_an_unused_plugin_leaves_pytest_runs_light(tmp_path: Path) -> None:
    """A pytest run that loads the plugin but gives none of its options imports nothing heavy."""
    (tmp_path / "test_light.py").write_text(textwrap.dedent(f"""
        import sys

        def test_plugin_loaded_but_light(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("secure_bloom.pytest_plugin")
            assert sorted(m for m in {HEAVY!r} if m in sys.modules) == []
        """))
    proc = subprocess.run([sys.executable, "-I", "-m", "pytest", "-p", "no:cacheprovider", "-q", "-c", os.devnull,
                           "--rootdir", str(tmp_path), str(tmp_path / "test_light.py")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_plugin_import_is_light_and_registered_in_pyproject() -> None:
    """Every pytest run in an environment with secure-bloom imports the plugin (pytest11): it (and
    ``import secure_bloom``, PEP 562 lazy names) must cost no numpy, cryptography, thriftpy2 or
    pyarrow until one of its options is given (it cost 0.15-0.3 s before)."""
    code = ("import sys, secure_bloom, secure_bloom.pytest_plugin; "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules)); "
            "import secure_bloom.testing; "  # the helpers for hand-written tests: no Arrow or Spark either
            "print(sorted(m for m in ('pyarrow', 'pyspark', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.splitlines() == ["[]", "[]"]
    project = tomllib.loads((REPO_DIR / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"secure_bloom.pytest_plugin": "secure_bloom.pytest_plugin"}
    assert "tomli>=2.0; python_version < '3.11'" in project["dependencies"]


# --- secure_bloom.testing helpers ----------------------------------------------------------------


def test_assert_helpers(lake: dict[str, Path]) -> None:
    keys = KeyAccess(kms=KeyListKms(lw.key_list()))
    assert assert_compliant(lake["good"], lake["policy"], keys).is_compliant
    with pytest.raises(AssertionError, match=r"not compliant:\n.*part-0\.parquet: PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"):
        assert_compliant(lake["bad"], lake["policy"], keys)
    assert_filter_encrypted(lake["good"], "ssn", keys)
    assert_filter_encrypted(lake["good"], "ssn", keys, master_key="kc1")
    with pytest.raises(AssertionError, match=r"column 'ssn'.*WRONG_MASTER_KEY: .*'kc1'; the policy requires 'kc2'"):
        assert_filter_encrypted(lake["good"], "ssn", keys, master_key="kc2")
    with pytest.raises(AssertionError, match=r"row groups 0, 1, column 'ssn': PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"):
        assert_filter_encrypted(lake["bad"], "ssn", keys)
    with pytest.raises(AssertionError, match=r"row groups 0, 1, column 'city': FILTER_REQUIRED_MISSING"):
        assert_filter_encrypted(lake["good"], "city", keys)
    assert_probe(lake["good"], "ssn", "ssn-0007", [0], keys)
    assert_probe(lake["good"], "ssn", "ssn-0077", [1], keys)
    assert_probe(lake["good"], "city", "city-1", [0, 1], keys)  # no filter: always "maybe"
    with pytest.raises(AssertionError, match=r"value 'ssn-0007': row groups that may hold it are \[0\], expected \[1\]"):
        assert_probe(lake["good"], "ssn", "ssn-0007", [1], keys)
