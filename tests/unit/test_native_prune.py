"""secure_bloom.native_prune (secure_bloom/_native/prune.c) against its Python twins in
secure_bloom.parquet.read.fast_prune: module decrypts (``_python_decrypt``) and filter reads, checks
and probes (``_python_filter`` + BitsetProbe, itself bit-exact with SplitBlockBloomFilter).

For many generated modules and filters, valid or damaged (a flipped byte, a changed length
prefix, a truncation, a wrong key or AAD, non-canonical headers), the extension answers exactly
as the Python twin, or refuses (``Failed``) where the twin refuses; it may refuse more only for a
header that is not the one encoding every writer emits. Buffers of every kind (bytes, memoryview,
bytearray), the limits it is compiled with, locations, reads reported, huge lengths, keys shared by
threads. libcrypto is loaded at run time: no DT_NEEDED on it, the file loaded reported, and a missing
or wrong library (SECURE_BLOOM_LIBCRYPTO) an ImportError after which the Python path runs. Marker ``native``: the extension not built in this environment FAILS these tests (unless
SECURE_BLOOM_ALLOW_SKIP names ``native``).
"""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from support.components import missing
from support.elf import dynamic_needs, glibc_floor

from secure_bloom import spec
from secure_bloom.crypto.gcm import GcmKey
from secure_bloom.crypto.modules import encrypt_module
from secure_bloom.encrypted_filter import COALESCED_FILTER_BYTES
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.header import serialize_header
from secure_bloom.parquet.read import fast_prune
from secure_bloom.parquet.read.fast_prune import Declined, _python_decrypt, _python_filter, _python_tail

pytestmark = pytest.mark.native

KEY = bytes(range(16))
HEADER_AAD, BITSET_AAD = b"file-aad\x08\x01\x00\x02\x00", b"file-aad\x09\x01\x00\x02\x00"


@pytest.fixture(scope="module")
def native() -> Any:
    try:
        from secure_bloom import native_prune
    except ImportError as e:
        missing("native", f"secure_bloom.native_prune is not built or finds no libcrypto in this environment "
                          f"({e}; it loads OpenSSL's libcrypto.so.3 or .so.1.1 at run time)")
    return native_prune


def test_the_fast_path_uses_the_extension(native: Any) -> None:
    if os.environ.get(fast_prune.ENV_VAR, "auto") == "python":
        pytest.skip(f"{fast_prune.ENV_VAR}=python chooses the Python twin")
    assert fast_prune.NATIVE and fast_prune.NATIVE_UNAVAILABLE is None


def test_only_the_fast_pruning_path_loads_the_extension() -> None:
    package = Path(fast_prune.__file__).parents[2]
    users = sorted(str(p.relative_to(package)) for p in package.rglob("*.py") if "native_prune" in p.read_text())
    assert users == ["parquet/read/fast_prune.py"]


def test_limits_are_the_specs(native: Any) -> None:
    limits = native.limits()
    assert limits["LENGTH_PREFIX"] == spec.LENGTH_PREFIX
    assert limits["NONCE_LENGTH"] == spec.NONCE_LENGTH and limits["TAG_LENGTH"] == spec.TAG_LENGTH
    assert limits["MAX_HEADER_BYTES"] == spec.MAX_HEADER_BYTES
    assert limits["MIN_BITSET_BYTES"] == spec.MIN_BITSET_BYTES
    assert limits["SPEC_MAX_BITSET_BYTES"] == spec.SPEC_MAX_BITSET_BYTES
    assert limits["COALESCED_FILTER_BYTES"] == COALESCED_FILTER_BYTES
    assert limits["MAX_THRIFT_MODULE"] == fast_prune._MAX_THRIFT_MODULE
    assert limits["MAX_FOOTER_BYTES"] == fast_prune.MAX_FOOTER_BYTES
    assert "OpenSSL" in native.info()["openssl"]


# ---------------------------------------------------------------------- libcrypto, loaded at run time

def _load_in_subprocess(libcrypto: str, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter (-I: the installed package) whose native_prune loads ``libcrypto``
    (SECURE_BLOOM_LIBCRYPTO)."""
    return subprocess.run([sys.executable, "-I", "-W", "default", "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SECURE_BLOOM_LIBCRYPTO": libcrypto, **env}, check=False)


_IMPORT = """
try:
    import secure_bloom.native_prune as n
except ImportError as e:
    print("ImportError:", e)
else:
    print("loaded:", n.info()["libcrypto"], "|", n.info()["openssl"])
"""


def test_libcrypto_is_loaded_at_run_time_not_linked(native: Any) -> None:
    """No DT_NEEDED on libcrypto (the wheel bundles none) and no glibc newer than the other extensions
    need (dlopen & co. bound to their baseline version, not glibc 2.34's): manylinux_2_17."""
    needs = dynamic_needs(Path(native.__file__))
    assert not [n for n in needs.needed if "crypto" in n or "ssl" in n], needs.needed
    if any(n.startswith("libc.so") for n in needs.needed):  # glibc
        assert glibc_floor(needs) <= (2, 17), needs.versions
        from secure_bloom import native_thrift
        assert glibc_floor(needs) <= max(glibc_floor(dynamic_needs(Path(native_thrift.__file__))), (2, 17))
    info = native.info()
    library = Path(info["libcrypto"])
    assert library.name.startswith("libcrypto") and library.exists(), info
    assert info["openssl"].startswith("OpenSSL ") and info["flags"]


def test_the_library_named_by_the_override_is_the_one_loaded(native: Any) -> None:
    library = str(Path(native.info()["libcrypto"]).resolve())
    proc = _load_in_subprocess(library, _IMPORT)
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.strip()
    assert loaded.startswith("loaded: ") and Path(loaded.split()[1]).resolve() == Path(library), loaded
    assert native.info()["openssl"] in loaded


@pytest.mark.parametrize("library", ["missing", "not_libcrypto"])
def test_an_unloadable_libcrypto_is_an_import_error_and_the_python_path_runs(native: Any, tmp_path: Path,
                                                                              library: str) -> None:
    """No such file, or a shared object without the EVP functions (the kernels extension): the import
    raises ImportError naming why, fast_prune falls back with its warning, SECURE_BLOOM_PRUNE=native fails."""
    from secure_bloom import native_kernels

    path = str(tmp_path / "no" / "libcrypto.so.3") if library == "missing" else native_kernels.__file__
    why = "cannot load OpenSSL's libcrypto" if library == "missing" else "has no EVP_CIPHER_CTX_new"
    proc = _load_in_subprocess(path, _IMPORT)
    assert proc.returncode == 0 and proc.stdout.startswith("ImportError: ") and why in proc.stdout, proc
    assert path in proc.stdout  # the path named (diagnostics; a path is no secret)

    fallback = ("import secure_bloom.parquet.read.fast_prune as p; "
                "print(p.NATIVE, p.NATIVE_UNAVAILABLE)")
    proc = _load_in_subprocess(path, fallback, SECURE_BLOOM_PRUNE="auto")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("False secure_bloom.native_prune is not built or cannot be loaded") \
        and why in proc.stdout, proc.stdout
    warned = [line for line in proc.stderr.splitlines() if "ExtensionFallbackWarning" in line]
    assert len(warned) == 1 and why in warned[0] and "SECURE_BLOOM_PRUNE=python" in warned[0], proc.stderr
    assert "Install OpenSSL's libcrypto" in warned[0], proc.stderr  # the remedy for this extension

    proc = _load_in_subprocess(path, fallback, SECURE_BLOOM_PRUNE="native")
    assert proc.returncode != 0 and "ImportError: SECURE_BLOOM_PRUNE=native but secure_bloom.native_prune " \
                                    "cannot be loaded" in proc.stderr and why in proc.stderr, proc.stderr


def test_key_lengths_and_repr(native: Any) -> None:
    for n in (16, 24, 32):
        key = bytes(range(40, 40 + n))
        k = native.GcmKey(key)
        assert repr(k) == f"GcmKey(<{n} bytes>)" and key.hex() not in repr(k) and str(key) not in repr(k)
        assert k.decrypt_modules([encrypt_module(b"x", key, b"a")], [b"a"], 10) == [b"x"]
    for bad in (b"", b"short", bytes(17), bytes(33)):
        with pytest.raises(ValueError, match="16, 24 or 32 bytes"):
            native.GcmKey(bad)
    with pytest.raises(TypeError):
        native.GcmKey("a string key of 16")


# ---------------------------------------------------------------------- modules

def _python_module(module: bytes, key: bytes, aad: bytes, max_plaintext: int) -> bytes | None:
    try:
        return _python_decrypt(memoryview(module), GcmKey(key), aad, max_plaintext)
    except Declined:
        return None


def _native_module(native: Any, module: Any, key: bytes, aad: Any, max_plaintext: int) -> bytes | None:
    try:
        out: list[bytes] = native.GcmKey(key).decrypt_modules([module], [aad], max_plaintext)
    except native.Failed:
        return None
    return out[0]


@st.composite
def modules(draw: st.DrawFn) -> tuple[bytes, bytes, bytes, int]:
    """(module, key, aad, max_plaintext): a module, often damaged, and the key / AAD to open it."""
    key = draw(st.sampled_from([KEY, bytes(range(24)), bytes(range(32))]))
    plain = draw(st.binary(max_size=300))
    aad = draw(st.binary(max_size=40))
    module = bytearray(encrypt_module(plain, key, aad))
    damage = draw(st.sampled_from(["none", "flip", "prefix", "truncate", "extend", "aad", "key"]))
    if damage == "flip":
        at = draw(st.integers(0, len(module) - 1))
        module[at] ^= 1 << draw(st.integers(0, 7))
    elif damage == "prefix":
        struct.pack_into("<I", module, 0, draw(st.sampled_from([0, 27, 28, len(module) - 3, len(module),
                                                                 0xFFFFFFFF, len(plain) + 27])))
    elif damage == "truncate":
        module = module[:draw(st.integers(0, len(module) - 1))]
    elif damage == "extend":
        module += draw(st.binary(min_size=1, max_size=8))
    elif damage == "aad":
        aad += b"!"
    elif damage == "key":
        key = bytes(reversed(key))
    max_plaintext = draw(st.sampled_from([len(plain), len(plain) + 1, max(len(plain) - 1, 0), 0, 1 << 20]))
    return bytes(module), key, aad, max_plaintext


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(), st.sampled_from(["bytes", "memoryview", "bytearray", "slice"]))
def test_modules_open_as_the_python_twin(native: Any, case: tuple[bytes, bytes, bytes, int], kind: str) -> None:
    module, key, aad, max_plaintext = case
    expected = _python_module(module, key, aad, max_plaintext)
    given_module: Any = {"bytes": module, "memoryview": memoryview(module), "bytearray": bytearray(module),
                         "slice": memoryview(b"xx" + module)[2:]}[kind]
    assert _native_module(native, given_module, key, bytearray(aad), max_plaintext) == expected


def test_many_modules_in_one_call_and_one_bad_refuses_all(native: Any) -> None:
    plains = [os.urandom(n) for n in (0, 1, 15, 16, 17, 1000, 5000)]
    aads = [b"aad-%d" % i for i in range(len(plains))]
    sealed = [encrypt_module(p, KEY, a) for p, a in zip(plains, aads)]
    k = native.GcmKey(KEY)
    assert k.decrypt_modules(sealed, aads, 5000) == plains
    assert k.decrypt_modules(tuple(sealed), tuple(aads), 5000) == plains  # any sequence
    with pytest.raises(native.Failed, match="module length"):
        k.decrypt_modules(sealed, aads, 4999)
    with pytest.raises(native.Failed, match="module"):
        k.decrypt_modules(sealed, [*aads[:-1], b"other"], 5000)
    with pytest.raises(ValueError, match="one AAD per module"):
        k.decrypt_modules(sealed, aads[:-1], 5000)
    with pytest.raises(ValueError):
        k.decrypt_modules(sealed, aads, -1)
    with pytest.raises(TypeError):
        k.decrypt_modules([42], [b""], 10)


def test_a_huge_length_prefix_is_refused_before_anything_is_allocated(native: Any) -> None:
    k = native.GcmKey(KEY)
    for prefix in (0xFFFFFFFF, 0x7FFFFFFF, (256 << 20) + 28):
        module = struct.pack("<I", prefix) + bytes(40)
        with pytest.raises(native.Failed, match="module length"):
            k.decrypt_modules([module], [b""], 256 << 20)
    with pytest.raises(ValueError, match="max_plaintext"):
        k.decrypt_modules([bytes(40)], [b""], (256 << 20) + 1)
    with pytest.raises(ValueError, match="aad is larger"):
        k.decrypt_modules([encrypt_module(b"x", KEY, b"")], [bytes(5000)], 10)


def test_threads_share_a_key(native: Any) -> None:
    """The key's own context is used by one thread at a time; the others make their own."""
    k = native.GcmKey(KEY)
    plains = [os.urandom(4000 + i) for i in range(8)]
    sealed = [encrypt_module(p, KEY, b"aad") for p in plains]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: k.decrypt_modules(sealed, [b"aad"] * len(sealed), 1 << 20), range(1200)))
    assert all(r == plains for r in results)


# ---------------------------------------------------------------------- filters

def _bitset(num_bytes: int, hashes: list[int]) -> bytes:
    if num_bytes & (num_bytes - 1) == 0:
        bf = SplitBlockBloomFilter(num_bytes)
        for h in hashes:
            bf.insert_hash(h)
        return bytes(bf.bitset)
    rng = random.Random(num_bytes)  # parquet-java's unrounded sizes (floor(n / 32) blocks, tail kept), random bits
    return bytes(rng.getrandbits(8) | rng.getrandbits(8) for _ in range(num_bytes))


def _filter_bytes(num_bytes: int, hashes: list[int], key: bytes | None, padding: int) -> bytes:
    header, bitset = serialize_header(num_bytes), _bitset(num_bytes, hashes)
    if key is None:
        return header + bitset
    return encrypt_module(header + bytes(padding), key, HEADER_AAD) + encrypt_module(bitset, key, BITSET_AAD)


@pytest.fixture
def filter_file(tmp_path: Path) -> Iterator[Any]:
    """write(data) -> (fd, offset, data_end): ``data`` at offset 4 of a file, data_end past it."""
    fds: list[int] = []

    def write(data: bytes, tail: int = 64) -> tuple[int, int, int]:
        path = tmp_path / f"f{len(fds)}.bin"
        path.write_bytes(b"PAR1" + data + bytes(tail))
        fd = os.open(path, os.O_RDONLY)
        fds.append(fd)
        return fd, 4, 4 + len(data) + tail

    yield write
    for fd in fds:
        os.close(fd)


def _python_probe(data: bytes, key: bytes | None, hashes: list[int]) -> tuple[bool, ...] | None:
    try:
        probe = _python_filter(memoryview(data), None if key is None else GcmKey(key), HEADER_AAD, BITSET_AAD)
    except Declined:
        return None
    return tuple(probe.check_hash(h) for h in hashes)


def _native_probe(native: Any, fd: int, data_end: int, key: bytes | None, offset: int, length: int,
                  hashes: list[int]) -> tuple[bool, ...] | None:
    try:
        answers, reads = native.probe_filters(fd, data_end, None if key is None else native.GcmKey(key),
                                              [(offset, length, HEADER_AAD, BITSET_AAD)], hashes)
    except native.Failed:
        return None
    assert reads == [(offset, length)]
    return tuple(answers[0])


def _canonical_header(data: bytes, key: bytes | None) -> bool:
    """Whether the plaintext filter's header is the one encoding every writer emits."""
    if key is not None:
        return True  # the decrypted header was written by serialize_header (a damaged one fails its tag)
    try:
        from secure_bloom.header import parse_header
        header, used = parse_header(data)
    except Exception:  # noqa: BLE001 - not a header at all: the Python twin refuses it too
        return True
    return data[:used] == serialize_header(header.num_bytes)


@st.composite
def filters(draw: st.DrawFn) -> tuple[bytes, bytes | None, list[int], list[int]]:
    """(filter bytes, key or None, hashes inserted, hashes probed); often damaged."""
    num_bytes = draw(st.sampled_from([32, 64, 96, 1024, 32 * 37 + 5, 33, 63, 4096]))
    inserted = draw(st.lists(st.integers(0, 2**64 - 1), max_size=40))
    key = draw(st.sampled_from([None, KEY, bytes(range(32))]))
    data = bytearray(_filter_bytes(num_bytes, inserted, key, draw(st.sampled_from([0, 0, 3, 20]))))
    damage = draw(st.sampled_from(["none", "none", "flip", "header", "prefix", "truncate", "extend"]))
    if damage == "flip":
        at = draw(st.integers(0, len(data) - 1))
        data[at] ^= 1 << draw(st.integers(0, 7))
    elif damage == "header":  # a byte of the (plaintext or encrypted) header
        at = draw(st.integers(0, min(len(data), 60) - 1))
        data[at] = draw(st.integers(0, 255))
    elif damage == "prefix":
        where = draw(st.sampled_from([0, len(data) - 4 - num_bytes - 28]))
        if where >= 0:
            struct.pack_into("<I", data, where, draw(st.sampled_from([0, 28, 0xFFFFFFFF, 1052, 1053,
                                                                      num_bytes + 27, num_bytes + 29])))
    elif damage == "truncate":
        data = data[:draw(st.integers(1, len(data) - 1))]
    elif damage == "extend":
        data += draw(st.binary(min_size=1, max_size=40))
    probed = draw(st.lists(st.integers(0, 2**64 - 1), max_size=20)) + inserted[:5] + [0, 2**64 - 1]
    return bytes(data), key, inserted, probed


@settings(max_examples=examples(300), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(filters())
def test_filters_probe_as_the_python_twin(native: Any, filter_file: Any,
                                          case: tuple[bytes, bytes | None, list[int], list[int]]) -> None:
    data, key, inserted, probed = case
    fd, offset, data_end = filter_file(data)
    expected = _python_probe(data, key, probed)
    got = _native_probe(native, fd, data_end, key, offset, len(data), probed)
    if got is None and expected is not None:
        assert not _canonical_header(data, key), "refused a filter the Python twin reads"
    else:
        assert got == expected


@pytest.mark.parametrize("num_bytes", [32, 1024, 32 * 37 + 5, 1 << 20])
@pytest.mark.parametrize("key", [None, KEY])
def test_probes_are_the_filters_bit_for_bit(native: Any, filter_file: Any, num_bytes: int,
                                            key: bytes | None) -> None:
    rng = random.Random(num_bytes)
    inserted = [rng.getrandbits(64) for _ in range(200)]
    bitset = _bitset(num_bytes, inserted)
    data = _filter_bytes(num_bytes, inserted, key, 0)
    fd, offset, data_end = filter_file(data)
    hashes = inserted + [rng.getrandbits(64) for _ in range(3000)] + [0, 2**64 - 1, 1 << 32, (1 << 32) - 1]
    answers, _ = native.probe_filters(fd, data_end, None if key is None else native.GcmKey(key),
                                      [(offset, len(data), HEADER_AAD, BITSET_AAD)], hashes)
    reference = SplitBlockBloomFilter.from_bitset(bitset)
    assert list(answers[0]) == [reference.check_hash(h) for h in hashes]
    if num_bytes & (num_bytes - 1) == 0:
        assert all(answers[0][:len(inserted)])
    assert any(answers[0]) and not all(answers[0])


def test_many_filters_in_one_call_report_every_read(native: Any, tmp_path: Path) -> None:
    blobs = [_filter_bytes(n, [n, n + 1], KEY, 0) for n in (32, 64, 1024, 128)]
    path = tmp_path / "many.bin"
    path.write_bytes(b"PAR1" + b"".join(blobs) + bytes(8))
    offsets = [4 + sum(len(b) for b in blobs[:i]) for i in range(len(blobs))]
    fd = os.open(path, os.O_RDONLY)
    try:
        requests = [(o, len(b), HEADER_AAD, BITSET_AAD) for o, b in zip(offsets, blobs)]
        answers, reads = native.probe_filters(fd, path.stat().st_size - 8, native.GcmKey(KEY), requests,
                                              [32, 64, 1024, 128])
        assert reads == [(o, len(b)) for o, b in zip(offsets, blobs)]
        for n, found in zip((32, 64, 1024, 128), answers):
            assert found[(32, 64, 1024, 128).index(n)]  # each filter holds its own n
        assert native.probe_filters(fd, path.stat().st_size, None, [], [1]) == ([], [])
        assert native.probe_filters(fd, path.stat().st_size, native.GcmKey(KEY), requests[:1], []) == ([()], reads[:1])
    finally:
        os.close(fd)


def test_locations_and_reads_are_checked(native: Any, filter_file: Any) -> None:
    data = _filter_bytes(64, [1], KEY, 0)
    fd, offset, data_end = filter_file(data, tail=0)
    key = native.GcmKey(KEY)

    def probe(off: int, length: int, end: int = data_end, k: Any = key) -> Any:
        return native.probe_filters(fd, end, k, [(off, length, HEADER_AAD, BITSET_AAD)], [1])

    assert probe(offset, len(data))[0] == [(True,)]
    for off, length in ((3, len(data)), (offset, 0), (offset, -1), (data_end, 1), (offset, len(data) + 1),
                        (offset, COALESCED_FILTER_BYTES + 1), (2**62, 10), (offset, 2**62)):
        with pytest.raises(native.Failed, match="filter location"):
            probe(off, length)
    with pytest.raises(native.Failed, match="short read"):  # data_end past the end of the file
        probe(offset, len(data) + 10, end=data_end + 10)
    with pytest.raises(native.Failed, match="module"):
        probe(offset, len(data), k=native.GcmKey(bytes(16)))
    with pytest.raises(native.Failed, match="plaintext filter"):  # an encrypted filter read as plaintext
        probe(offset, len(data), k=None)
    with pytest.raises(native.Failed):
        native.probe_filters(-1, data_end, key, [(offset, len(data), HEADER_AAD, BITSET_AAD)], [1])
    with pytest.raises(OverflowError):
        native.probe_filters(fd, data_end, key, [], [-1])
    with pytest.raises(OverflowError):
        native.probe_filters(fd, data_end, key, [], [2**64])
    with pytest.raises(ValueError, match="more than"):
        native.probe_filters(fd, data_end, key, [], [1] * 65537)
    with pytest.raises(TypeError):
        native.probe_filters(fd, data_end, "key", [], [1])
    with pytest.raises(TypeError):
        native.probe_filters(fd, data_end, key, [[offset, len(data), HEADER_AAD, BITSET_AAD]], [1])


# ---------------------------------------------------------------------- tails

@st.composite
def tails(draw: st.DrawFn) -> bytes:
    """A file's bytes: often a valid tail (magic, footer, length, magic), often damaged."""
    magic = draw(st.sampled_from([b"PAR1", b"PARE"]))
    footer = draw(st.binary(min_size=1, max_size=200))
    body = draw(st.binary(max_size=50))
    data = bytearray(magic + body + footer + struct.pack("<I", len(footer)) + magic)
    damage = draw(st.sampled_from(["none", "none", "flip", "length", "truncate", "short"]))
    if damage == "flip":
        at = draw(st.sampled_from([0, 3, len(data) - 1, len(data) - 5, len(data) - 8]))
        data[at] ^= 1 << draw(st.integers(0, 7))
    elif damage == "length":
        struct.pack_into("<I", data, len(data) - 8, draw(st.sampled_from(
            [0, len(data) - 12, len(data) - 11, len(data), 0xFFFFFFFF, (256 << 20) + 1])))
    elif damage == "truncate":
        data = data[draw(st.integers(1, len(data) - 1)):]
    elif damage == "short":
        data = data[:draw(st.integers(0, 13))]
    return bytes(data)


@settings(max_examples=examples(300), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(tails())
def test_tails_read_as_the_python_twin(native: Any, tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "tail.parquet"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        reads: list[tuple[int, int]] = []
        try:
            expected: Any = (*_python_tail(fd, len(data), reads), reads)
        except Declined:
            expected = None
        try:
            got: Any = native.read_tail(fd, len(data))
        except native.Failed:
            got = None
        assert got == expected
    finally:
        os.close(fd)


def test_a_tail_past_the_end_of_the_file_is_refused(native: Any, tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1" + bytes(10) + struct.pack("<I", 10) + b"PAR1")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert native.read_tail(fd, 22) == (b"PAR1", 4, bytes(10), [(0, 4), (14, 8), (4, 10)])
        for size in (23, 40, 2**40):  # a size larger than the file (it shrank): short reads
            with pytest.raises(native.Failed):
                native.read_tail(fd, size)
        with pytest.raises(native.Failed, match="too short"):
            native.read_tail(fd, 12)
        with pytest.raises(native.Failed):
            native.read_tail(-1, 22)
    finally:
        os.close(fd)
