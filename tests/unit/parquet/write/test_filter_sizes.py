"""Length hiding (issue 33): fixed Bloom filter sizes per column, and the audit of what sizes reveal.

A filter's numBytes and module lengths are visible without any key. Files are written each way
(per row group, fixed) by write_table, ParquetWriter, write_to_dataset and pyarrow + attach from a
table whose row groups hold 8, 300, 5000 and 60000 distinct values (tests/support/filter_sizes.py);
the sizes are read from the raw file bytes, the folded filters compared bit for bit with the
filters attach builds at the same size, and the audit's verdicts checked on each file.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.cli_json import cli_result
from support.filter_sizes import ROWS_PER_GROUP, SKEWED_NDV, skewed_table, visible_sizes
from support.parquet_files import TESTING_KEY_LIST, vector_kms, write_encrypted

from secure_bloom.cli import main
from secure_bloom.errors import AttachError, PolicyError
from secure_bloom.filter import SplitBlockBloomFilter, ndv_range, optimal_num_bytes
from secure_bloom.parquet import (
    KeyAccess,
    ParquetBloomReader,
    ParquetWriter,
    attach_bloom_filters,
    write_table,
    write_to_dataset,
)
from secure_bloom.parquet.audit.auditor import audit
from secure_bloom.parquet.audit.policy import parse_policy
from secure_bloom.parquet.audit.report import Code
from secure_bloom.parquet.write.options import ColumnSpec
from secure_bloom.types import FilterSizing

pytest_plugins = ["pytester"]

KEYS = KeyAccess(kms=vector_kms())
FPP = 0.01
COLUMNS = {"kc1": ["code", "n"]}


def _config(plaintext_footer: bool = False) -> pe.EncryptionConfiguration:
    return pe.EncryptionConfiguration(footer_key="kf", column_keys=COLUMNS, plaintext_footer=plaintext_footer)


def _write(path: Path, options: dict[str, Any], table: pa.Table | None = None, **kwargs: Any) -> Any:
    return write_table(table if table is not None else skewed_table(), path, encryption=_config(**kwargs),
                       kms=vector_kms(), bloom_filter_options={"code": {"fpp": FPP, **options}, "n": {"fpp": FPP}},
                       row_group_size=ROWS_PER_GROUP)


def _bitsets(path: Path, column: str) -> list[bytes]:
    with ParquetBloomReader(path, KEYS) as reader:
        out = []
        for _, bf in reader.iter_filters(column):
            assert bf is not None
            out.append(bf.bitset)
        return out


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The skewed table by write_table (per row group / fixed, encrypted and plaintext footer)
    and by pyarrow + attach (per row group / fixed)."""
    d = tmp_path_factory.mktemp("filter-sizes")
    out = {"per_row_group": d / "per_row_group.parquet", "fixed": d / "fixed.parquet",
           "per_row_group_plaintext_footer": d / "prg-pf.parquet", "fixed_plaintext_footer": d / "fixed-pf.parquet"}
    _write(out["per_row_group"], {})
    _write(out["fixed"], {"sizing": "fixed"})
    _write(out["per_row_group_plaintext_footer"], {}, plaintext_footer=True)
    _write(out["fixed_plaintext_footer"], {"sizing": FilterSizing.FIXED}, plaintext_footer=True)
    src = write_encrypted(d / "pyarrow.parquet", skewed_table(), column_keys=COLUMNS, row_group_size=ROWS_PER_GROUP)
    out["attach_per_row_group"] = d / "attach-prg.parquet"
    out["attach_fixed"] = d / "attach-fixed.parquet"
    attach_bloom_filters(src, out["attach_per_row_group"], ["code", "n"], KEYS, fpp=FPP)
    attach_bloom_filters(src, out["attach_fixed"], [ColumnSpec("code", sizing=FilterSizing.FIXED), "n"], KEYS, fpp=FPP)
    return out


# --- the primitive: folding -----------------------------------------------------------------------


@given(st.lists(st.integers(0, 2**64 - 1), max_size=3000), st.integers(5, 14), st.integers(0, 9))
def test_a_folded_filter_equals_the_filter_built_at_that_size(hashes: list[int], big: int, down: int) -> None:
    big_bytes = 1 << big
    small_bytes = max(32, big_bytes >> down)
    large, small = SplitBlockBloomFilter(big_bytes), SplitBlockBloomFilter(small_bytes)
    large.insert_hashes(hashes)
    small.insert_hashes(hashes)
    assert large.folded(small_bytes) == small
    assert large.folded(big_bytes) == large


def test_fold_refuses_sizes_it_cannot_reach() -> None:
    bf = SplitBlockBloomFilter(1024)
    for bad in (2048, 16, 1000):
        with pytest.raises(ValueError, match="num_bytes must be a power of two"):
            bf.folded(bad)
    with pytest.raises(ValueError, match="power-of-two size"):
        SplitBlockBloomFilter.from_bitset(bytes(1000)).folded(512)


@given(st.integers(0, 10**8), st.sampled_from([0.5, 0.2, 0.05, 0.01, 0.001, 1e-6]))
def test_ndv_range_holds_every_count_that_sizes_to_it(ndv: int, fpp: float) -> None:
    low, high = ndv_range(optimal_num_bytes(ndv, fpp), fpp)
    assert low <= ndv and (high is None or ndv <= high)
    assert (high is None) == (optimal_num_bytes(ndv, fpp) == 128 * 1024 * 1024)  # only the format's cap is open


def test_ndv_range_of_a_capped_size_has_no_upper_bound() -> None:
    low, high = ndv_range(1000, FPP)  # parquet-java's unrounded max.bytes: every count needing more than 512
    assert high is None and low > 0
    assert all(n >= low for n in range(2000) if optimal_num_bytes(n, FPP) >= 1024)


# --- writers ---------------------------------------------------------------------------------------


def test_write_table_per_row_group_sizes_reveal_each_row_group(written: dict[str, Path]) -> None:
    sizes = visible_sizes(written["per_row_group"], "code", KEYS)
    assert [s[0] for s in sizes] == [optimal_num_bytes(n, FPP) for n in SKEWED_NDV]  # type: ignore[index]
    assert len({s[1] for s in sizes}) > 1  # even the header module length (numBytes' varint) differs


@pytest.mark.parametrize("name", ["fixed", "fixed_plaintext_footer", "attach_fixed"])
def test_fixed_sizing_gives_every_row_group_one_size_and_module_length(written: dict[str, Path], name: str) -> None:
    sizes = visible_sizes(written[name], "code", KEYS)
    assert len(sizes) == len(SKEWED_NDV)
    assert set(sizes) == {(optimal_num_bytes(max(SKEWED_NDV), FPP), *sizes[0][1:])}  # type: ignore[index]
    # the column without the option keeps its per-row-group sizes
    assert len(set(visible_sizes(written[name], "n", KEYS))) == len(SKEWED_NDV)


def test_folded_filters_are_the_filters_built_at_the_fixed_size(written: dict[str, Path]) -> None:
    """write_table folds filters built at the cap; attach builds them for the largest chunk's values
    and folds: both equal the filters built straight at the one size, bit for bit."""
    direct = written["fixed"].with_name("direct.parquet")
    _write(direct, {"num_bytes": optimal_num_bytes(max(SKEWED_NDV), FPP)})
    assert _bitsets(written["fixed"], "code") == _bitsets(direct, "code") == _bitsets(written["attach_fixed"], "code")


def test_every_value_is_found_in_the_fixed_filters(written: dict[str, Path]) -> None:
    table = skewed_table()
    with ParquetBloomReader(written["fixed"], KEYS) as reader:
        for rg, bf in reader.iter_filters("code"):
            assert bf is not None
            values = table["code"].slice(rg * ROWS_PER_GROUP, ROWS_PER_GROUP)
            assert bool(np.all(bf.might_contain_many(values, "BYTE_ARRAY")))


def test_the_report_gives_each_filter_its_expected_fpp(written: dict[str, Path], tmp_path: Path) -> None:
    report = _write(tmp_path / "f.parquet", {"sizing": "fixed"})
    code = [f for f in report.filters if f.column == "code"]
    size = optimal_num_bytes(max(SKEWED_NDV), FPP)
    assert [(f.num_bytes, f.ndv, f.sizing, f.capped) for f in code] == \
        [(size, n, FilterSizing.FIXED, False) for n in SKEWED_NDV]
    assert [f.expected_fpp for f in code] == [SplitBlockBloomFilter(size).fpp_estimate(n) for n in SKEWED_NDV]
    assert code[-1].expected_fpp <= FPP
    assert json.loads(json.dumps(report.to_dict()))["filters"][0]["sizing"] == "fixed"


def test_ndv_and_num_bytes_fix_the_size_and_report_the_fpp_they_cost(tmp_path: Path) -> None:
    by_ndv = _write(tmp_path / "ndv.parquet", {"sizing": "fixed", "ndv": 1000})
    code = [f for f in by_ndv.filters if f.column == "code"]
    assert {f.num_bytes for f in code} == {optimal_num_bytes(1000, FPP)}
    assert code[-1].expected_fpp > 0.3  # 60000 values in a filter sized for 1000
    by_bytes = _write(tmp_path / "bytes.parquet", {"num_bytes": 65536})
    code = [f for f in by_bytes.filters if f.column == "code"]
    assert [(f.num_bytes, f.sizing, f.capped) for f in code] == \
        [(65536, FilterSizing.FIXED, n > 30000) for n in SKEWED_NDV]  # 60000 values need 128 KiB at 1 %
    assert code[-1].expected_fpp == SplitBlockBloomFilter(65536).fpp_estimate(max(SKEWED_NDV))


def test_the_size_cap_caps_fixed_sizes_alike(tmp_path: Path) -> None:
    report = write_table(skewed_table(), tmp_path / "cap.parquet", encryption=_config(), kms=vector_kms(),
                         bloom_filter_options={"code": {"sizing": "fixed"}}, row_group_size=ROWS_PER_GROUP,
                         bloom_filter_max_bytes=16384)
    assert [(f.num_bytes, f.capped) for f in report.filters] == [(16384, n > 10000) for n in SKEWED_NDV]


def test_streaming_writer_gives_one_size_to_row_groups_of_every_call(tmp_path: Path) -> None:
    table = skewed_table()
    path = tmp_path / "stream.parquet"
    with ParquetWriter(path, table.schema, encryption=_config(), kms=vector_kms(),
                       bloom_filter_options={"code": {"sizing": "fixed", "fpp": FPP}}) as writer:
        writer.write_table(table.slice(0, 2 * ROWS_PER_GROUP), row_group_size=ROWS_PER_GROUP // 2)
        writer.write_batch(table.slice(2 * ROWS_PER_GROUP).to_batches()[0])  # the 5000 and 60000 groups: one
    sizes = visible_sizes(path, "code", KEYS)
    assert len(sizes) == 5 and len(set(sizes)) == 1
    distinct = len(set(table["code"].slice(2 * ROWS_PER_GROUP).to_pylist()))
    assert sizes[0][0] == optimal_num_bytes(distinct, FPP)  # type: ignore[index]


def test_write_to_dataset_gives_one_size_across_all_files(tmp_path: Path) -> None:
    table = skewed_table().append_column("part", pa.array(np.repeat(["a", "b"], 2 * ROWS_PER_GROUP)))

    def sizes(root: Path, options: dict[str, Any]) -> set[int]:
        reports = write_to_dataset(table, root, partition_cols=["part"], encryption=_config(), kms=vector_kms(),
                                   bloom_filter_options={"code": {"fpp": FPP, **options}},
                                   row_group_size=ROWS_PER_GROUP // 3, max_rows_per_file=ROWS_PER_GROUP)
        assert len(reports) == 4
        for report in reports:  # the reports say what the files hold
            assert [f.num_bytes for f in report.filters] == [s[0] for s in visible_sizes(report.path, "code", KEYS)]
        return {f.num_bytes for r in reports for f in r.filters}

    assert len(sizes(tmp_path / "per-row-group", {})) > 3
    fixed = sizes(tmp_path / "fixed", {"sizing": "fixed"})
    group = skewed_table()["code"].slice(3 * ROWS_PER_GROUP, ROWS_PER_GROUP // 3)  # the largest row group
    assert fixed == {optimal_num_bytes(len(set(group.to_pylist())), FPP)}


@pytest.mark.parametrize("options,match", [
    ({"sizing": "same"}, "sizing must be one of 'per_row_group', 'fixed'"),
    ({"num_bytes": 1000}, "num_bytes must be a power of two"),
    ({"num_bytes": 1 << 21}, "num_bytes must be a power of two from 32 to 1048576"),
    ({"num_bytes": 4096, "sizing": "per_row_group"}, "needs sizing 'fixed'"),
    ({"size": "fixed"}, "unknown option 'size'"),
])
def test_bad_sizing_options_fail_before_anything_is_written(tmp_path: Path, options: dict[str, Any],
                                                            match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _write(tmp_path / "bad.parquet", options)
    assert list(tmp_path.iterdir()) == []


def test_attach_refuses_bad_sizing(tmp_path: Path) -> None:
    src = write_encrypted(tmp_path / "src.parquet", skewed_table(), column_keys=COLUMNS)
    with pytest.raises(ValueError, match="sizing must be one of"):
        ColumnSpec("code", sizing="sometimes")  # type: ignore[arg-type]
    with pytest.raises(AttachError, match="num_bytes must be a power of two from 32 to 4096"):
        attach_bloom_filters(src, tmp_path / "out.parquet", [ColumnSpec("code", num_bytes=8192)], KEYS,
                             bloom_filter_max_bytes=4096)
    assert not (tmp_path / "out.parquet").exists()


# --- the audit ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,keys,varies", [
    ("per_row_group", KEYS, True), ("fixed", KEYS, False),
    ("attach_per_row_group", KEYS, True), ("attach_fixed", KEYS, False),
    ("per_row_group_plaintext_footer", KeyAccess(), True), ("fixed_plaintext_footer", KeyAccess(), False),
], ids=lambda v: v if isinstance(v, str) else None)
def test_audit_reports_what_sizes_reveal_and_fails_varying_sizes(written: dict[str, Path], name: str,
                                                                 keys: KeyAccess, varies: bool) -> None:
    report = audit(written[name], ["code"], keys=keys, hide_filter_sizes=True)
    (column,) = report.files[0].columns
    (sizes,) = column.filter_sizes
    assert sizes.uniform is not varies
    codes = {f.code for f in column.findings}
    assert (Code.FILTER_SIZES_VARY in codes) is varies
    if keys is KEYS:
        assert report.exit_code == (1 if varies else 0)
    else:  # the sizes are judged without the key; the filters themselves cannot be authenticated
        assert report.exit_code == (1 if varies else 2)
    # every row group's true distinct count lies in the range its size implies
    for (num_bytes, _, rgs) in sizes.sizes:
        assert num_bytes is not None
        low, high = sizes.implied_ndv(num_bytes)
        truth = [SKEWED_NDV[rg] for rg in rgs]
        assert (low <= min(truth) and max(truth) <= high) if varies else max(truth) <= high  # type: ignore[operator]
    doc = report.to_dict()["files"][0]["columns"][0]["filter_sizes"][0]
    assert doc["distinct_sizes"] == (len(SKEWED_NDV) if varies else 1) and doc["assumed_fpp"] == FPP


def test_without_the_requirement_sizes_are_reported_not_failed(written: dict[str, Path]) -> None:
    report = audit(written["per_row_group"], ["code"], keys=KEYS)
    assert report.exit_code == 0
    assert "4 different filter sizes across 4 row groups" in report.files[0].columns[0].filter_sizes[0].summary


def test_policy_hide_filter_sizes_and_junit(written: dict[str, Path]) -> None:
    policy = parse_policy('[[column]]\npath = "code"\nhide_filter_sizes = true\n[[column]]\npath = "n"\n')
    report = audit([written["fixed"], written["per_row_group"]], keys=KEYS, policy=policy)
    assert [r.status.value for r in report.files] == ["pass", "violation"]
    assert [f.leaf for f in report.violations] == ["code"]  # n's sizes vary too, but n does not ask
    root = ET.fromstring(report.to_junit_xml())
    failures = root.findall(".//testcase/failure")
    assert [f.get("type") for f in failures] == ["FILTER_SIZES_VARY"]
    outs = [c.findtext("system-out") or "" for c in root.iter("testcase")]
    assert all("filter sizes of" in o for o in outs)


@pytest.mark.parametrize("text,match", [
    ('[[column]]\npath = "code"\nhide_filter_sizes = "yes"\n', "hide_filter_sizes must be true or false"),
    ('[[column]]\npath = "code"\nfilter = "forbidden"\nhide_filter_sizes = true\n', "contradictory"),
])
def test_bad_hide_filter_sizes_policies(text: str, match: str) -> None:
    with pytest.raises(PolicyError, match=match):
        parse_policy(text, "p.toml")


# --- CLI and pytest plugin -------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    rc = main(list(argv))
    out = capsys.readouterr().out
    return rc, out


def test_cli_attach_encrypt_and_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    key_file = tmp_path / "keys.txt"
    key_file.write_text(TESTING_KEY_LIST)
    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST_FILE", str(key_file))
    plain = tmp_path / "plain.parquet"
    pq.write_table(skewed_table(), plain, row_group_size=ROWS_PER_GROUP)
    encrypted = tmp_path / "enc.parquet"
    rc, out = _cli(capsys, "encrypt", str(plain), str(encrypted), "--footer-key", "kf", "--column-key", "kc1:code,n",
                   "--bloom", "code:sizing=fixed", "--bloom", "n", "--json")
    assert rc == 0
    (written,) = cli_result(out, "encrypt")
    assert {f["num_bytes"] for f in written["filters"] if f["column"] == "code"} == \
        {optimal_num_bytes(max(SKEWED_NDV), FPP)}
    attached = tmp_path / "attached.parquet"
    rc, out = _cli(capsys, "attach", str(plain), str(attached), "--bloom", "code:num_bytes=4096", "--json")
    assert rc == 0 and {f["num_bytes"] for f in cli_result(out, "attach")["filters"]} == {4096}
    rc, out = _cli(capsys, "audit", str(encrypted), "--sensitive", "code", "--hide-filter-sizes")
    assert rc == 0 and "one filter size" in out
    rc, out = _cli(capsys, "audit", str(encrypted), "--sensitive", "n", "--hide-filter-sizes", "--json")
    assert rc == 1
    assert [v["code"] for v in cli_result(out, "audit")["violations"]] == ["FILTER_SIZES_VARY"]
    rc, out = _cli(capsys, "audit", str(encrypted), "--sensitive", "n", "--assume-fpp", "0.001", "--json")
    sizes = cli_result(out, "audit")["files"][0]["columns"][0]["filter_sizes"][0]
    assert rc == 0 and sizes["assumed_fpp"] == 0.001
    for bad, message in (("code:sizing=maybe", "sizing must be one of"),
                         ("code:num_bytes=100", "num_bytes must be a power of two"),
                         ("code:num_bytes=4096:sizing=per_row_group", "it needs sizing=fixed")):
        assert main(["attach", str(plain), str(tmp_path / "x.parquet"), "--bloom", bad]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()


def test_pytest_plugin_hide_filter_sizes(pytester: pytest.Pytester, written: dict[str, Path],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST", TESTING_KEY_LIST)
    plugin = ["-p", "secure_bloom.pytest_plugin", "--secure-bloom-sensitive", "code"]
    files = ["--secure-bloom-audit", str(written["fixed"]), "--secure-bloom-audit", str(written["per_row_group"])]
    pytester.runpytest(*plugin, *files).assert_outcomes(passed=3)
    result = pytester.runpytest(*plugin, "--secure-bloom-hide-filter-sizes", *files)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([f"{written['per_row_group']}: row groups 0-3, column 'code': FILTER_SIZES_VARY: *"])
