"""Compliance policies (secure_bloom.parquet.audit.policy) and the audit codes they add: validation
errors naming file and line, master keys from internal / external / explicit key material,
filter required / forbidden, minimum fpp and maximum size, conflicts, and the CLI's --policy in
text, JSON and JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from support import leaky_writer as lw
from support.parquet_files import explicit_testing_keys
from secure_bloom.cli import main
from secure_bloom.errors import PolicyError
from secure_bloom.kms import KeyListKms
from secure_bloom.kms.sidecar import sidecar_path
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters
from secure_bloom.parquet.audit.auditor import audit, audit_file
from secure_bloom.parquet.audit.report import Code, Status
from secure_bloom.parquet.audit.policy import ColumnRule, FilterRequirement, Policy, load_policy, parse_policy
from support.parquet_files import write_encrypted
from support.paths import VECTORS_DIR
from support.cli_json import cli_result

JAVA_BLOOM = VECTORS_DIR / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
EXPLICIT = explicit_testing_keys()


@pytest.fixture(scope="module")
def keys() -> KeyAccess:
    return lw.key_access()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, keys: KeyAccess) -> dict[str, Path]:
    """ssn (column key kc1), email (kc2), id and city plaintext; two row groups of 50 rows."""
    d = tmp_path_factory.mktemp("policy")
    src = d / "src.parquet.encrypted"
    lw.write_pyarrow_encrypted(src)
    values = lw.table_values()
    out = {}
    for name, modes in {"good": {"ssn": "column_key", "email": "column_key"},
                        "footer_key": {"ssn": "footer_key"},
                        "city_filter": {"city": "plaintext"},
                        "leak": {"ssn": "plaintext"}}.items():
        out[name] = d / f"{name}.parquet.encrypted"
        lw.inject_filters(src, out[name], modes, keys, values=values)
    return out


def findings(report_or_file) -> set[tuple[str, str, tuple[int, ...]]]:  # type: ignore[no-untyped-def]
    return {(f.leaf, f.code.value, f.row_groups) for f in report_or_file.findings}


def policy(text: str) -> Policy:
    return parse_policy(text, "policy.toml")


# --- parsing and validation --------------------------------------------------------------------

GOOD = """\
version = 1
allow_footer_key = false

[[column]]
path = "ssn"
master_keys = ["kc1"]
filter = "required"
min_fpp = 0.001

[[column]]
glob = "e*"
filter_master_keys = ["kc2"]
max_bitset_bytes = 1024

[[column]]
path = "city"
sensitive = false
filter = "forbidden"
"""


def test_a_valid_policy_parses_with_lines(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(GOOD)
    p = load_policy(path)
    assert p.source == str(path) and p.names == ("ssn", "e*", "city")
    assert [r.line for r in p.rules] == [4, 10, 15]
    ssn, email, city = p.rules
    assert (ssn.master_keys, ssn.filter, ssn.min_fpp, ssn.required_filter_keys) == \
        (("kc1",), FilterRequirement.REQUIRED, 0.001, ("kc1",))
    assert email.glob and email.required_filter_keys == ("kc2",) and email.max_bitset_bytes == 1024
    assert not city.sensitive and city.filter is FilterRequirement.FORBIDDEN


@pytest.mark.parametrize(("text", "message"), [
    ('[[column]]\npath = "a"\nfiltr = "required"\n',
     r"^policy\.toml:3: column rule 1: unknown key 'filtr' .*did you mean 'filter'\?"),
    ('sensitive = ["a"]\n[[column]]\npath = "a"\n', r"^policy\.toml:1: unknown key 'sensitive'"),
    ('[[column]]\nglob = "a[bc"\n', r"^policy\.toml:1: column rule 'a\[bc': bad glob: '\[' at position 1 is never closed"),
    ('[[column]]\nglob = "a.***"\n', r"^policy\.toml:1: .*bad glob: '\*\*\*' is not a glob"),
    ('[[column]]\npath = "a"\n\nsensitive = "yes"\n', r"^policy\.toml:4: column rule 1: sensitive must be true or false, got a string"),
    ('[[column]]\npath = "a"\nmaster_keys = [1]\n', r"^policy\.toml:3: .*master_keys must be a list of master key id strings"),
    ('[[column]]\npath = "a"\nfilter = "sometimes"\n', r'^policy\.toml:3: .*filter must be "required", "allowed" or "forbidden"'),
    ('[[column]]\npath = "a"\nmin_fpp = 1.5\n', r"^policy\.toml:1: .*min_fpp must be in \(0, 1\), got 1\.5"),
    ('[[column]]\npath = "a"\nmax_bitset_bytes = 16\n', r"^policy\.toml:1: .*max_bitset_bytes must be from 32"),
    ('[[column]]\nsensitive = true\n', r"^policy\.toml:1: column rule 1 needs exactly one of 'path'"),
    ('[[column]]\npath = "a"\nglob = "a*"\n', r"^policy\.toml:1: column rule 1 needs exactly one of 'path'"),
    ('version = 2\n[[column]]\npath = "a"\n', r"^policy\.toml:1: version must be 1, got 2"),
    ('[[column]\npath = "a"\n', r"^policy\.toml: invalid TOML: .*line 1"),
    ('version = 1\n', r"^policy\.toml: the policy has no \[\[column\]\] rule"),
    ('[[column]]\npath = "a"\nsensitive = false\nmaster_keys = ["k"]\n',
     r"^policy\.toml:1: .*contradictory: a column with sensitive = false .* cannot name master keys"),
    ('[[column]]\npath = "a"\nfilter = "forbidden"\nmin_fpp = 0.01\n',
     r'^policy\.toml:1: .*contradictory: filter = "forbidden" with min_fpp'),
    ('[[column]]\npath = "a.b"\nfilter = "required"\n\n[[column]]\nglob = "a.*"\nfilter = "forbidden"\n',
     r"^policy\.toml:5: contradictory rules: rule 'a\.b' \(line 1\) and rule 'a\.\*' \(line 5\) both cover 'a\.b', "
     r"and one requires a Bloom filter, the other forbids it"),
    ('[[column]]\npath = "a"\nmaster_keys = ["k1"]\n\n[[column]]\npath = "a.b"\nmaster_keys = ["k2"]\n',
     r"^policy\.toml:5: contradictory rules: .*their master_keys share no key \(\['k1'\] vs \['k2'\]\)"),
    ('[[column]]\npath = "a"\n\n[[column]]\npath = "a"\n', r"^policy\.toml:4: rule 'a' \(line 4\) repeats rule 'a' \(line 1\)"),
])
def test_invalid_policies_name_file_line_and_problem(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        parse_policy(text, "policy.toml")


def test_policy_file_errors(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"nope\.toml: cannot read the policy file: No such file"):
        load_policy(tmp_path / "nope.toml")
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'[[column]]\npath = "caf\xe9"\n')
    with pytest.raises(PolicyError, match=r"latin1\.toml: not UTF-8 text \(byte 22\)"):
        load_policy(bad)


def test_globs_match_parts_and_groups() -> None:
    from secure_bloom.parquet.file.schema import ColumnInfo
    from secure_bloom.types import PhysicalType

    cols = [ColumnInfo(p, tuple(p.split(".")), i, PhysicalType.BYTE_ARRAY)
            for i, p in enumerate(["email", "pii.ssn", "pii.card.number", "notes", "address.zip"])]

    def match(glob: str) -> list[str]:
        return [c.path for c in ColumnRule(glob, glob=True).matches(cols)]

    assert match("pii.*") == ["pii.ssn", "pii.card.number"]      # a group's leaves
    assert match("pii.*.number") == ["pii.card.number"]
    assert match("**.number") == ["pii.card.number"]
    assert match("e?ail") == ["email"]
    assert match("[ae]*") == ["email", "address.zip"]
    assert match("[!ae]*") == ["pii.ssn", "pii.card.number", "notes"]
    # a path is literal: column names may hold glob characters
    assert [c.path for c in ColumnRule("e?ail").matches(cols)] == []


# --- the audit with a policy -----------------------------------------------------------------------


def test_master_keys_filter_rules_and_fpp(files: dict[str, Path], keys: KeyAccess) -> None:
    p = policy("""
[[column]]
path = "ssn"
master_keys = ["kc2"]          # ssn is under kc1: wrong
min_fpp = 0.5                  # its filters answer far more exactly

[[column]]
path = "email"
master_keys = ["kc2"]
filter = "required"
max_bitset_bytes = 32

[[column]]
path = "city"
sensitive = false
filter = "required"

[[column]]
path = "id"
sensitive = false
filter = "forbidden"
""")
    result = audit_file(files["good"], keys=keys, policy=p)
    assert result.status is Status.VIOLATION and result.algorithm == "AES_GCM_V1"
    assert result.footer_mode == "encrypted"
    assert findings(result) == {
        ("ssn", "WRONG_MASTER_KEY", (0, 1)),
        ("ssn", "FILTER_WRONG_MASTER_KEY", (0, 1)),
        ("ssn", "FILTER_FPP_TOO_LOW", (0,)),        # one finding per row group: each its own fpp
        ("ssn", "FILTER_FPP_TOO_LOW", (1,)),
        ("email", "FILTER_TOO_LARGE", (0, 1)),
        ("city", "FILTER_REQUIRED_MISSING", (0, 1)),
    }
    by_code = {f.code: f for f in result.findings}
    assert "encrypted under master key 'kc1'; the policy requires 'kc2'" in by_code[Code.WRONG_MASTER_KEY].message
    with ParquetBloomReader(files["good"], keys=keys) as reader:
        fpp = [reader.bloom_filter(rg, "ssn").effective_fpp() for rg in (0, 1)]  # type: ignore[union-attr]
        size = reader.bloom_filter(0, "email").num_bytes  # type: ignore[union-attr]
    low = sorted((f for f in result.findings if f.code is Code.FILTER_FPP_TOO_LOW), key=lambda f: f.row_groups)
    for rg, finding in enumerate(low):
        assert f"effective fpp {fpp[rg]:.3g} (from the bits set in its 128-byte bitset; chunk of 50 values) " \
               "is below the policy's min_fpp 0.5" in finding.message
    assert f"{size}-byte bitset; the policy allows at most 32" in by_code[Code.FILTER_TOO_LARGE].message
    # the same file against the rules it meets
    ok = policy('[[column]]\npath = "ssn"\nmaster_keys = ["kc1"]\nfilter = "required"\nmin_fpp = 0.0001\n'
                '[[column]]\npath = "id"\nsensitive = false\nfilter = "forbidden"\n')
    assert audit_file(files["good"], keys=keys, policy=ok).status is Status.PASS


def test_filter_forbidden_and_footer_key(files: dict[str, Path], keys: KeyAccess) -> None:
    p = policy('[[column]]\npath = "city"\nsensitive = false\nfilter = "forbidden"\n')
    assert findings(audit_file(files["city_filter"], keys=keys, policy=p)) == {
        ("city", "FILTER_FORBIDDEN", (0, 1))}
    p = policy('[[column]]\npath = "ssn"\nfilter_master_keys = ["kc1"]\n')
    result = audit_file(files["footer_key"], keys=keys, policy=p)
    assert findings(result) == {("ssn", "FILTER_UNDER_FOOTER_KEY", (0, 1)),
                                ("ssn", "FILTER_WRONG_MASTER_KEY", (0, 1))}
    assert "encrypted under master key 'kf'" in next(
        f for f in result.findings if f.code is Code.FILTER_WRONG_MASTER_KEY).message
    leak = audit_file(files["leak"], keys=keys, policy=p)
    assert findings(leak) == {("ssn", "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN", (0, 1)),
                              ("ssn", "FILTER_WRONG_MASTER_KEY", (0, 1))}


def test_master_keys_of_external_key_material_come_from_the_sidecar(tmp_path: Path) -> None:
    from support.parquet_files import TESTING_KEY_LIST

    src = write_encrypted(tmp_path / "ext.parquet", internal_key_material=False)  # ssn, amount: kc1; ts: kc2
    dst = tmp_path / "ext.bloom.parquet"
    keys = KeyAccess(kms=KeyListKms(TESTING_KEY_LIST))
    attach_bloom_filters(src, dst, ["ssn", "ts"], keys)
    p = policy('[[column]]\npath = "ssn"\nmaster_keys = ["kc1"]\nfilter = "required"\n'
               '[[column]]\npath = "ts"\nmaster_keys = ["kc1"]\n')
    result = audit_file(dst, keys=keys, policy=p)
    assert findings(result) == {("ts", "WRONG_MASTER_KEY", (0, 1, 2)), ("ts", "FILTER_WRONG_MASTER_KEY", (0, 1, 2))}
    # without the sidecar the master key cannot be known: never a pass
    sidecar_path(dst).rename(tmp_path / "elsewhere.json")
    blind = audit_file(dst, keys=keys, policy=p)
    assert blind.status is Status.COULD_NOT_CHECK


def test_explicit_key_ids_are_the_master_keys() -> None:
    p = policy('[[column]]\npath = "double_field"\nmaster_keys = ["kc1"]\n'
               '[[column]]\npath = "float_field"\nmaster_keys = ["kc1"]\nfilter = "required"\n')
    result = audit_file(JAVA_BLOOM, keys=EXPLICIT, policy=p)
    assert findings(result) == {("float_field", "WRONG_MASTER_KEY", (0,)),
                                ("float_field", "FILTER_WRONG_MASTER_KEY", (0,))}


def test_overlapping_globs_that_contradict_are_not_a_pass(files: dict[str, Path], keys: KeyAccess) -> None:
    p = policy('[[column]]\nglob = "s*"\nfilter = "required"\n[[column]]\nglob = "*n"\nfilter = "forbidden"\n')
    result = audit_file(files["good"], keys=keys, policy=p)
    assert result.status is Status.COULD_NOT_CHECK
    assert any("policy rule 's*' (line 1) and rule '*n' (line 4) both cover column 'ssn'" in u
               for c in result.columns for u in c.unchecked)


def test_a_rule_matching_no_column_in_any_file_is_not_a_pass(files: dict[str, Path], keys: KeyAccess) -> None:
    report = audit([files["good"]], keys=keys, policy=policy('[[column]]\nglob = "nope*"\n'))
    assert report.unknown_columns == ("nope*",) and report.exit_code == 2 and not report.is_compliant


def test_coverage_is_per_rule_not_per_text(files: dict[str, Path], keys: KeyAccess, tmp_path: Path) -> None:
    """A literal path "emai?" matches no column (names may hold '?'); a glob "emai?" of the same text
    matches email. The literal stays unknown (not a pass) next to the glob (issue 20 item 7)."""
    alone = audit([files["good"]], keys=keys, policy=policy('[[column]]\npath = "emai?"\n'))
    assert alone.unknown_columns == ("emai?",) and alone.exit_code == 2
    both = audit([files["good"]], keys=keys,
                 policy=policy('[[column]]\nglob = "emai?"\n[[column]]\npath = "emai?"\n'))
    assert [c.status for c in both.files[0].columns] == [Status.PASS, Status.MISSING]
    assert both.unknown_rules == (1,) and both.unknown_columns == ("emai?",)
    assert both.exit_code == 2 and not both.is_compliant
    # --sensitive "emai?" (a literal) next to a policy's glob of the same text is a rule of its own
    glob_only = policy('[[column]]\nglob = "emai?"\n')
    added = audit([files["good"]], ["emai?"], keys=keys, policy=glob_only)
    assert [(r.path, r.glob) for r in added.policy.rules] == [("emai?", True), ("emai?", False)]  # type: ignore[union-attr]
    assert added.unknown_rules == (1,) and added.exit_code == 2
    # JUnit: each rule's testcase carries that rule's result, not the first rule of the same text
    cases = list(ET.fromstring(both.to_junit_xml()).iter("testcase"))
    per_file = [c for c in cases if c.get("classname") != "sensitive columns"]
    assert [(c.get("name"), c.find("skipped") is not None) for c in per_file] == [("emai? (glob)", False),
                                                                                  ("emai?", True)]
    assert [c.get("name") for c in cases if c.get("classname") == "sensitive columns"] == ["emai?"]
    # and the CLI exits 2 with the literal named as unknown
    path = tmp_path / "p.toml"
    path.write_text('[[column]]\nglob = "emai?"\n[[column]]\npath = "emai?"\n')
    key_file = tmp_path / "keys.txt"
    key_file.write_text(lw.key_list())
    assert main(["audit", str(files["good"]), "--policy", str(path), "--key-list-file", str(key_file)]) == 2


def test_sensitive_names_and_a_policy_combine(files: dict[str, Path], keys: KeyAccess) -> None:
    p = policy('[[column]]\npath = "city"\nsensitive = false\nfilter = "forbidden"\n')
    report = audit([files["leak"], files["city_filter"]], ["ssn"], keys=keys, policy=p)
    assert report.sensitive_columns == ("city", "ssn")
    assert findings(report) == {("ssn", "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN", (0, 1)),
                                ("city", "FILTER_FORBIDDEN", (0, 1))}


# --- the CLI --------------------------------------------------------------------------------------


def test_cli_audit_policy_text_json_junit(files: dict[str, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "compliance.toml"
    path.write_text('[[column]]\npath = "ssn"\nmaster_keys = ["kc2"]\n'
                    '[[column]]\npath = "city"\nsensitive = false\nfilter = "required"\n')
    key_file = tmp_path / "keys.txt"
    key_file.write_text(lw.key_list())
    base = ["audit", str(files["good"]), "--policy", str(path), "--key-list-file", str(key_file)]
    junit = tmp_path / "audit.xml"
    assert main(base + ["--junit-xml", str(junit)]) == 1
    out = capsys.readouterr().out
    assert f"policy {path}: rules for ssn, city" in out
    assert "[encrypted footer, AES_GCM_V1]" in out
    assert "WRONG_MASTER_KEY (violation): column 'ssn', row groups 0, 1:" in out
    assert "FILTER_REQUIRED_MISSING (violation): column 'city', row groups 0, 1:" in out
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["ssn"].find("failure").get("type") == "FILTER_WRONG_MASTER_KEY,WRONG_MASTER_KEY"  # type: ignore[union-attr]
    assert cases["city"].find("failure").get("type") == "FILTER_REQUIRED_MISSING"  # type: ignore[union-attr]
    assert main(base + ["--json"]) == 1
    doc = cli_result(capsys.readouterr().out, "audit")
    assert {v["code"] for v in doc["violations"]} == {"WRONG_MASTER_KEY", "FILTER_WRONG_MASTER_KEY",
                                                      "FILTER_REQUIRED_MISSING"}
    assert doc["files"][0]["algorithm"] == "AES_GCM_V1" and doc["policy"]["source"] == str(path)


def test_cli_bad_policy_is_a_usage_error(tmp_path: Path, files: dict[str, Path],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[column]]\npath = "ssn"\nfilter = "maybe"\n')
    assert main(["audit", str(files["good"]), "--policy", str(path)]) == 2
    err = capsys.readouterr().err
    assert f'{path}:3: column rule 1: filter must be "required", "allowed" or "forbidden"' in err
    assert main(["audit", str(files["good"])]) == 2
    assert "give --sensitive COLUMNS or --policy FILE" in capsys.readouterr().err


def test_unknown_policy_fields_in_code_are_refused() -> None:
    with pytest.raises(PolicyError, match=r"column rule 'a': contradictory: filter = \"forbidden\" with max_bitset_bytes"):
        ColumnRule("a", filter=FilterRequirement.FORBIDDEN, max_bitset_bytes=64)
    with pytest.raises(PolicyError, match=r"the policy has no \[\[column\]\] rule"):
        Policy(rules=())
