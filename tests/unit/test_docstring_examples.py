"""The docstrings' Examples run as written (issue 31): every ``>>>`` example of every public module
of the installed package is a doctest here, so the API reference shows only examples that work.
Examples make their own throwaway keys and files in temporary directories."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from typing import Any

import pytest

import secure_bloom


def _examples() -> list[Any]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = []
    for info in pkgutil.walk_packages(secure_bloom.__path__, prefix="secure_bloom."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for test in finder.find(module):
            if test.examples and test.name.startswith(info.name):
                found.append(pytest.param(test, id=test.name))
    return found


EXAMPLES = _examples()
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def test_the_entry_points_have_examples() -> None:
    """Every entry point scripts/docstrings names (write_table, read_table, scan, ...) has a
    doctest here."""
    import importlib.util
    from importlib.machinery import SourceFileLoader

    from support.paths import REPO_DIR

    loader = SourceFileLoader("docstrings_checker", str(REPO_DIR / "scripts" / "docstrings"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    checker = importlib.util.module_from_spec(spec)
    loader.exec_module(checker)
    names = {p.id for p in EXAMPLES}
    assert len(checker.ENTRY_POINTS) >= 12
    assert [name for name in checker.ENTRY_POINTS if name not in names] == []


@pytest.mark.parametrize("test", EXAMPLES)
def test_docstring_example_runs(test: doctest.DocTest) -> None:
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out: list[str] = []
    result = runner.run(test, out=out.append, clear_globs=True)
    assert result.failed == 0, "".join(out)[-4000:]
