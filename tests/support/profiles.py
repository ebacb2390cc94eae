"""Hypothesis example counts: every property test takes its count from the loaded profile.

Profiles (registered by tests/conftest.py; choose one with ``HYPOTHESIS_PROFILE``): ``ci`` (the
full tier, ``scripts/test``: max_examples 100), ``dev`` (the default tier, ``scripts/test-fast``:
25), ``sanitizer`` (the instrumented run: 25) and ``fuzz`` (2000). A test states its weight as the
count it wants under ``ci`` and gets that count scaled to the profile: ``examples(300)`` is 300
under ``ci``, 75 under ``dev``, 6000 under ``fuzz``. No test hard-codes ``max_examples``
(tests/unit/test_hypothesis_profiles.py checks).
"""

from __future__ import annotations

from hypothesis import settings

__all__ = ["examples", "CI_MAX_EXAMPLES"]

#: max_examples of the ``ci`` profile, the unit in which tests state their weight.
CI_MAX_EXAMPLES = 100


def examples(n: int) -> int:
    """``n`` examples under profile "ci", scaled by the loaded profile's max_examples (at least 1)."""
    return max(1, n * settings.default.max_examples // CI_MAX_EXAMPLES)
