"""The overall deadline of a ``secure-bloom`` command (``--deadline SECONDS``).

A store that accepts connections and never answers holds a request until its filesystem's
timeouts give up (:class:`~secure_bloom.parquet.file.sources.StoreTimeouts`), and a command makes many
requests. So a command that names an object store runs on a worker thread, with the store
timeouts shortened to fit its deadline, while the calling thread waits at most the deadline:
then the result is :class:`~secure_bloom.errors.DeadlineExceededError` (``STORAGE_UNAVAILABLE``,
exit 2). Nothing partial is written: the command's report is held in a buffer that reaches stdout
only once the command has finished in time, and the files a command writes (``--junit-xml``,
``query --output``, each ``encrypt`` destination) are published through :func:`publish`, which
refuses once the deadline has passed (the decision and the publication share one lock).

Default: :data:`DEFAULT_DEADLINE_S` when a path argument is an object-store URI; none for local
paths only (a large local ``encrypt`` may rightly take hours); ``--deadline 0`` turns it off.
"""

from __future__ import annotations

import argparse
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..display import is_uri
from ..errors import DeadlineExceededError

__all__ = ["DEFAULT_DEADLINE_S", "Deadline", "deadline_of", "run_within", "checkpoint", "publish", "abandoned"]

#: Seconds a command naming an object store may run by default.
DEFAULT_DEADLINE_S = 120.0

#: The arguments of the parsed commands that name data (files, directories, prefixes).
_PATH_ARGUMENTS = ("file", "paths", "src", "dst")

T = TypeVar("T")


class Deadline:
    """``seconds`` from now. :meth:`expire` (the waiting thread) and :meth:`publish` (the worker)
    take one lock, so a publication is either done before the deadline is declared or refused.

    Parameters
    ----------
    seconds : float
        The time allowed.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._expired = False
        self._finished = False

    def remaining(self) -> float:
        """Seconds left (0 once passed).

        Returns
        -------
        float
            At least 0.

        Raises
        ------
        None
            Nothing of its own.
        """
        return max(self.end - time.monotonic(), 0.0)

    def error(self) -> DeadlineExceededError:
        """The error a passed deadline raises (``STORAGE_UNAVAILABLE``).

        Returns
        -------
        DeadlineExceededError
            Not raised: returned.

        Raises
        ------
        None
            Nothing of its own.
        """
        return DeadlineExceededError(
            f"STORAGE_UNAVAILABLE: the command did not finish within its deadline of {self.seconds:g} s "
            "(--deadline): an object store that does not answer; nothing was written")

    def check(self) -> None:
        """Raise :class:`DeadlineExceededError` once the deadline has passed.

        Raises
        ------
        secure_bloom.errors.DeadlineExceededError
            The deadline has passed.
        """
        if self._expired or time.monotonic() >= self.end:
            raise self.error()

    def publish(self, action: Callable[[], T]) -> T:
        """``action()`` (a local publication: a rename, a small write) unless the deadline passed.

        Parameters
        ----------
        action : callable
            The publication.

        Returns
        -------
        object
            What ``action`` returns.

        Raises
        ------
        secure_bloom.errors.DeadlineExceededError
            The deadline has passed.
        """
        with self._lock:
            self.check()
            return action()

    def finish(self) -> bool:
        """The worker is done: True unless the deadline was declared first.

        Returns
        -------
        bool
            Whether the worker's result counts.

        Raises
        ------
        None
            Nothing of its own.
        """
        with self._lock:
            self._finished = not self._expired
            return self._finished

    def expire(self) -> bool:
        """The waiting thread gives up: True unless the worker finished first.

        Returns
        -------
        bool
            Whether the deadline was declared.

        Raises
        ------
        None
            Nothing of its own.
        """
        with self._lock:
            self._expired = not self._finished
            return self._expired


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("deadline", default=None)


def checkpoint() -> None:
    """Stop the command here if its deadline has passed (between files, row groups...).

    Raises
    ------
    secure_bloom.errors.DeadlineExceededError
        The command's deadline has passed.
    """
    deadline = _CURRENT.get()
    if deadline is not None:
        deadline.check()


def publish(action: Callable[[], T]) -> T:
    """``action()``, refused once the command's deadline has passed (no deadline: just run it).

    Parameters
    ----------
    action : callable
        The publication.

    Returns
    -------
    object
        What ``action`` returns.

    Raises
    ------
    secure_bloom.errors.DeadlineExceededError
        The command's deadline has passed.
    """
    deadline = _CURRENT.get()
    return action() if deadline is None else deadline.publish(action)


def deadline_of(args: argparse.Namespace) -> float | None:
    """The command's deadline in seconds, or None: ``--deadline`` (0: none), else
    :data:`DEFAULT_DEADLINE_S` when a path argument is an object-store URI.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    float or None
        Seconds, or None for no deadline.

    Raises
    ------
    None
        Nothing of its own.
    """
    given = getattr(args, "deadline", None)
    if given is not None:
        return float(given) if given > 0 else None
    for name in _PATH_ARGUMENTS:
        value = getattr(args, name, None)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and is_uri(item) and not item.lower().startswith("file://"):
                return DEFAULT_DEADLINE_S
    return None


@contextmanager
def _deadline_set(deadline: Deadline) -> Iterator[None]:
    token = _CURRENT.set(deadline)
    try:
        yield
    finally:
        _CURRENT.reset(token)


#: Worker threads left running after their deadline (daemon threads, bounded by the store
#: timeouts): a process about to exit should not wait for them (:func:`abandoned`).
_ABANDONED: list[threading.Thread] = []


def abandoned() -> bool:
    """True while a worker thread left behind by a passed deadline is still running.

    Returns
    -------
    bool
        Whether one is still running.

    Raises
    ------
    None
        Nothing of its own.
    """
    return any(thread.is_alive() for thread in _ABANDONED)


def run_within(seconds: float, work: Callable[[], T]) -> T:
    """``work()`` on a daemon thread (in a copy of this context, the store timeouts shortened to
    ``seconds``); its result or exception, or :class:`DeadlineExceededError` after ``seconds``
    (the thread is then left behind: :func:`abandoned`).

    Parameters
    ----------
    seconds : float
        The time allowed.
    work : callable
        The command's work.

    Returns
    -------
    object
        What ``work`` returns.

    Raises
    ------
    secure_bloom.errors.DeadlineExceededError
        ``work`` did not finish in time.
    Exception
        Whatever ``work`` raised.
    """
    from ..parquet.file.sources import store_timeouts

    deadline = Deadline(seconds)
    outcome: dict[str, Any] = {}

    def body() -> None:
        try:
            with _deadline_set(deadline), store_timeouts(_timeouts_within(seconds)):
                outcome["value"] = work()
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = e
        deadline.finish()

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(body,), name="secure-bloom-command", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive() and deadline.expire():
        _ABANDONED.append(thread)
        raise deadline.error()
    thread.join()  # finished, or finishing its last publication
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def _timeouts_within(seconds: float) -> Any:
    from ..parquet.file.sources import DEFAULT_STORE_TIMEOUTS

    return DEFAULT_STORE_TIMEOUTS.within(seconds)
