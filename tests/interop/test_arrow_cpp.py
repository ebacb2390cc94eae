"""Arrow C++ reads the Bloom filters we write (issue 11: "parquet-java and Arrow C++ must read").

Arrow C++ (the library inside pyarrow >= 24) reads encrypted Bloom filters, but pyarrow exposes no
Bloom filter API: tests/support/arrow_bloom_check.cc is compiled against the wheel's own
libparquet and, for every column chunk with a filter, reads the chunk's values with Arrow C++'s
column readers (decrypting and decoding the pages itself), hashes each with the filter's Hash()
and asks FindHash(). Every type at its extremes, INT96, filters added by attach; and the harness
is shown to fail where it must (a wrong key, a plaintext filter on an encrypted column).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet.encryption as pe
import pytest

from secure_bloom.parquet import KeyAccess, attach_bloom_filters, write_table
from support.arrow_cpp import arrow_bloom_check, build_harness, data_keys, results
from support.extreme_table import NDV, ROWS_PER_GROUP, extreme_table
from support.leaky_writer import inject_filters, key_access, table_values, write_pyarrow_encrypted
from support.parquet_files import sample_table, vector_kms, write_encrypted

pytestmark = pytest.mark.arrow_cpp


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_harness(tmp_path_factory.mktemp("arrow-cpp"))


def _check(harness: Path, path: Path, keys: KeyAccess | None) -> dict[str, list[dict[str, Any]]]:
    by_column: dict[str, list[dict[str, Any]]] = {}
    for chunk in results(arrow_bloom_check(harness, path, data_keys(path, keys))):
        by_column.setdefault(chunk["column"], []).append(chunk)
    return by_column


def _assert_every_value_found(found: dict[str, list[dict[str, Any]]], columns: list[str],
                              values_per_group: list[int] | None = None) -> None:
    for column in columns:
        chunks = found[column]
        assert all(c["filter"] for c in chunks), (column, chunks)
        assert [c["missing"] for c in chunks] == [0] * len(chunks), (column, chunks)
        assert all(c["values"] > 0 for c in chunks), (column, chunks)
        if values_per_group is not None:
            assert [c["values"] for c in chunks] == values_per_group, column


@pytest.mark.parametrize("plaintext_footer,decimals_as_integer", [(False, False), (True, True)],
                         ids=["encrypted-footer-flba-decimals", "plaintext-footer-integer-decimals"])
def test_arrow_cpp_finds_every_value_write_table_wrote(harness: Path, tmp_path: Path, plaintext_footer: bool,
                                                       decimals_as_integer: bool) -> None:
    table, expected = extreme_table(decimals_as_integer)
    names = list(table.column_names)
    keyed = {"kc1": names[: len(names) // 2], "kc2": names[len(names) // 2:]}
    path = tmp_path / "written.parquet"
    write_table(table, path, encryption=pe.EncryptionConfiguration(
        footer_key="kf", column_keys=keyed, plaintext_footer=plaintext_footer), kms=vector_kms(),
        bloom_filter_options={c: {"ndv": NDV} for c in expected}, row_group_size=ROWS_PER_GROUP,
        coerce_timestamps=None, store_decimal_as_integer=decimals_as_integer)
    found = _check(harness, path, KeyAccess(kms=vector_kms()))
    _assert_every_value_found(found, list(expected))
    # the distinct values Arrow C++ hashed include every extreme value of each row group
    for column, groups in expected.items():
        assert [c["values"] >= len(g) for c, g in zip(found[column], groups)] == [True] * len(groups), column


def test_arrow_cpp_finds_int96_and_exactly_sized_filters(harness: Path, tmp_path: Path) -> None:
    path = tmp_path / "int96.parquet"
    write_table(sample_table(4000), path, encryption=pe.EncryptionConfiguration(
        footer_key="kf", column_keys={"kc1": ["ssn", "ts"]}), kms=vector_kms(),
        bloom_filter_options={"ssn": True, "ts": True, "id": True, "score": True}, row_group_size=1500,
        use_deprecated_int96_timestamps=True)
    found = _check(harness, path, KeyAccess(kms=vector_kms()))
    _assert_every_value_found(found, ["ssn", "ts", "id", "score"], [1500, 1500, 1000])
    assert [c["filter"] for c in found["amount"]] == [False] * 3  # no filter asked: none written


def test_arrow_cpp_reads_the_filters_attach_added(harness: Path, tmp_path: Path) -> None:
    src, dst = tmp_path / "pyarrow.parquet", tmp_path / "attached.parquet"
    write_encrypted(src)
    attach_bloom_filters(src, dst, ["id", "ssn", "amount", "ts"], KeyAccess(kms=vector_kms()))
    found = _check(harness, dst, KeyAccess(kms=vector_kms()))
    _assert_every_value_found(found, ["id", "ssn", "amount", "ts"], [1000, 1000, 1000])


def test_the_harness_fails_on_a_wrong_key_and_on_a_leaked_filter(harness: Path, tmp_path: Path) -> None:
    src = tmp_path / "src.parquet"
    write_pyarrow_encrypted(src)
    keys = key_access()
    good = data_keys(src, keys)
    wrong = "\n".join(line[:-1] + ("0" if line[-1] != "0" else "1") if line.startswith("column ssn") else line
                      for line in good.splitlines()) + "\n"
    bad_key = arrow_bloom_check(harness, src, wrong)
    assert bad_key.returncode == 2 and "arrow_bloom_check:" in bad_key.stderr
    # A plaintext filter on the encrypted column ssn (what arrow-rs writes): Arrow C++ cannot
    # decrypt it as the modules it must be, so the harness errors instead of finding the values.
    leaky = tmp_path / "leaky.parquet"
    inject_filters(src, leaky, {"ssn": "plaintext"}, keys, values=table_values())
    leaked = arrow_bloom_check(harness, leaky, data_keys(leaky, keys))
    assert leaked.returncode == 2 and "bloom filter" in leaked.stderr.lower(), leaked.stdout
    # Filters built from the other row group's values: Arrow C++ misses every value it reads.
    values = table_values()
    swapped = tmp_path / "swapped.parquet"
    inject_filters(src, swapped, {"ssn": "column_key"}, keys, values={**values, "ssn": values["ssn"][::-1]})
    chunks = _check(harness, swapped, keys)["ssn"]
    assert [(c["filter"], c["missing"]) for c in chunks] == [(True, c["values"]) for c in chunks]
    # the same file with an encrypted filter is read and every value found
    sound = tmp_path / "sound.parquet"
    inject_filters(src, sound, {"ssn": "column_key"}, keys, values=table_values())
    _assert_every_value_found(_check(harness, sound, keys), ["ssn"])
