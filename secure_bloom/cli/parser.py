"""The ``secure-bloom`` command line parser: commands, options, option types and help texts.

Also what happens to argv around argparse: ``--value X`` becomes ``--value=X`` (a value may start with
'-'); and a usage error never echoes an argument's value (:func:`parse_args`), because a misspelt
option's value is often a key or token. Stdlib argparse only.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
from typing import Any, NoReturn

from .. import __version__, extensions, kernels, thrift_codec
from ..crypto import gcm
from ..errors import ErrorKind
from ..spec import DEFAULT_FPP, MIN_BITSET_BYTES, SPEC_MAX_BITSET_BYTES, WRITER_DEFAULT_MAX_BYTES
from ..types import FilterSizing
from .deadline import DEFAULT_DEADLINE_S
from .exits import EXIT_CODES_HELP, PROG, CliError, UsageError
from .keys import key_options_parent, looks_like_key_material

__all__ = ["NOT_SHOWN", "build_parser", "version_line", "parse_args", "column_arg", "parse_column_spec",
           "parse_bloom_spec", "attach_data_arguments", "refuse_key_shaped_paths"]

NOT_SHOWN = "<not shown>"


def version_line() -> str:
    """What ``secure-bloom --version`` prints.

    Returns
    -------
    str
        ``secure-bloom VERSION (wheel TAG | built from source (TAG) | source tree; kernel: ...;
        thrift decoder: ...; AES-GCM: ...; wheels shipped: cp310, ... for manylinux_2_17_x86_64)``.

    Raises
    ------
    None
        Every part describes what it finds: unreadable install metadata reads as a source tree.
    """

    shipped = ", ".join(tag.split("-", 1)[0] for tag in extensions.wheel_tags())
    return (f"{PROG} {__version__} ({extensions.installed_build()}; kernel: {kernels.kernel_summary()}; "
            f"thrift decoder: {thrift_codec.thrift_summary()}; AES-GCM: {gcm.gcm_summary()}; wheels shipped: {shipped} for "
            f"{extensions.WHEEL_PLATFORM})")


class _VersionAction(argparse.Action):
    """``--version``: the line is built when asked for (reading the install's metadata), not per parse."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        sys.stdout.write(version_line() + "\n")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing and exiting, so main() can redact the message.

    Usage errors never echo an argument's value: unknown arguments are named only when they are
    option names (``--key-lst``), and quoted values in argparse's messages are hidden
    (:func:`parse_args`), because a misspelt option's value is often a key or token.
    """

    def error(self, message: str) -> NoReturn:
        command = self.prog[len(PROG):].strip()
        hint = f" (see '{self.prog} --help')"
        raise CliError(f"{command}: {message}{hint}" if command else f"{message}{hint}", ErrorKind.USAGE_ERROR)


def _warn_deprecated(option_string: str | None, new: str) -> None:
    import sys

    print(f"{PROG}: warning: {option_string} is deprecated, use {new}", file=sys.stderr)


class _DeprecatedAlias(argparse.Action):
    """An old option spelling: does what ``new`` does, with a warning on stderr."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        _warn_deprecated(option_string, self.new)
        setattr(namespace, self.dest, values)


class _ColumnSpecs(argparse.Action):
    """A repeatable ``PATH[:ndv=N][:fpp=P][:sizing=...][:num_bytes=N]`` option: each value parsed
    when it is met (:func:`parse_bloom_spec`), so that an error names the option the user typed (``--bloom``,
    or the deprecated ``--column`` of attach, which also warns: ``new`` names its successor).
    The destination is a list of ``(path, ndv, fpp, sizing, num_bytes)``."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if self.new:
            _warn_deprecated(option_string, self.new)
        spec = parse_bloom_spec(values, option=option_string or self.option_strings[0])
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), spec])


def _bloom_options(p: argparse.ArgumentParser, *, with_old_column: bool) -> None:
    """--bloom PATH[:ndv=N][:fpp=P] (repeatable), --fpp and --bloom-filter-max-bytes, the options
    that add Bloom filters (attach, encrypt); --max-bytes (and attach's --column) are deprecated."""
    p.add_argument("--bloom", action=_ColumnSpecs, default=[], metavar="PATH[:ndv=N][:fpp=P][:sizing=fixed][:num_bytes=N]",
                   dest="bloom",
                   help="a column to give Bloom filters; repeatable. PATH is dotted, or a JSON array of path "
                        "parts where a name holds a dot: '[\"a.b\"]:ndv=10'. sizing=fixed gives all the column's "
                        "filters one size (sizes are visible without a key and otherwise reveal each row group's "
                        "distinct count); num_bytes=N is that size")
    if with_old_column:
        p.add_argument("--column", action=_ColumnSpecs, new="--bloom", dest="bloom", help=argparse.SUPPRESS)
    p.add_argument("--fpp", type=_fpp, default=DEFAULT_FPP, metavar="P",
                   help="false-positive probability for --bloom columns without their own (default: %(default)s)")
    p.add_argument("--bloom-filter-max-bytes", type=_max_bytes, default=WRITER_DEFAULT_MAX_BYTES, metavar="N",
                   dest="bloom_filter_max_bytes",
                   help="largest bitset per filter, a power of two from 32 to 134217728 "
                        "(default: %(default)s, parquet-java's parquet.bloom.filter.max.bytes)")
    p.add_argument("--max-bytes", action=_DeprecatedAlias, new="--bloom-filter-max-bytes", type=_max_bytes,
                   dest="bloom_filter_max_bytes", help=argparse.SUPPRESS)


# --- parser ----------------------------------------------------------------------------------


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


_MAIN_EPILOG = f"""\
examples:
  {PROG} inspect data.parquet.encrypted --key-list-file keys/dev-key-list.txt
  {PROG} probe data.parquet --column email --value alice@example.com --json
  export SECURE_BLOOM_KEY_LIST_FILE=keys/dev-key-list.txt     # or give --key-list-file each time
  {PROG} attach in.parquet out.parquet --bloom email --bloom ssn:fpp=0.001
  {PROG} encrypt in.parquet out.parquet --footer-key fk --column-key ck:email --bloom email
  {PROG} audit warehouse/ --sensitive email,ssn --junit-xml audit.xml

Keys: give the key list in a file (--key-list-file or $SECURE_BLOOM_KEY_LIST_FILE) or in
$SECURE_BLOOM_KEY_LIST, not with --key-list/--key: a command line is visible to every local user
(ps) and stays in shell history (a warning says so when key material arrives that way).

Run '{PROG} COMMAND --help' for a command's options and examples.

{EXIT_CODES_HELP}"""

_DEV_KEYS_EPILOG = f"""\
The keys are random (os.urandom) and the file is owner-only; its first line says it holds
throwaway development keys. Files encrypted under them read with this file and nothing else.
For real data use a KMS (--kms-url, OpenBao / Vault transit).

examples:
  {PROG} dev-keys dev-keys.txt
  export SECURE_BLOOM_KEY_LIST_FILE=dev-keys.txt
  {PROG} encrypt in.parquet out.parquet --footer-key footer_key --column-key pii_key:email --bloom email
"""

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
  {PROG} probe warehouse/events/ --column user_id --values-file ids.txt --json --by-value

Many values: give them in a file (--values-file, one per line); they are converted and hashed once
and each file's filters are probed with all of them in one call. --json --by-value prints per
value the files and row groups that may hold it, as one line of JSON (a value found nowhere
lists none):
  {{"column": C, "files": [{{"file": F, "num_row_groups": N}}, ...],
   "values": [{{"value": V, "maybe": [{{"file": INDEX, "row_groups": [0, 3]}}, ...]}}, ...]}}

{EXIT_CODES_HELP}"""

_ATTACH_EPILOG = f"""\
Builds a Bloom filter for each named column from the data in SRC and writes DST: SRC's pages
unchanged, plus the filters (encrypted with each column's own key when the column is encrypted)
and the rewritten footer. Per-column options follow the path, separated by ':'.

examples:
  {PROG} attach in.parquet out.parquet --bloom email --bloom user_id:ndv=1000000
  {PROG} attach enc.parquet.encrypted out.parquet.encrypted --bloom ssn:fpp=0.001 \\
      --key-list-file keys/dev-key-list.txt
  {PROG} attach in.parquet in.parquet --bloom email --overwrite    # replace in place

{EXIT_CODES_HELP}"""

_ENCRYPT_EPILOG = f"""\
Writes DST: SRC (a Parquet file, or a directory of them) encrypted with Parquet Modular
Encryption through the KMS of the key options, with a Bloom filter per row group on each --bloom
column, encrypted with that column's key (plaintext for a plaintext column). Row groups are kept
as in SRC; each filter is sized for its row group's exact distinct count unless ndv is given. A
directory is mirrored file by file (every file gets its own data keys); each file appears
complete and verified, or not at all. An encrypted SRC is decrypted with the same key options
(its old master keys and the new ones in one key list or KMS) and re-encrypted under the
--footer-key / --column-key given: key rotation, or filters added; its old filters are dropped.

examples:
  {PROG} encrypt customers.parquet customers.enc.parquet --footer-key footer_key \\
      --column-key pii_key:email,ssn --bloom email --bloom ssn:fpp=0.001 --key-list-file keys.txt
  {PROG} encrypt lake/raw/ lake/encrypted/ --footer-key fk --column-key ck:account_id \\
      --bloom account_id:ndv=100000 --plaintext-footer --kms-url https://bao:8200
  {PROG} encrypt old.parquet.encrypted rotated.parquet.encrypted --footer-key fk_2025 \\
      --column-key pii_2025:email,ssn --bloom email --key-list-file old-and-new-keys.txt

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
With --policy, also:
  WRONG_MASTER_KEY                      the column's key is wrapped by a master key the policy does
                                        not name for it (from the key material, or its sidecar)
  FILTER_WRONG_MASTER_KEY               the filter is encrypted under a master key the policy does
                                        not name for it
  FILTER_REQUIRED_MISSING               a row group lacks the filter the policy requires
  FILTER_FORBIDDEN                      a row group has a filter the policy forbids
  FILTER_FPP_TOO_LOW                    the filter's effective false-positive rate (from its bits
                                        set) is below min_fpp: a dictionary in disguise
  FILTER_TOO_LARGE                      the bitset is larger than max_bitset_bytes
  FILTER_SIZES_VARY                     the column's filters differ in size across row groups (with
                                        hide_filter_sizes, or --hide-filter-sizes for --sensitive):
                                        sizes are visible without a key and reveal cardinality
For every sensitive column with filters the report says what their sizes show without a key
(the sizes per row group and the distinct counts they imply at --assume-fpp).
Without keys the audit still reports what is visible (a plaintext filter on a column with
crypto metadata); a file it cannot check (missing key, not Parquet, KMS down) is reported as
"could not check", never as a pass.

examples:
  {PROG} audit warehouse/ --sensitive email,ssn --key-list-file keys/dev-key-list.txt
  {PROG} audit a.parquet b.parquet --sensitive card.number --json
  {PROG} audit warehouse/ --policy compliance.toml --junit-xml audit.xml
  {PROG} audit lake/ --sensitive ssn --junit-xml audit.xml --kms-url https://bao:8200 \\
      --kms-token-env BAO_TOKEN
  {PROG} audit "s3://lake/events?endpoint_override=127.0.0.1:9000&scheme=http" --sensitive ssn
      (an object-store prefix: listed, objects recognised by content, read by range requests)

exit codes (audit), first match wins:
  1  violations found (even if something else could not be checked)
  2  something could not be checked, or a --sensitive column is in none of the files read
  0  every file compliant
  3  the audit itself failed (e.g. the JUnit file cannot be written)"""


_QUERY_EPILOG = f"""\
Reads the rows matching every --where condition, as pyarrow's own filtered read returns them, after
skipping the row groups that cannot match: by min/max statistics, then by Bloom filters for = and
in (encrypted filters too). Only footers, filters and the surviving row groups are read, also on
object stores. Values are text converted per column type, as for 'probe'.

A condition is COLUMN OP VALUE; conditions join with AND and OR (AND first) and group with
parentheses: --where "country = NL AND (email = a@example.com OR email = 'b c@example.com')".
A value holding spaces, parentheses or commas is quoted with ' or " (a doubled quote inside
stands for itself). Text that does not read as conditions is refused (exit 2), never taken as one
value. Several --where options are ANDed.

Decrypted values never land in a file in plaintext by accident: --format parquet --output FILE
writes FILE encrypted under the same KMS master keys as the files read (each encrypted column under
its own master key, the footer under the footer's; fresh data keys, wrapped by the same KMS), and
refuses (exit 2) when that cannot be done (explicit keys, no KMS, a column under different master
keys in different files). csv, json and table output to a file cannot be encrypted: with encrypted
columns among the rows it is refused (exit 2) unless --plaintext-output is given. Standard output
is not a file: it is written as asked.

examples:
  {PROG} query warehouse/customers --where "email = alice@example.com" --key-list-file keys.txt
  {PROG} query data.parquet --where "ssn in (123-45-6789, 987-65-4321)" --columns email,ssn --format json
  {PROG} query "s3://lake/events?endpoint_override=127.0.0.1:9000&scheme=http" \\
      --where "user_id = 42" --where "ts >= 2024-05-01T00:00:00Z" --explain

{EXIT_CODES_HELP}"""

_DOCTOR_EPILOG = f"""\
attach (and a write with external key material) publishes a file's external key material
(_KEY_MATERIAL_FOR_<name>.json) before the file itself. A process killed in between, or while writing, can leave key material without its data
file, the hidden temporary files .<name>.<hex>.attach.tmp / .<sidecar>.<hex>.tmp, and a
publication journal .<name>.<hex>.attach.journal. Without --fix, doctor lists them (exit 1 if
any). With --fix it rolls unfinished publications back (removing the orphaned key material, or
restoring the key material an overwrite replaced), removes stale temporary files and key
material whose data file does not exist. Files a running attach holds (flock) are left alone.
The next attach to the same destination recovers its own leftovers, and audit lists them.

examples:
  {PROG} doctor warehouse/customers
  {PROG} doctor warehouse/customers --fix"""


def build_parser() -> argparse.ArgumentParser:
    """The full ``secure-bloom`` parser (also used to render ``--help``).

    Returns
    -------
    argparse.ArgumentParser
        The parser; its subcommands are the commands.

    Raises
    ------
    None
        Nothing of its own.
    """
    keys = key_options_parent()
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="print a traceback on errors (key material still redacted)")
    common.add_argument("--deadline", type=_deadline, metavar="SECONDS", default=None,
                        help="give up after SECONDS: STORAGE_UNAVAILABLE, exit 2, nothing written (default: "
                             f"{DEFAULT_DEADLINE_S:g} when a path is an object-store URI, none for local paths; "
                             "0: none)")

    parser = _Parser(prog=PROG, formatter_class=_formatter, allow_abbrev=False, epilog=_MAIN_EPILOG,
                     description="Encrypted Parquet split-block Bloom filters: inspect, probe, attach "
                                 "and audit them, byte-compatible with parquet-java.")
    parser.add_argument("--version", action=_VersionAction, nargs=0,
                        help="show the version, how it was installed (the wheel's tag), the kernel and "
                             "Thrift decoder in use and the wheel tags shipped, and exit")
    parser.add_argument("--debug", action="store_true", help="print a traceback on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    parents: list[Any] = [keys, common]

    def command(name: str, help_text: str, epilog: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, description=help_text, epilog=epilog,
                              parents=parents, formatter_class=_formatter, allow_abbrev=False)

    p = command("inspect", "show row groups, columns and their Bloom filters", _INSPECT_EPILOG)
    p.add_argument("file", metavar="PATH", help="a Parquet file, a directory of them, or an object-store URI "
                                                "(s3://bucket/prefix?endpoint_override=host:port&scheme=http)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    p = command("probe", "ask the Bloom filters whether values may be in each row group", _PROBE_EPILOG)
    p.add_argument("file", metavar="PATH", help="a Parquet file, a directory of them, or an object-store URI "
                                                "(s3://bucket/prefix?endpoint_override=host:port&scheme=http)")
    p.add_argument("--column", required=True, metavar="PATH", type=column_arg,
                   help="leaf column path, e.g. a.b.c; where a column's own name holds a dot, give the "
                        "path as a JSON array of its parts: '[\"a.b\"]' (a column named a.b) vs "
                        "'[\"a\", \"b\"]' (field b of group a)")
    p.add_argument("--value", action="append", default=[], metavar="V", dest="values",
                   help="a value to look up (may start with '-'); repeatable, one answer each")
    p.add_argument("--values-file", metavar="PATH",
                   help="more values to look up, one per line (UTF-8; '-' reads stdin), after the --value ones")
    p.add_argument("--timezone", type=_timezone, metavar="ZONE",
                   help="the zone of naive date/time values for columns of UTC instants "
                        "(UTC, Europe/Paris, ...)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--by-value", action="store_true",
                   help="with --json: per value, the files and row groups that may hold it (one line of JSON)")

    p = command("attach", "add (encrypted) Bloom filters to a copy of a Parquet file", _ATTACH_EPILOG)
    p.add_argument("src", metavar="SRC", help="the Parquet file to read")
    p.add_argument("dst", metavar="DST", help="the file to write")
    _bloom_options(p, with_old_column=True)
    p.add_argument("--overwrite", action="store_true",
                   help="replace DST if it exists (DST = SRC replaces the file atomically)")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")

    p = command("encrypt", "write an encrypted copy of Parquet files with encrypted Bloom filters", _ENCRYPT_EPILOG)
    p.add_argument("src", metavar="SRC", help="a Parquet file (plaintext or encrypted), or a directory of them")
    p.add_argument("dst", metavar="DST", help="the file (or directory) to write")
    p.add_argument("--footer-key", required=True, metavar="ID", help="master key id of the footer key")
    p.add_argument("--column-key", action="append", default=[], metavar="ID:COL[,COL...]", dest="column_keys",
                   help="a master key id and the columns encrypted with it; repeatable")
    p.add_argument("--uniform", action="store_true", help="encrypt every column with the footer key")
    _bloom_options(p, with_old_column=False)
    p.add_argument("--plaintext-footer", action="store_true", help="a signed plaintext footer (legacy readers)")
    p.add_argument("--algorithm", choices=("AES_GCM_V1", "AES_GCM_CTR_V1"), default="AES_GCM_V1",
                   help="encryption algorithm (default: %(default)s)")
    p.add_argument("--single-wrapping", action="store_true",
                   help="wrap data keys with the master keys directly (default: double wrapping)")
    p.add_argument("--external-key-material", action="store_true",
                   help="keep key material in a _KEY_MATERIAL_FOR_<file>.json sidecar")
    p.add_argument("--compression", default="snappy", metavar="CODEC", help="compression codec (default: snappy)")
    p.add_argument("--overwrite", action="store_true", help="replace DST files that exist")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")

    p = command("audit", "prove that no Bloom filter leaks a sensitive column", _AUDIT_EPILOG)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="Parquet files, directories, or object-store URIs (s3://bucket/prefix?endpoint_override=...)")
    p.add_argument("--sensitive", action="append", default=[], metavar="COL[,COL...]",
                   help="sensitive column paths; repeatable (with --policy: extra rules)")
    p.add_argument("--policy", metavar="FILE",
                   help="a TOML compliance policy: per column (path or glob) sensitive or not, the master "
                        "keys its data and filter must be encrypted under, filter required / allowed / "
                        "forbidden, min_fpp, max_bitset_bytes (README: 'Compliance policies')")
    p.add_argument("--allow-footer-key", action="store_true",
                   help="accept filters encrypted with the footer key")
    p.add_argument("--hide-filter-sizes", action="store_true",
                   help="the --sensitive columns' filters must have one size per file (FILTER_SIZES_VARY otherwise)")
    p.add_argument("--assume-fpp", type=_fpp, default=DEFAULT_FPP, metavar="P", dest="assume_fpp",
                   help="the false-positive rate writers sized filters for, to say which distinct counts their "
                        "sizes imply (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--junit-xml", metavar="FILE", help="also write a JUnit XML report to FILE")

    # --- query (issue 12: read by key) ---
    p = command("query", "read the rows matching conditions, skipping row groups by statistics and "
                         "Bloom filters", _QUERY_EPILOG)
    p.add_argument("file", metavar="PATH", help="a Parquet file, a directory (hive partitions too) or a URI "
                                                "(s3://bucket/prefix?endpoint_override=host:port&scheme=http)")
    p.add_argument("--where", required=True, action="append", metavar="COND", dest="conditions",
                   help="COLUMN OP VALUE, OP one of = != < <= > >= 'in (a, b)' 'not in (a, b)'; conditions "
                        "joined by AND / OR, with parentheses; values with spaces quoted ('John Smith'); "
                        "repeatable (AND)")
    p.add_argument("--columns", action="append", metavar="COL[,COL...]", help="columns to return (default: all)")
    p.add_argument("--format", choices=("table", "json", "csv", "parquet"), default=None,
                   help="output format (default: table; parquet needs --output)")
    p.add_argument("--json", action="store_true", help="print JSON (the same as --format json)")
    p.add_argument("--output", metavar="FILE", help="write the rows to FILE instead of standard output (parquet: "
                                                    "encrypted under the source's master keys; csv/json/table of "
                                                    "encrypted columns: refused without --plaintext-output)")
    p.add_argument("--plaintext-output", action="store_true",
                   help="allow --output FILE to hold decrypted values of encrypted columns in plaintext")
    p.add_argument("--explain", action="store_true",
                   help="also print the prune report: row groups pruned by statistics and by Bloom filters, bytes read")
    p.add_argument("--timezone", type=_timezone, metavar="ZONE",
                   help="the zone of naive date/time values for columns of UTC instants")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="print at most N rows (table format)")

    p = command("doctor", "find (and with --fix, clean) what an interrupted attach left behind", _DOCTOR_EPILOG)
    p.add_argument("paths", nargs="+", metavar="DIR", help="directories (or files: their directory) to look in")
    p.add_argument("--fix", action="store_true", help="roll back unfinished publications and remove stale "
                                                      "temporary files and orphaned sidecars")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")

    help_text = "write a throwaway development key list (fresh random keys, marked as such) to try the library"
    p = sub.add_parser("dev-keys", help=help_text, description=help_text, epilog=_DEV_KEYS_EPILOG,
                       formatter_class=_formatter, allow_abbrev=False)
    p.add_argument("path", metavar="PATH", help="the key list file to write (kept if it already is one)")
    p.add_argument("--key-id", action="append", default=[], metavar="ID", dest="key_ids",
                   help="a master key id to make a key for; repeatable (default: footer_key, pii_key, finance_key)")
    return parser


def _max_bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--bloom-filter-max-bytes must be an integer, got {text!r}") from None
    if not MIN_BITSET_BYTES <= value <= SPEC_MAX_BITSET_BYTES or value & (value - 1):
        raise argparse.ArgumentTypeError(
            f"--bloom-filter-max-bytes must be a power of two from {MIN_BITSET_BYTES} to {SPEC_MAX_BITSET_BYTES}, got {value}")
    return value


def _deadline(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--deadline takes a number of seconds, got {text!r}") from None
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"--deadline must be >= 0 seconds (0: no deadline), got {text}")
    return value


def _fpp(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"false-positive probability must be a number, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"false-positive probability must be in (0, 1), got {text}")
    return value


def column_arg(text: str, option: str = "--column") -> str | tuple[str, ...]:
    """A column path: dotted text, or a JSON array of path parts (``["a.b"]`` names a column
    whose own name is ``a.b``, ``["a", "b"]`` the field ``b`` of group ``a``).

    Parameters
    ----------
    text : str
        The path as given.
    option : str
        The option it was given with, named in errors (probe's ``--column``; ``--bloom``).

    Returns
    -------
    str or tuple of str
        The dotted path, or the path parts of a JSON array.

    Raises
    ------
    UsageError
        A JSON array that does not parse or is not a non-empty list of names.
    """
    if not text.lstrip().startswith("["):
        return text
    try:
        parts = json.loads(text)
    except ValueError:
        raise UsageError(f"{option} {text!r}: not a JSON array of path parts") from None
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) and p for p in parts):
        raise UsageError(f"{option} {text!r}: a JSON path must be a non-empty array of names, e.g. [\"a.b\"]")
    return tuple(parts)


def parse_column_spec(spec: str, option: str = "--bloom") -> tuple[str | tuple[str, ...], int | None, float | None]:
    """``PATH[:ndv=N][:fpp=P]`` -> (path, ndv, fpp); options are the trailing ``:k=v`` parts;
    PATH may be a JSON array of path parts (:func:`column_arg`). A spec with sizing options
    is refused (:func:`parse_bloom_spec` reads them).

    Parameters
    ----------
    spec : str
        The text given.
    option : str
        The option it was given with (``--bloom``, attach's deprecated ``--column``), named in errors.

    Returns
    -------
    tuple
        ``(path, ndv or None, fpp or None)``.

    Raises
    ------
    UsageError
        An unknown or malformed option, a sizing option, an empty path, a malformed JSON path.
    """
    path, ndv, fpp, sizing, num_bytes = parse_bloom_spec(spec, option)
    if sizing is not None or num_bytes is not None:
        raise UsageError(f"{option} {spec!r}: sizing options need parse_bloom_spec")
    return path, ndv, fpp


def parse_bloom_spec(spec: str, option: str = "--bloom") -> tuple[str | tuple[str, ...], int | None, float | None,
                                                                   FilterSizing | None, int | None]:
    """``PATH[:ndv=N][:fpp=P][:sizing=fixed|per_row_group][:num_bytes=N]`` -> (path, ndv, fpp,
    sizing, num_bytes), the options of one ``--bloom``; options are the trailing ``:k=v`` parts;
    PATH may be a JSON array of path parts (:func:`column_arg`). ``sizing=fixed`` gives every
    filter of the column one size; ``num_bytes`` is that size (sizing ``fixed`` implied).

    Parameters
    ----------
    spec : str
        The text given.
    option : str
        The option it was given with (``--bloom``, attach's deprecated ``--column``), named in errors.

    Returns
    -------
    tuple
        ``(path, ndv or None, fpp or None, sizing or None, num_bytes or None)``.

    Raises
    ------
    UsageError
        An unknown or malformed option, a bad value, an empty path, a malformed JSON path.
    """
    parts = spec.split(":")
    ndv: int | None = None
    fpp: float | None = None
    sizing: FilterSizing | None = None
    num_bytes: int | None = None
    while len(parts) > 1 and "=" in parts[-1]:
        name, _, value = parts.pop().partition("=")
        name = name.strip().lower()
        if name == "ndv":
            try:
                ndv = int(value)
            except ValueError:
                raise UsageError(f"{option} {spec!r}: ndv must be an integer, got {value!r}") from None
            if ndv < 1:
                raise UsageError(f"{option} {spec!r}: ndv must be >= 1")
        elif name == "fpp":
            try:
                fpp = _fpp(value)
            except argparse.ArgumentTypeError as e:
                raise UsageError(f"{option} {spec!r}: {e}") from None
        elif name == "sizing":
            try:
                sizing = FilterSizing.coerce(value.strip().lower())
            except ValueError as e:
                raise UsageError(f"{option} {spec!r}: {e}") from None
        elif name == "num_bytes":
            try:
                num_bytes = int(value)
            except ValueError:
                raise UsageError(f"{option} {spec!r}: num_bytes must be an integer, got {value!r}") from None
        else:
            raise UsageError(f"{option} {spec!r}: unknown option {name!r} (use ndv=N, fpp=P, sizing=fixed or "
                             "num_bytes=N)")
    if num_bytes is not None:
        if not MIN_BITSET_BYTES <= num_bytes <= SPEC_MAX_BITSET_BYTES or num_bytes & (num_bytes - 1):
            raise UsageError(f"{option} {spec!r}: num_bytes must be a power of two from {MIN_BITSET_BYTES} to "
                             f"{SPEC_MAX_BITSET_BYTES}")
        if sizing is FilterSizing.PER_ROW_GROUP:
            raise UsageError(f"{option} {spec!r}: num_bytes gives every filter one size: it needs sizing=fixed")
    path = ":".join(parts).strip()
    if not path:
        raise UsageError(f"{option} {spec!r}: empty column path")
    return column_arg(path, option), ndv, fpp, sizing, num_bytes


def _timezone(name: str) -> Any:
    """--timezone: an IANA zone for zoneinfo."""
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(f"unknown time zone {name!r} (e.g. UTC, Europe/Paris)") from None


# --- argv around argparse ---------------------------------------------------------------------


# Options whose argument is user data that may start with '-' (--value -1e5, --value -abc).
_DATA_OPTIONS = ("--value", "--column")


def attach_data_arguments(argv: list[str]) -> list[str]:
    """``--value X`` -> ``--value=X``: like getopt, an option that takes an argument takes the
    next word whatever it starts with (argparse would read ``-1e5`` or ``-abc`` as an option).

    Parameters
    ----------
    argv : list of str
        The arguments.

    Returns
    -------
    list of str
        The arguments, data options joined to their values.

    Raises
    ------
    None
        Nothing of its own.
    """
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


# --- usage errors that show no value ---------------------------------------------------------


_OPTION_NAME = re.compile(r"--?[A-Za-z][A-Za-z0-9-]{0,31}\Z")


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
        close = difflib.get_close_matches(name, [w for w in vocabulary if w.startswith("-") and w != name], n=1)
        parts.append(f"{name} (did you mean {close[0]}?)" if close else name)
    message = f"unrecognized option{'s' if len(names) > 1 else ''} {', '.join(parts)}" if names else ""
    if hidden:
        what = f"{hidden} unexpected value{'s' if hidden > 1 else ''} ({NOT_SHOWN}: may be key material)"
        message = f"{message}, and {what}" if message else f"unrecognized arguments: {what}"
    return message


def _hide_values(message: str, args_list: list[str], vocabulary: set[str]) -> str:
    """``message`` with every quoted argument value replaced: argparse quotes values it rejects
    (an invalid command, an explicit argument to a flag, a value of the wrong type)."""
    words = set(args_list) | {a.split("=", 1)[1] for a in args_list if a.startswith("-") and "=" in a}
    for word in sorted(words - vocabulary, key=len, reverse=True):
        if word:
            for quoted in (repr(word), f"'{word}'", f'"{word}"'):
                message = message.replace(quoted, f"'{NOT_SHOWN}'")
    return message


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed (after :func:`attach_data_arguments`); a usage error is a :class:`CliError`
    that names unknown options but shows no argument value.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        From :func:`build_parser`.
    argv : list of str
        The arguments.

    Returns
    -------
    argparse.Namespace
        The parsed arguments.

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A usage error (no argument value shown).
    SystemExit
        ``--help`` or ``--version`` (after printing).
    """
    args_list = attach_data_arguments(argv)
    vocabulary = _vocabulary(parser)
    try:
        args, extras = parser.parse_known_args(args_list)
    except CliError as e:
        raise CliError(_hide_values(str(e), args_list, vocabulary), e.kind, code=e.code) from None
    if extras:
        command = getattr(args, "command", None)
        prefix = f"{command}: " if command else ""
        # suggestions come from the command's own options: another command's would not help
        own = _vocabulary(_subparser(parser, command)) if command else vocabulary
        raise CliError(f"{prefix}{_unrecognized(extras, own)} (see '{PROG} --help')", ErrorKind.USAGE_ERROR)
    return args


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of ``command`` (``parser`` itself if it has none of that name)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            found: argparse.ArgumentParser = action.choices[command]
            return found
    return parser


def refuse_key_shaped_paths(args: argparse.Namespace) -> None:
    """A key list given where a path goes would be echoed in a report on stdout: refuse it.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A path argument shaped like key material (not shown).
    """
    given = [getattr(args, name, None) for name in ("file", "src", "dst")] + list(getattr(args, "paths", None) or [])
    for path in given:
        if isinstance(path, str) and not os.path.lexists(path) and looks_like_key_material(path):
            raise CliError(f"{args.command}: a PATH argument looks like key material ({NOT_SHOWN}); give keys "
                           "with --key-list-file or $SECURE_BLOOM_KEY_LIST_FILE", ErrorKind.USAGE_ERROR)


