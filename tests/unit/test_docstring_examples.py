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
    names = {p.id for p in EXAMPLES}
    for name in ("secure_bloom.parquet.write.writer.write_table", "secure_bloom.kms.key_list.write_development_key_list"):
        assert name in names, name


@pytest.mark.parametrize("test", EXAMPLES)
def test_docstring_example_runs(test: doctest.DocTest) -> None:
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out: list[str] = []
    result = runner.run(test, out=out.append, clear_globs=True)
    assert result.failed == 0, "".join(out)[-4000:]
