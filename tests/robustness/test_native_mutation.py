"""Inputs that change while the C extensions read them (they release the GIL, or call Python code).

Each case of tests/support/native_mutation.py runs in a process of its own: a zero-copy Arrow array
whose offsets, views or validity bitmap another thread rewrites during the call, hash buffers of
count_distinct / insert / check, a bitset two threads insert into, a Thrift footer rewritten while
the decoder runs, and the deterministic ``alias_*`` / ``thrift_spec_race`` cases. Before the fix
every case but ``fixed``, ``bitset`` and ``thrift`` crashed the process (SIGSEGV, or glibc's heap
check for count_distinct); now each ends with results or the library's refusal, and hashes of the
values nobody changed stay right. Under tests/robustness/test_sanitizers.py the same processes run
with ASan and UBSan.

In process: an insert whose offsets change between validation and hashing says so; a
SplitBlockBloomFilter shared by threads that insert at once loses no bit.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np
import pytest

from support.components import missing
from support.native_mutation import CASES, DETERMINISTIC
from support.paths import TESTS_DIR

from secure_bloom import kernels
from secure_bloom.errors import MalformedInputError
from secure_bloom.filter import SplitBlockBloomFilter

HARNESS = TESTS_DIR / "support" / "native_mutation.py"
#: Seconds each threaded case hammers its entry points (the old code crashed within the first).
SECONDS = os.environ.get("SECURE_BLOOM_MUTATION_SECONDS", "1.0")

pytestmark = pytest.mark.native


def _require_native() -> None:
    for name in ("native_kernels", "native_thrift", "native_gcm"):
        try:
            __import__(f"secure_bloom.{name}")
        except ImportError:
            missing("native", f"secure_bloom.{name} is not built in this environment")


def run_case(case: str) -> dict[str, Any]:
    """Run one case in a fresh interpreter (this one's environment: the sanitized build, if any)."""
    result = subprocess.run([sys.executable, str(HARNESS), case, SECONDS], capture_output=True, text=True,
                            timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode == 0, f"case {case} ended with {result.returncode}:\n{out[-6000:]}"
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["unexpected"] == []
    return summary


@pytest.mark.parametrize("case", CASES)
def test_changing_input_gives_results_or_a_refusal_never_a_crash(case: str) -> None:
    _require_native()
    summary = run_case(case)
    assert summary["calls"] > 0
    if case in ("fixed", "bitset"):      # no address comes from the data: nothing to refuse
        assert summary["refused"] == 0 and summary["ok"] == summary["calls"]
    elif case == "thrift_spec_race":     # both threads decode the new class correctly
        assert summary["ok"] == 2
    elif case in DETERMINISTIC:          # the kernel saw its validated input change, and said so
        assert (summary["ok"], summary["refused"]) == (0, 1)
    else:
        assert summary["ok"] > 0         # calls between the writes succeed


def test_kernel_says_the_input_changed() -> None:
    """An insert validates its input, then hashes it: an offset another thread sets past the data in
    between is refused with a message that says so (not with a validation message about input
    that was valid). Calls repeat until that interleaving happens (within seconds)."""
    _require_native()
    n = 200_000
    offsets = np.arange(n + 1, dtype=np.int32) * 8
    data = bytes(8 * n)
    bitset = bytearray(1 << 16)
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            offsets[n // 2] = 1 << 30
            offsets[n // 2] = 8 * (n // 2)

    thread = threading.Thread(target=write)
    thread.start()
    messages: set[str] = set()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and not any("changed" in m for m in messages):
            try:
                kernels.sbbf_insert_binary(bitset, offsets, data)
            except MalformedInputError as e:
                messages.add(str(e))
    finally:
        stop.set()
        thread.join()
    changed = [m for m in messages if "changed" in m]
    assert changed, messages
    assert re.fullmatch(r"the input changed while being read \(another thread wrote to it\): [12] offset pairs "
                        r"pointed outside their buffers and were not hashed", changed[0])
    assert all(re.fullmatch(r"offsets decrease at value \d+ \(\d+ after \d+\)|the input changed .*", m)
               for m in messages), messages


def test_threads_inserting_into_one_filter_lose_no_bit() -> None:
    """Three threads insert their own values into one 1 MiB filter at once, 30 rounds: the filter
    equals the one built by a single thread. Without the filter's lock, 6 to 20 of the 30 rounds
    lost bits here (false negatives)."""
    _require_native()
    rng = np.random.default_rng(11)
    parts = [rng.integers(-(2**63), 2**63 - 1, size=300_000, dtype=np.int64) for _ in range(3)]
    expected = SplitBlockBloomFilter(1 << 20)
    for part in parts:
        expected.insert(part, "INT64")
    for _ in range(30):
        bf = SplitBlockBloomFilter(1 << 20)
        barrier = threading.Barrier(len(parts))

        def insert(part: Any) -> None:
            barrier.wait()
            for chunk in np.array_split(part, 30):
                bf.insert(chunk, "INT64")

        threads = [threading.Thread(target=insert, args=(part,)) for part in parts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert bf == expected
        assert all(bf.might_contain_many(part, "INT64").all() for part in parts)


def test_filter_pickles_as_its_bitset() -> None:
    """The filter holds a lock now; it still pickles (as its bitset)."""
    import pickle

    bf = SplitBlockBloomFilter(1024)
    bf.insert([1, 2, 3], "INT64")
    copy = pickle.loads(pickle.dumps(bf))
    assert copy == bf and copy is not bf
    copy.insert([4], "INT64")  # and has a lock of its own
    assert copy != bf
