"""Inputs that change while the C extensions read them: one case per run, in a process of its own.

    python tests/support/native_mutation.py CASE SECONDS

Run by path (tests/robustness/test_native_mutation.py does, one subprocess per case) so that a crash
of the old code is one failed case, not the end of the test run; under the sanitized build
(tests/support/sanitizer.py) the same cases run with ASan and UBSan. Prints one JSON line:
``{"case", "calls", "ok", "refused", "unexpected"}`` and exits 0 unless something unexpected
happened (an exception other than the refusal the case allows, or a wrong hash of a value that
nobody changed). A crash or a sanitizer report ends the process instead.

Threaded cases (``SECONDS`` of calls while a second thread writes): the kernels release the GIL,
so the writer runs exactly while a kernel reads. Each writes the values that hurt most: an offset
of 2^30 (or 2^40), a view pointing 2 GiB past its buffer or naming a buffer that does not exist, a
validity bit that makes a null slot with such a view valid, hashes that all fall into the last
bucket of count_distinct, and random bytes in a Thrift footer while the decoder runs Python code.

Deterministic cases (``alias_*``): the private module's output buffer overlaps its own input, so
the kernel's first hashes overwrite offsets / views / validity bits it has validated but not read
yet, with no thread at all. ``thrift_spec_race``: two threads decode one class for the first time
and one compiles its spec table while the other decodes with the table it cached.
"""

from __future__ import annotations

import io
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from secure_bloom import kernels, thrift_codec
from secure_bloom.errors import MalformedInputError
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.values import hash_values

N = 100_000
Result = dict[str, Any]
Refusal = type[BaseException] | tuple[type[BaseException], ...]


class Tally:
    """Counts of one case: calls, successes, allowed refusals, and anything unexpected."""

    def __init__(self) -> None:
        self.calls = self.ok = self.refused = 0
        self.unexpected: list[str] = []

    def call(self, fn: Callable[[], Any], refusal: Refusal = MalformedInputError) -> Any:
        """``fn()``, counting it; ``refusal`` is the exception the case allows (``()``: none)."""
        self.calls += 1
        try:
            result = fn()
        except refusal:
            self.refused += 1
            return None
        except Exception as e:  # noqa: BLE001 - reported, the case then fails
            self.unexpected.append(f"{type(e).__name__}: {e}")
            return None
        self.ok += 1
        return result

    def result(self, case: str) -> Result:
        return {"case": case, "calls": self.calls, "ok": self.ok, "refused": self.refused,
                "unexpected": self.unexpected[:5]}


def hammer(seconds: float, calls: list[Callable[[Tally], None]], write: Callable[[], None]) -> Tally:
    """Call each of ``calls`` in turn for ``seconds`` while another thread runs ``write`` in a loop."""
    tally = Tally()
    stop = threading.Event()

    def writer() -> None:
        try:
            while not stop.is_set():
                write()
        except Exception as e:  # noqa: BLE001 - reported, the case then fails
            tally.unexpected.append(f"writer: {type(e).__name__}: {e}")

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            for call in calls:
                call(tally)
    finally:
        stop.set()
        thread.join()
    return tally


def arrow_calls(array: Any, changed: set[int]) -> list[Callable[[Tally], None]]:
    """Every public path of an Arrow binary-like array through the kernels; hashes of the values
    not in ``changed`` must stay right."""
    expected = hash_values(array, "BYTE_ARRAY").copy()
    keep = np.ones(len(array), dtype=bool)
    keep[sorted(changed)] = False
    bitset = bytearray(1 << 16)
    bf = SplitBlockBloomFilter(1 << 16)

    def hashed(t: Tally) -> None:
        got = t.call(lambda: hash_values(array, "BYTE_ARRAY"))
        if got is not None and got.size == len(array) and not np.array_equal(got[keep], expected[keep]):
            t.unexpected.append("a value nobody changed hashed differently")

    return [hashed,
            lambda t: t.call(lambda: kernels.sbbf_insert_arrow(bitset, array)),
            lambda t: t.call(lambda: kernels.sbbf_check_arrow(bitset, array)),
            lambda t: t.call(lambda: bf.insert(array, "BYTE_ARRAY")),
            lambda t: t.call(lambda: bf.might_contain_many(array, "BYTE_ARRAY"))]


# ---------------------------------------------------------------------- threaded cases

def case_offsets(seconds: float, large: bool) -> Tally:
    """string / large_string over numpy offsets another thread sets far past the data."""
    dtype, bad = (np.int64, 1 << 40) if large else (np.int32, 1 << 30)
    offsets = np.arange(N + 1, dtype=dtype) * 8
    data = np.frombuffer(np.random.default_rng(1).bytes(N * 8), dtype=np.uint8)
    array = pa.Array.from_buffers(pa.large_string() if large else pa.string(), N,
                                  [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    spots = np.array([N // 4, N // 2, 3 * N // 4])
    good = offsets[spots].copy()
    calls = arrow_calls(array, {int(i) for s in spots for i in (s - 1, s)})

    def write() -> None:
        offsets[spots] = bad
        offsets[spots] = good

    return hammer(seconds, calls, write)


def _views(n: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """n views of ``length``-byte values (> 12: in data buffer 0), as (n, 4) uint32, and the data."""
    data = np.frombuffer(np.random.default_rng(2).bytes(n * length), dtype=np.uint8)
    views = np.zeros((n, 4), dtype=np.uint32)
    views[:, 0] = length
    views[:, 1] = data.reshape(n, length)[:, :4].copy().view(np.uint32)[:, 0]  # the 4-byte prefix
    views[:, 3] = np.arange(n, dtype=np.uint32) * length
    return views, data


BAD_VIEWS = np.array([[100, 0, 0, 0x7FFF0000], [100, 0, 7, 0]], dtype=np.uint32)  # 2 GiB past; buffer 7


def case_views(seconds: float) -> Tally:
    """string_view whose views another thread points past the data or at a missing buffer."""
    views, data = _views(N, 20)
    array = pa.Array.from_buffers(pa.string_view(), N, [None, pa.py_buffer(views), pa.py_buffer(data)])
    spots = np.array([N // 3, 2 * N // 3])
    good = views[spots].copy()
    calls = arrow_calls(array, {int(s) for s in spots})
    turn = [0]

    def write() -> None:
        turn[0] ^= 1
        views[spots] = BAD_VIEWS[turn[0]]
        views[spots] = good

    return hammer(seconds, calls, write)


def case_validity(seconds: float) -> Tally:
    """string_view with null slots holding garbage views (Arrow leaves them undefined); another
    thread sets their validity bits."""
    views, data = _views(N, 20)
    views[7::8] = BAD_VIEWS[0]                       # every 8th value is null, its view garbage
    validity = np.full((N + 7) // 8, 0x7F, dtype=np.uint8)
    array = pa.Array.from_buffers(pa.string_view(), N,
                                  [pa.py_buffer(validity), pa.py_buffer(views), pa.py_buffer(data)])
    assert array.null_count == N // 8
    bitset = bytearray(1 << 16)
    calls: list[Callable[[Tally], None]] = [
        lambda t: t.call(lambda: hash_values(array, "BYTE_ARRAY")),
        lambda t: t.call(lambda: kernels.sbbf_insert_arrow(bitset, array)),
        lambda t: t.call(lambda: kernels.sbbf_check_arrow(bitset, array))]
    spots = np.arange(len(validity) // 4, len(validity), len(validity) // 4)

    def write() -> None:
        validity[spots] = 0xFF
        validity[spots] = 0x7F

    return hammer(seconds, calls, write)


def case_fixed(seconds: float) -> Tally:
    """fixed_size_binary(16) with nulls and int64 numpy values, data and bitmap rewritten:
    addresses come from the index only, so every call must succeed."""
    rows = np.frombuffer(np.random.default_rng(3).bytes(N * 16), dtype=np.uint8).copy()
    validity = np.full((N + 7) // 8, 0xFE, dtype=np.uint8)
    array = pa.Array.from_buffers(pa.binary(16), N, [pa.py_buffer(validity), pa.py_buffer(rows)])
    ints = np.arange(N, dtype=np.int64)
    bitset = bytearray(1 << 16)
    calls: list[Callable[[Tally], None]] = [
        lambda t: t.call(lambda: kernels.xxh64_arrow(array), refusal=()), 
        lambda t: t.call(lambda: kernels.sbbf_insert_arrow(bitset, array), refusal=()),
        lambda t: t.call(lambda: hash_values(ints, "INT64"), refusal=()),
        lambda t: t.call(lambda: kernels.sbbf_check_fixed(bitset, ints, 8), refusal=())]

    def write() -> None:
        rows[::97] ^= 0xFF
        validity[::13] ^= 0x55
        ints[::101] += 1

    return hammer(seconds, calls, write)


def case_hashes(seconds: float) -> Tally:
    """Hash buffers another thread rewrites: insert / check of raw hashes (any value selects a
    block in range) and count_distinct (its second pass finds buckets other than its first)."""
    low = np.random.default_rng(4).integers(0, 1 << 60, size=500_000, dtype=np.uint64)
    hashes = low.copy()
    top = np.arange(50_000, dtype=np.uint64) + np.uint64((1 << 64) - 50_000)   # all in the last bucket
    bitset = bytearray(1 << 16)
    calls: list[Callable[[Tally], None]] = [
        lambda t: t.call(lambda: kernels.count_distinct_hashes(hashes)),
        lambda t: t.call(lambda: kernels.sbbf_insert(bitset, hashes[:200_000]), refusal=()),
        lambda t: t.call(lambda: kernels.sbbf_check(bitset, hashes[:200_000]), refusal=())]

    def write() -> None:
        hashes[:50_000] = top
        hashes[:50_000] = low[:50_000]

    return hammer(seconds, calls, write)


def case_bitset(seconds: float) -> Tally:
    """Two threads insert into one raw bitset (and one overwrites it) while checks run: lost bits
    are allowed at this level, anything else is not."""
    ints = np.arange(200_000, dtype=np.int64)
    reversed_ints = ints[::-1].copy()
    bitset = np.zeros(1 << 14, dtype=np.uint8)
    noise = np.random.default_rng(5).integers(0, 256, size=bitset.size, dtype=np.uint8)
    calls: list[Callable[[Tally], None]] = [
        lambda t: t.call(lambda: kernels.sbbf_insert_fixed(bitset, ints, 8), refusal=()),
        lambda t: t.call(lambda: kernels.sbbf_check_fixed(bitset, ints, 8), refusal=())]

    def write() -> None:
        kernels.sbbf_insert_fixed(bitset, reversed_ints, 8)
        bitset[::7] = noise[::7]

    return hammer(seconds, calls, write)


def _footer() -> bytes:
    """The Thrift FileMetaData of a small Parquet file (strings: names, key-value metadata)."""
    table = pa.table({"name": ["a", "b"], "id": [1, 2]}).replace_schema_metadata({"k": "v" * 40})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    raw = sink.getvalue()
    length = int.from_bytes(raw[-8:-4], "little")
    return raw[-8 - length:-8]


def case_thrift(seconds: float) -> Tally:
    """The Thrift decoder holds the GIL but calls Python (each struct's constructor): with a tiny
    switch interval another thread rewrites the input bytearray in between."""
    footer = _footer()
    buf = bytearray(footer)
    view = np.frombuffer(buf, dtype=np.uint8)
    rng = np.random.default_rng(6)
    garbage = [rng.integers(0, 256, size=8, dtype=np.uint8) for _ in range(16)]
    cls = thrift_codec.idl().FileMetaData
    sys.setswitchinterval(1e-6)
    turn = [0]

    def write() -> None:
        turn[0] = (turn[0] + 1) % len(garbage)
        at = (turn[0] * 37) % (len(buf) - 8)
        view[at:at + 8] = garbage[turn[0]]
        view[at:at + 8] = np.frombuffer(footer, dtype=np.uint8)[at:at + 8]

    with thrift_codec.forced_backend("native"):
        return hammer(seconds, [lambda t: t.call(lambda: thrift_codec.parse(cls, buf))], write)


def case_thrift_fields(seconds: float) -> Tally:
    """decode_fields (a lookup's fields of many ColumnMetaData) makes Statistics structs and lists
    while another thread, switched in between, rewrites the bytearrays it reads and replaces items
    of the list it was given: each input gives its fields, or None (refused), never a read outside
    an input or of an item freed meanwhile."""
    metas = [thrift_codec.parse(thrift_codec.idl().FileMetaData, _footer())[0].row_groups[0].columns[i].meta_data
             for i in range(2)]
    raws = [thrift_codec.serialize(meta) for meta in metas]
    bufs = [bytearray(raw) for raw in raws * 4]
    inputs: list[Any] = list(bufs)
    rng = np.random.default_rng(7)
    cls = thrift_codec.idl().ColumnMetaData
    names = ("statistics", "num_values", "bloom_filter_offset", "bloom_filter_length")
    sys.setswitchinterval(1e-6)
    turn = [0]

    def write() -> None:
        turn[0] += 1
        buf = bufs[turn[0] % len(bufs)]
        at = int(rng.integers(0, len(buf)))
        old = buf[at]
        buf[at] = int(rng.integers(0, 256))
        buf[at] = old
        inputs[turn[0] % len(inputs)] = bytes(rng.integers(0, 256, size=8, dtype=np.uint8))
        inputs[turn[0] % len(inputs)] = bufs[turn[0] % len(bufs)]

    def fields(t: Tally) -> None:
        got = t.call(lambda: thrift_codec.parse_fields(cls, inputs, names, zero_padding=True), ())
        if got is not None and (len(got) != len(bufs) or any(g is not None and len(g[0]) != len(names) for g in got)):
            t.unexpected.append(f"decode_fields gave {got!r}")

    with thrift_codec.forced_backend("native"):
        return hammer(seconds, [fields], write)


def case_prune_modules(seconds: float) -> Tally:
    """native_gcm copies a module and an AAD given as bytearrays before it releases the GIL:
    another thread flipping their bytes (a tag byte, a length prefix byte set to 0xFF) meanwhile
    gives the right plaintext or the refusal, never other plaintext or a read past the buffer."""
    from secure_bloom import native_gcm
    from secure_bloom.crypto.modules import encrypt_module

    key, plain = bytes(range(16)), bytes(range(256)) * 64
    sealed = encrypt_module(plain, key, b"aad")
    module, aad = bytearray(sealed), bytearray(b"aad")
    gcm = native_gcm.GcmKey(key)
    turn = [0]
    sys.setswitchinterval(1e-6)  # the writer runs between any two bytecodes of the caller

    def write() -> None:  # damage and repair in turns: the caller meets both
        at = 4 + (turn[0] // 6 * 7919) % (len(module) - 4)
        step = turn[0] % 6
        turn[0] += 1
        if step == 0:
            module[at] ^= 0xFF      # a ciphertext or tag byte
        elif step == 1:
            module[at] ^= 0xFF
        elif step == 2:
            module[3] = 0xFF        # a length prefix of 4 GiB
        elif step == 3:
            module[3] = sealed[3]
        else:
            aad[0] ^= 1
        time.sleep(0)

    def call(t: Tally) -> None:
        out = t.call(lambda: gcm.decrypt_modules([module], [aad], len(plain)), refusal=native_gcm.Failed)
        if out is not None and out != [plain]:
            t.unexpected.append("decrypted other plaintext")

    return hammer(seconds, [call], write)


# ---------------------------------------------------------------------- deterministic cases

def _native() -> Any:
    from secure_bloom import native_kernels

    return native_kernels


def case_alias_offsets() -> Tally:
    """Hash output over the offsets: chunk 1's offsets are chunk 0's hashes when it reads them."""
    n = 4096
    memory = np.zeros(n, dtype=np.uint64)
    offsets = memory.view(np.int32)[:n + 1]
    offsets[:] = np.arange(n + 1, dtype=np.int32) * 8
    tally = Tally()
    tally.call(lambda: _native().xxh64_binary(offsets, bytes(8 * n), 4, memory), refusal=ValueError)
    return tally


def case_alias_views() -> Tally:
    """Hash output over views not read yet: they become random 16-byte views."""
    n = 4096
    memory = np.zeros(2 * n, dtype=np.uint64)          # the views: bytes [0, 16 n)
    views, data = _views(n, 20)
    memory.view(np.uint32).reshape(-1, 4)[:] = views
    out = memory[1024:1024 + n]                         # from view 512 on: written before it is read
    tally = Tally()
    tally.call(lambda: _native().xxh64_binary_view(memory, [data], out), refusal=ValueError)
    return tally


def case_alias_validity() -> Tally:
    """Hash output over the validity bitmap: null slots with garbage views turn valid."""
    n = 4096
    views, data = _views(n, 20)
    views[1::2] = BAD_VIEWS[0]
    out = np.zeros(n, dtype=np.uint64)
    validity = out.view(np.uint8)[:n // 8]
    validity[:] = 0x55                                 # odd values null
    tally = Tally()
    tally.call(lambda: _native().xxh64_binary_view(views, [data], out, validity), refusal=ValueError)
    return tally


def case_thrift_spec_race() -> Tally:
    """Thread A compiles the spec table of a new class (its constructor, called to read defaults,
    waits); B compiles its own, caches it and decodes with it (its constructor waits); A then
    finishes. The old decoder cached A's table over B's and freed B's while B used it."""
    arrived = {"A": 0, "B": 0}
    a_compiling, b_decoding, a_done = threading.Event(), threading.Event(), threading.Event()

    class Racy:
        thrift_spec = {1: (8, "a", False), 2: (11, "b", False)}   # i32 a, string b

        def __init__(self) -> None:
            me = threading.current_thread().name
            arrived[me] += 1
            if me == "A" and arrived[me] == 1:
                a_compiling.set()
                b_decoding.wait(30)
            elif me == "B" and arrived[me] == 2:
                b_decoding.set()
                a_done.wait(30)
            self.a = self.b = None

    from secure_bloom import native_thrift

    data = bytes([0x15, 0x0E, 0x18, 0x03]) + b"abc" + b"\x00"   # a = 7, b = "abc"
    results: dict[str, Any] = {}
    tally = Tally()

    def decode(name: str) -> None:
        obj = tally.call(lambda: native_thrift.decode(Racy, data, 64, 1000, frozenset())[0])
        results[name] = None if obj is None else (obj.a, obj.b)
        if name == "A":
            a_done.set()

    a = threading.Thread(target=decode, args=("A",), name="A")
    b = threading.Thread(target=decode, args=("B",), name="B")
    a.start()
    a_compiling.wait(30)
    b.start()
    a.join(60)
    b.join(60)
    if results != {"A": (7, "abc"), "B": (7, "abc")}:
        tally.unexpected.append(f"decoded {results}")
    return tally


THREADED: dict[str, Callable[[float], Tally]] = {
    "offsets32": lambda s: case_offsets(s, large=False),
    "offsets64": lambda s: case_offsets(s, large=True),
    "views": case_views,
    "validity": case_validity,
    "fixed": case_fixed,
    "hashes": case_hashes,
    "bitset": case_bitset,
    "thrift": case_thrift,
    "thrift_fields": case_thrift_fields,
    "prune_modules": case_prune_modules,
}
DETERMINISTIC: dict[str, Callable[[], Tally]] = {
    "alias_offsets": case_alias_offsets,
    "alias_views": case_alias_views,
    "alias_validity": case_alias_validity,
    "thrift_spec_race": case_thrift_spec_race,
}
CASES = [*THREADED, *DETERMINISTIC]


def main(argv: list[str]) -> int:
    case, seconds = argv[0], float(argv[1]) if len(argv) > 1 else 1.0
    tally = THREADED[case](seconds) if case in THREADED else DETERMINISTIC[case]()
    print(json.dumps(tally.result(case)), flush=True)
    return 1 if tally.unexpected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
