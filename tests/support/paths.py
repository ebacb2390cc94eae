"""Where the suite's files are: the repository, tests/, its data and the parquet-testing vectors."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = TESTS_DIR.parent
DATA_DIR = TESTS_DIR / "data"
VECTORS_DIR = DATA_DIR / "parquet-testing"

BENCHMARKS_DIR = REPO_DIR / "benchmarks"


def import_benchmarks() -> None:
    """Make the checkout's ``benchmarks`` package (demo, benchmarks, reference harnesses: not in the
    wheel) importable WITHOUT putting the repository on ``sys.path``, which would shadow the
    installed secure_bloom with the source tree."""
    import importlib.util

    if "benchmarks" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location("benchmarks", BENCHMARKS_DIR / "__init__.py",
                                                  submodule_search_locations=[str(BENCHMARKS_DIR)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks"] = module
    spec.loader.exec_module(module)


import_benchmarks()

#: The CLI as a process of the INSTALLED package: ``-I`` keeps the working directory (the source
#: tree, whose extensions are not built in place) off ``sys.path``, as the console script does.
CLI_PROCESS = (sys.executable, "-I", "-m", "secure_bloom.cli")
