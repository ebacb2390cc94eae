"""The targets of issue 29 that ``bench-lookup`` measures beside its engines' table.

* :func:`threads`: cold lookups in two threads against one (throughput ratio);
* :func:`many_row_groups`: the pruning cost per row group of a file of 2,000 row groups beyond
  its physical floor (:mod:`.floor`), against a file of one, beside the AES-GCM of a row group's
  modules in native batches (:func:`.floor.batched_byte_work`: what is left once no Python runs per
  row group);
* :func:`footer_parse`: a footer of 100,000 row groups, our reader's open against
  ``pyarrow.parquet.read_metadata``;
* :func:`object_store_requests`: requests and bytes per file of a cold lookup on moto's S3
  server (127.0.0.1, started here when moto is installed), ours beside pyarrow's, counted at the
  counting HTTP proxy of ``tests/support/s3_server.py`` (read from the checkout).

Each returns a dict of figures (``{"not_run": reason}`` when it could not run); the timings
take turns (A B A B) and keep the minimum.
"""

from __future__ import annotations

from collections import Counter

import importlib.util
import logging
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["threads", "many_row_groups", "footer_parse", "object_store_requests"]


def threads(lookup: Callable[[str], Any], keys: Sequence[str], rounds: int = 3) -> dict[str, Any]:
    """``lookup`` of each of ``keys`` in one thread, then of each in two threads at once (each
    thread all of ``keys``), ``rounds`` times taking turns: the two threads' throughput over one
    thread's (2.0: perfect use of two cores)."""
    def one() -> None:
        for k in keys:
            lookup(k)

    def two() -> None:
        workers = [threading.Thread(target=one) for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    lookup(keys[0])
    best = {"one": float("inf"), "two": float("inf")}
    for _ in range(rounds):
        for name, run in (("one", one), ("two", two)):
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return {"lookups": len(keys), "one_thread_s": round(best["one"], 5), "two_threads_s": round(best["two"], 5),
            "throughput_ratio": round(2 * best["one"] / best["two"], 3)}


def many_row_groups(row_groups: int = 2000, rows_per_group: int = 10, workdir: str | None = None,
                    repeat: int = 5) -> dict[str, Any]:
    """Pruning (cold, absent key) of one encrypted file of ``row_groups`` row groups and of one of
    a single row group (same rows per group, KEKs of their own), each against its physical floor:
    the cost per extra row group beyond the floor, and beyond the preads alone."""
    from secure_bloom.parquet import KeyAccess

    from .bench_lookup import _io_only, generate_dataset, interleaved_best, pruner
    from .floor import Floor, batched_byte_work, plan_file

    root = Path(tempfile.mkdtemp(prefix="secure-bloom-rgs-", dir=workdir))
    try:
        from .bench_lookup import _ROW_BYTES

        runs: dict[str, Callable[[], Any]] = {}
        for name, groups in (("many", row_groups), ("one", 1)):
            data = generate_dataset(root / name, rows_per_group * groups * _ROW_BYTES / 1e6, 1, groups,
                                    plaintext=False)
            k = data["present"][0]
            absent = f"{k[:31]}{'0' if k[31] != '0' else '1'}"
            path = str(next(data["encrypted"].iterdir()))
            floor = Floor([plan_file(path, KeyAccess(kms=data["kms"]), "key")], data["kms"])
            runs[f"{name}_prune"] = pruner(data, absent, [path])
            runs[f"{name}_floor"] = floor.run
            runs[f"{name}_io"] = _io_only(floor)
            batched = batched_byte_work(floor.plans[0], data["kms"])
            if batched is not None:
                runs[f"{name}_native"] = batched
        best = interleaved_best(runs, repeat)
        extra = row_groups - 1
        out: dict[str, Any] = {"row_groups": row_groups, **{f"{n}_s": round(v[0], 6) for n, v in best.items()}}
        for kind, i in (("", 0), ("cpu_", 1)):
            for base in ("floor", "io"):
                many = best["many_prune"][i] - best[f"many_{base}"][i]
                one = best["one_prune"][i] - best[f"one_{base}"][i]
                out[f"beyond_{base}_{kind}us_per_row_group"] = round(1e6 * (many - one) / extra, 3)
        if "many_native" in best and "one_native" in best:  # the AES-GCM of a row group's modules in native batches
            out["native_aes_gcm_us_per_row_group"] = round(
                1e6 * (best["many_native"][0] - best["one_native"][0]) / extra, 3)
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def footer_parse(row_groups: int = 100_000, workdir: str | None = None, repeat: int = 2,
                 slow_s: float = 10.0) -> dict[str, Any]:
    """A plaintext file of ``row_groups`` one-row row groups (an int64 and a string column):
    :class:`~secure_bloom.parquet.ParquetBloomReader`'s open (tail, footer, chunk index) against
    ``pyarrow.parquet.read_metadata``, taking turns, ``repeat`` rounds (one when ours takes over
    ``slow_s``)."""
    from secure_bloom.parquet import ParquetBloomReader

    root = Path(tempfile.mkdtemp(prefix="secure-bloom-footer-", dir=workdir))
    try:
        path = root / "many.parquet"
        start = time.perf_counter()
        pq.write_table(pa.table({"id": pa.array(range(row_groups), pa.int64()),
                                 "key": pa.array([f"{i:016x}" for i in range(row_groups)])}),
                       path, row_group_size=1)
        written = time.perf_counter() - start

        def ours() -> None:
            with ParquetBloomReader(path) as reader:
                assert reader.num_row_groups == row_groups

        def arrow() -> None:
            assert pq.read_metadata(path).num_row_groups == row_groups

        best = {"ours": float("inf"), "pyarrow": float("inf")}
        for round_ in range(repeat):
            for name, run in (("ours", ours), ("pyarrow", arrow)):
                begin = time.perf_counter()
                run()
                best[name] = min(best[name], time.perf_counter() - begin)
            if round_ == 0 and best["ours"] > slow_s:
                break
        footer = int.from_bytes(path.read_bytes()[-8:-4], "little")
        return {"row_groups": row_groups, "footer_bytes": footer, "written_s": round(written, 2),
                "ours_s": round(best["ours"], 5), "pyarrow_s": round(best["pyarrow"], 5),
                "ratio": round(best["ours"] / best["pyarrow"], 3)}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _s3_support() -> Any:
    """tests/support/s3_server.py of the checkout (its counting proxy), or None outside one."""
    path = Path(__file__).resolve().parent.parent / "tests" / "support" / "s3_server.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("secure_bloom_bench_s3_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def object_store_requests(data: dict[str, Any], keys: dict[str, str], files: int = 10) -> dict[str, Any]:
    """A cold lookup of each of ``keys`` (label -> key) over the first ``files`` files of ``data``
    uploaded to moto's S3 server on 127.0.0.1: HTTP requests and response bytes per file, ours
    (``scan`` then its table) beside ``pyarrow.dataset`` with the same decryption, counted at a
    proxy: requests naming an object per file, requests once per lookup (the prefix, listings),
    and the most requests ours' pruning made on one object (its HEAD, tail and filter reads)."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as e:
        return {"not_run": f"moto is not installed ({type(e).__name__}); pip install 'moto[server]'"}
    support = _s3_support()
    if support is None:
        return {"not_run": "tests/support/s3_server.py (the counting proxy) is not beside the benchmarks"}
    import pyarrow.dataset as ds

    from secure_bloom.parquet import KeyAccess, scan
    from secure_bloom.parquet.read.api import parquet_format

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    proxy = None
    try:
        port = int(server._server.server_port)  # moto exposes the bound port only on its werkzeug server
        proxy = support.CountingProxy(("127.0.0.1", port))
        s3 = support.S3Service(proxy, port)
        bucket = s3.bucket("lookup")
        upload = s3.upload_filesystem()
        paths = sorted(Path(data["encrypted"]).iterdir())[:files]
        for p in paths:
            with upload.open_output_stream(f"{bucket}/data/{p.name}") as out:
                out.write(p.read_bytes())
        prefix = f"{bucket}/data"
        out: dict[str, Any] = {"files": len(paths)}
        for label, key in keys.items():
            for engine in ("ours", "pyarrow"):
                fs = s3.filesystem()
                s3.reset()
                pruning: Counter[str] = Counter()
                if engine == "ours":
                    pruned = scan(prefix, filesystem=fs, filters=[("key", "==", key)],
                                  keys=KeyAccess(kms=data["kms"]))
                    # the pruning's requests on each object (its HEAD, tail, filters), before the scan
                    pruning.update(where for _, where, _ in s3.log if where.split("?")[0].endswith(".parquet"))
                    rows = pruned.to_table().num_rows
                else:
                    dataset = ds.dataset(prefix, filesystem=fs, format=parquet_format(KeyAccess(kms=data["kms"])))
                    rows = dataset.to_table(filter=ds.field("key") == key).num_rows
                requests, body = s3.counts()
                on_objects = sum(1 for _, where, _ in s3.log if where.split("?")[0].endswith(".parquet"))
                out[f"{engine}_{label}"] = {
                    "rows": rows, "requests": dict(requests), "bytes": body,
                    # every request naming one object (HEADs, tail, filter and data reads) per file
                    "requests_per_file": round(on_objects / len(paths), 2),
                    # the prefix's HEAD and the listings: once per lookup, not per file
                    "per_lookup": sum(requests.values()) - on_objects,
                    # ours only: the most requests the pruning made on one object (HEAD, tail, filters)
                    "pruning_requests_max": max(pruning.values(), default=None),
                    "bytes_per_file": round(body / len(paths))}
        return out
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop()
