"""secure_bloom.native_gcm (secure_bloom/_native/gcm.c), the C binding of AES-GCM, against
cryptography's (:func:`secure_bloom.crypto.modules.decrypt_module`, one module at a time).

For many generated modules, valid or damaged (a flipped byte, a changed length prefix, a
truncation, a wrong key or AAD), the extension opens exactly what cryptography opens, or refuses
(``Failed``) where :func:`decrypt_module` refuses a module that must fill its buffer. Buffers of
every kind (bytes, memoryview, bytearray), the limits it is compiled with, huge lengths, keys
shared by threads. libcrypto is loaded at run time: no DT_NEEDED on it, the file loaded reported,
and a missing or wrong library (SECURE_BLOOM_LIBCRYPTO) an ImportError after which cryptography
opens the modules. Marker ``native``: the extension not built in this environment FAILS these
tests (unless SECURE_BLOOM_ALLOW_SKIP names ``native``).
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
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
from secure_bloom.crypto import gcm
from secure_bloom.crypto.gcm import GcmKey
from secure_bloom.crypto.modules import decrypt_module, encrypt_module
from secure_bloom.errors import SecureBloomError
from secure_bloom.parquet.file.crypto_context import MAX_THRIFT_MODULE_BYTES

pytestmark = pytest.mark.native

KEY = bytes(range(16))


@pytest.fixture(scope="module")
def native() -> Any:
    try:
        from secure_bloom import native_gcm
    except ImportError as e:
        missing("native", f"secure_bloom.native_gcm is not built or finds no libcrypto in this environment "
                          f"({e}; it loads OpenSSL's libcrypto.so.3 or .so.1.1 at run time)")
    return native_gcm


def test_the_gcm_layer_uses_the_extension(native: Any) -> None:
    if os.environ.get(gcm.GCM_ENV_VAR, "auto") == "cryptography":
        pytest.skip(f"{gcm.GCM_ENV_VAR}=cryptography chooses cryptography's binding")
    assert gcm.NATIVE_GCM and gcm.NATIVE_GCM_UNAVAILABLE is None
    assert GcmKey(KEY).native() is not None


def test_only_the_gcm_layer_loads_the_extension() -> None:
    package = Path(gcm.__file__).parents[1]
    users = sorted(str(p.relative_to(package)) for p in package.rglob("*.py") if "native_gcm" in p.read_text())
    assert users == ["crypto/gcm.py"]


def test_limits_are_the_specs(native: Any) -> None:
    limits = native.limits()
    assert limits["LENGTH_PREFIX"] == spec.LENGTH_PREFIX
    assert limits["NONCE_LENGTH"] == spec.NONCE_LENGTH and limits["TAG_LENGTH"] == spec.TAG_LENGTH
    assert limits["MAX_THRIFT_MODULE"] == MAX_THRIFT_MODULE_BYTES
    assert limits["MAX_AAD"] >= 1024 and limits["MAX_MODULES"] > spec.MAX_ORDINAL
    assert "OpenSSL" in native.info()["openssl"]


# ---------------------------------------------------------------------- libcrypto, loaded at run time

def _load_in_subprocess(libcrypto: str, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter (-I: the installed package) whose native_gcm loads ``libcrypto``
    (SECURE_BLOOM_LIBCRYPTO)."""
    return subprocess.run([sys.executable, "-I", "-W", "default", "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SECURE_BLOOM_LIBCRYPTO": libcrypto, **env}, check=False)


_IMPORT = """
try:
    import secure_bloom.native_gcm as n
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
def test_an_unloadable_libcrypto_is_an_import_error_and_cryptography_opens_the_modules(
        native: Any, tmp_path: Path, library: str) -> None:
    """No such file, or a shared object without the EVP functions (the kernels extension): the import
    raises ImportError naming why, the GCM layer falls back with its warning, SECURE_BLOOM_GCM=native fails."""
    from secure_bloom import native_kernels

    path = str(tmp_path / "no" / "libcrypto.so.3") if library == "missing" else native_kernels.__file__
    why = "cannot load OpenSSL's libcrypto" if library == "missing" else "has no EVP_CIPHER_CTX_new"
    proc = _load_in_subprocess(path, _IMPORT)
    assert proc.returncode == 0 and proc.stdout.startswith("ImportError: ") and why in proc.stdout, proc
    assert path in proc.stdout  # the path named (diagnostics; a path is no secret)

    fallback = ("import secure_bloom.crypto.gcm as g; "
                "print(g.NATIVE_GCM, g.NATIVE_GCM_UNAVAILABLE)")
    proc = _load_in_subprocess(path, fallback, SECURE_BLOOM_GCM="auto")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("False secure_bloom.native_gcm is not built or cannot be loaded") \
        and why in proc.stdout, proc.stdout
    warned = [line for line in proc.stderr.splitlines() if "ExtensionFallbackWarning" in line]
    assert len(warned) == 1 and why in warned[0] and "SECURE_BLOOM_GCM=cryptography" in warned[0], proc.stderr
    assert "Install OpenSSL's libcrypto" in warned[0], proc.stderr  # the remedy for this extension

    proc = _load_in_subprocess(path, fallback, SECURE_BLOOM_GCM="native")
    assert proc.returncode != 0 and "ImportError: SECURE_BLOOM_GCM=native but secure_bloom.native_gcm " \
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
    """cryptography's answer for a module that must fill its buffer (None: refused)."""
    try:
        plain, used = decrypt_module(module, key, aad, max_plaintext=max_plaintext)
    except SecureBloomError:
        return None
    return plain if used == len(module) else None


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
def test_modules_open_as_cryptography_opens_them(native: Any, case: tuple[bytes, bytes, bytes, int], kind: str) -> None:
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
