"""Keep Arrow's threads from destroying Python-backed objects while the interpreter exits.

A pruned scan hands pyarrow C++ objects that hold Python objects: a ``PyFileSystem`` over our
handlers (:class:`~.identity.PinnedFileSystem`, :class:`~.read_counting.CountingFileSystem`), a
``ParquetFileFormat`` whose decryption config holds our KMS client factory, and - when reads are
counted - the buffers our counting file returns (``pa.PythonFile`` wraps each in a C++ buffer
holding the Python object). Their C++ destructors take the GIL to release those Python objects.
After ``to_table`` returns, Arrow pool threads may still be finishing the scan (its last
continuations, range reads pre-buffered but not used): if such a thread drops the last
reference while the interpreter is finalizing, CPython ends the thread inside the (noexcept)
destructor and the process aborts: ``terminate called without an active exception``, exit
status -6, after all the script's output (often on S3, where reads finish late).

Three measures:

* :func:`scanning` marks the work during which Arrow's threads call into Python (our
  filesystem handlers, the KMS client of pyarrow's key tools): a scan's discovery, pruning and
  ``to_table``. The ``atexit`` hook (below) first stops that work: from then on a daemon thread
  starting or ending a scan is parked in :func:`scanning` (it never runs pyarrow code again),
  and the hook waits (the GIL released, at most :data:`EXIT_WAIT_S`) until the scans running in
  daemon threads have ended (a scan ended, Arrow has opened all it reads; its last buffers are
  tracked, below); past that wait our handlers fail at once (:func:`refuse_when_exiting`). Without it, an Arrow thread of such a scan
  entering Python after finalization began was ended by CPython inside C++ code: the process
  aborted (status 134) or hung for good, while pyarrow's own reads (no Python calls) exit cleanly.

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
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["retain", "track", "outstanding", "settle", "scanning", "exiting", "refuse_when_exiting", "RETAINED",
           "EXIT_WAIT_S"]

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
#: Set by the exit hook: no new scan starts, our handlers refuse at once.
_exiting = threading.Event()
#: Set by the exit hook when running scans did not end within EXIT_WAIT_S.
_gave_up = threading.Event()
#: Scans running (:func:`scanning`), by every thread; how deep this thread is in them.
_running = 0
_depth = threading.local()


def _register() -> None:
    """The exit hook, registered once, on first use: after ``pyarrow.fs`` was imported (it was,
    to make what is retained or tracked), so ``atexit`` runs it before pyarrow's hook."""
    global _registered
    if not _registered:
        _registered = True
        atexit.register(_at_exit)


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


@contextmanager
def scanning() -> Iterator[None]:
    """Mark a scan (work in which Arrow's threads may call into Python, and whose pyarrow objects
    may release the GIL when destroyed) as running, so that the interpreter's exit waits for it
    to end (at most :data:`EXIT_WAIT_S`). A thread other than the main one that starts or ends
    a scan once the exit began is parked there for good (the GIL released, never taken again):
    it would otherwise go on into pyarrow code that CPython ends mid-way once finalization
    began. The main thread (``atexit`` handlers) scans as usual. Nested blocks count once.

    Returns
    -------
    contextmanager
        A context manager yielding None.

    Raises
    ------
    None
        Counts the scan; a daemon thread during exit blocks instead of raising.
    """
    global _running
    outermost = not getattr(_depth, "n", 0)
    if outermost:
        _park_if_exiting()
    _depth.n = getattr(_depth, "n", 0) + 1
    with _lock:
        _register()
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
        _depth.n -= 1
        if outermost:
            _park_if_exiting()


def _park_if_exiting() -> None:
    if _exiting.is_set() and threading.current_thread() is not threading.main_thread():
        threading.Event().wait()  # the process ends with this daemon thread waiting here


def exiting() -> bool:
    """True once the interpreter's exit has begun (the exit hook ran).

    Returns
    -------
    bool
        Whether the exit hook has started.

    Raises
    ------
    None
        Reads an event flag.
    """
    return _exiting.is_set()


def refuse_when_exiting(what: str) -> None:
    """Raise ``OSError`` (what pyarrow turns a handler's failure into) when the exit hook gave
    up waiting for the running scans (:data:`EXIT_WAIT_S`): a handler called by Arrow's threads
    then ends its scan at once instead of doing the work ``what``. Before that, running scans
    are let finish: a scan failing early could leave Arrow tasks running that call in later.

    Parameters
    ----------
    what : str
        The work refused (a path, or a handler method's name), as the message names it.

    Raises
    ------
    OSError
        When the interpreter is exiting and its wait is over.
    """
    if _gave_up.is_set():
        raise OSError(f"{what}: the interpreter is exiting")


def _at_exit() -> None:
    """The exit hook: stop new scans, wait for the running ones, then for tracked objects."""
    _exiting.set()
    end = time.monotonic() + EXIT_WAIT_S
    while _running and time.monotonic() < end:
        time.sleep(0.001)
    if _running:
        _gave_up.set()
    settle()


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
