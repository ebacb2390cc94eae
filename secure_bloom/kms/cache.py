"""A thread-safe cache whose entries expire after a fixed lifetime (parquet-java key tools keep
KEKs and KMS clients this way, default 600 s; SPEC_NOTES 7).

An entry is served only while ``clock() - created < lifetime``; ``created`` is taken *before*
the value is computed, so an entry never outlives its lifetime counted from the request that
made it. Concurrent misses on one key compute the value once (the others wait for it); a failing
computation caches nothing. The clock is injectable for tests.

Expired entries are dropped when an entry is stored: every entry has the same lifetime, so they
expire in the order of their creation times, kept in a min-heap of ``(created, order, key,
entry)``; a purge pops only the expired ones (O(log n) each, each popped once), never scanning
the fresh ones. A miss therefore costs O(log n) however many entries are cached (a scan of all
entries on every miss made a cold lookup over N files with their own KEKs O(N^2)).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["ExpiringCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ExpiringCache(Generic[K, V]):
    """``get_or_create(key, create)``: a cached value younger than ``lifetime_s``, else ``create()``.

    Parameters
    ----------
    lifetime_s : float
        Seconds an entry is served, counted from just before its value was computed; 0 caches
        nothing (every call computes).
    clock : callable, default time.monotonic
        Returns the time in seconds (injectable for tests).

    Raises
    ------
    ValueError
        ``lifetime_s`` is negative or NaN.
    """

    def __init__(self, lifetime_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not lifetime_s >= 0:
            raise ValueError(f"lifetime_s must be >= 0, got {lifetime_s}")
        self._lifetime = float(lifetime_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[K, tuple[float, V]] = {}
        # (created, insertion order, key, entry): the order breaks ties, so keys and values are
        # never compared; an entry replaced since is recognised by identity and skipped.
        self._expiry: list[tuple[float, int, K, tuple[float, V]]] = []
        self._order = itertools.count()
        self._creating: dict[K, threading.Lock] = {}

    @property
    def lifetime_s(self) -> float:
        """Seconds an entry is served (as given, as a float)."""
        return self._lifetime

    def _fresh(self, key: K, now: float) -> tuple[bool, V | None]:
        entry = self._entries.get(key)
        if entry is not None and now - entry[0] < self._lifetime:
            return True, entry[1]
        return False, None

    def get(self, key: K) -> V | None:
        """The value cached for ``key`` while fresh, else None (nothing is computed; no lock).

        Parameters
        ----------
        key : hashable
            The entry's key.

        Returns
        -------
        object or None
            The fresh cached value, or None when there is none.

        Raises
        ------
        None
            Nothing of its own.
        """
        entry = self._entries.get(key)  # _fresh, inlined: asked once per file of a warm lookup
        if entry is not None and self._clock() - entry[0] < self._lifetime:
            return entry[1]
        return None

    def get_or_create(self, key: K, create: Callable[[], V]) -> V:
        """The value cached for ``key`` while fresh, else ``create()``, stored for later calls.

        Concurrent misses on one key call ``create`` once: the other threads wait for it and get
        its value. A hit takes no lock.

        Parameters
        ----------
        key : hashable
            The entry's key (e.g. a master key id and KEK id).
        create : callable
            Computes the value on a miss (e.g. a KMS unwrap); called without the cache's lock.

        Returns
        -------
        object
            The fresh cached value or the new one.

        Raises
        ------
        Exception
            Whatever ``create`` raises; nothing is cached then, and a waiting thread calls
            ``create`` itself.
        """
        # A hit needs no lock: one dict read is atomic, and an entry is replaced, never mutated.
        hit, value = self._fresh(key, self._clock())
        if hit:
            return value  # type: ignore[return-value]
        with self._lock:
            key_lock = self._creating.get(key)
            if key_lock is None:
                key_lock = self._creating[key] = threading.Lock()
        with key_lock:
            # Checked again under the key's lock: a thread that computed it meanwhile stored it
            # (under self._lock, before releasing the key's lock), so this read sees it.
            created = self._clock()
            hit, value = self._fresh(key, created)
            if hit:  # stored between the first check and this one: drop the key's lock made for it
                with self._lock:
                    if self._creating.get(key) is key_lock:
                        del self._creating[key]
                return value  # type: ignore[return-value]
            new_value = create()
            with self._lock:
                self._purge(self._clock())
                entry = (created, new_value)
                self._entries[key] = entry
                heapq.heappush(self._expiry, (created, next(self._order), key, entry))
                self._creating.pop(key, None)
            return new_value

    def _purge(self, now: float) -> None:
        """Drop every entry expired at ``now`` (the caller holds the lock): the oldest first, and
        only those, so the cost is that of the expired entries, not of all of them."""
        expiry = self._expiry
        while expiry and now - expiry[0][0] >= self._lifetime:
            _, _, key, entry = heapq.heappop(expiry)
            if self._entries.get(key) is entry:
                del self._entries[key]

    def clear(self) -> None:
        """Forget every entry (a value being computed is still stored when it is done).

        Raises
        ------
        None
            Nothing of its own.
        """

        with self._lock:
            self._entries.clear()
            self._expiry.clear()

    def __len__(self) -> int:
        """Entries still fresh now."""
        with self._lock:
            self._purge(self._clock())  # what is left is fresh: the oldest entry is
            return len(self._entries)

    def __repr__(self) -> str:
        return f"ExpiringCache(lifetime_s={self._lifetime}, entries={len(self)})"
