"""JSON text of a ``java.util.HashMap`` as Jackson writes it, for byte-identical key material.

parquet-java builds key material, key metadata and the external key-material file as HashMaps
and serialises them with Jackson, so field order is HashMap iteration order: by bucket index
``spread(String.hashCode()) & (capacity - 1)``, then insertion order within a bucket. The
capacity starts at ``tableSizeFor(initial_capacity)`` (``new HashMap<>(n)``; 16 for
``new HashMap<>()``), doubles when the size exceeds 3/4 of it, and also doubles (below 64) when
a bucket grows past 8 entries. Tree bins (a bucket past 8 at capacity >= 64) are not modelled;
parquet-java's own key names never get there. Compact output, UTF-8, ``/`` unescaped, as Jackson.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

__all__ = ["java_hashmap_json"]

_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def _java_string_hash(s: str) -> int:
    """``String.hashCode()`` spread as ``HashMap.hash()`` does, as an unsigned 32-bit int."""
    h = 0
    utf16 = s.encode("utf-16-le")
    for i in range(0, len(utf16), 2):
        h = (31 * h + (utf16[i] | utf16[i + 1] << 8)) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _table_size_for(n: int) -> int:
    cap = 1
    while cap < n:
        cap <<= 1
    return cap


def _iteration_order(keys: Sequence[str], initial_capacity: int) -> list[str]:
    hashes = {k: _java_string_hash(k) for k in keys}
    cap = _table_size_for(initial_capacity)
    buckets: dict[int, list[str]] = {}
    for size, key in enumerate(keys, start=1):
        bucket = buckets.setdefault(hashes[key] & (cap - 1), [])
        bucket.append(key)
        if len(bucket) > _TREEIFY_THRESHOLD and cap < _MIN_TREEIFY_CAPACITY or size > cap * 3 // 4:
            cap <<= 1
            inserted = keys[:size]
            buckets = {}
            for k in inserted:
                buckets.setdefault(hashes[k] & (cap - 1), []).append(k)
    return [k for index in sorted(buckets) for k in buckets[index]]


def java_hashmap_json(items: Sequence[tuple[str, object]], initial_capacity: int = 16) -> str:
    """Serialise ``items`` (in insertion order, keys unique) as Jackson serialises the HashMap."""
    values = dict(items)
    if len(values) != len(items):
        raise ValueError("duplicate keys")
    ordered = _iteration_order([k for k, _ in items], initial_capacity)
    return json.dumps({k: values[k] for k in ordered}, separators=(",", ":"), ensure_ascii=False)
