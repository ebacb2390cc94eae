"""secure_bloom.kernels: native C == numpy fallback == scalar path, bit for bit (SPEC_NOTES 1-2).

Every test that takes ``kernels`` runs once per backend: "native" (secure_bloom.native_kernels, skipped
only where the extension is not built) and "numpy" (SECURE_BLOOM_KERNEL=numpy). The scalar
reference is :func:`secure_bloom.values.hash_value` and :meth:`SplitBlockBloomFilter.insert_hash`.
"""

from __future__ import annotations

import importlib
import importlib.util
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from support.components import missing

from secure_bloom import spec
from secure_bloom import kernels as kernels_module
from secure_bloom.errors import InvalidValueError, MalformedBitsetError, MalformedInputError
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.types import PhysicalType
from secure_bloom.values import hash_value, hash_values
from support.paths import VECTORS_DIR

VECTORS = VECTORS_DIR
PROPERTY = settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.function_scoped_fixture])
NATIVE_BUILT = importlib.util.find_spec("secure_bloom.native_kernels") is not None
MASK64 = (1 << 64) - 1


def _reload(monkeypatch: pytest.MonkeyPatch, choice: str | None) -> ModuleType:
    if choice is None:
        monkeypatch.delenv(kernels_module.ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(kernels_module.ENV_VAR, choice)
    return importlib.reload(kernels_module)


@pytest.fixture(params=[pytest.param("native", marks=pytest.mark.native), "numpy"])
def kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    if request.param == "native" and not NATIVE_BUILT:
        missing("native", "secure_bloom.native_kernels is not built in this environment")
    module = _reload(monkeypatch, request.param)
    assert module.BACKEND == request.param
    yield module
    monkeypatch.undo()
    importlib.reload(kernels_module)


def scalar_bitset(num_bytes: int, hashes: Any) -> bytes:
    """The scalar path: insert_hash one by one into the whole blocks; tail bytes stay zero."""
    whole = num_bytes // 32 * 32
    bf = SplitBlockBloomFilter.from_bitset(bytes(whole))
    for h in hashes:
        bf.insert_hash(int(h))
    return bf.bitset + bytes(num_bytes - whole)


def scalar_check(bitset: bytes, hashes: Any) -> list[bool]:
    bf = SplitBlockBloomFilter.from_bitset(bitset[:len(bitset) // 32 * 32])
    return [bf.check_hash(int(h)) for h in hashes]


def offsets_and_data(values: list[bytes], width: str = "<i4") -> tuple[np.ndarray, bytes]:
    offsets = np.zeros(len(values) + 1, dtype=width)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return offsets, b"".join(values)


def validity_bitmap(present: list[bool], offset: int = 0) -> bytes:
    bits = np.zeros(offset + len(present), dtype=np.uint8)
    bits[offset:] = present
    return np.packbits(bits, bitorder="little").tobytes()


# ----------------------------------------------------------------------- backend selection


def test_numpy_forced_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _reload(monkeypatch, "numpy")
    try:
        assert module.BACKEND == "numpy"
        assert module.kernel_info() == {"backend": "numpy", "unavailable_reason": "SECURE_BLOOM_KERNEL=numpy"}
    finally:
        monkeypatch.undo()
        importlib.reload(kernels_module)


def test_unknown_backend_choice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kernels_module.ENV_VAR, "fast")
    try:
        with pytest.raises(ValueError, match="SECURE_BLOOM_KERNEL must be auto, native or numpy, got 'fast'"):
            importlib.reload(kernels_module)
    finally:
        monkeypatch.undo()
        importlib.reload(kernels_module)


@pytest.mark.native
def test_native_is_the_default_where_built(monkeypatch: pytest.MonkeyPatch) -> None:
    if not NATIVE_BUILT:
        missing("native", "secure_bloom.native_kernels is not built in this environment")
    module = _reload(monkeypatch, None)
    info = module.kernel_info()
    assert module.BACKEND == "native"
    assert info["unavailable_reason"] is None
    assert "-O3" in info["flags"] or "/O2" in info["flags"]
    assert info["simd"] in ("avx2", "scalar")


@pytest.mark.native
def test_the_kernel_in_use_is_the_one_built_with_this_package() -> None:
    """Run from the installed wheel (scripts/test), the library uses the extension the wheel built."""
    if not NATIVE_BUILT:
        missing("native", "secure_bloom.native_kernels is not built in this environment")
    import secure_bloom
    import secure_bloom.native_kernels as built

    assert Path(built.__file__).parent == Path(secure_bloom.__file__).parent
    assert kernels_module.BACKEND == "native" and kernels_module.kernel_summary().startswith("native (")


def test_forced_backend_switches_and_restores() -> None:
    before = kernels_module.BACKEND
    with kernels_module.forced_backend("numpy"):
        assert kernels_module.BACKEND == "numpy"
        assert kernels_module.kernel_info()["backend"] == "numpy"
        bf = SplitBlockBloomFilter(64)
        bf.insert(np.arange(100, dtype=np.int64), "INT64")
    assert kernels_module.BACKEND == before
    ref = SplitBlockBloomFilter(64)
    ref.insert(np.arange(100, dtype=np.int64), "INT64")
    assert bf == ref
    with pytest.raises(ValueError, match="backend must be native or numpy, got 'gpu'"):
        with kernels_module.forced_backend("gpu"):
            pass


def test_bitset_limits_are_the_specs() -> None:
    assert (kernels_module.MIN_BITSET_BYTES, kernels_module.MAX_BITSET_BYTES) == (32, 128 << 20) == (
        spec.MIN_BITSET_BYTES, spec.SPEC_MAX_BITSET_BYTES)


# ----------------------------------------------------------------------- known answers (SPEC_NOTES 2)


def test_known_answers(kernels: ModuleType) -> None:
    offsets, data = offsets_and_data([b"", b"hello", b"a", b"abc"])
    assert kernels.xxh64_binary(offsets, data).tolist() == [
        0xEF46DB3751D8E999, 0x26C7827D889F6DA3, 0xD24EC4F1A98C6E5B, 0x44BC2CF5AD770999]
    assert kernels.xxh64_fixed(np.array([0, 1, -1], dtype="<i8"), 8).tolist() == [
        0x34C96ACDCADB1BBB, 0x9F29CB17A2A49995, 0x85D136ADB773C6C9]
    assert kernels.xxh64_fixed(np.array([0, 42], dtype="<i4"), 4).tolist() == [
        0x3AEFA6FD5CF2DEB4, 0xD756D7B62FC50BF1]
    assert kernels.xxh64_fixed(struct.pack("<d", 1.5), 8).tolist() == [0x49F7B96B6B5CCAF9]
    assert kernels.xxh64_fixed(struct.pack("<f", 1.5), 4).tolist() == [0x4F2D82595C483A0D]


def test_rebuild_parquet_testing_xxhash_bin(kernels: ModuleType) -> None:
    data = (VECTORS / "bloom_filter.xxhash.bin").read_bytes()
    bitset = bytearray(1024)
    offsets, values = offsets_and_data([b"hello", b"parquet", b"bloom", b"filter"])
    assert kernels.sbbf_insert_binary(bitset, offsets, values) == 4
    assert bytes(bitset) == data[16:]
    assert kernels.sbbf_check_binary(data[16:], offsets, values).tolist() == [True] * 4
    from_arrow = bytearray(1024)
    assert kernels.sbbf_insert_arrow(from_arrow, pa.array(["hello", "parquet", "bloom", "filter"],
                                                          pa.string_view())) == 4
    assert bytes(from_arrow) == data[16:]


# ----------------------------------------------------------------------- fixed width, every physical type


@PROPERTY
@given(width=st.integers(1, 40), rows=st.lists(st.binary(min_size=40, max_size=40), max_size=60))
def test_fixed_width_equals_scalar(kernels: ModuleType, width: int, rows: list[bytes]) -> None:
    values = [r[:width] for r in rows]
    expected = [hash_value(v, PhysicalType.FIXED_LEN_BYTE_ARRAY, type_length=width) for v in values]
    assert kernels.xxh64_fixed(b"".join(values), width).tolist() == expected


def test_every_physical_encoding(kernels: ModuleType) -> None:
    rng = np.random.default_rng(7)
    ints32 = [0, 1, -1, 2**31 - 1, -(2**31), 42]
    ints64 = [0, 1, -1, 2**63 - 1, -(2**63), 1 << 40]
    doubles = np.array([0.0, -0.0, 1.5, np.inf, -np.inf], dtype="<f8")
    nan_bits = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FF4DEADBEEF0001],
                        dtype="<u8")
    doubles = np.concatenate([doubles, nan_bits.view("<f8")])
    floats = np.concatenate([np.array([0.0, -0.0, 1.5, np.inf], dtype="<f4"),
                             np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA5A5A5], dtype="<u4").view("<f4")])
    int96 = [rng.bytes(12) for _ in range(9)]
    cases: list[tuple[bytes, int, list[int]]] = [
        (np.array(ints32, dtype="<i4").tobytes(), 4, [hash_value(v, "INT32") for v in ints32]),
        (np.array(ints64, dtype="<i8").tobytes(), 8, [hash_value(v, "INT64") for v in ints64]),
        (doubles.tobytes(), 8, [hash_value(float(v), "DOUBLE") for v in doubles]),
        (floats.tobytes(), 4, [hash_value(v, "FLOAT") for v in floats]),
        (b"".join(int96), 12, [hash_value(v, "INT96") for v in int96]),
    ]
    for data, width, expected in cases:
        assert kernels.xxh64_fixed(data, width).tolist() == expected
    # -0.0 and +0.0, and the two NaN signs, hash differently (raw bits, SPEC_NOTES 2)
    h = kernels.xxh64_fixed(doubles.tobytes(), 8)
    assert h[0] != h[1] and h[5] != h[6]


@pytest.mark.parametrize("width", [4, 8, 12, 16, 3, 33])
def test_fused_fixed_equals_scalar_with_nulls(kernels: ModuleType, width: int) -> None:
    rng = np.random.default_rng(width)
    n = 3000
    data = rng.bytes(n * width)
    present = (rng.random(n) > 0.3).tolist()
    valid = [data[i * width:(i + 1) * width] for i in range(n) if present[i]]
    hashes = [hash_value(v, "FIXED_LEN_BYTE_ARRAY", type_length=width) for v in valid]
    bitmap = validity_bitmap(present, offset=5)
    assert kernels.xxh64_fixed(data, width, validity=bitmap, validity_offset=5).tolist() == hashes
    bitset = bytearray(1000)
    assert kernels.sbbf_insert_fixed(bitset, data, width, validity=bitmap, validity_offset=5) == len(valid)
    assert bytes(bitset) == scalar_bitset(1000, hashes)
    probe = rng.bytes(500 * width)
    probe_hashes = [hash_value(probe[i * width:(i + 1) * width], "FIXED_LEN_BYTE_ARRAY", type_length=width)
                    for i in range(500)]
    assert kernels.sbbf_check_fixed(bytes(bitset), probe, width).tolist() == scalar_check(bytes(bitset),
                                                                                          probe_hashes)
    assert kernels.sbbf_check_fixed(bytes(bitset), data, width, validity=bitmap,
                                    validity_offset=5).tolist() == [True] * len(valid)


def test_arrow_fixed_width_types_sliced_with_nulls(kernels: ModuleType) -> None:
    ints = [5, None, -7, 2**31 - 1, None, 0, 42]
    cases = [
        (pa.array(ints, pa.int32()), [hash_value(v, "INT32") for v in ints if v is not None]),
        (pa.array(ints, pa.int64()), [hash_value(v, "INT64") for v in ints if v is not None]),
        (pa.array([1.5, None, -0.0, 2.25], pa.float64()), [hash_value(v, "DOUBLE") for v in (1.5, -0.0, 2.25)]),
        (pa.array([1.5, None, -0.0], pa.float32()), [hash_value(v, "FLOAT") for v in (1.5, -0.0)]),
        (pa.array([19000, None, 1], pa.date32()), [hash_value(v, "INT32") for v in (19000, 1)]),
        (pa.array([b"abcdefghijkl", None, b"0123456789ab"], pa.binary(12)),
         [hash_value(v, "INT96") for v in (b"abcdefghijkl", b"0123456789ab")]),
    ]
    for array, expected in cases:
        assert kernels.xxh64_arrow(array).tolist() == expected
        sliced = array[1:]                                             # non-zero offset, first value dropped
        assert kernels.xxh64_arrow(sliced).tolist() == expected[1:]


# ----------------------------------------------------------------------- BYTE_ARRAY from every Arrow layout

BINARY_TYPES = [pa.string(), pa.binary(), pa.large_string(), pa.large_binary(), pa.string_view(),
                pa.binary_view()]


@PROPERTY
@given(values=st.lists(st.one_of(st.none(), st.binary(max_size=80)), max_size=80),
       start=st.integers(0, 10), type_index=st.integers(0, len(BINARY_TYPES) - 1))
def test_arrow_binary_equals_scalar(kernels: ModuleType, values: list[bytes | None], start: int,
                                    type_index: int) -> None:
    typ = BINARY_TYPES[type_index]
    is_text = typ in (pa.string(), pa.large_string(), pa.string_view())
    as_type = [v.decode("latin-1") if v is not None and is_text else v for v in values]
    array = pa.array(as_type, type=typ)[start:]                       # a slice: non-zero offset
    present = [v for v in array.to_pylist() if v is not None]
    expected = [hash_value(v, "BYTE_ARRAY") for v in present]
    assert kernels.xxh64_arrow(array).tolist() == expected
    bitset = bytearray(96)                                             # 3 blocks: many values per block
    assert kernels.sbbf_insert_arrow(bitset, array) == len(present)
    assert bytes(bitset) == scalar_bitset(96, expected)
    assert kernels.sbbf_check_arrow(bytes(bitset), array).tolist() == [True] * len(present)


def test_arrow_chunked_and_long_values(kernels: ModuleType) -> None:
    rng = np.random.default_rng(3)
    words = [rng.bytes(int(n)) for n in rng.integers(0, 200, size=2000)]
    chunked = pa.chunked_array([pa.array(words[:700], pa.large_binary()), pa.array(words[700:], pa.large_binary())])
    expected = [hash_value(w, "BYTE_ARRAY") for w in words]
    assert kernels.xxh64_arrow(chunked).tolist() == expected
    assert kernels.xxh64_arrow(chunked.cast(pa.binary_view())).tolist() == expected
    assert kernels.xxh64_arrow(pa.chunked_array([], pa.string())).tolist() == []


def test_binary_view_buffers_directly(kernels: ModuleType) -> None:
    array = pa.array(["short", "exactly12byt", "a value longer than twelve bytes", "", None, "x" * 40],
                     pa.string_view())
    buffers = array.buffers()
    expected = [hash_value(v, "BYTE_ARRAY") for v in array.to_pylist() if v is not None]
    got = kernels.xxh64_binary_view(buffers[1], buffers[2:], validity=buffers[0], validity_offset=0)
    assert got.tolist() == expected
    bitset = bytearray(64)
    assert kernels.sbbf_insert_binary_view(bitset, buffers[1], buffers[2:], validity=buffers[0]) == 5
    assert bytes(bitset) == scalar_bitset(64, expected)
    assert kernels.sbbf_check_binary_view(bytes(bitset), buffers[1], buffers[2:],
                                          validity=buffers[0]).tolist() == [True] * 5


@pytest.mark.parametrize("offset_width", [4, 8])
def test_fused_binary_equals_scalar(kernels: ModuleType, offset_width: int) -> None:
    rng = np.random.default_rng(offset_width)
    values = [rng.bytes(int(n)) for n in rng.integers(0, 45, size=5000)]
    offsets, data = offsets_and_data(values, "<i4" if offset_width == 4 else "<i8")
    expected = [hash_value(v, "BYTE_ARRAY") for v in values]
    assert kernels.xxh64_binary(offsets, data, offset_width).tolist() == expected
    bitset = bytearray(4096)
    assert kernels.sbbf_insert_binary(bitset, offsets, data, offset_width) == len(values)
    assert bytes(bitset) == scalar_bitset(4096, expected)
    probe_offsets, probe_data = offsets_and_data([b"not%d" % i for i in range(2000)], offsets.dtype.str)
    probe = [hash_value(b"not%d" % i, "BYTE_ARRAY") for i in range(2000)]
    assert kernels.sbbf_check_binary(bytes(bitset), probe_offsets, probe_data,
                                     offset_width).tolist() == scalar_check(bytes(bitset), probe)


# ----------------------------------------------------------------------- hash-level insert / check


@pytest.mark.parametrize("num_bytes", [32, 64, 96, 1000, 4096, 33 * 32 + 7, 1 << 20, 3 << 20])
def test_insert_check_every_filter_size(kernels: ModuleType, num_bytes: int) -> None:
    rng = np.random.default_rng(num_bytes)
    hashes = rng.integers(0, MASK64, size=3000, dtype=np.uint64, endpoint=True)
    bitset = bytearray(num_bytes)
    kernels.sbbf_insert(bitset, hashes)
    assert bytes(bitset) == scalar_bitset(num_bytes, hashes)            # tail bytes untouched
    probe = rng.integers(0, MASK64, size=3000, dtype=np.uint64, endpoint=True)
    assert kernels.sbbf_check(bytes(bitset), probe).tolist() == scalar_check(bytes(bitset), probe)
    assert kernels.sbbf_check(bitset, hashes).all()


@PROPERTY
@given(hashes=st.lists(st.integers(0, MASK64), max_size=300), blocks=st.integers(1, 40),
       tail=st.integers(0, 31))
def test_many_values_in_few_blocks(kernels: ModuleType, hashes: list[int], blocks: int, tail: int) -> None:
    num_bytes = blocks * 32 + tail
    bitset = bytearray(num_bytes)
    kernels.sbbf_insert(bitset, hashes)
    assert bytes(bitset) == scalar_bitset(num_bytes, hashes)
    assert kernels.sbbf_check(bitset, hashes).tolist() == [True] * len(hashes)


@PROPERTY
@given(sizes=st.lists(st.sampled_from([32, 64, 96, 33 * 32 + 7, 4096]), max_size=6),
       hashes=st.lists(st.integers(0, MASK64), max_size=200), seed=st.integers(0, 2**32 - 1))
def test_check_many_is_check_of_each_bitset(kernels: ModuleType, sizes: list[int], hashes: list[int],
                                            seed: int) -> None:
    """sbbf_check_many row f == sbbf_check(bitsets[f]) == the scalar check, for filters of mixed
    sizes, half of the hashes inserted in each (so both answers occur)."""
    rng = np.random.default_rng(seed)
    probe = np.array(hashes, dtype=np.uint64)
    bitsets = []
    for size in sizes:
        bitset = bytearray(size)
        kernels.sbbf_insert(bitset, probe[rng.random(probe.size) < 0.5])
        bitsets.append(bytes(bitset) if rng.random() < 0.5 else bitset)
    got = kernels.sbbf_check_many(bitsets, probe)
    assert got.shape == (len(sizes), probe.size) and got.dtype == np.bool_
    for row, bitset in zip(got, bitsets):
        assert row.tolist() == scalar_check(bytes(bitset), probe) == kernels.sbbf_check(bitset, probe).tolist()


def test_check_many_refuses_bad_input(kernels: ModuleType) -> None:
    assert kernels.sbbf_check_many([], [1, 2]).shape == (0, 2)
    assert kernels.sbbf_check_many([bytes(64)], []).shape == (1, 0)
    with pytest.raises(MalformedBitsetError, match="bitset of 31 bytes is outside"):
        kernels.sbbf_check_many([bytes(64), bytes(31)], [1])
    with pytest.raises(TypeError, match="bitsets must be a sequence"):
        kernels.sbbf_check_many(bytes(64), [1])
    with pytest.raises(TypeError, match="bitset must be a bytes-like object"):
        kernels.sbbf_check_many([bytes(64), 5], [1])
    with pytest.raises(TypeError, match="C-contiguous"):  # the C code checks each bitset itself
        kernels.sbbf_check_many([bytes(64), np.zeros(128, dtype=np.uint8)[::2]], [1])
    with pytest.raises(TypeError, match="hashes must be a uint64"):
        kernels.sbbf_check_many([bytes(64)], np.zeros(3))


@pytest.mark.native
def test_native_check_many_validates_its_buffers() -> None:
    """The private C function checks sizes itself (no access outside a buffer whatever it is given)."""
    if not NATIVE_BUILT:
        missing("native", "secure_bloom.native_kernels is not built in this environment")
    from secure_bloom import native_kernels

    hashes = np.arange(10, dtype=np.uint64)
    with pytest.raises(ValueError, match="output buffer of 19 bytes is too small for 20 values"):
        native_kernels.sbbf_check_many([bytes(64), bytes(64)], hashes, bytearray(19))
    with pytest.raises(ValueError, match="bitset of 16 bytes is outside"):
        native_kernels.sbbf_check_many([bytes(64), bytes(16)], hashes, bytearray(20))
    with pytest.raises(TypeError, match=r"bitsets\[1\]: bitset must be a bytes-like object"):
        native_kernels.sbbf_check_many([bytes(64), None], hashes, bytearray(20))
    with pytest.raises(TypeError, match="out must be a writable"):
        native_kernels.sbbf_check_many([bytes(64)], hashes, bytes(10))
    with pytest.raises(ValueError, match="not a whole number of 8-byte hashes"):
        native_kernels.sbbf_check_many([bytes(64)], b"\x00" * 12, bytearray(10))
    with pytest.raises(TypeError, match="bitsets must be a sequence"):
        native_kernels.sbbf_check_many(5, hashes, bytearray(10))
    out = bytearray(20)
    native_kernels.sbbf_check_many([bytes(64), b"\xff" * 64], hashes, out)
    assert out == bytearray(10) + bytearray(b"\x01" * 10)


def test_empty_inputs(kernels: ModuleType) -> None:
    bitset = bytearray(64)
    assert kernels.xxh64_fixed(b"", 8).tolist() == []
    assert kernels.xxh64_binary(b"", b"").tolist() == []
    assert kernels.xxh64_binary(np.zeros(1, dtype="<i4"), b"").tolist() == []
    assert kernels.xxh64_binary_view(b"", []).tolist() == []
    kernels.sbbf_insert(bitset, np.empty(0, dtype=np.uint64))
    assert kernels.sbbf_insert_fixed(bitset, b"", 4) == 0
    assert kernels.sbbf_insert_binary(bitset, b"", b"", 8) == 0
    assert kernels.sbbf_insert_binary_view(bitset, b"", []) == 0
    assert kernels.sbbf_check(bitset, []).tolist() == []
    assert kernels.sbbf_check_fixed(bitset, b"", 12).tolist() == []
    assert bitset == bytearray(64)
    assert kernels.count_distinct_hashes([]) == 0
    assert kernels.xxh64_arrow(pa.array([], pa.string())).tolist() == []
    assert kernels.xxh64_arrow(pa.array([None, None], pa.int64())).tolist() == []


def test_one_value(kernels: ModuleType) -> None:
    bitset = bytearray(32)
    assert kernels.sbbf_insert_fixed(bitset, np.array([7], dtype="<i8"), 8) == 1
    assert bytes(bitset) == scalar_bitset(32, [hash_value(7, "INT64")])
    assert bin(int.from_bytes(bitset, "little")).count("1") == 8


def test_huge_input_native_equals_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """5M int64 values into a 1 MiB filter: both backends build the same bitset; every value found."""
    values = np.random.default_rng(11).integers(-(2**63), 2**63 - 1, size=5_000_000, dtype=np.int64)
    built = {}
    for choice in (["native"] if NATIVE_BUILT else []) + ["numpy"]:
        module = _reload(monkeypatch, choice)
        bitset = bytearray(1 << 20)
        assert module.sbbf_insert_fixed(bitset, values, 8) == values.size
        assert module.sbbf_check_fixed(bitset, values, 8).all()
        built[choice] = bytes(bitset)
    monkeypatch.undo()
    importlib.reload(kernels_module)
    reference = SplitBlockBloomFilter(1 << 20)
    reference.insert(values, "INT64")
    assert all(b == reference.bitset for b in built.values())


@pytest.mark.native
def test_simd_and_scalar_block_kernels_agree() -> None:
    if not NATIVE_BUILT:
        missing("native", "secure_bloom.native_kernels is not built in this environment")
    from secure_bloom import native_kernels

    hashes = np.random.default_rng(5).integers(0, MASK64, size=20000, dtype=np.uint64, endpoint=True)
    results = []
    previous = native_kernels.set_simd(True)
    try:
        for simd in (True, False):
            native_kernels.set_simd(simd)
            bitset = bytearray(2000)
            native_kernels.sbbf_insert(bitset, hashes)
            out = np.empty(hashes.size, dtype=np.bool_)
            native_kernels.sbbf_check(bitset, hashes[::-1].copy(), out)
            results.append((bytes(bitset), out.all()))
    finally:
        native_kernels.set_simd(previous)
    assert results[0] == results[1] == (scalar_bitset(2000, hashes), True)


# ----------------------------------------------------------------------- distinct count


@PROPERTY
@given(values=st.lists(st.integers(0, MASK64), max_size=500), repeats=st.integers(1, 3))
def test_count_distinct_is_exact(kernels: ModuleType, values: list[int], repeats: int) -> None:
    hashes = np.array(values * repeats, dtype=np.uint64)
    assert kernels.count_distinct_hashes(hashes) == np.unique(hashes).size


@pytest.mark.parametrize("case", ["random", "one_bucket", "zeros"])
def test_count_distinct_large_and_skewed(kernels: ModuleType, case: str) -> None:
    rng = np.random.default_rng(1)
    if case == "random":
        hashes = rng.integers(0, MASK64, size=3_000_000, dtype=np.uint64, endpoint=True)
        hashes[::3] = hashes[1::3][:hashes[::3].size]                  # a third are repeats
    elif case == "one_bucket":                                          # all top bits equal: one huge part
        hashes = rng.integers(0, 1_500_000, size=2_000_000).astype(np.uint64)
    else:
        hashes = np.zeros(100_000, dtype=np.uint64)
    assert kernels.count_distinct_hashes(hashes) == np.unique(hashes).size
    assert kernels.count_distinct_hashes(hashes.view(np.int64)) == np.unique(hashes).size


# ----------------------------------------------------------------------- malformed input


def test_malformed_offsets_are_refused(kernels: ModuleType) -> None:
    bitset = bytearray(64)
    data = b"abcdefgh"
    bad = {
        "offset 0 is negative": np.array([-1, 2], dtype="<i4"),
        r"offsets decrease at value 1 \(2 after 5\)": np.array([0, 5, 2, 8], dtype="<i4"),
        r"last offset \(value 1\) is 9, past the 8-byte data buffer": np.array([0, 3, 9], dtype="<i4"),
    }
    for message, offsets in bad.items():
        with pytest.raises(MalformedInputError, match=message):
            kernels.xxh64_binary(offsets, data)
        with pytest.raises(MalformedInputError, match=message):
            kernels.sbbf_insert_binary(bitset, offsets.astype("<i8"), data, 8)
        with pytest.raises(MalformedInputError, match=message):
            kernels.sbbf_check_binary(bitset, offsets, data)
    assert bitset == bytearray(64)                                      # nothing inserted before the error
    huge = np.array([0, 2**62], dtype="<i8")
    with pytest.raises(MalformedInputError, match="past the 8-byte data buffer"):
        kernels.xxh64_binary(huge, data, 8)
    with pytest.raises(MalformedInputError, match="offsets buffer of 6 bytes is not a whole number of 4-byte"):
        kernels.xxh64_binary(b"\x00" * 6, data)


def test_malformed_views_are_refused(kernels: ModuleType) -> None:
    def view(length: int, buffer: int, offset: int) -> bytes:
        return struct.pack("<i4sii", length, b"abcd", buffer, offset)

    data = [b"x" * 100]
    cases = {
        r"view 1 has a negative length \(-3\)": view(20, 0, 0) + view(-3, 0, 0),
        "view 0 names data buffer 1 of 1": view(20, 1, 0),
        r"view 0 names data buffer -1 of 1": view(20, -1, 0),
        r"view 0: offset 90 \+ length is past its data buffer of 100 bytes": view(20, 0, 90),
        r"view 0: offset -5 \+ length": view(20, 0, -5),
    }
    for message, views in cases.items():
        with pytest.raises(MalformedInputError, match=message):
            kernels.xxh64_binary_view(views, data)
        with pytest.raises(MalformedInputError, match=message):
            kernels.sbbf_insert_binary_view(bytearray(32), views, data)
    with pytest.raises(MalformedInputError, match="views buffer of 17 bytes is not a whole number of 16-byte"):
        kernels.xxh64_binary_view(b"\x00" * 17, data)
    # a null view is never read, whatever it holds
    assert kernels.xxh64_binary_view(view(20, 7, 0), data, validity=b"\x00").tolist() == []


def test_malformed_sizes_and_arguments(kernels: ModuleType) -> None:
    with pytest.raises(MalformedInputError, match="data of 10 bytes is not a whole number of 4-byte values"):
        kernels.xxh64_fixed(b"\x00" * 10, 4)
    with pytest.raises(MalformedInputError, match="validity bitmap of 1 bytes is too short for 8 values at bit offset 3"):
        kernels.xxh64_fixed(b"\x00" * 32, 4, validity=b"\xff", validity_offset=3)
    with pytest.raises(ValueError, match=r"width must be an int in \[1, 2\^31\], got 0"):
        kernels.xxh64_fixed(b"", 0)
    with pytest.raises(ValueError, match="offset_width must be 4 .* or 8 .*got 3"):
        kernels.xxh64_binary(b"", b"", 3)
    with pytest.raises(ValueError, match="validity_offset must be an int >= 0, got -1"):
        kernels.xxh64_fixed(b"", 4, validity=b"", validity_offset=-1)
    with pytest.raises(MalformedBitsetError, match=r"bitset of 31 bytes is outside \[32, 134217728\] bytes"):
        kernels.sbbf_insert(bytearray(31), [1])
    with pytest.raises(MalformedBitsetError, match=r"bitset of 0 bytes is outside"):
        kernels.sbbf_check_fixed(b"", b"\x00" * 8, 8)
    with pytest.raises(TypeError, match="bitset must be writable"):
        kernels.sbbf_insert(bytes(64), [1])
    with pytest.raises(TypeError, match="data must be a bytes-like object .*got int"):
        kernels.xxh64_fixed(5, 4)
    with pytest.raises(TypeError, match="data must be C-contiguous"):
        kernels.xxh64_fixed(np.zeros(8, dtype="<i4")[::2], 4)
    with pytest.raises(TypeError, match="hashes must be a uint64 .*got dtype float64"):
        kernels.sbbf_check(bytes(64), np.zeros(3))
    with pytest.raises(MalformedInputError, match="hashes buffer of 12 bytes is not a whole number of 8-byte"):
        kernels.sbbf_check(bytes(64), b"\x00" * 12)
    with pytest.raises(TypeError, match="no kernel for Arrow type bool"):
        kernels.xxh64_arrow(pa.array([True]))
    # dictionary indices and 128-bit decimals are not the values' plain bytes
    with pytest.raises(TypeError, match="no kernel for Arrow type dictionary<values=string, indices=int32"):
        kernels.xxh64_arrow(pa.array(["a", "b"]).dictionary_encode())
    with pytest.raises(TypeError, match=r"no kernel for Arrow type decimal128\(10, 2\)"):
        kernels.xxh64_arrow(pa.array([1], pa.decimal128(10, 2)))


# ----------------------------------------------------------------------- threads


def test_threads_on_distinct_filters(kernels: ModuleType) -> None:
    """Two threads hash and insert into their own filters at once; each result equals the
    single-threaded one (the native kernels run with the GIL released)."""
    rng = np.random.default_rng(9)
    columns = [rng.integers(-(2**63), 2**63 - 1, size=400_000, dtype=np.int64) for _ in range(2)]
    strings = [pa.array([f"value-{i}-{t}" for i in range(100_000)]) for t in range(2)]
    expected = []
    for values, text in zip(columns, strings):
        bitset = bytearray(1 << 20)
        kernels.sbbf_insert_fixed(bitset, values, 8)
        kernels.sbbf_insert_arrow(bitset, text)
        expected.append(bytes(bitset))
    results: list[Any] = [None, None]
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            bitset = bytearray(1 << 20)
            for _ in range(3):
                kernels.sbbf_insert_fixed(bitset, columns[t], 8)
                kernels.sbbf_insert_arrow(bitset, strings[t])
            found = kernels.sbbf_check_fixed(bitset, columns[t], 8).all() and kernels.sbbf_check_arrow(
                bitset, strings[t]).all()
            results[t] = (bytes(bitset), bool(found), kernels.count_distinct_hashes(
                kernels.xxh64_fixed(columns[t], 8)))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert errors == []
    assert results == [(expected[0], True, 400_000), (expected[1], True, 400_000)]


# ----------------------------------------------------------------------- the library's own calls dispatch here
# SplitBlockBloomFilter.insert / might_contain_many / insert_hashes / check_hashes and
# values.hash_values run the kernels: every input form of every physical type, per backend,
# equals the scalar path (xxhash of the plain bytes + insert_hash), nulls skipped.

FORMS = {
    "INT32": ["numpy int32", "numpy uint32", "arrow int32", "arrow uint32", "arrow date32", "arrow int8",
              "list"],
    "INT64": ["numpy int64", "numpy uint64", "arrow int64", "arrow timestamp", "arrow uint64 chunked", "list"],
    "FLOAT": ["numpy float32", "arrow float32", "list"],
    "DOUBLE": ["numpy float64", "arrow float64", "arrow float64 chunked", "list"],
    "BYTE_ARRAY": ["list bytes", "list str", "tuple str", "arrow binary", "arrow large_binary", "arrow string",
                   "arrow large_string", "arrow binary_view", "arrow string_view", "arrow dictionary"],
    "FIXED_LEN_BYTE_ARRAY": ["numpy matrix", "arrow fixed_size_binary", "list bytes"],
    "INT96": ["numpy matrix", "arrow fixed_size_binary", "list bytes"],
}
FORM_CASES = [(ptype, form) for ptype, forms in FORMS.items() for form in forms]
_FIXED = {"INT32": 4, "INT64": 8, "FLOAT": 4, "DOUBLE": 8, "FIXED_LEN_BYTE_ARRAY": 7, "INT96": 12}


def _with_nulls(values: list[Any], nulls: list[bool]) -> list[Any]:
    return [None if null else v for v, null in zip(values, nulls)]


def value_form(ptype: str, form: str, raw: list[bytes], nulls: list[bool]) -> tuple[Any, list[bytes]]:
    """(``raw`` in the input form ``form``, the plain bytes of its non-null values in order)."""
    kept = [r for r, null in zip(raw, nulls) if not null]
    if ptype == "BYTE_ARRAY":
        if form in ("list str", "tuple str", "arrow string", "arrow large_string", "arrow string_view",
                    "arrow dictionary"):
            raw = [r.decode("latin-1").encode("utf-8") for r in raw]   # valid UTF-8
            kept = [r for r, null in zip(raw, nulls) if not null]
            text = _with_nulls([r.decode("utf-8") for r in raw], nulls)
            if form == "list str":
                return text, kept
            if form == "tuple str":
                return tuple(text), kept
            if form == "arrow dictionary":
                return pa.array(text, pa.string()).dictionary_encode(), kept
            return pa.array(text, {"arrow string": pa.string(), "arrow large_string": pa.large_string(),
                                   "arrow string_view": pa.string_view()}[form]), kept
        if form == "list bytes":
            return _with_nulls(raw, nulls), kept
        typ = {"arrow binary": pa.binary(), "arrow large_binary": pa.large_binary(),
               "arrow binary_view": pa.binary_view()}[form]
        return pa.array(_with_nulls(raw, nulls), typ), kept
    width = _FIXED[ptype]
    matrix = np.frombuffer(b"".join(raw), dtype=np.uint8).reshape(len(raw), width)
    if form == "numpy matrix":
        return matrix, raw
    if form == "arrow fixed_size_binary":
        return pa.array(_with_nulls(raw, nulls), pa.binary(width)), kept
    if form == "list bytes":
        return _with_nulls(raw, nulls), kept
    dtype = {"INT32": "<i4", "INT64": "<i8", "FLOAT": "<f4", "DOUBLE": "<f8"}[ptype]
    items = matrix.view(dtype).reshape(-1)
    if form.startswith("numpy"):
        return items.view(form.split()[1]), raw
    if form == "list":
        return _with_nulls(items.tolist(), nulls), kept
    mask = np.array(nulls, dtype=bool)
    if form == "arrow int8":   # not plain: widened to INT32 first (sign-extended)
        small = (items.astype(np.int64) % 256 - 128).astype(np.int8)
        kept = [struct.pack("<i", int(v)) for v, null in zip(small, nulls) if not null]
        return pa.array(small, pa.int8(), mask=mask), kept
    arrow_type = {"arrow int32": pa.int32(), "arrow uint32": pa.uint32(), "arrow date32": pa.date32(),
                  "arrow int64": pa.int64(), "arrow timestamp": pa.timestamp("us"),
                  "arrow uint64 chunked": pa.uint64(), "arrow float32": pa.float32(),
                  "arrow float64": pa.float64(), "arrow float64 chunked": pa.float64()}[form]
    numbers = items.view(np.uint32 if form == "arrow uint32" else np.uint64 if form.startswith("arrow uint64")
                         else items.dtype)
    arr = pa.Array.from_buffers(arrow_type, len(raw), [pa.array(~mask).buffers()[1] if mask.any() else None,
                                                       pa.py_buffer(numbers.tobytes())])
    if form.endswith("chunked"):
        half = len(raw) // 2
        return pa.chunked_array([arr.slice(0, half), arr.slice(half)], arrow_type), kept
    return arr, kept


def scalar_filter(bitset_bytes: int, plain: list[bytes]) -> bytes:
    import xxhash

    return scalar_bitset(bitset_bytes, [xxhash.xxh64_intdigest(p) for p in plain])


@st.composite
def form_case(draw: st.DrawFn) -> tuple[str, str, list[bytes], list[bool]]:
    ptype, form = draw(st.sampled_from(FORM_CASES))
    n = draw(st.integers(0, 300))
    if ptype == "BYTE_ARRAY":
        pool = draw(st.lists(st.binary(max_size=40), min_size=1, max_size=max(1, n)))
    else:
        pool = draw(st.lists(st.binary(min_size=_FIXED[ptype], max_size=_FIXED[ptype]), min_size=1,
                             max_size=max(1, n)))
    raw = [pool[i % len(pool)] for i in range(n)]          # repeats: many values per block
    nulls = [False] * n if form.startswith("numpy") else draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return ptype, form, raw, nulls


@PROPERTY
@given(form_case(), st.sampled_from([32, 33, 63, 64, 100, 1024, 4096 + 17, 65536]))
def test_filter_value_calls_equal_scalar_for_every_form(kernels: ModuleType, case: tuple[str, str, list[bytes],
                                                        list[bool]], num_bytes: int) -> None:
    """Every filter size, including ones that are no whole number of blocks (their tail stays)."""
    ptype, form, raw, nulls = case
    type_length = _FIXED[ptype] if ptype in ("FIXED_LEN_BYTE_ARRAY", "INT96") else None
    values, plain = value_form(ptype, form, raw, nulls)
    import xxhash

    expected_hashes = [xxhash.xxh64_intdigest(p) for p in plain]
    tail = bytes(range(1, 1 + num_bytes % 32))
    bf = SplitBlockBloomFilter.from_bitset(bytes(num_bytes - len(tail)) + tail)
    assert bf.insert(values, ptype, type_length=type_length) == len(plain)
    assert bf.bitset == scalar_filter(num_bytes - len(tail), plain)[:num_bytes - len(tail)] + tail
    assert hash_values(values, ptype, type_length=type_length).tolist() == expected_hashes
    assert bf.might_contain_many(values, ptype, type_length=type_length).tolist() == [True] * len(plain)
    other = SplitBlockBloomFilter(64)
    other.insert_hashes(np.array(expected_hashes[::2], dtype=np.uint64))
    assert other.might_contain_many(values, ptype, type_length=type_length).tolist() == [
        other.check_hash(h) for h in expected_hashes]


@pytest.mark.parametrize(("ptype", "form"), FORM_CASES)
def test_filter_value_calls_on_empty_input(kernels: ModuleType, ptype: str, form: str) -> None:
    type_length = _FIXED[ptype] if ptype in ("FIXED_LEN_BYTE_ARRAY", "INT96") else None
    values, plain = value_form(ptype, form, [], [])
    bf = SplitBlockBloomFilter(32)
    assert bf.insert(values, ptype, type_length=type_length) == 0
    assert bf.bitset == bytes(32)
    assert bf.might_contain_many(values, ptype, type_length=type_length).shape == (0,)
    assert hash_values(values, ptype, type_length=type_length).shape == (0,)


def test_filter_value_calls_on_a_huge_input_equal_across_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    """2M int64 values and 1M strings (Arrow and a Python list), 1 MiB and 16 MiB: the native and
    numpy backends build the same filters through SplitBlockBloomFilter.insert."""
    rng = np.random.default_rng(5)
    ints = rng.integers(-(2**63), 2**63 - 1, size=2_000_000, dtype=np.int64)
    strings = pa.array([f"user{i:09d}@example.com" for i in rng.integers(0, 10**9, size=1_000_000)])
    built: dict[str, list[bytes]] = {}
    for choice in (["native"] if NATIVE_BUILT else []) + ["numpy"]:
        module = _reload(monkeypatch, choice)
        assert module.BACKEND == choice
        out = []
        for num_bytes in (1 << 20, 16 << 20):
            for values, ptype in ((ints, "INT64"), (strings, "BYTE_ARRAY"), (strings.to_pylist()[:200_000], "BYTE_ARRAY")):
                bf = SplitBlockBloomFilter(num_bytes)
                bf.insert(values, ptype)
                assert bf.might_contain_many(values, ptype).all()
                out.append(bf.bitset)
        built[choice] = out
    monkeypatch.undo()
    importlib.reload(kernels_module)
    if not NATIVE_BUILT:
        missing("native", "secure_bloom.native_kernels is not built in this environment")
    assert built["native"] == built["numpy"]


def test_hashes_from_every_path_hit_the_kernel_for_plain_inputs(kernels: ModuleType) -> None:
    """plain_arrays hands the kernels the buffers as they are; a conversion is needed elsewhere."""
    from secure_bloom.values.physical import plain_arrays

    ints = np.arange(5, dtype=np.int64)
    assert plain_arrays(ints, "INT64")[0] is ints
    assert plain_arrays(ints, "INT32") is None                    # needs a range check first
    assert plain_arrays(pa.array([1, None], pa.int8()), "INT32") is None
    assert plain_arrays([1.5], "INT64") is None                    # floats are refused by hash_values
    if kernels.BACKEND == "native":  # str / bytes objects are hashed in place by hash_values
        assert plain_arrays(["a", None], "BYTE_ARRAY") is None
    else:
        assert plain_arrays(["a", None], "BYTE_ARRAY")[0].to_pylist() == ["a", None]
    assert plain_arrays(["\ud800"], "BYTE_ARRAY") is None          # hash_values raises the library's error
    assert plain_arrays(pa.chunked_array([pa.array([None, None], pa.string())]), "BYTE_ARRAY") == []
    with pytest.raises(InvalidValueError, match="not encodable as UTF-8"):
        SplitBlockBloomFilter(32).insert(["\ud800"], "BYTE_ARRAY")
    with pytest.raises(InvalidValueError, match="INT64 value must be an integer"):
        SplitBlockBloomFilter(32).insert([1.5], "INT64")


# ----------------------------------------------------------------------- Python str / bytes objects


@PROPERTY
@given(items=st.lists(st.one_of(st.text(), st.binary(), st.none()), max_size=40), as_tuple=st.booleans())
def test_str_and_bytes_objects_hash_as_their_plain_bytes(kernels: ModuleType, items: list[Any],
                                                          as_tuple: bool) -> None:
    """A list (or tuple) of str (UTF-8, non-ASCII and surrogate-free) and bytes, None skipped:
    hash_values, a filter's insert and might_contain_many equal the scalar path on each value."""
    values = tuple(items) if as_tuple else items
    present = [v for v in items if v is not None]
    expected = [hash_value(v, PhysicalType.BYTE_ARRAY) for v in present]
    assert hash_values(values, PhysicalType.BYTE_ARRAY).tolist() == expected
    bf = SplitBlockBloomFilter(1024)
    assert bf.insert(values, PhysicalType.BYTE_ARRAY) == len(present)
    assert bf.bitset == scalar_bitset(1024, expected)
    assert bf.might_contain_many(values, PhysicalType.BYTE_ARRAY).all()


@pytest.mark.native
def test_objects_kernel_declines_what_it_does_not_hash() -> None:
    """The object kernel hashes only exact str / bytes / None; anything else (a bytearray, a str
    subclass, an int, a lone surrogate) is None, and hash_values then takes the converting path,
    which hashes what it accepts and names what it does not."""
    if not NATIVE_BUILT:
        missing("native", "secure_bloom.native_kernels is not built in this environment")
    assert kernels_module.xxh64_objects(["a", b"b", None]).tolist() == [
        hash_value("a", PhysicalType.BYTE_ARRAY), hash_value(b"b", PhysicalType.BYTE_ARRAY)]
    assert kernels_module.xxh64_objects([]).tolist() == []

    class Text(str):
        pass

    for odd in (bytearray(b"x"), Text("x"), 7, "\ud800"):
        assert kernels_module.xxh64_objects(["ok", odd]) is None
    assert hash_values(["a", bytearray(b"x"), Text("y")], PhysicalType.BYTE_ARRAY).tolist() == [
        hash_value(v, PhysicalType.BYTE_ARRAY) for v in ("a", b"x", "y")]
    with pytest.raises(InvalidValueError):
        hash_values(["a", "\ud800"], PhysicalType.BYTE_ARRAY)
    with pytest.raises(TypeError):
        from secure_bloom.native_kernels import xxh64_objects  # type: ignore[import-not-found]

        xxh64_objects(iter(["a"]), np.empty(1, np.uint64))
    with pytest.raises(ValueError, match="too small"):
        from secure_bloom.native_kernels import xxh64_objects

        xxh64_objects(["a", "b"], np.empty(1, np.uint64))
