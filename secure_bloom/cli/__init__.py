"""The ``secure-bloom`` command line: inspect, probe, attach and audit Parquet Bloom filters.

Conventions (those of the Unix tools data engineers script around): ``--help`` with examples,
``--json`` for machines, ``--version``, meaningful exit codes (:data:`EXIT_CODES_HELP`, from the
error kinds of :mod:`secure_bloom.errors`), errors on stderr as ONE line
``secure-bloom: error: <file>: <what>`` (a traceback only with ``--debug``), progress bars on
stderr only when it is a terminal, and key material never printed: every message that reaches
stderr goes through a :class:`~secure_bloom.cli.keys.Redactor` built from the command line and
environment *before* anything is parsed; key material given in argv draws a one-line warning.

:func:`main` runs one invocation. The parts: :mod:`~secure_bloom.cli.parser` (options, argv
handling, usage errors without values), :mod:`~secure_bloom.cli.commands` (one function per
command),
:mod:`~secure_bloom.cli.render` (tables and summaries), :mod:`~secure_bloom.cli.keys` (key
options, redaction), :mod:`~secure_bloom.cli.output` (filtered streams, logging, progress) and
:mod:`~secure_bloom.cli.exits` (exit codes).
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import TextIO, cast

from ..display import visible_lines
from ..errors import SecureBloomError
from .commands import COMMANDS, run_command
from .deadline import abandoned
from .exits import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES_HELP,
    EXIT_ERROR,
    EXIT_FOUND_PROBLEMS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    CliError,
    UsageError,
    describe,
    exit_code,
)
from .keys import Redactor, argv_key_options, argv_key_warning
from .output import FilteredStream, library_logging
from .parser import build_parser, column_arg, parse_args, parse_column_spec, refuse_key_shaped_paths

__all__ = ["main", "build_parser", "parse_column_spec", "column_arg", "EXIT_OK", "EXIT_FOUND_PROBLEMS",
           "EXIT_USAGE", "EXIT_ERROR", "EXIT_CODES_HELP"]


def _dispatch(args_list: list[str], redact: Redactor, out: TextIO, err: TextIO) -> int:
    parser = build_parser()
    try:
        args = parse_args(parser, args_list)
    except SystemExit as e:  # --help / --version
        return int(e.code or 0) if isinstance(e.code, int) else EXIT_OK
    if getattr(args, "command", None) not in COMMANDS:
        parser.print_help(out)
        return EXIT_USAGE
    refuse_key_shaped_paths(args)
    options = argv_key_options(args)
    if options:  # always: scripts and CI logs are where argv is most exposed (ps, logs)
        err.write(f"{PROG}: warning: {argv_key_warning(options)}\n")
    human = not getattr(args, "json", False)
    return run_command(args, cast(TextIO, FilteredStream(out, visible_lines)) if human else out)


def _emit_error(message: str, redact: Redactor, err: TextIO) -> None:
    line = " ".join(redact(message).split())
    err.write(f"{PROG}: error: {line}\n")


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _exit_now(code: int, out: TextIO, err: TextIO) -> None:
    """End the process with ``code`` now: a command thread left behind by its deadline may still
    wait on an unanswering store, and interpreter shutdown (pyarrow's S3 finalisation) would wait
    with it. Only when running as the program (``argv`` None), never inside a caller's process."""
    for stream in (out, err):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code (``secure-bloom --help`` lists them).

    Raises
    ------
    None
        Every error becomes a one-line message on stderr and an exit code (a traceback only
        with ``--debug``).
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    redact = Redactor.from_invocation(args_list, os.environ)
    debug = "--debug" in args_list
    out, err = sys.stdout, sys.stderr
    try:
        with library_logging(debug, redact, err):
            return _dispatch(args_list, redact, out, err)
    except CliError as e:
        if debug:
            err.write(redact("".join(traceback.format_exception(e))))
        _emit_error(str(e), redact, err)
        return e.code
    except (UsageError, SecureBloomError, OSError) as e:
        if isinstance(e, BrokenPipeError):  # `secure-bloom ... | head`: the reader left
            _silence_stdout()
            return EXIT_BROKEN_PIPE
        if debug:
            err.write(redact("".join(traceback.format_exception(e))))
        _emit_error(describe(None, e), redact, err)
        if argv is None and abandoned():
            _exit_now(exit_code(e), out, err)
        return exit_code(e)
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, no traceback
        if debug:
            err.write(redact("".join(traceback.format_exception(e))))
        _emit_error(f"internal error: {type(e).__name__}: {e} (run with --debug for details)", redact, err)
        return EXIT_ERROR
