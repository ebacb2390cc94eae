"""Benchmarks, the end-to-end demo, the conformance vectors generator and the reference harnesses:
developer tooling, kept out of the installed package (run from a checkout with the project's venv).

``python -m benchmarks COMMAND [OPTIONS]`` (``python -m benchmarks`` lists the commands):

* ``demo`` - :mod:`benchmarks.demo`, the end-to-end demo (``scripts/demo``);
* ``bench`` - :mod:`benchmarks.bench` (filter kernels vs parquet-java and Arrow C++);
* ``bench-spark`` - :mod:`benchmarks.bench_spark` (distributed build);
* ``bench-write``, ``bench-attach``, ``bench-lookup``, ``bench-thrift`` - the write, attach,
  point-lookup and footer-parse benchmarks;
* ``vectors`` - :mod:`benchmarks.vectors` (regenerates ``specs/vectors``).

:mod:`benchmarks.parquet_java` runs parquet-java's own reader (BloomProbe, BloomBench; Java sources
in ``java/``, a jar of their own, never on Spark's class path) and :mod:`benchmarks.arrow_cpp`
Arrow C++'s (``cpp/``); the tests use both as reference readers.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from pathlib import Path
from typing import Any


def _prefer_installed_package() -> None:
    """``python -m benchmarks`` from the checkout puts the checkout on ``sys.path``, where the
    ``secure_bloom`` source tree (its C extensions not built in place) would shadow the package
    installed in the venv: drop that entry when an installed package exists, unless PYTHONPATH
    asked for the checkout (a developer testing the source tree)."""
    root = Path(__file__).resolve().parent.parent
    wanted = {str(Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    if str(root) in wanted or "secure_bloom" in sys.modules:
        return
    others = [p for p in sys.path if p and Path(p).resolve() != root]
    if importlib.machinery.PathFinder.find_spec("secure_bloom", others) is not None:
        sys.path[:] = [p for p in sys.path if p == "" and Path.cwd() != root or p and Path(p).resolve() != root]


_prefer_installed_package()

#: Run first in every worker process of :func:`process_pool`: registers this package from its
#: folder, so the workers import ``benchmarks.*`` without the checkout on ``sys.path``.
_REGISTER = f"""
import importlib.util, sys
if "benchmarks" not in sys.modules:
    spec = importlib.util.spec_from_file_location(
        "benchmarks", {str(Path(__file__).resolve())!r}, submodule_search_locations=[{str(Path(__file__).resolve().parent)!r}])
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks"] = module
    spec.loader.exec_module(module)
"""


def process_pool(max_workers: int) -> Any:
    """A pool of fresh (spawned) processes that can unpickle this package's functions: the
    checkout is not on their ``sys.path`` (it would shadow the installed secure_bloom), so each
    worker first registers ``benchmarks`` from its folder (``exec`` of :data:`_REGISTER`)."""
    import concurrent.futures
    import multiprocessing

    return concurrent.futures.ProcessPoolExecutor(max_workers, mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=exec, initargs=(_REGISTER,))
