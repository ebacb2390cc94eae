"""The ``secure-bloom`` command line: inspect, probe, attach and audit Parquet Bloom filters.

Conventions (those of the Unix tools data engineers script around): ``--help`` with examples,
``--json`` for machines, ``--version``, meaningful exit codes (:data:`EXIT_CODES_HELP`), errors on
stderr as ONE line ``secure-bloom: error: <file>: <what>`` (a traceback only with ``--debug``),
progress bars on stderr only when it is a terminal, and key material never printed: every
message that reaches stderr goes through a :class:`~secure_bloom.cli_keys.Redactor` built from the
command line and environment *before* anything is parsed.

Stdlib argparse only; tqdm for progress. ``bench``, ``bench-spark`` and ``demo`` hand their
arguments to ``secure_bloom.tools.bench.main`` / ``secure_bloom.tools.bench_spark.main`` / ``secure_bloom.tools.demo.main``.
"""

from __future__ import annotations

import argparse
import contextvars
import difflib
import importlib
import json
import logging
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, TextIO

from . import __version__
from . import cli_render as render
from .cli_keys import (
    ARGV_KEY_WARNING,
    Redactor,
    UsageError,
    key_access_from_args,
    key_options_parent,
    looks_like_key_material,
)
from .display import json_safe, visible, visible_lines
from .errors import (
    AuthenticationError,
    ColumnNotFoundError,
    InvalidValueError,
    KeyNotFoundError,
    MalformedKeyMaterialError,
    MissingKeyError,
    NotParquetError,
    NotRegularFileError,
    SecureBloomError,
)
from .spec import DEFAULT_FPP, MIN_BITSET_BYTES, SPEC_MAX_BITSET_BYTES, WRITER_DEFAULT_MAX_BYTES

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FOUND_PROBLEMS", "EXIT_USAGE", "EXIT_ERROR"]

PROG = "secure-bloom"
EXIT_OK = 0
EXIT_FOUND_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_ERROR = 3

EXIT_CODES_HELP = """\
exit codes:
  0  success (audit: every file compliant)
  1  audit found violations
  2  usage error or could not check: bad options, a file that is missing, not Parquet or not a regular
     file (a FIFO), a directory that cannot be read (after the output for the rest), an unknown
     column, a value that does not fit the column, a missing or wrong key (audit: some file could not
     be checked and none had violations)
  3  any other error: a corrupt file, the KMS unreachable or refusing, an I/O error
  141  stdout was closed early (e.g. piped into head); nothing is reported"""

_DELEGATED = {"bench": "secure_bloom.tools.bench", "bench-spark": "secure_bloom.tools.bench_spark",
              "demo": "secure_bloom.tools.demo"}

# Errors that mean "the command as given cannot work" -> 2; everything else -> 3.
_USAGE_ERRORS: tuple[type[BaseException], ...] = (
    UsageError, ColumnNotFoundError, InvalidValueError, MalformedKeyMaterialError, NotParquetError,
    NotRegularFileError, MissingKeyError, KeyNotFoundError, AuthenticationError, FileNotFoundError, IsADirectoryError,
    NotADirectoryError, FileExistsError,
)


class CliError(Exception):
    """A failure already phrased for the user: one line and an exit code."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing and exiting, so main() can redact the message.

    Usage errors never echo an argument's value: unknown arguments are named only when they are
    option names (``--key-lst``), and quoted values in argparse's messages are hidden
    (:func:`_parse`), because a misspelt option's value is often a key or token.
    """

    def error(self, message: str) -> NoReturn:
        command = self.prog[len(PROG):].strip()
        hint = f" (see '{self.prog} --help')"
        raise CliError(f"{command}: {message}{hint}" if command else f"{message}{hint}", EXIT_USAGE)


# --- parser ----------------------------------------------------------------------------------


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


_MAIN_EPILOG = f"""\
examples:
  {PROG} inspect data.parquet.encrypted --key-list-file keys/dev-key-list.txt
  {PROG} probe data.parquet --column email --value alice@example.com --json
  export SECURE_BLOOM_KEY_LIST_FILE=keys/dev-key-list.txt     # or give --key-list-file each time
  {PROG} attach in.parquet out.parquet --column email --column ssn:fpp=0.001
  {PROG} audit warehouse/ --sensitive email,ssn --junit-xml audit.xml

Keys: give the key list in a file (--key-list-file or $SECURE_BLOOM_KEY_LIST_FILE) or in
$SECURE_BLOOM_KEY_LIST, not with --key-list/--key: a command line is visible to every local user
(ps) and stays in shell history (a warning says so when key material arrives that way).

Run '{PROG} COMMAND --help' for a command's options and examples.

{EXIT_CODES_HELP}"""

_INSPECT_EPILOG = f"""\
Shows, per row group and leaf column: whether a Bloom filter exists, whether it is encrypted, the
key id, filter size (bitset bytes) and on-disk offset and length. Encrypted columns need their key
to show filter details; without it they are listed as encrypted with unknown filter. A plaintext
filter on an encrypted column is shown as "PLAINTEXT (leak)" (use 'audit' to fail on it).
A directory is searched recursively and each Parquet file in it is shown (--json: a list).

examples:
  {PROG} inspect data.parquet
  {PROG} inspect enc.parquet.encrypted --key kf=text:0123456789012345 --key kc1=hex:... --json
  {PROG} inspect part-00000.snappy.parquet --key-list-file keys/dev-key-list.txt

{EXIT_CODES_HELP}"""

_PROBE_EPILOG = f"""\
Answers, per row group, whether each value MAY be present ("maybe") or is certainly "absent",
from the Bloom filters alone (no data page is read). A row group without a filter answers "maybe".
A directory is searched recursively; each file is probed (--json: a list of the per-file objects).

Values are text and are converted to the column's type: numbers for numeric columns, decimal
strings for DECIMAL (12.50), ISO-8601 for dates, times and timestamps (2024-05-01,
2024-05-01T12:00:00.123456789+02:00: up to 9 fractional digits, refused rather than cut when the
column's unit is coarser). A value may start with '-' (--value -1e5). Answers follow SQL equality:
0 also finds -0.0, and nan is always "maybe" (writers hash NaN bits inconsistently).

Text is taken literally for string columns. For binary (non-string), fixed-length and INT96
columns, hex:... gives raw bytes and text:... takes the rest literally (text:hex:ab is "hex:ab").

Timestamp columns holding UTC instants (isAdjustedToUTC, and Spark's INT96) need an instant: give
an offset (Z, +02:00) or --timezone for naive text (both instants are asked where a local time
repeats at a DST change). Local (wall-clock) timestamp columns take naive text as it is.

examples:
  {PROG} probe data.parquet --column email --value alice@example.com --value bob@example.com
  {PROG} probe enc.parquet.encrypted --column double_field --value 0.5 --json \\
      --key kf=text:0123456789012345 --key kc1=text:1234567890123450
  {PROG} probe events.parquet --column ts --value 2024-05-01T12:00:00Z
  {PROG} probe events.parquet --column ts --value 2024-05-01T14:00:00 --timezone Europe/Paris
  {PROG} probe warehouse/events/ --column user_id --value 42 --key-list-file keys.txt

{EXIT_CODES_HELP}"""

_ATTACH_EPILOG = f"""\
Builds a Bloom filter for each named column from the data in SRC and writes DST: SRC's pages
unchanged, plus the filters (encrypted with each column's own key when the column is encrypted)
and the rewritten footer. Per-column options follow the path, separated by ':'.

examples:
  {PROG} attach in.parquet out.parquet --column email --column user_id:ndv=1000000
  {PROG} attach enc.parquet.encrypted out.parquet.encrypted --column ssn:fpp=0.001 \\
      --key-list-file keys/dev-key-list.txt
  {PROG} attach in.parquet in.parquet --column email --overwrite    # replace in place

{EXIT_CODES_HELP}"""

_AUDIT_EPILOG = f"""\
Checks that no Bloom filter leaks a sensitive column: in every file and row group, each sensitive
column has no filter, or a filter encrypted with that column's own key. Directories are searched
recursively (symbolic links followed, each directory once; hidden and _ directories too) and
every file is recognised as Parquet by its content (PAR1/PARE magic), whatever its name (Hive's
000000_0, Impala's .parq); other files are listed as skipped. A directory, file or link that
cannot be read (or a FIFO) is "could not check", as is a sensitive column found in no file.

Violation codes:
  PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN  a readable filter on an encrypted column (arrow-rs does this)
  SENSITIVE_COLUMN_NOT_ENCRYPTED        the sensitive column itself is stored in plaintext
  FILTER_UNDER_FOOTER_KEY               the filter is encrypted with the footer key (allow with
                                        --allow-footer-key)
  FILTER_UNREADABLE                     the filter fails to authenticate or parse (tampered?)
  SENSITIVE_COLUMN_MISSING              (warning) the file has no such column
Without keys the audit still reports what is visible (a plaintext filter on a column with
crypto metadata); a file it cannot check (missing key, not Parquet, KMS down) is reported as
"could not check", never as a pass.

examples:
  {PROG} audit warehouse/ --sensitive email,ssn --key-list-file keys/dev-key-list.txt
  {PROG} audit a.parquet b.parquet --sensitive card.number --json
  {PROG} audit lake/ --sensitive ssn --junit-xml audit.xml --kms-url https://bao:8200 \\
      --kms-token-env BAO_TOKEN

exit codes (audit), first match wins:
  1  violations found (even if something else could not be checked)
  2  something could not be checked, or a --sensitive column is in none of the files read
  0  every file compliant
  3  the audit itself failed (e.g. the JUnit file cannot be written)"""


def build_parser() -> argparse.ArgumentParser:
    """The full ``secure-bloom`` parser (also used to render ``--help``)."""
    keys = key_options_parent()
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="print a traceback on errors (key material still redacted)")

    parser = _Parser(prog=PROG, formatter_class=_formatter, allow_abbrev=False, epilog=_MAIN_EPILOG,
                     description="Encrypted Parquet split-block Bloom filters: inspect, probe, attach "
                                 "and audit them, byte-compatible with parquet-java.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--debug", action="store_true", help="print a traceback on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    parents: list[Any] = [keys, common]

    def command(name: str, help_text: str, epilog: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, description=help_text, epilog=epilog,
                              parents=parents, formatter_class=_formatter, allow_abbrev=False)

    p = command("inspect", "show row groups, columns and their Bloom filters", _INSPECT_EPILOG)
    p.add_argument("file", metavar="PATH", help="a Parquet file, or a directory of them")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=_cmd_inspect)

    p = command("probe", "ask the Bloom filters whether values may be in each row group", _PROBE_EPILOG)
    p.add_argument("file", metavar="PATH", help="a Parquet file, or a directory of them")
    p.add_argument("--column", required=True, metavar="PATH", type=column_arg,
                   help="leaf column path, e.g. a.b.c; where a column's own name holds a dot, give the "
                        "path as a JSON array of its parts: '[\"a.b\"]' (a column named a.b) vs "
                        "'[\"a\", \"b\"]' (field b of group a)")
    p.add_argument("--value", required=True, action="append", metavar="V", dest="values",
                   help="a value to look up (may start with '-'); repeatable, one answer each")
    p.add_argument("--timezone", type=_timezone, metavar="ZONE",
                   help="the zone of naive date/time values for columns of UTC instants "
                        "(UTC, Europe/Paris, ...)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=_cmd_probe)

    p = command("attach", "add (encrypted) Bloom filters to a copy of a Parquet file", _ATTACH_EPILOG)
    p.add_argument("src", metavar="SRC", help="the Parquet file to read")
    p.add_argument("dst", metavar="DST", help="the file to write")
    p.add_argument("--column", required=True, action="append", metavar="PATH[:ndv=N][:fpp=P]",
                   dest="columns", help="a column to build a filter for; repeatable. PATH is dotted, or a "
                                        "JSON array of path parts where a name holds a dot: '[\"a.b\"]:ndv=10'")
    p.add_argument("--fpp", type=_fpp, default=DEFAULT_FPP, metavar="P",
                   help="false-positive probability for columns without their own (default: %(default)s)")
    p.add_argument("--max-bytes", type=_max_bytes, default=WRITER_DEFAULT_MAX_BYTES, metavar="N",
                   help="largest bitset per filter, a power of two from 32 to 134217728 "
                        "(default: %(default)s, parquet-java's parquet.bloom.filter.max.bytes)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace DST if it exists (DST = SRC replaces the file atomically)")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(handler=_cmd_attach)

    p = command("audit", "prove that no Bloom filter leaks a sensitive column", _AUDIT_EPILOG)
    p.add_argument("paths", nargs="+", metavar="PATH", help="Parquet files or directories")
    p.add_argument("--sensitive", required=True, action="append", metavar="COL[,COL...]",
                   help="sensitive column paths; repeatable")
    p.add_argument("--allow-footer-key", action="store_true",
                   help="accept filters encrypted with the footer key")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--junit-xml", metavar="FILE", help="also write a JUnit XML report to FILE")
    p.set_defaults(handler=_cmd_audit)

    for name, module in _DELEGATED.items():
        p = sub.add_parser(name, help=f"run {module}.main with the remaining arguments "
                                      f"('{PROG} {name} --help' for its options)", add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(handler=None)
    return parser


def _max_bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--max-bytes must be an integer, got {text!r}") from None
    if not MIN_BITSET_BYTES <= value <= SPEC_MAX_BITSET_BYTES or value & (value - 1):
        raise argparse.ArgumentTypeError(
            f"--max-bytes must be a power of two from {MIN_BITSET_BYTES} to {SPEC_MAX_BITSET_BYTES}, got {value}")
    return value


def _fpp(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"false-positive probability must be a number, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"false-positive probability must be in (0, 1), got {text}")
    return value


def column_arg(text: str) -> str | tuple[str, ...]:
    """A --column path: dotted text, or a JSON array of path parts (``["a.b"]`` names a column
    whose own name is ``a.b``, ``["a", "b"]`` the field ``b`` of group ``a``)."""
    if not text.lstrip().startswith("["):
        return text
    try:
        parts = json.loads(text)
    except ValueError:
        raise UsageError(f"--column {text!r}: not a JSON array of path parts") from None
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) and p for p in parts):
        raise UsageError(f"--column {text!r}: a JSON path must be a non-empty array of names, e.g. [\"a.b\"]")
    return tuple(parts)


def parse_column_spec(spec: str) -> tuple[str | tuple[str, ...], int | None, float | None]:
    """``PATH[:ndv=N][:fpp=P]`` -> (path, ndv, fpp); options are the trailing ``:k=v`` parts;
    PATH may be a JSON array of path parts (:func:`column_arg`)."""
    parts = spec.split(":")
    ndv: int | None = None
    fpp: float | None = None
    while len(parts) > 1 and "=" in parts[-1]:
        name, _, value = parts.pop().partition("=")
        name = name.strip().lower()
        if name == "ndv":
            try:
                ndv = int(value)
            except ValueError:
                raise UsageError(f"--column {spec!r}: ndv must be an integer, got {value!r}") from None
            if ndv < 0:
                raise UsageError(f"--column {spec!r}: ndv must be >= 0")
        elif name == "fpp":
            try:
                fpp = _fpp(value)
            except argparse.ArgumentTypeError as e:
                raise UsageError(f"--column {spec!r}: {e}") from None
        else:
            raise UsageError(f"--column {spec!r}: unknown option {name!r} (use ndv=N or fpp=P)")
    path = ":".join(parts).strip()
    if not path:
        raise UsageError(f"--column {spec!r}: empty column path")
    return column_arg(path), ndv, fpp


# --- shared helpers --------------------------------------------------------------------------


def _progress_enabled(stream: TextIO | None = None) -> bool:
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextmanager
def _progress_bar(desc: str, unit: str) -> Iterator[Callable[..., None] | None]:
    """A ``progress(done, total, stage=None)`` callback drawing a tqdm bar when stderr is a
    terminal; None otherwise (pipes and CI logs stay clean). A new ``stage`` restarts the bar
    under its name."""
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
            if total is not None and bar.total != total:
                bar.total = total
            bar.n = done
            bar.refresh()

        yield update
    finally:
        bar.close()


@contextmanager
def _about(path: str) -> Iterator[None]:
    """Turn library and OS errors raised while working on ``path`` into a one-line CliError."""
    try:
        yield
    except CliError:
        raise
    except (SecureBloomError, OSError, UsageError) as e:
        raise CliError(_describe(path, e), _exit_code(e)) from e


def _describe(path: str | None, error: BaseException) -> str:
    """``<file>: <what>``, naming the file once (library messages often name it already)."""
    if isinstance(error, OSError) and not isinstance(error, SecureBloomError):
        what = error.strerror or type(error).__name__
        where = error.filename if isinstance(error.filename, str) else path
        return f"{where}: {what}" if where else what
    what = " ".join(str(error).split()) or type(error).__name__
    if not path or path in what:
        return what
    return f"{path}: {what}"


def _exit_code(error: BaseException) -> int:
    return EXIT_USAGE if isinstance(error, _USAGE_ERRORS) else EXIT_ERROR


def _print_json(obj: Any, out: TextIO) -> None:
    out.write(json_safe(json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False)))
    out.write("\n")


def _open_reader(path: str, keys: Any) -> Any:
    from .parquet import ParquetBloomReader

    return ParquetBloomReader(path, keys=keys)


# --- commands --------------------------------------------------------------------------------


# What a command could not check (paths under a directory it could not read): reported on stderr
# after the command's output, and the exit code is then EXIT_USAGE (see _dispatch).
_UNCHECKED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("unchecked", default=None)


def _files_of(path: str) -> tuple[list[str], bool]:
    """(files, is_directory): a file as given, or the Parquet files under a directory. What could
    not be searched under a directory is recorded in ``_UNCHECKED``, not dropped."""
    if not os.path.isdir(path):
        if not os.path.exists(path):
            raise CliError(f"{path}: No such file or directory", EXIT_USAGE)
        return [path], False
    from .parquet.discover import discover

    found = discover([path])
    problems = [f"{p.path}: {p.problem}" for p in found.problems]
    if not found.files:
        raise CliError("; ".join(problems) or f"{path}: no Parquet files in this directory", EXIT_USAGE)
    unchecked = _UNCHECKED.get()
    if unchecked is not None:
        unchecked.extend(problems)
    return list(found.files), True


def _each_file(path: str, work: Callable[[str], Any]) -> tuple[list[Any], bool]:
    """Run ``work`` on each file of ``path`` (one error stops everything: nothing is skipped
    silently), with a progress bar over files for a directory."""
    files, is_dir = _files_of(path)
    results = []
    with _progress_bar(os.path.basename(path.rstrip(os.sep)) or path, "files") as bar:
        for i, file in enumerate(files):
            if bar is not None and is_dir:
                bar(i, len(files))
            with _about(file):
                results.append(work(file))
    return results, is_dir


def _cmd_inspect(args: argparse.Namespace, out: TextIO) -> int:
    from .parquet.filter_storage import describe_with_storage

    keys = key_access_from_args(args)

    def describe(file: str) -> dict[str, Any]:
        with _open_reader(file, keys) as reader:
            return describe_with_storage(reader)

    descriptions, is_dir = _each_file(args.file, describe)
    if args.json:
        _print_json(render.jsonable(descriptions if is_dir else descriptions[0]), out)
    else:
        out.write("\n".join(render.inspect_table(d) for d in descriptions))
    return EXIT_OK


def _timezone(name: str) -> Any:
    """--timezone: an IANA zone for zoneinfo."""
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(f"unknown time zone {name!r} (e.g. UTC, Europe/Paris)") from None


def _cmd_probe(args: argparse.Namespace, out: TextIO) -> int:
    from .parquet import value_from_text

    keys = key_access_from_args(args)
    texts = list(args.values)  # one answer per --value, labelled as typed

    def probe(file: str) -> dict[str, Any]:
        with _open_reader(file, keys) as reader:
            column = reader.column(args.column)
            values = [value_from_text(text, column, timezone=args.timezone) for text in texts]
            result = reader.probe(column, values, labels=texts, timezone=args.timezone)
            return render.probe_json(file, column.path, texts, result)

    docs, is_dir = _each_file(args.file, probe)
    if args.json:
        _print_json(docs if is_dir else docs[0], out)
    elif is_dir:
        out.write(render.probe_files_table(docs, texts))
    else:
        out.write(render.probe_table(docs[0]))
    return EXIT_OK


def _cmd_attach(args: argparse.Namespace, out: TextIO) -> int:
    from .parquet import attach_bloom_filters

    specs = [parse_column_spec(c) for c in args.columns]
    keys = key_access_from_args(args)
    if not os.path.isfile(args.src):
        what = "is a directory, expected a Parquet file" if os.path.isdir(args.src) else "No such file or directory"
        raise CliError(f"{args.src}: {what}", EXIT_USAGE)
    if os.path.lexists(args.dst) and not args.overwrite:  # a dangling symlink exists too
        raise CliError(f"{args.dst}: already exists (use --overwrite to replace it)", EXIT_USAGE)
    in_place = os.path.exists(args.dst) and os.path.samefile(args.src, args.dst)
    columns = list(dict.fromkeys(path for path, _, _ in specs))
    # per-column options are keyed by the dotted path, as the report names the columns
    dotted = {path: path if isinstance(path, str) else ".".join(path) for path in columns}
    ndv = {dotted[path]: n for path, n, _ in specs if n is not None}
    per_column_fpp = {dotted[path]: p for path, _, p in specs if p is not None}
    fpp: float | dict[str, float] = args.fpp
    if per_column_fpp:
        fpp = {dotted[path]: per_column_fpp.get(dotted[path], args.fpp) for path in columns}
    with _about(args.src), _progress_bar("attach", "it") as bar:
        progress = None if bar is None else (lambda stage, done, total: bar(done, total, stage))
        report = attach_bloom_filters(args.src, args.dst, columns, keys, fpp=fpp, ndv=ndv or None,
                                      max_bytes=args.max_bytes, overwrite=args.overwrite and not in_place,
                                      in_place=in_place, progress=progress)
    if args.json:
        _print_json(render.jsonable(report), out)
    else:
        out.write(render.attach_summary(args.src, args.dst, [dotted[path] for path in columns], report))
    return EXIT_OK


def _cmd_audit(args: argparse.Namespace, out: TextIO) -> int:
    from .parquet.audit import audit

    sensitive = [c.strip() for group in args.sensitive for c in group.split(",") if c.strip()]
    if not sensitive:
        raise CliError("audit: --sensitive names no column", EXIT_USAGE)
    keys = key_access_from_args(args)
    with _progress_bar("audit", "files") as bar:
        progress = None if bar is None else (lambda done, total, path: bar(done, total))
        report = audit(args.paths, sensitive, keys=keys, allow_footer_key=args.allow_footer_key,
                       progress=progress)
    if args.junit_xml:
        try:
            with open(args.junit_xml, "w", encoding="utf-8", errors="backslashreplace") as f:
                f.write(report.to_junit_xml())
        except OSError as e:
            raise CliError(_describe(args.junit_xml, e), EXIT_ERROR) from e
    if args.json:
        out.write(json_safe(report.to_json()))
        out.write("\n")
    else:
        out.write(render.audit_text(report))
    return int(report.exit_code)


class _FilteredStream:
    """A text stream that passes every write through ``transform``: the redactor for a delegate
    (bench, demo prints with its own argparse and may echo key material), or
    :func:`~secure_bloom.display.visible_lines` for human-readable output (no terminal escape
    from a column or file name reaches the terminal)."""

    def __init__(self, stream: TextIO, transform: Callable[[str], str]) -> None:
        self._stream = stream
        self._transform = transform

    def write(self, text: str) -> int:
        self._stream.write(self._transform(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def _redacted_std_streams(redact: Redactor) -> Iterator[None]:
    saved = sys.stdout, sys.stderr
    sys.stdout = _FilteredStream(saved[0], redact)
    sys.stderr = _FilteredStream(saved[1], redact)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


class _RedactingFormatter(logging.Formatter):
    def __init__(self, redact: Redactor) -> None:
        super().__init__(f"{PROG}: %(levelname)s: %(message)s")
        self._redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self._redact(" ".join(super().format(record).split()))


@contextmanager
def _library_logging(debug: bool, redact: Redactor, err: TextIO) -> Iterator[None]:
    """Library log records (e.g. KMS retries) reach stderr, redacted, only with --debug; otherwise
    they would break the one-line error convention."""
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


def _run_delegated(name: str, argv: list[str]) -> int:
    module_name = _DELEGATED[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            raise CliError(f"{name}: not available in this installation ({module_name} is missing)",
                           EXIT_ERROR) from e
        raise
    entry = getattr(module, "main", None)
    if not callable(entry):
        raise CliError(f"{name}: {module_name} has no main(argv)", EXIT_ERROR)
    try:
        return int(entry(argv) or 0)
    except SystemExit as e:  # the delegate's own argparse (--help, usage errors)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USAGE)


# --- entry point -----------------------------------------------------------------------------


def _split_delegated(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """(global options, delegated command or None, its arguments)."""
    for i, arg in enumerate(argv):
        if arg.startswith("-"):
            continue
        if arg in _DELEGATED:
            return argv[:i], arg, argv[i + 1:]
        break
    return argv, None, []


# Options whose argument is user data that may start with '-' (--value -1e5, --value -abc).
_DATA_OPTIONS = ("--value", "--column")


def _attach_data_arguments(argv: list[str]) -> list[str]:
    """``--value X`` -> ``--value=X``: like getopt, an option that takes an argument takes the
    next word whatever it starts with (argparse would read ``-1e5`` or ``-abc`` as an option)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        if arg in _DATA_OPTIONS and i + 1 < len(argv):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def _emit_error(message: str, redact: Redactor, err: TextIO) -> None:
    line = " ".join(redact(message).split())
    err.write(f"{PROG}: error: {line}\n")


_OPTION_NAME = re.compile(r"--?[A-Za-z][A-Za-z0-9-]{0,31}\Z")
_NOT_SHOWN = "<not shown>"


def _vocabulary(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string and command name of ``parser`` and its subcommands."""
    words: set[str] = set()
    for action in parser._actions:
        words.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                words.add(name)
                words |= _vocabulary(sub)
    return words


def _unrecognized(extras: list[str], vocabulary: set[str]) -> str:
    """Names the unknown OPTIONS only; other words (values, stray positionals) are counted, never
    shown: they are often key material given to a misspelt option."""
    names = list(dict.fromkeys(a.split("=", 1)[0] for a in extras if _OPTION_NAME.match(a.split("=", 1)[0])))
    hidden = sum(1 for a in extras if a.split("=", 1)[0] not in names or "=" in a)
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, [w for w in vocabulary if w.startswith("-")], n=1)
        parts.append(f"{name} (did you mean {close[0]}?)" if close else name)
    message = f"unrecognized option{'s' if len(names) > 1 else ''} {', '.join(parts)}" if names else ""
    if hidden:
        what = f"{hidden} unexpected value{'s' if hidden > 1 else ''} ({_NOT_SHOWN}: may be key material)"
        message = f"{message}, and {what}" if message else f"unrecognized arguments: {what}"
    return message


def _hide_values(message: str, args_list: list[str], vocabulary: set[str]) -> str:
    """``message`` with every quoted argument value replaced: argparse quotes values it rejects
    (an invalid command, an explicit argument to a flag, a value of the wrong type)."""
    words = set(args_list) | {a.split("=", 1)[1] for a in args_list if a.startswith("-") and "=" in a}
    for word in sorted(words - vocabulary, key=len, reverse=True):
        if word:
            for quoted in (repr(word), f"'{word}'", f'"{word}"'):
                message = message.replace(quoted, f"'{_NOT_SHOWN}'")
    return message


def _parse(parser: argparse.ArgumentParser, args_list: list[str]) -> argparse.Namespace:
    vocabulary = _vocabulary(parser)
    try:
        args, extras = parser.parse_known_args(args_list)
    except CliError as e:
        raise CliError(_hide_values(str(e), args_list, vocabulary), e.code) from None
    if extras:
        command = getattr(args, "command", None)
        prefix = f"{command}: " if command else ""
        raise CliError(f"{prefix}{_unrecognized(extras, vocabulary)} (see '{PROG} --help')", EXIT_USAGE)
    return args


def _refuse_key_shaped_paths(args: argparse.Namespace) -> None:
    """A key list given where a path goes would be echoed in a report on stdout: refuse it."""
    given = [getattr(args, name, None) for name in ("file", "src", "dst")] + list(getattr(args, "paths", None) or [])
    for path in given:
        if isinstance(path, str) and not os.path.lexists(path) and looks_like_key_material(path):
            raise CliError(f"{args.command}: a PATH argument looks like key material ({_NOT_SHOWN}); give keys "
                           "with --key-list-file or $SECURE_BLOOM_KEY_LIST_FILE", EXIT_USAGE)


def _dispatch(args_list: list[str], redact: Redactor, out: TextIO, err: TextIO) -> int:
    _, delegated, rest = _split_delegated(args_list)
    if delegated is not None:
        with _redacted_std_streams(redact):
            return _run_delegated(delegated, rest)
    parser = build_parser()
    try:
        args = _parse(parser, _attach_data_arguments(args_list))
    except SystemExit as e:  # --help / --version
        return int(e.code or 0) if isinstance(e.code, int) else EXIT_OK
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(out)
        return EXIT_USAGE
    _refuse_key_shaped_paths(args)
    if (getattr(args, "key_list", None) is not None or getattr(args, "key", None)) and _progress_enabled(err):
        # Interactive only: there a typed key reaches shell history; a script's stderr stays one line.
        err.write(f"{PROG}: warning: {ARGV_KEY_WARNING}\n")
    unchecked: list[str] = []
    token = _UNCHECKED.set(unchecked)
    try:
        code = int(handler(args, out if getattr(args, "json", False) else _FilteredStream(out, visible_lines)))
    finally:
        _UNCHECKED.reset(token)
    if unchecked:
        out.flush()
        raise CliError(f"could not check {len(unchecked)} path{'s' if len(unchecked) > 1 else ''} (the output "
                       f"above is incomplete): {'; '.join(visible(u) for u in unchecked)}", max(code, EXIT_USAGE))
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    redact = Redactor.from_invocation(args_list, os.environ)
    debug = "--debug" in args_list
    out, err = sys.stdout, sys.stderr
    try:
        with _library_logging(debug, redact, err):
            return _dispatch(args_list, redact, out, err)
    except CliError as e:
        if debug:
            err.write(redact("".join(traceback.format_exception(e))))
        _emit_error(str(e), redact, err)
        return e.code
    except (UsageError, SecureBloomError, OSError) as e:
        if isinstance(e, BrokenPipeError):  # `secure-bloom ... | head`: the reader left
            _silence_stdout()
            return 141
        if debug:
            err.write(redact("".join(traceback.format_exception(e))))
        _emit_error(_describe(None, e), redact, err)
        return _exit_code(e)
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        return 130
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, no traceback
        if debug:
            err.write(redact("".join(traceback.format_exception(e))))
        _emit_error(f"internal error: {type(e).__name__}: {e} (run with --debug for details)", redact, err)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
