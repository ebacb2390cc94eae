"""atheris harness: encrypted modules and encrypted Bloom filters.

    python fuzz/fuzz_module.py fuzz/corpus/module -max_total_time=300

The first input byte picks a mode:

* 0: ``data[1]`` picks the column (0: double_field/kc1, 1: float_field/kc2) and the rest is an
  encrypted filter (header module + bitset module) decrypted with the real key and file AAD of
  the Bloom filter vector: the framing checks, GCM and the bounded stream reader;
* 1: the rest is split into a header plaintext and a bitset plaintext that the harness encrypts
  (fixed key, test-only nonce) and decrypts again: what happens *after* authentication (padding,
  numBytes vs. bitset length), which a fuzzer cannot reach through GCM;
* otherwise: the rest goes to ``decrypt_module`` / ``read_module`` with a bound from ``data[1]``.

Only MalformedInputError / ModuleAuthenticationError may escape the library; a filter that is
returned must equal the one the plaintexts describe.
"""

from __future__ import annotations

import io
import struct
import sys

import atheris

with atheris.instrument_imports():
    from _common import TESTING_KEYS
    from secure_bloom.crypto.modules import ModuleType, decrypt_module, encrypt_module, module_aad, read_module
    from secure_bloom.encrypted_filter import decrypt_bloom_filter, read_encrypted_bloom_filter
    from secure_bloom.errors import MalformedInputError, ModuleAuthenticationError

EXPECTED = (MalformedInputError, ModuleAuthenticationError)
FILE_AAD = b"\xb8\xa5\x82zU\xa7z\x9d"  # aad_file_unique of the Bloom filter vector (no prefix)
KEYS = (TESTING_KEYS["kc1"], TESTING_KEYS["kc2"])
_NONCE = bytes(12)


class _Bounded(io.BytesIO):
    """Refuses a read larger than the input could justify (validated sizes only)."""

    def __init__(self, data: bytes, limit: int) -> None:
        super().__init__(data)
        self.limit = limit

    def read(self, n: int | None = -1) -> bytes:
        assert n is not None and 0 <= n <= self.limit, f"read({n}) beyond the bound {self.limit}"
        return super().read(n)


def _real(data: bytes) -> None:
    if len(data) < 1:
        return
    col = data[0] & 1
    blob = data[1:]
    try:
        decrypt_bloom_filter(blob, KEYS[col], FILE_AAD, 0, col)
    except EXPECTED:
        pass
    try:  # header module <= 1052 bytes; numBytes (2048 here) is authenticated before the bitset is read
        read_encrypted_bloom_filter(_Bounded(blob, max(len(blob), 4096)), 0, KEYS[col], FILE_AAD, 0, col)
    except EXPECTED:
        pass


def _after_authentication(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    header_plain = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 1100))
    bitset = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 4096))
    key = KEYS[0]
    blob = (encrypt_module(header_plain, key, module_aad(FILE_AAD, ModuleType.BLOOM_FILTER_HEADER, 0, 0), _nonce=_NONCE)
            + encrypt_module(bitset, key, module_aad(FILE_AAD, ModuleType.BLOOM_FILTER_BITSET, 0, 0), _nonce=_NONCE))
    try:
        bf = decrypt_bloom_filter(blob, key, FILE_AAD, 0, 0)
    except EXPECTED:
        return
    assert bf.bitset == bitset


def _raw(data: bytes) -> None:
    if len(data) < 1:
        return
    bound = None if data[0] == 255 else data[0] * 64
    blob = data[1:]
    for read in (lambda: decrypt_module(blob, KEYS[0], b"aad", max_plaintext=bound),
                 lambda: read_module(_Bounded(blob, 1 << 24), KEYS[0], b"aad", max_plaintext=bound)):
        try:
            read()
        except EXPECTED:
            pass
        else:
            raise AssertionError("a module authenticated without the key")
    if len(blob) >= 4:
        struct.unpack_from("<I", blob)


def test_one_input(data: bytes) -> None:
    if not data:
        return
    mode, rest = data[0], data[1:]
    if mode == 0:
        _real(rest)
    elif mode == 1:
        _after_authentication(rest)
    else:
        _raw(rest)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
