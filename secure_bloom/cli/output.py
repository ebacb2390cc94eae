"""What reaches stdout and stderr: filtered streams, redacted library logging, progress bars.

Human-readable output passes through :func:`~secure_bloom.display.visible_lines` (no terminal
escape from a column or file name reaches the terminal); every library log record passes through
the :class:`~secure_bloom.cli.keys.Redactor`. Progress bars are
drawn on stderr only when it is a terminal.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from ..display import json_safe
from .exits import PROG
from .keys import Redactor

__all__ = ["FilteredStream", "library_logging", "progress_bar", "print_json"]


class FilteredStream:
    """A text stream that passes every write through ``transform``: the redactor for a delegate
    (bench, demo prints with its own argparse and may echo key material), or
    :func:`~secure_bloom.display.visible_lines` for human-readable output (no terminal escape
    from a column or file name reaches the terminal). Every other attribute is the stream's.

    Parameters
    ----------
    stream : TextIO
        Where the transformed text goes.
    transform : callable
        ``str -> str``, applied to each write on its own.
    """

    def __init__(self, stream: TextIO, transform: Callable[[str], str]) -> None:
        self._stream = stream
        self._transform = transform

    def write(self, text: str) -> int:
        """Write ``transform(text)`` to the stream.

        Parameters
        ----------
        text : str
            What the caller writes.

        Returns
        -------
        int
            ``len(text)``, the caller's count (not that of the transformed text), as
            ``TextIO.write`` promises.

        Raises
        ------
        Exception
            Whatever ``transform`` or the stream raises (e.g. ``BrokenPipeError``).
        """
        self._stream.write(self._transform(text))

        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _RedactingFormatter(logging.Formatter):
    def __init__(self, redact: Redactor) -> None:
        super().__init__(f"{PROG}: %(levelname)s: %(message)s")
        self._redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self._redact(" ".join(super().format(record).split()))


@contextmanager
def library_logging(debug: bool, redact: Redactor, err: TextIO) -> Iterator[None]:
    """Library log records (e.g. KMS retries) reach stderr, redacted, only with --debug; otherwise
    they would break the one-line error convention.

    Parameters
    ----------
    debug : bool
        ``--debug`` was given.
    redact : Redactor
        Scrubs secrets from every record.
    err : TextIO
        stderr.

    Yields
    ------
    None
        Inside the block, library logging is routed.

    Raises
    ------
    None
        Nothing of its own.
    """
    logger = logging.getLogger("secure_bloom")
    saved = logger.level, logger.propagate, list(logger.handlers)
    handler = logging.StreamHandler(err) if debug else logging.NullHandler()
    handler.setFormatter(_RedactingFormatter(redact))
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG if debug else logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
        logger.handlers = saved[2]


def _progress_enabled(stream: TextIO | None = None) -> bool:
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress_bar(desc: str, unit: str, stage_units: dict[str, str] | None = None
                 ) -> Iterator[Callable[..., None] | None]:
    """A ``progress(done, total, stage=None)`` callback drawing a tqdm bar when stderr is a
    terminal; None otherwise (pipes and CI logs stay clean). A new ``stage`` restarts the bar
    under its name, counting in ``stage_units[stage]`` (default ``unit``); a unit ``"B"``
    counts bytes, shown scaled (kB, MB, GB).

    Parameters
    ----------
    desc : str
        The bar's label.
    unit : str
        What is counted.
    stage_units : dict of str to str, optional
        A unit per stage.

    Yields
    ------
    callable or None
        The progress callback, or None off a terminal.

    Raises
    ------
    None
        Nothing of its own.
    """
    if not _progress_enabled():
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)
    try:
        current = [None]

        def update(done: int, total: int | None = None, stage: Any = None) -> None:
            if stage is not None and stage != current[0]:
                current[0] = stage
                bar.set_description(f"{desc}: {stage}", refresh=False)
                bar.unit = (stage_units or {}).get(stage, unit)
                bar.unit_scale = bar.unit == "B"
            if total is not None and bar.total != total:
                bar.total = total
            bar.n = done
            bar.refresh()

        yield update
    finally:
        bar.close()


#: The version of the ``--json`` envelope (README "JSON output"): bumped when a field changes meaning.
JSON_VERSION = 1


def envelope(command: str, result: Any) -> dict[str, Any]:
    """Every ``--json`` document: ``{"version": 1, "command": ..., "secure_bloom": <package
    version>, "result": ...}``; commands that take files (inspect, probe, encrypt) give a list
    with one item per file, also for a single file."""
    from .. import __version__

    return {"version": JSON_VERSION, "command": command, "secure_bloom": __version__, "result": result}


def print_json(obj: Any, out: TextIO, command: str | None = None, *, compact: bool = False) -> None:
    """``obj`` as indented JSON (``compact``: on one line, for large documents), made safe for a
    terminal (:func:`~secure_bloom.display.json_safe`); in the :func:`envelope` of ``command``
    when one is named.

    Parameters
    ----------
    obj : object
        JSON-able values.
    out : TextIO
        Where to print.
    command : str, optional
        Wrap ``obj`` in that command's envelope.
    compact : bool
        On one line (large documents).

    Raises
    ------
    None
        Nothing of its own.
    """
    if command is not None:
        obj = envelope(command, obj)
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False) if compact \
        else json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False)
    out.write(json_safe(text))
    out.write("\n")
