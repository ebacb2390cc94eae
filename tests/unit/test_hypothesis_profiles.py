"""Example counts go through the hypothesis profiles (issue 31): no test hard-codes ``max_examples``,
and ``examples(n)`` follows the loaded profile."""

from __future__ import annotations

import re

from hypothesis import settings
from support.paths import TESTS_DIR
from support.profiles import CI_MAX_EXAMPLES, examples


def test_no_test_hard_codes_max_examples() -> None:
    literal = re.compile(r"max_examples\s*=\s*\d")
    offenders = [f"{path.relative_to(TESTS_DIR)}:{number}"
                 for path in sorted(TESTS_DIR.rglob("*.py")) if path.name != "conftest.py"
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if literal.search(line)]
    assert offenders == []


def test_examples_scale_with_the_profile() -> None:
    for name, expected in (("ci", 300), ("dev", 75), ("fuzz", 6000), ("sanitizer", 75)):
        loaded = settings.get_profile(name).max_examples
        assert max(1, 300 * loaded // CI_MAX_EXAMPLES) == expected, name
    assert examples(300) == max(1, 300 * settings.default.max_examples // CI_MAX_EXAMPLES)
    assert examples(1) >= 1
