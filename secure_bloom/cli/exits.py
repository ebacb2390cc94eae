"""Exit codes of ``secure-bloom``, the CLI's own errors, and how any error becomes a code and a line.

An exception's exit code comes from its :class:`~secure_bloom.errors.ErrorKind` (the one table in
:mod:`secure_bloom.errors`): 2 when the kind is the caller's to fix, 3 for a failure.
"""

from __future__ import annotations

from typing import ClassVar

from ..errors import ErrorKind, SecureBloomError, error_kind

__all__ = ["PROG", "EXIT_OK", "EXIT_FOUND_PROBLEMS", "EXIT_USAGE", "EXIT_ERROR", "EXIT_BROKEN_PIPE",
           "EXIT_INTERRUPTED", "EXIT_CODES_HELP", "UsageError", "CliError", "exit_code", "describe"]

PROG = "secure-bloom"
EXIT_OK = 0
EXIT_FOUND_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_ERROR = 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a pipeline member killed by it
EXIT_INTERRUPTED = 130  # 128 + SIGINT

EXIT_CODES_HELP = """\
exit codes:
  0  success (audit: every file compliant)
  1  audit found violations
  2  usage error or could not check: bad options, a file that is missing, not Parquet or not a regular
     file (a FIFO), a directory that cannot be read (after the output for the rest), an unknown
     column, a value that does not fit the column, a missing or wrong key, an object store that cannot
     be reached or does not answer within --deadline: STORAGE_UNAVAILABLE (audit: some file could not
     be checked and none had violations)
  3  any other error: a corrupt file, the KMS unreachable or refusing, an I/O error
  141  stdout was closed early (e.g. piped into head); nothing is reported"""


class UsageError(Exception):
    """A command line that cannot work as given (the CLI's exit code 2); the message is one line
    and names options and paths, never their secret values."""

    kind: ClassVar[ErrorKind] = ErrorKind.USAGE_ERROR


class CliError(Exception):
    """A failure already phrased for the user: one line, its kind, and the exit code (by default
    the kind's: :func:`exit_code`)."""

    def __init__(self, message: str, kind: ErrorKind, *, code: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.code = exit_code(kind) if code is None else code


def exit_code(error: BaseException | ErrorKind) -> int:
    """:data:`EXIT_USAGE` when the error (or kind) is the caller's to fix, else :data:`EXIT_ERROR`.

    Parameters
    ----------
    error : BaseException or ErrorKind
        The error, or its kind.

    Returns
    -------
    int
        The exit code.

    Raises
    ------
    None
        Nothing of its own.
    """
    kind = error if isinstance(error, ErrorKind) else error_kind(error)
    return EXIT_USAGE if kind.caller_fixable else EXIT_ERROR


def describe(path: str | None, error: BaseException) -> str:
    """``<file>: <what>``, naming the file once (library messages often name it already).

    Parameters
    ----------
    path : str or None
        The file the error is about.
    error : BaseException
        The error.

    Returns
    -------
    str
        One line to show.

    Raises
    ------
    None
        Nothing of its own.
    """
    if isinstance(error, OSError) and not isinstance(error, SecureBloomError):
        # the system's errors: strerror and the file; an OSError raised with a message (the
        # library's and its tools' own, written to be shown): that message
        what = error.strerror or " ".join(str(error).split()) or type(error).__name__
        where = error.filename if isinstance(error.filename, str) else path
        return f"{where}: {what}" if where else what
    what = " ".join(str(error).split()) or type(error).__name__
    if not path or path in what:
        return what
    return f"{path}: {what}"
