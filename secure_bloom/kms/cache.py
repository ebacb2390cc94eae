"""A thread-safe cache whose entries expire after a fixed lifetime (parquet-java key tools keep
KEKs and KMS clients this way, default 600 s; SPEC_NOTES 7).

An entry is served only while ``clock() - created < lifetime``; ``created`` is taken *before*
the value is computed, so an entry never outlives its lifetime counted from the request that
made it. Concurrent misses on one key compute the value once (the others wait for it); a failing
computation caches nothing. The clock is injectable for tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["ExpiringCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ExpiringCache(Generic[K, V]):
    """``get_or_create(key, create)``: a cached value younger than ``lifetime_s``, else ``create()``."""

    def __init__(self, lifetime_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not lifetime_s >= 0:
            raise ValueError(f"lifetime_s must be >= 0, got {lifetime_s}")
        self._lifetime = float(lifetime_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[K, tuple[float, V]] = {}
        self._creating: dict[K, threading.Lock] = {}

    @property
    def lifetime_s(self) -> float:
        return self._lifetime

    def _fresh(self, key: K, now: float) -> tuple[bool, V | None]:
        entry = self._entries.get(key)
        if entry is not None and now - entry[0] < self._lifetime:
            return True, entry[1]
        return False, None

    def get_or_create(self, key: K, create: Callable[[], V]) -> V:
        # A hit needs no lock: one dict read is atomic, and an entry is replaced, never mutated.
        hit, value = self._fresh(key, self._clock())
        if hit:
            return value  # type: ignore[return-value]
        with self._lock:
            hit, value = self._fresh(key, self._clock())
            if hit:
                return value  # type: ignore[return-value]
            key_lock = self._creating.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                hit, value = self._fresh(key, self._clock())
                if hit:
                    return value  # type: ignore[return-value]
            created = self._clock()
            new_value = create()
            with self._lock:
                self._purge(self._clock())
                self._entries[key] = (created, new_value)
                self._creating.pop(key, None)
            return new_value

    def _purge(self, now: float) -> None:
        expired = [k for k, (t, _) in self._entries.items() if now - t >= self._lifetime]
        for k in expired:
            del self._entries[k]

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        """Entries still fresh now."""
        with self._lock:
            now = self._clock()
            return sum(1 for t, _ in self._entries.values() if now - t < self._lifetime)

    def __repr__(self) -> str:
        return f"ExpiringCache(lifetime_s={self._lifetime}, entries={len(self)})"
