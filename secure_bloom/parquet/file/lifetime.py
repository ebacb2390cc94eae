"""Keep Arrow's threads from destroying Python-backed objects while the interpreter exits.

A pruned scan hands pyarrow C++ objects that hold Python objects: a ``PyFileSystem`` over our
handlers (:class:`~.identity.PinnedFileSystem`, :class:`~.sources.CountingFileSystem`), a
``ParquetFileFormat`` whose decryption config holds our KMS client factory, and - when reads are
counted - the buffers our counting file returns (``pa.PythonFile`` wraps each in a C++ buffer
holding the Python object). Their C++ destructors take the GIL to release those Python objects.
After ``to_table`` returns, Arrow pool threads may still be finishing the scan (its last
continuations, range reads pre-buffered but not used): if such a thread drops the last
reference while the interpreter is finalizing, CPython ends the thread inside the (noexcept)
destructor and the process aborts: ``terminate called without an active exception``, exit
status -6, after all the script's output (often on S3, where reads finish late).

Two measures:

* :func:`retain` keeps the Python wrappers of the filesystems and formats of the last
  :data:`RETAINED` scans alive, so an Arrow thread only ever decrements their counts; they are
  destroyed on a Python thread holding the GIL: the one whose later :func:`retain` evicts them
  (safe whoever is last while the interpreter runs), or the main thread at module teardown.
* :func:`track` records (weakly) the Python objects of a counted read that Arrow holds: the file
  object ``pa.PythonFile`` reads through and each buffer it returns; an ``atexit`` hook,
  registered after pyarrow's own (so it runs first: before ``finalize_s3`` and before
  finalization), waits with the GIL released until Arrow's threads have dropped them all
  (bounded by :data:`EXIT_WAIT_S`).
"""

from __future__ import annotations

import atexit
import gc
import threading
import time
import weakref
from collections import deque
from typing import Any, TypeVar

__all__ = ["retain", "track", "outstanding", "settle", "RETAINED", "EXIT_WAIT_S"]

T = TypeVar("T")

#: How many recent scans' pyarrow filesystems and formats are kept alive (a few small objects each).
RETAINED = 32
#: The longest the interpreter's exit waits for Arrow threads to release tracked objects.
EXIT_WAIT_S = 5.0

_lock = threading.Lock()
_recent: deque[tuple[Any, ...]] = deque(maxlen=RETAINED)
#: id -> weak reference of each tracked object still alive (pyarrow buffers are unhashable).
_tracked: dict[int, weakref.ref[Any]] = {}
_registered = False


def _register() -> None:
    """The exit hook, registered once, on first use: after ``pyarrow.fs`` was imported (it was,
    to make what is retained or tracked), so ``atexit`` runs it before pyarrow's hook."""
    global _registered
    if not _registered:
        _registered = True
        atexit.register(settle)


def retain(*objects: Any) -> None:
    """Keep ``objects`` (pyarrow filesystems and formats holding Python callbacks) alive until
    :data:`RETAINED` later calls have been made, or until interpreter teardown.

    Parameters
    ----------
    *objects : object
        What to keep alive.

    Raises
    ------
    None
        Nothing of its own.
    """
    with _lock:
        _register()
        evicted = _recent[0] if len(_recent) == _recent.maxlen else None
        _recent.append(objects)
    del evicted  # destroyed here, outside the lock, on this (Python) thread


def track(obj: T) -> T:
    """``obj`` (a Python object about to be held by Arrow's C++ side: a ``pa.PythonFile``'s file
    object, a buffer it returns), recorded so that the interpreter's exit waits until Arrow has
    released it.

    Parameters
    ----------
    obj : object
        The object.

    Returns
    -------
    object
        ``obj``.

    Raises
    ------
    None
        Nothing of its own.
    """
    key = id(obj)

    def released(_: Any) -> None:
        _tracked.pop(key, None)  # atomic: may run on any thread, even inside track()

    with _lock:
        _register()
    _tracked[key] = weakref.ref(obj, released)
    return obj


def outstanding() -> int:
    """How many tracked objects are still alive.

    Returns
    -------
    int
        The count.

    Raises
    ------
    None
        Nothing of its own.
    """
    return len(_tracked)


def settle(timeout: float = EXIT_WAIT_S) -> bool:
    """Wait, the GIL released, until no tracked object is alive (at most ``timeout`` seconds):
    True when none is. Runs at exit; callable before (tests).

    Parameters
    ----------
    timeout : float
        Seconds to wait at most.

    Returns
    -------
    bool
        Whether none is left.

    Raises
    ------
    None
        Nothing of its own.
    """
    end = time.monotonic() + timeout
    if outstanding():
        gc.collect()  # cycles holding scans, while other threads can still take the GIL
    while outstanding():
        if time.monotonic() >= end:
            return False
        time.sleep(0.001)
    return True
