"""Timing for the benchmarks: the best wall-clock time of repeated runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["best_seconds"]


def best_seconds(fn: Callable[[], Any], repeat: int) -> float:
    """The fastest of ``repeat`` calls of ``fn``, in seconds (the least disturbed by other load)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
