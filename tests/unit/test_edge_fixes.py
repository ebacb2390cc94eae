"""Regressions for edge cases found in review: size caps, numpy bytes arrays, timestamp nanos."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from secure_bloom import SplitBlockBloomFilter
from secure_bloom.errors import InvalidValueError
from secure_bloom.filter import optimal_num_bytes, round_num_bytes
from secure_bloom.values.logical import encode_timestamp
from secure_bloom.values.physical import hash_value, hash_values


@pytest.mark.parametrize("cap,expected", [(1_000_000, 524_288), (1 << 20, 1 << 20), (33, 32), (100, 64)])
def test_non_power_of_two_cap_gives_a_constructible_size(cap: int, expected: int) -> None:
    size = round_num_bytes(10**9 // 8, cap)
    assert size == expected
    SplitBlockBloomFilter(size)  # every size we hand out must be accepted by the constructor
    assert SplitBlockBloomFilter.for_ndv(10**7, 0.01, max_bytes=cap).num_bytes == expected
    assert optimal_num_bytes(10, 0.01, cap) == 32


def test_numpy_bytes_arrays_fixed_width_hash_every_byte() -> None:
    values = [b"ab\x00\x00", b"\x00\x00\x00\x00", b"cdef"]
    arr = np.array(values, dtype="S4")
    got = hash_values(arr, "FIXED_LEN_BYTE_ARRAY", type_length=4)
    assert list(got) == [hash_value(v, "FIXED_LEN_BYTE_ARRAY", type_length=4) for v in values]


def test_numpy_bytes_arrays_are_refused_for_byte_array() -> None:
    # b"a\x00" would silently become b"a": refuse rather than hash the wrong bytes.
    with pytest.raises(InvalidValueError, match="trailing NUL"):
        hash_values(np.array([b"a\x00"], dtype="S2"), "BYTE_ARRAY")


@pytest.mark.parametrize("nanos", [-1, 1000])
def test_timestamp_nanos_out_of_range(nanos: int) -> None:
    with pytest.raises(ValueError, match="0..999"):
        encode_timestamp(dt.datetime(2024, 1, 1), "nanos", nanos=nanos)


def test_timestamp_nanos_in_range() -> None:
    base = encode_timestamp(dt.datetime(2024, 1, 1), "nanos")
    assert encode_timestamp(dt.datetime(2024, 1, 1), "nanos", nanos=999) == base + 999


def test_attach_without_footer_key_names_the_key_not_its_material(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from parquet_files import write_encrypted

    from secure_bloom.errors import MissingKeyError
    from secure_bloom.parquet import NO_KEYS
    from secure_bloom.parquet.attach import attach_bloom_filters

    src = write_encrypted(tmp_path / "signed.parquet", plaintext_footer=True)
    with pytest.raises(MissingKeyError) as info:
        attach_bloom_filters(src, tmp_path / "out.parquet", ["id"], keys=NO_KEYS)
    message = str(info.value)
    assert "'kf'" in message  # the master key id
    for material in ("wrappedDEK", "wrappedKEK", "keyMaterialType", "{"):
        assert material not in message
    assert not (tmp_path / "out.parquet").exists()


def test_plaintext_filter_on_encrypted_column_is_named_and_isolated(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import leaky_writer as lw

    from secure_bloom.errors import PlaintextFilterOnEncryptedColumnError
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader

    src, dst = tmp_path / "src.parquet", tmp_path / "leak.parquet"
    lw.write_pyarrow_encrypted(src)
    keys = KeyAccess(kms=KeyListKms(lw.key_list()))
    values = lw.table_values()
    lw.inject_filters(src, dst, {"ssn": "plaintext", "email": "column_key"}, keys,
                      values={"ssn": values["ssn"], "email": values["email"]})
    with ParquetBloomReader(dst, keys=keys) as reader:
        with pytest.raises(PlaintextFilterOnEncryptedColumnError, match="stored in plaintext"):
            reader.bloom_filter(0, "ssn")
        chunks = {(c.row_group, c.column): c for c in reader.chunks()}
        assert chunks[(0, "ssn")].filter_error is not None and "plaintext" in chunks[(0, "ssn")].filter_error
        assert chunks[(0, "email")].filter_error is None and chunks[(0, "email")].filter_num_bytes
        assert reader.row_groups_maybe_containing("email", values["email"][1][0]) == [1]
        assert reader.describe()  # one leaked chunk does not stop the rest from being described


def test_attach_reports_expected_fpp_and_the_size_cap(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import pyarrow as pa
    import pyarrow.parquet as pq

    from secure_bloom.cli import main
    from secure_bloom.parquet.attach import attach_bloom_filters

    src = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"v": pa.array(range(20_000), pa.int64())}), src, row_group_size=20_000)
    roomy = attach_bloom_filters(src, tmp_path / "roomy.parquet", ["v"], fpp=0.01)
    assert not roomy.filters[0].capped and roomy.filters[0].expected_fpp < 0.01
    tight = attach_bloom_filters(src, tmp_path / "tight.parquet", ["v"], fpp=0.01, max_bytes=1024)
    assert tight.filters[0].capped and tight.filters[0].num_bytes == 1024
    assert tight.filters[0].expected_fpp > 0.5  # 20k values in 1 KiB: nearly every probe says "maybe"
    assert main(["attach", str(src), str(tmp_path / "cli.parquet"), "--column", "v", "--max-bytes", "1024"]) == 0
    assert "hit the size cap" in capsys.readouterr().out
    assert main(["attach", str(src), str(tmp_path / "bad.parquet"), "--column", "v", "--max-bytes", "1000"]) == 2
