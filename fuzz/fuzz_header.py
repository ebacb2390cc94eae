"""atheris harness: the Bloom filter header parsers (Thrift compact, unions, numBytes, padding).

    python fuzz/fuzz_header.py fuzz/corpus/header -max_total_time=300

Any input must parse or raise MalformedHeaderError; a parsed header must re-serialise to the
bytes it was parsed from when they are canonical (round trip) and satisfy the spec's bounds.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    import _common  # noqa: F401  (puts the checkout on sys.path)
    from secure_bloom.errors import MalformedHeaderError
    from secure_bloom.filter import SplitBlockBloomFilter
    from secure_bloom.header import parse_header, parse_header_plaintext, serialize_header
    from secure_bloom.spec import SPEC_MAX_BITSET_BYTES


def test_one_input(data: bytes) -> None:
    try:
        header, used = parse_header(data)
    except MalformedHeaderError:
        header = None
    if header is not None:
        assert 0 < header.num_bytes <= SPEC_MAX_BITSET_BYTES and header.num_bytes % 32 == 0
        assert 0 < used <= len(data)
    try:
        parse_header_plaintext(data)
    except MalformedHeaderError:
        pass
    try:
        SplitBlockBloomFilter.from_bytes(data)
    except MalformedHeaderError:
        pass
    except ValueError as e:  # MalformedBitsetError is a ValueError too; anything else is a bug
        from secure_bloom.errors import MalformedInputError

        if not isinstance(e, MalformedInputError):
            raise
    if header is not None and header.num_bytes & (header.num_bytes - 1) == 0:
        assert parse_header(serialize_header(header.num_bytes))[0] == header


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
