"""Python entry points to the Java harnesses: parquet-java as the reference for our Bloom filters.

The harness classes (``benchmarks/java``) compile into a jar of their own (:func:`harness_jar`), built
against the production jar; it is used by the demo, the benchmarks and the tests, and never put
on Spark's class path.

* :func:`bloom_probe` - parquet-java opens a file (decrypting it with the Hadoop properties given,
  e.g. ``EncryptionPolicy.hadoop_conf()``), reads each row group's Bloom filter of the requested
  columns with ``ParquetFileReader.readBloomFilter`` and checks values (``BloomProbe`` main).
* :func:`java_hashes` - parquet-java's ``BloomFilter.hash`` of values (XXH64, SPEC_NOTES 2).
* :func:`bloom_bench` - times ``BlockSplitBloomFilter`` on a values file (``BloomBench`` main).

The checks only the test suite runs (``BloomVerify``, ``KmsTool``) live in
``tests/support/java`` and ``tests/support/parquet_java_checks.py``, not in the wheel.

Value types are the probe's: int32, int64, float, double, string (UTF-8), binary-hex.
"""

from __future__ import annotations

import math
import struct
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from secure_bloom.spark.jvm import compiled_jar, run_java, run_json, secure_bloom_jar
from secure_bloom.spec import WRITER_DEFAULT_MAX_BYTES

__all__ = [
    "ColumnProbe",
    "ValueType",
    "bloom_bench",
    "bloom_probe",
    "format_value",
    "harness_jar",
    "harness_jars",
    "run_harness",
    "java_hashes",
    "write_int64_values",
    "write_string_values",
]

ValueType = Literal["int32", "int64", "float", "double", "string", "binary-hex"]

_PKG = "io.securebloom."
_HARNESS_SOURCES = Path(__file__).parent / "java"


def harness_jar(cache_dir: Path | None = None) -> Path:
    """The reference-harness jar (BloomProbe, BloomBench and their Cli plumbing), cached by content."""
    return compiled_jar(_HARNESS_SOURCES, cache_dir=cache_dir,
                        extra_classpath=[secure_bloom_jar(cache_dir)])


def harness_jars() -> list[Path]:
    """The class path of the harnesses: their jar, then the production jar."""
    return [harness_jar(), secure_bloom_jar()]


def run_harness(main: str, args: Sequence[str] = (), timeout: float = 120.0, *,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run harness ``main`` (a short class name) and return the finished process, unchecked."""
    return run_java(_PKG + main, args, timeout, stdin=stdin, jars=harness_jars())


def _run_json(main: str, args: Sequence[str], conf: Mapping[str, str] | None, timeout: float,
              **kwargs: Any) -> dict[str, Any]:
    return run_json(_PKG + main, args, conf, timeout, jars=harness_jars(), **kwargs)


def format_value(value: object, value_type: ValueType) -> str:
    """The probe's text form of ``value``: decimal integers, repr of floats, text, or hex bytes."""
    if value_type in ("int32", "int64"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{value_type} values must be int, not {type(value).__name__}")
        return str(value)
    if value_type in ("float", "double"):
        x = float(value)  # type: ignore[arg-type]
        if math.isnan(x):
            return "NaN"  # Java's spelling; the canonical NaN (payloads are not preserved)
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return repr(x)  # shortest round-trip text; a float32 value parses back exactly
    if value_type == "string":
        if not isinstance(value, str):
            raise TypeError(f"string values must be str, not {type(value).__name__}")
        return value
    if value_type == "binary-hex":
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"binary-hex values must be bytes, not {type(value).__name__}")
        return bytes(value).hex()
    raise ValueError(f"unknown value type {value_type!r}")


@dataclass(frozen=True)
class ColumnProbe:
    """Values to check in one column (dotted path), given as Python values of ``value_type``."""

    column: str
    value_type: ValueType
    values: tuple[object, ...] = field(default=())

    def args(self) -> list[str]:
        out = ["--column", self.column, "--value-type", self.value_type]
        for v in self.values:
            out += ["--value", format_value(v, self.value_type)]
        return out


def bloom_probe(
    path: str | Path,
    probes: Iterable[ColumnProbe] = (),
    hadoop_conf: Mapping[str, str] | None = None,
    *,
    all_columns: bool = False,
    hashes: bool = False,
    bitset_sha256: bool = False,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """parquet-java's view of the Bloom filters in ``path`` (see ``BloomProbe.java`` for the JSON).

    ``result["columns"][column]["row_groups"][i]["found"][format_value(v)]`` is True/False, or None
    where that chunk has no filter. Raises JvmError if parquet-java fails (wrong key, tampered
    filter, unknown column).
    """
    args = [str(path)]
    for probe in probes:
        args += probe.args()
    if all_columns:
        args.append("--all-columns")
    if hashes:
        args.append("--hashes")
    if bitset_sha256:
        args.append("--bitset-sha256")
    return _run_json("BloomProbe", args, dict(hadoop_conf or {}), timeout)


def java_hashes(value_type: ValueType, values: Sequence[object], timeout: float = 60.0) -> dict[str, int]:
    """parquet-java's 64-bit Bloom filter hash of each value, keyed by its probe text form."""
    args = ["--hash-only", "--value-type", value_type]
    for v in values:
        args += ["--value", format_value(v, value_type)]
    out = _run_json("BloomProbe", args, None, timeout)
    return {k: int(h, 16) for k, h in out["hashes"].items()}


def write_int64_values(path: str | Path, values: Iterable[int]) -> int:
    """Write BloomBench's int64 values file (little-endian int64s back to back); returns the count."""
    data = list(values)
    Path(path).write_bytes(struct.pack(f"<{len(data)}q", *data))
    return len(data)


def write_string_values(path: str | Path, values: Iterable[str | bytes]) -> int:
    """Write BloomBench's string values file (uint32 LE byte length, then the UTF-8 bytes)."""
    count = 0
    with open(path, "wb") as f:
        for v in values:
            b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
            f.write(struct.pack("<I", len(b)))
            f.write(b)
            count += 1
    return count


def bloom_bench(
    kind: Literal["int64", "string"],
    values_file: str | Path,
    *,
    n: int | None = None,
    num_bytes: int = WRITER_DEFAULT_MAX_BYTES,
    warmup: int = 3,
    reps: int = 5,
    timeout: float = 600.0,
) -> dict[str, Any]:
    """Time parquet-java's BlockSplitBloomFilter; returns BloomBench's JSON (ns/value per phase:
    hash, insert, hash_insert, check, hash_check; ``found`` = values reported present)."""
    args = ["--kind", kind, "--values-file", str(values_file), "--bytes", str(num_bytes),
            "--warmup", str(warmup), "--reps", str(reps)]
    if n is not None:
        args += ["--n", str(n)]
    return _run_json("BloomBench", args, None, timeout,
                     jvm_args=("-XX:+UseParallelGC", "-Xmx2g"))
