"""Test helper: a table of every Parquet type pyarrow writes, at the extremes of each type, and
the plain encodings (hex) parquet-java must read from each row group (BloomVerify's ground truth).

Used by the attach and write interop tests (parquet-java's own reader checks our filters).
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from support.parquet_files import TESTING_KEY_LIST

__all__ = ["READ_CONF", "ROWS_PER_GROUP", "NDV", "I32_MIN", "I32_MAX", "I64_MIN", "I64_MAX", "le",
           "extreme_table", "check_all_found", "assert_same_table"]

READ_CONF = {"parquet.crypto.factory.class": "org.apache.parquet.crypto.keytools.PropertiesDrivenCryptoFactory",
             "parquet.encryption.kms.client.class": "io.securebloom.KeyListKmsClient",
             "parquet.encryption.key.list": TESTING_KEY_LIST}

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
DAY_0001 = (dt.date(1, 1, 1) - dt.date(1970, 1, 1)).days  # -719162
DAY_9999 = (dt.date(9999, 12, 31) - dt.date(1970, 1, 1)).days  # 2932896
DAY_MS = 86_400_000
LONG_TEXT = "\u00e9x" * 60_000  # 180,000 UTF-8 bytes
LONG_BYTES = bytes(range(256)) * 400


def le(fmt: str) -> Callable[[Any], str]:
    return lambda v: struct.pack("<" + fmt, v).hex()


def _f32_bits(bits: Sequence[int]) -> np.ndarray:
    return np.array(bits, np.uint32).view(np.float32)


def _f64_bits(bits: Sequence[int]) -> np.ndarray:
    return np.array(bits, np.uint64).view(np.float64)


def _f16_bits(bits: Sequence[int]) -> np.ndarray:
    return np.array(bits, np.uint16).view(np.float16)


F32_BITS = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x00000001,
            0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3FC00000]
F64_BITS = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000000,
            1, 0x800FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF,
            0x3FF8000000000000]
F16_BITS = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x0001, 0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x3E00]


def _dec_values(precision: int) -> list[int]:
    top = 10**precision - 1
    return [top, -top, 0, 1, -1, 10 ** (precision - 1)]


def _dec_width(precision: int) -> int:
    """pyarrow's FIXED_LEN_BYTE_ARRAY width: the fewest bytes holding 10^p - 1 in two's complement."""
    width = 1
    while 2 ** (8 * width - 1) <= 10**precision - 1:
        width += 1
    return width


def _unscaled(d: Decimal) -> int:
    sign, digits, exponent = d.as_tuple()
    assert exponent == -2
    return (-1 if sign else 1) * int("".join(map(str, digits)))


def _dec(precision: int, as_integer: bool) -> tuple[pa.DataType, list[Any], Callable[[Any], str]]:
    arrow = pa.decimal128(precision, 2) if precision <= 38 else pa.decimal256(precision, 2)
    values = [Decimal((int(u < 0), tuple(map(int, str(abs(u)))), -2)) for u in _dec_values(precision)]
    if as_integer and precision <= 9:
        return arrow, values, lambda d: struct.pack("<i", _unscaled(d)).hex()
    if as_integer and precision <= 18:
        return arrow, values, lambda d: struct.pack("<q", _unscaled(d)).hex()
    width = _dec_width(precision)
    return arrow, values, lambda d: _unscaled(d).to_bytes(width, "big", signed=True).hex()


def _columns(decimals_as_integer: bool) -> dict[str, tuple[pa.DataType, list[Any], Callable[[Any], str]]]:
    """name -> (Arrow type, values, plain encoding of one value as parquet-java reads it, hex)."""
    u32 = le("I")
    cols: dict[str, tuple[pa.DataType, list[Any], Callable[[Any], str]]] = {
        "i8": (pa.int8(), [-128, 127, 0, -1], le("i")),
        "i16": (pa.int16(), [-(2**15), 2**15 - 1, 0, -1], le("i")),
        "i32": (pa.int32(), [I32_MIN, I32_MAX, 0, -1], le("i")),
        "i64": (pa.int64(), [I64_MIN, I64_MAX, 0, -1], le("q")),
        "u8": (pa.uint8(), [0, 255, 1, 128], u32),
        "u16": (pa.uint16(), [0, 2**16 - 1, 1, 2**15], u32),
        "u32": (pa.uint32(), [0, 2**32 - 1, 1, 2**31], u32),  # stored as the int32 bit pattern
        "u64": (pa.uint64(), [0, 2**64 - 1, 1, 2**63], le("Q")),
        "f32": (pa.float32(), list(_f32_bits(F32_BITS)), lambda v: np.float32(v).tobytes().hex()),
        "f64": (pa.float64(), list(_f64_bits(F64_BITS)), lambda v: np.float64(v).tobytes().hex()),
        "f16": (pa.float16(), list(_f16_bits(F16_BITS)), lambda v: np.float16(v).tobytes().hex()),
        "date": (pa.date32(), [DAY_0001, DAY_9999, 0, -1], le("i")),
        "date64": (pa.date64(), [DAY_0001 * DAY_MS, DAY_9999 * DAY_MS, 0, -DAY_MS],
                   lambda v: struct.pack("<i", v // DAY_MS).hex()),  # stored as INT32 days
        "t_s": (pa.time32("s"), [0, 86_399, 1], lambda v: struct.pack("<i", v * 1000).hex()),  # as millis
        "t_ms": (pa.time32("ms"), [0, 86_399_999, 1], le("i")),
        "t_us": (pa.time64("us"), [0, 86_399_999_999, 1], le("q")),
        "ts_s": (pa.timestamp("s"), [DAY_0001 * 86_400, (DAY_9999 + 1) * 86_400 - 1, 0, -1],
                 lambda v: struct.pack("<q", v * 1000).hex()),  # stored as millis
        "ts_ms": (pa.timestamp("ms"), [DAY_0001 * DAY_MS, (DAY_9999 + 1) * DAY_MS - 1, 0, -1], le("q")),
        "ts_us": (pa.timestamp("us", tz="UTC"), [DAY_0001 * DAY_MS * 1000, (DAY_9999 + 1) * DAY_MS * 1000 - 1,
                                                 0, -1], le("q")),
        "ts_ns": (pa.timestamp("ns"), [I64_MAX, -I64_MAX, 0, 1], le("q")),
        "dec9": _dec(9, decimals_as_integer),
        "dec18": _dec(18, decimals_as_integer),
        "dec38": _dec(38, decimals_as_integer),
        "dec76": _dec(76, decimals_as_integer),
        "s": (pa.string(), ["", LONG_TEXT, "\x00", "\U0001f600"], lambda v: v.encode().hex()),
        "ls": (pa.large_string(), ["", LONG_TEXT + "!", "a"], lambda v: v.encode().hex()),
        "b": (pa.binary(), [b"", LONG_BYTES, b"\x00", b"\xff" * 3], lambda v: v.hex()),
        "lb": (pa.large_binary(), [b"", b"\x00\x00", LONG_BYTES[:-1]], lambda v: v.hex()),
        "fixed": (pa.binary(16), [b"\x00" * 16, b"\xff" * 16, bytes(range(16))], lambda v: v.hex()),
        "dict": (pa.dictionary(pa.int32(), pa.string()), ["", "x", LONG_TEXT[:999]], lambda v: v.encode().hex()),
    }
    return cols


ROWS_PER_GROUP = 8
NDV = 2000  # 4 KiB filters (128 blocks): a few values per chunk would get one-block filters, where
#            the block index cannot be wrong


def extreme_table(decimals_as_integer: bool) -> tuple[pa.Table, dict[str, list[set[str]]]]:
    """Two row groups of 8 rows; each column's extremes spread over both groups (row i of a column
    holds its value i mod len; row 7 null), plus a struct and a list column. Returns the table and,
    per leaf path, the hex plain encodings parquet-java must read in each row group."""
    n = 2 * ROWS_PER_GROUP
    arrays: dict[str, pa.Array] = {}
    expected: dict[str, list[set[str]]] = {}
    for name, (arrow_type, values, encode) in _columns(decimals_as_integer).items():
        rows: list[Any] = [values[i % len(values)] if i != 7 else None for i in range(n)]
        if isinstance(values[0], np.floating):
            mask = np.array([r is None for r in rows])
            arr = np.array([r if r is not None else 0 for r in rows], dtype=type(values[0]))
            arrays[name] = pa.array(arr, arrow_type, mask=mask)
        elif pa.types.is_dictionary(arrow_type):
            arrays[name] = pa.array(rows, pa.string()).dictionary_encode()
        else:
            arrays[name] = pa.array(rows, arrow_type)
        expected[name] = [{encode(r) for r in rows[g * ROWS_PER_GROUP:(g + 1) * ROWS_PER_GROUP] if r is not None}
                          for g in range(2)]
    people = [{"id": I32_MIN + i, "name": "" if i % 4 == 0 else f"p{i}"} if i != 3 else None for i in range(n)]
    arrays["person"] = pa.array(people, pa.struct([("id", pa.int32()), ("name", pa.string())]))
    tags = [[I64_MIN + i, I64_MAX - i] if i % 5 else ([] if i % 2 else None) for i in range(n)]
    arrays["tags"] = pa.array(tags, pa.list_(pa.int64()))
    groups = [range(g * ROWS_PER_GROUP, (g + 1) * ROWS_PER_GROUP) for g in range(2)]
    expected["person.id"] = [{struct.pack("<i", people[i]["id"]).hex() for i in rg if people[i]} for rg in groups]
    expected["person.name"] = [{people[i]["name"].encode().hex() for i in rg if people[i]} for rg in groups]
    expected["tags.list.element"] = [{struct.pack("<q", v).hex() for i in rg for v in (tags[i] or [])}
                                     for rg in groups]
    return pa.table(arrays), expected


def check_all_found(result: dict[str, Any], expected: dict[str, list[set[str]]]) -> None:
    """parquet-java read exactly the expected values in each chunk and found every one of them."""
    assert set(result["columns"]) == set(expected)
    for column, groups in expected.items():
        got = result["columns"][column]["row_groups"]
        assert [set(rg["values"]) for rg in got] == groups, column
        assert [(rg["has_bloom_filter"], rg["missing"], rg["missing_values"]) for rg in got] == \
            [(True, 0, [])] * 2, column


def assert_same_table(got: pa.Table, want: pa.Table) -> None:
    """Equal tables, floats compared by their bits (NaN != NaN for Table.equals)."""
    floats = [n for n in want.column_names if pa.types.is_floating(want.schema.field(n).type)]
    assert got.drop_columns(floats).equals(want.drop_columns(floats))
    for name in floats:
        a, b = (t.column(name).combine_chunks() for t in (got, want))
        assert a.is_null().equals(b.is_null())
        assert np.array_equal(a.fill_null(0).to_numpy().view(f"u{a.type.byte_width}"),
                              b.fill_null(0).to_numpy().view(f"u{b.type.byte_width}")), name
