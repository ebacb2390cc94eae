"""atheris harness: the Thrift reader's TIME, not only its exceptions.

    python fuzz/fuzz_thrift_time.py /tmp/fuzz/thrift_time -max_total_time=600 -timeout=120 \
        -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=/tmp/fuzz/thrift_time-

libFuzzer's inputs are small (``-max_len``, default 4096), and a quadratic parser is fast on small
inputs: the 1 MiB varint run that took 24 s parses a 4 KiB input in under a millisecond. So each
input is a recipe that is amplified before it is parsed::

    byte 0      structure (FileMetaData, FileCryptoMetaData, ColumnMetaData, BloomFilterHeader)
    byte 1      where the repeated slice starts, as a fraction (/255) of the template
    byte 2      slice length (1..256)
    byte 3      copies: 2^(byte % 21), capped so the blob stays under AMPLIFIED_MAX bytes
    bytes 4..   the template (seeds: real footers and headers)

    blob = template[:start] + template[start:start + length] * copies + template[start + length:]

Properties: only MalformedThriftError / MalformedHeaderError escape, and the work is linear in
the copies. Absolute CPU budgets do not hold under atheris' instrumentation (10-40x slower, and
machine-dependent), so the harness checks SCALING: when a parse takes over MEASURABLE_S, the same
recipe is parsed with a quarter of the copies and must have taken at least a sixth as long
(linear work: a quarter, plus noise; the quadratic varint decoder of issue 15 item 7: a
sixteenth). A violation raises AssertionError, which atheris reports as a crash with the input;
``-timeout`` is the backstop for a true hang.
"""

from __future__ import annotations

import sys
import time

import atheris

with atheris.instrument_imports():
    import _common  # noqa: F401  (puts the project on sys.path)
    from secure_bloom import thrift_codec
    from secure_bloom.errors import MalformedHeaderError, MalformedThriftError

M = thrift_codec.idl()
STRUCTURES = (M.FileMetaData, M.FileCryptoMetaData, M.ColumnMetaData, M.BloomFilterHeader)
AMPLIFIED_MAX = 1 << 20
MEASURABLE_S = 0.5
MAX_RATIO = 6.0


def amplify(data: bytes, divide: int = 1) -> tuple[type, bytes]:
    """The structure and the amplified blob an input describes (see the module docstring), with
    the copies divided by ``divide``."""
    if len(data) < 5:
        return STRUCTURES[0], data
    cls = STRUCTURES[data[0] % len(STRUCTURES)]
    template = data[4:]
    start = data[1] * len(template) // 256
    length = 1 + data[2]
    piece = template[start:start + length]
    copies = min(1 << (data[3] % 21), AMPLIFIED_MAX // max(1, len(piece))) // divide
    return cls, template[:start] + piece * copies + template[start + length:]


def _cpu_seconds(cls: type, blob: bytes) -> float:
    started = time.process_time()
    try:
        thrift_codec.parse(cls, blob)
    except (MalformedThriftError, MalformedHeaderError):
        pass
    return time.process_time() - started


def test_one_input(data: bytes) -> None:
    cls, blob = amplify(data)
    spent = _cpu_seconds(cls, blob)
    if spent < MEASURABLE_S:
        return
    _, quarter = amplify(data, divide=4)
    spent_quarter = _cpu_seconds(cls, quarter)
    if spent > MAX_RATIO * spent_quarter + MEASURABLE_S:
        raise AssertionError(
            f"{cls.__name__}: {len(blob)} bytes took {spent:.2f} s CPU, {len(quarter)} bytes "
            f"{spent_quarter:.2f} s: super-linear work")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
