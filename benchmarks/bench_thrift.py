"""``python -m benchmarks bench-thrift [FILE.parquet ...]``: time per FileMetaData parse,
native C decoder vs the Python (thriftpy2) decoder, in one run.

Footers: the plaintext footers of the files given, else two that pyarrow writes (3 and 40 columns,
5 row groups, statistics and page indexes). Each figure is the best of ``--repeat`` batches.
"""

from __future__ import annotations

import argparse
import io
import os
import struct
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from secure_bloom import thrift_codec
from .timing import best_seconds

__all__ = ["bench_footers", "main"]


def _file_footer(path: str) -> bytes:
    """The FileMetaData bytes of a Parquet file with a plaintext footer (``PAR1``)."""
    with open(path, "rb") as f:
        f.seek(-8, os.SEEK_END)
        tail = f.read(8)
        if tail[4:] != b"PAR1":
            raise ValueError(f"{path}: not a Parquet file with a plaintext footer")
        (length,) = struct.unpack("<I", tail[:4])
        f.seek(-8 - length, os.SEEK_END)
        return f.read(length)


def _arrow_footer(columns: int, row_groups: int) -> bytes:
    """The footer Arrow C++ writes for ``columns`` int64/string columns in ``row_groups`` row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({f"c{i}": (pa.array([f"v{j}" for j in range(100)]) if i % 2 else pa.array(range(100)))
                      for i in range(columns)})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=max(1, 100 // row_groups), write_page_index=True)
    data = sink.getvalue()
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    return data[len(data) - 8 - length:-8]


def bench_footers(footers: dict[str, bytes], repeat: int = 5) -> list[dict[str, Any]]:
    """Microseconds per ``parse(FileMetaData, footer)`` for each decoder that is available."""
    cls = thrift_codec.idl().FileMetaData
    backends = ["python", "native"] if _native_loads() else ["python"]
    rows = []
    for label, raw in footers.items():
        row: dict[str, Any] = {"footer": label, "bytes": len(raw)}
        for name in backends:
            with thrift_codec.forced_backend(name):
                thrift_codec.parse(cls, raw)  # warm: spec tables, IDL
                loops = max(1, (2_000_000 if name == "native" else 100_000) // (len(raw) + 1))

                def batch() -> None:
                    for _ in range(loops):
                        thrift_codec.parse(cls, raw)

                row[f"{name}_us"] = round(best_seconds(batch, repeat) / loops * 1e6, 2)
        if "native_us" in row:
            row["speedup"] = round(row["python_us"] / row["native_us"], 1)
        rows.append(row)
    return rows


def _native_loads() -> bool:
    try:
        with thrift_codec.forced_backend("native"):
            return True
    except ImportError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks bench-thrift", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", help="Parquet files with plaintext footers (default: pyarrow-made)")
    parser.add_argument("--repeat", type=int, default=5, help="timed batches per case; the best is shown")
    args = parser.parse_args(argv)
    for key, value in thrift_codec.thrift_info().items():
        print(f"{key}: {value}")
    footers = ({Path(p).name: _file_footer(p) for p in args.files} if args.files else
               {"pyarrow 3 columns x 5 row groups": _arrow_footer(3, 5),
                "pyarrow 40 columns x 5 row groups": _arrow_footer(40, 5)})
    for row in bench_footers(footers, args.repeat):
        print("  ".join(f"{k}={v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
