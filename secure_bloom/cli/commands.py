"""The ``secure-bloom`` commands: inspect, probe, attach, audit, query, encrypt, doctor and
dev-keys (one function each).

Each command takes the parsed arguments and the stream for its report and returns the exit
code; a problem with a file is raised as a one-line :class:`~secure_bloom.cli.exits.CliError`
naming the file. The library does the work (:mod:`secure_bloom.parquet`); the text is
:mod:`secure_bloom.cli.render`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import contextvars
import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from ..display import display_uri, json_safe, visible
from ..errors import DeadlineExceededError, ErrorKind, SecureBloomError, error_kind
from . import render
from .deadline import checkpoint, deadline_of, publish, run_within
from .exits import EXIT_OK, EXIT_USAGE, PROG, CliError, UsageError, describe
from .keys import key_access_from_args
from .output import envelope, print_json, progress_bar

__all__ = ["COMMANDS", "run_command", "cmd_inspect", "cmd_probe", "cmd_attach", "cmd_audit",
           "cmd_encrypt", "cmd_doctor", "cmd_dev_keys"]


# What a command could not check (paths under a directory it could not read): reported on stderr
# after the command's output, and the exit code is then at least EXIT_USAGE (see run_command).
_UNCHECKED: contextvars.ContextVar[list[tuple[ErrorKind, str]] | None] = contextvars.ContextVar(
    "unchecked", default=None)


@contextmanager
def _about(path: str) -> Iterator[None]:
    """Turn library and OS errors raised while working on ``path`` into a one-line CliError."""
    try:
        yield
    except CliError:
        raise
    except (SecureBloomError, OSError, UsageError) as e:
        raise CliError(describe(path, e), error_kind(e)) from e


def _open_reader(path: str, keys: Any) -> Any:
    from ..parquet import ParquetBloomReader

    return ParquetBloomReader(path, keys=keys)


def _files_of(path: str) -> tuple[list[str], bool]:
    """(files, is_directory): a file as given, or the Parquet files under a directory or an
    object-store prefix (``s3://bucket/prefix?endpoint_override=...``, found by content as
    locally: :func:`~secure_bloom.parquet.audit.discover.discover`). What could not be searched is
    recorded in ``_UNCHECKED``, not dropped."""
    from ..parquet.audit.discover import discover
    from ..parquet.file.sources import is_local_source

    local = is_local_source(path)
    if local and not os.path.isdir(path):
        if not os.path.exists(path):
            raise CliError(f"{display_uri(path)}: No such file or directory", ErrorKind.FILE_NOT_FOUND)
        return [path], False
    with _about(display_uri(path)):
        found = discover([path])
    problems = [(ErrorKind[p.kind or "ERROR"], f"{display_uri(p.path)}: {p.problem}")  # name = value
                for p in found.problems]
    if not found.files:
        kind = problems[0][0] if problems else ErrorKind.NO_PARQUET_FILES
        raise CliError("; ".join(text for _, text in problems)
                       or f"{display_uri(path)}: no Parquet files in this directory", kind)
    unchecked = _UNCHECKED.get()
    if unchecked is not None:
        unchecked.extend(problems)
    is_dir = local or len(found.files) > 1 or found.files[0] != path
    return list(found.files), is_dir


def _each_file(path: str, work: Callable[[str], Any]) -> tuple[list[Any], bool]:
    """Run ``work`` on each file of ``path`` (one error stops everything: nothing is skipped
    silently), with a progress bar over files for a directory."""
    files, is_dir = _files_of(path)
    results = []
    shown = display_uri(path)
    with progress_bar(os.path.basename(shown.rstrip(os.sep)) or shown, "files") as bar:
        for i, file in enumerate(files):
            checkpoint()
            if bar is not None and is_dir:
                bar(i, len(files))
            with _about(display_uri(file)):
                results.append(work(file))
    return results, is_dir


# --- commands --------------------------------------------------------------------------------


def _local_output(option: str, path: str | None) -> None:
    """Report files go to the local disk: an object-store URI there is refused, by name only."""
    from ..parquet.file.sources import is_store_uri

    if path is not None and is_store_uri(path):
        raise CliError(f"{option} {display_uri(path)}: give a local path (write it, then upload it)",
                       ErrorKind.USAGE_ERROR)


def cmd_inspect(args: argparse.Namespace, out: TextIO) -> int:
    """``inspect``: row groups, columns and their Bloom filters (a table or ``--json``).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    out : TextIO
        Where the report goes (stdout).

    Returns
    -------
    int
        The exit code (0 success, 1 violations or leftovers found, 2 usage error or could not
        check, 3 any other error: ``secure-bloom --help`` lists them).

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A problem with a file or an option, as one line naming it (its exit code from its kind).
    """
    from ..parquet.file.describe import describe_with_storage

    keys = key_access_from_args(args)

    def describe(file: str) -> dict[str, Any]:
        with _open_reader(file, keys) as reader:
            return describe_with_storage(reader)

    descriptions, _ = _each_file(args.file, describe)
    if args.json:
        print_json(render.jsonable(descriptions), out, "inspect")
    else:
        out.write("\n".join(render.inspect_table(d) for d in descriptions))
    return EXIT_OK


def _probe_texts(args: argparse.Namespace) -> list[str]:
    """The values of ``--value`` and then of ``--values-file`` (one per line), as typed."""
    texts = list(args.values)
    if args.values_file is not None:
        name = "stdin" if args.values_file == "-" else display_uri(args.values_file)
        try:
            if args.values_file == "-":
                import sys

                data = sys.stdin.read()
            else:
                with open(args.values_file, encoding="utf-8") as f:
                    data = f.read()
        except UnicodeDecodeError:
            raise CliError(f"--values-file {name}: not UTF-8 text", ErrorKind.USAGE_ERROR) from None
        except OSError as e:
            raise CliError(describe(name, e), error_kind(e)) from None
        lines = data.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the file's final newline ends the last value
        texts.extend(line[:-1] if line.endswith("\r") else line for line in lines)
    if not texts:
        raise CliError("probe: give at least one --value V or a --values-file PATH (see 'secure-bloom probe --help')",
                       ErrorKind.USAGE_ERROR)
    if args.by_value and not args.json:
        raise CliError("probe: --by-value is a form of --json output: give --json too", ErrorKind.USAGE_ERROR)
    return texts


def cmd_probe(args: argparse.Namespace, out: TextIO) -> int:
    """``probe``: each row group's filter asked for each ``--value``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    out : TextIO
        Where the report goes (stdout).

    Returns
    -------
    int
        The exit code (0 success, 1 violations or leftovers found, 2 usage error or could not
        check, 3 any other error: ``secure-bloom --help`` lists them).

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A problem with a file or an option, as one line naming it (its exit code from its kind).
    """
    from ..parquet.file.probe import ProbeValues

    texts = _probe_texts(args)  # one answer per value, labelled as typed
    keys = key_access_from_args(args)
    prepared = ProbeValues(texts, from_text=True, timezone=args.timezone)  # converted and hashed once

    def probe(file: str) -> tuple[str, Any]:
        with _open_reader(file, keys) as reader:
            return display_uri(file), reader.probe(reader.column(args.column), prepared)

    results, is_dir = _each_file(args.file, probe)
    if args.json and args.by_value:
        print_json(render.probe_by_value_json(results), out, "probe", compact=True)
        return EXIT_OK
    docs = [render.probe_json(file, result.column, texts, result) for file, result in results]
    if args.json:
        print_json(docs, out, "probe")
    elif is_dir:
        out.write(render.probe_files_table(docs, texts))
    else:
        out.write(render.probe_table(docs[0]))
    return EXIT_OK


def cmd_attach(args: argparse.Namespace, out: TextIO) -> int:
    """``attach``: a copy of a file with (encrypted) Bloom filters added.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    out : TextIO
        Where the report goes (stdout).

    Returns
    -------
    int
        The exit code (0 success, 1 violations or leftovers found, 2 usage error or could not
        check, 3 any other error: ``secure-bloom --help`` lists them).

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A problem with a file or an option, as one line naming it (its exit code from its kind).
    """
    from ..parquet import attach_bloom_filters

    if not args.bloom:
        raise CliError("attach: give at least one --bloom PATH[:ndv=N][:fpp=P] (see 'secure-bloom attach --help')",
                       ErrorKind.USAGE_ERROR)
    from ..parquet.write.options import ColumnSpec

    specs = list(args.bloom)  # (path, ndv, fpp, sizing, num_bytes), parsed with the options (parse_bloom_spec)
    keys = key_access_from_args(args)
    from ..parquet.file.sources import is_store_uri

    src, dst = display_uri(args.src), display_uri(args.dst)
    for given, shown in ((args.src, src), (args.dst, dst)):
        if is_store_uri(given):
            raise CliError(f"{shown}: attach works on local files only (attach a local copy, then upload it)",
                           ErrorKind.USAGE_ERROR)
    if not os.path.isfile(args.src):
        if os.path.isdir(args.src):
            raise CliError(f"{src}: is a directory, expected a Parquet file", ErrorKind.IS_A_DIRECTORY)
        raise CliError(f"{src}: No such file or directory", ErrorKind.FILE_NOT_FOUND)
    if os.path.lexists(args.dst) and not args.overwrite:  # a dangling symlink exists too
        raise CliError(f"{dst}: already exists (use --overwrite to replace it)", ErrorKind.FILE_EXISTS)
    in_place = os.path.exists(args.dst) and os.path.samefile(args.src, args.dst)
    columns: list[Any] = list(dict.fromkeys(path for path, *_ in specs))
    # per-column options are keyed by the dotted path, as the report names the columns
    dotted = {path: path if isinstance(path, str) else ".".join(path) for path in columns}
    ndv = {dotted[path]: n for path, n, *_ in specs if n is not None}
    per_column_fpp = {dotted[path]: p for path, _, p, *_ in specs if p is not None}
    sized = {path: (sizing, num_bytes) for path, _, _, sizing, num_bytes in specs
             if sizing is not None or num_bytes is not None}
    columns = [ColumnSpec(path, sizing=sized[path][0], num_bytes=sized[path][1]) if path in sized else path
               for path in columns]
    fpp: float | dict[str, float] = args.fpp
    if per_column_fpp:
        fpp = {name: per_column_fpp.get(name, args.fpp) for name in dotted.values()}
    with _about(args.src), progress_bar("attach", "chunks", {"filters": "chunks", "copy": "B"}) as bar:
        progress = None if bar is None else (lambda stage, done, total: bar(done, total, stage))
        report = attach_bloom_filters(args.src, args.dst, columns, keys, fpp=fpp, ndv=ndv or None,
                                      bloom_filter_max_bytes=args.bloom_filter_max_bytes, overwrite=args.overwrite and not in_place,
                                      in_place=in_place, progress=progress)
    if args.json:
        print_json(render.jsonable(report), out, "attach")
    else:
        out.write(render.attach_summary(args.src, args.dst, list(dotted.values()), report))
    return EXIT_OK


def _encryption_config(args: argparse.Namespace) -> Any:
    import pyarrow.parquet.encryption as pe

    column_keys: dict[str, list[str]] = {}
    for spec in args.column_keys:
        key_id, sep, columns = spec.partition(":")
        names = [c.strip() for c in columns.split(",") if c.strip()]
        if not sep or not key_id.strip() or not names:
            raise CliError(f"--column-key {spec!r}: expected ID:COL[,COL...]", ErrorKind.USAGE_ERROR)
        column_keys.setdefault(key_id.strip(), []).extend(names)
    if not column_keys and not args.uniform:
        raise CliError("encrypt: give --column-key ID:COL,... (or --uniform to encrypt every column with the "
                       "footer key)", ErrorKind.USAGE_ERROR)
    if column_keys and args.uniform:
        raise CliError("encrypt: --uniform and --column-key exclude each other", ErrorKind.USAGE_ERROR)
    keys: dict[str, Any] = {"uniform_encryption": True} if args.uniform else {"column_keys": column_keys}
    return pe.EncryptionConfiguration(
        footer_key=args.footer_key, plaintext_footer=args.plaintext_footer, encryption_algorithm=args.algorithm,
        double_wrapping=not args.single_wrapping, internal_key_material=not args.external_key_material, **keys)


def _relative(file: str, root: str) -> str:
    """The '/'-separated path of ``file`` (found under ``root``) below ``root``; URIs without options."""
    from ..parquet.file.sources import is_store_uri

    if is_store_uri(root):
        return file.partition("?")[0][len(root.partition("?")[0].rstrip("/")):].lstrip("/")
    return os.path.relpath(os.path.abspath(file), os.path.abspath(root)).replace(os.sep, "/")


def _destination_kind(dst: str) -> str:
    """"file", "directory" or "" (nothing there) for a local path or an object-store URI (asked
    of the store: a URI never touches the local disk)."""
    from ..parquet.file.sources import is_store_uri, locate, storage_error

    if not is_store_uri(dst):
        return "directory" if os.path.isdir(dst) else "file" if os.path.lexists(dst) else ""
    import pyarrow.fs as pafs

    filesystem, path = locate(dst)
    try:
        info = filesystem.get_file_info(path)
    except OSError as e:
        raise storage_error(e, display_uri(dst)) from None
    return {pafs.FileType.File: "file", pafs.FileType.Directory: "directory"}.get(info.type, "")


def _encrypt_pairs(src: str, dst: str, overwrite: bool) -> tuple[list[tuple[str, str]], bool]:
    """(source file, destination file) for a file or each Parquet file under a directory (or
    prefix), and whether SRC is a directory. Destinations on an object store are URIs under
    ``dst`` with its options (:func:`~secure_bloom.parquet.file.sources.join_uri`)."""
    from ..parquet.file.sources import join_uri

    files, is_dir = _files_of(src)
    kind = _destination_kind(dst)
    if not is_dir:
        if kind == "directory":
            raise CliError(f"{display_uri(dst)}: is a directory, expected the file to write", ErrorKind.IS_A_DIRECTORY)
        pairs = [(src, dst)]
    else:
        if kind == "file":
            raise CliError(f"{display_uri(dst)}: is not a directory (SRC is one)", ErrorKind.NOT_A_DIRECTORY)
        pairs = [(f, join_uri(dst, _relative(f, src))) for f in files]
    existing = [d for _, d in pairs if (kind == "file" if d == dst else _destination_kind(d))]
    if existing and not overwrite:
        raise CliError(f"{display_uri(existing[0])}: already exists (use --overwrite to replace it)",
                       ErrorKind.FILE_EXISTS)
    return pairs, is_dir


def cmd_encrypt(args: argparse.Namespace, out: TextIO) -> int:
    """``encrypt``: an encrypted copy of Parquet files with encrypted Bloom filters.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    out : TextIO
        Where the report goes (stdout).

    Returns
    -------
    int
        The exit code (0 success, 1 violations or leftovers found, 2 usage error or could not
        check, 3 any other error: ``secure-bloom --help`` lists them).

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A problem with a file or an option, as one line naming it (its exit code from its kind).
    """
    from ..parquet import ParquetWriter
    from ..parquet.file.arrow_source import open_arrow_file
    from ..parquet.file.sources import is_store_uri

    specs = list(args.bloom)  # (path, ndv, fpp, sizing, num_bytes), parsed with the options (parse_bloom_spec)
    bloom: dict[str, dict[str, Any]] = {}
    for path, ndv, fpp, sizing, num_bytes in specs:
        name = path if isinstance(path, str) else ".".join(path)
        bloom[name] = {"fpp": fpp if fpp is not None else args.fpp, **({"ndv": ndv} if ndv is not None else {}),
                       **({"sizing": sizing} if sizing is not None else {}),
                       **({"num_bytes": num_bytes} if num_bytes is not None else {})}
    keys = key_access_from_args(args)
    if keys.kms is None:
        raise CliError("encrypt: needs a KMS to wrap the data keys: --key-list-file FILE, $SECURE_BLOOM_KEY_LIST_FILE "
                       "or --kms-url URL", ErrorKind.USAGE_ERROR)
    config = _encryption_config(args)
    with _about(display_uri(args.dst)):
        pairs, is_dir = _encrypt_pairs(args.src, args.dst, args.overwrite)
    reports = []
    with progress_bar("encrypt", "row groups") as bar:
        for src, dst in pairs:
            shown = display_uri(src)
            with _about(shown):
                checkpoint()
                source = open_arrow_file(src, keys)  # an encrypted source is decrypted with the key options
                if source.metadata is not None and source.metadata.num_row_groups and bar is not None:
                    bar(0, source.metadata.num_row_groups, os.path.basename(shown))
                remote = is_store_uri(dst)
                if not remote:
                    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
                with source, ParquetWriter(dst, source.schema_arrow, encryption=config, kms=keys.kms,
                                           bloom_filter_options=bloom, bloom_filter_max_bytes=args.bloom_filter_max_bytes,
                                           compression=args.compression) as writer:
                    for i in range(source.num_row_groups):
                        checkpoint()
                        part = source.read_row_group(i)
                        writer.write_table(part, row_group_size=max(part.num_rows, 1))
                        if bar is not None:
                            bar(i + 1, source.num_row_groups, os.path.basename(shown))
                    checkpoint()
                    # a local file is linked in under the deadline's lock; an upload cannot be
                    # (it may wait on the store): it completes whole or not at all
                    report = writer.close() if remote else publish(writer.close)
                reports.append(report)
    if args.json:
        docs = [r.to_dict() for r in reports]
        print_json(render.jsonable(docs), out, "encrypt")
    else:
        for (src, _), report in zip(pairs, reports):
            out.write(render.encrypt_summary(display_uri(src), report))
    return EXIT_OK


def cmd_audit(args: argparse.Namespace, out: TextIO) -> int:
    """``audit``: every file checked against ``--sensitive`` names and / or a ``--policy``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    out : TextIO
        Where the report goes (stdout).

    Returns
    -------
    int
        The exit code (0 success, 1 violations or leftovers found, 2 usage error or could not
        check, 3 any other error: ``secure-bloom --help`` lists them).

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A problem with a file or an option, as one line naming it (its exit code from its kind).
    """
    from ..parquet.audit.auditor import audit
    from ..parquet.audit.policy import load_policy

    sensitive = [c.strip() for group in args.sensitive for c in group.split(",") if c.strip()]
    if not sensitive and args.policy is None:
        raise CliError("audit: give --sensitive COLUMNS or --policy FILE", ErrorKind.USAGE_ERROR)
    policy = None
    if args.policy is not None:
        try:
            policy = load_policy(args.policy)
        except SecureBloomError as e:
            raise CliError(visible(str(e)), error_kind(e)) from e
    keys = key_access_from_args(args)
    _local_output("--junit-xml", args.junit_xml)
    with progress_bar("audit", "files") as bar:
        progress = None if bar is None else (lambda done, total, path: bar(done, total))
        report = audit(args.paths, sensitive, keys=keys, allow_footer_key=args.allow_footer_key,
                       progress=progress, policy=policy, hide_filter_sizes=args.hide_filter_sizes,
                       assumed_fpp=args.assume_fpp)
    if args.junit_xml:
        xml = report.to_junit_xml()

        def write_junit() -> None:
            with open(args.junit_xml, "w", encoding="utf-8", errors="backslashreplace") as f:
                f.write(xml)

        try:
            publish(write_junit)
        except OSError as e:
            raise CliError(describe(args.junit_xml, e), ErrorKind.IO_ERROR) from e  # the audit itself failed: 3
    if args.json:
        print_json(json.loads(report.to_json()), out, "audit")
    else:
        out.write(render.audit_text(report))
    return int(report.exit_code)


# --- query (issue 12: read by key) ---


def cmd_query(args: argparse.Namespace, out: TextIO) -> int:
    """``query``: the rows matching ``--where``, pruned by statistics and Bloom filters.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    out : TextIO
        Where the report goes (stdout).

    Returns
    -------
    int
        The exit code (0 success, 1 violations or leftovers found, 2 usage error or could not
        check, 3 any other error: ``secure-bloom --help`` lists them).

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A problem with a file or an option, as one line naming it (its exit code from its kind).
    """
    import sys

    from ..parquet.read.api import open_dataset, scan
    from ..parquet.file.reader import ParquetBloomReader
    from ..parquet.read.where import conditions_expression, parse_condition

    args.format = _query_format(args)
    keys = key_access_from_args(args)
    _local_output("--output", args.output)
    if args.format == "parquet" and not args.output:
        raise UsageError("--format parquet needs --output FILE")
    columns = [c.strip() for group in args.columns or [] for c in group.split(",") if c.strip()] or None
    shown = display_uri(args.file)
    with _about(shown):
        conditions = [parse_condition(text) for text in args.conditions]
        whole, fs = open_dataset(args.file, keys=keys)  # the schema and the first file's columns
        first = next(iter(whole.get_fragments()), None)
        if first is None:
            raise CliError(f"{shown}: no Parquet files", ErrorKind.NO_PARQUET_FILES)
        with ParquetBloomReader(first.path, keys, filesystem=fs) as reader:
            file_columns = reader.columns
        expression = conditions_expression(conditions, file_columns, whole.schema, timezone=args.timezone)
        pruned = scan(args.file, filters=expression, keys=keys, count_reads=True, columns=columns)
        table = pruned.to_table(columns)
        encryption = _output_protection(args, keys, table, [f.path for f in pruned.dataset.get_fragments()]
                                        or [first.path], fs) if args.output else None
    report = pruned.report
    explain_to = out if args.format == "table" and not args.output else sys.stderr
    checkpoint()  # an --output file is not begun once the deadline has passed
    _write_rows(table, args, out, report.to_dict() if args.explain else None, encryption, keys)
    if args.explain:
        if args.format == "json" and not args.output:
            pass  # in the JSON document
        else:
            explain_to.write(("\n" if explain_to is out else "") + report.summary() + "\n")
    return EXIT_OK


def _query_format(args: argparse.Namespace) -> str:
    """query's output format: --format, or json for --json (as every other command), else table."""
    if args.json:
        if args.format not in (None, "json"):
            raise UsageError(f"--json and --format {args.format} exclude each other (--json is --format json)")
        return "json"
    return args.format or "table"


def _output_protection(args: argparse.Namespace, keys: Any, table: Any, paths: list[str], fs: Any) -> Any:
    """How ``--output`` keeps decrypted values protected: the ``EncryptionConfiguration`` of a
    Parquet output under the source's master keys, or None (no encrypted column among the rows,
    or --plaintext-output, said on stderr); a refusal (exit 2) otherwise."""
    import sys

    from ..parquet.file.protection import source_protection
    from ..parquet.file.reader import ParquetBloomReader

    with contextlib.ExitStack() as stack:
        protection = source_protection(stack.enter_context(ParquetBloomReader(p, keys, filesystem=fs)) for p in paths)
    names = table.column_names
    encrypted = protection.encrypted_columns(names)
    if not encrypted:
        return None
    shown = ", ".join(encrypted)
    if args.plaintext_output:
        sys.stderr.write(f"{PROG}: warning: --plaintext-output: {args.output} holds decrypted values of the "
                         f"encrypted column(s) {shown} in plaintext\n")
        return None
    if args.format != "parquet":
        raise CliError(f"--output {args.output}: the rows hold decrypted values of the encrypted column(s) {shown}, and "
                       f"{args.format} cannot be encrypted: nothing was written. Write --format parquet (encrypted "
                       "under the same master keys), print to standard output, or pass --plaintext-output",
                       ErrorKind.USAGE_ERROR)
    if keys.kms is None:
        raise CliError(f"--output {args.output}: the rows hold decrypted values of the encrypted column(s) {shown}; "
                       "encrypting the output needs the KMS their keys are wrapped with (--key-list-file or "
                       "--kms-url): nothing was written (--plaintext-output writes it in plaintext)",
                       ErrorKind.USAGE_ERROR)
    try:
        config = protection.encryption(names)
    except SecureBloomError as e:
        raise CliError(f"--output {args.output}: {e}: nothing was written (--plaintext-output writes it in "
                       "plaintext)", ErrorKind.USAGE_ERROR) from e
    sys.stderr.write(f"{PROG}: {args.output}: encrypted under the master keys of the files read "
                     f"({protection.describe(names)})\n")
    return config


def _write_rows(table: Any, args: argparse.Namespace, out: TextIO, report: dict[str, Any] | None,
                encryption: Any = None, keys: Any = None) -> None:
    if args.format == "parquet":
        import pyarrow.parquet as pq

        if encryption is None:
            pq.write_table(table, args.output)
            return
        from ..parquet import write_table

        write_table(table, args.output, encryption=encryption, kms=keys.kms)
        return
    if args.format == "csv":
        import io

        import pyarrow.csv as pcsv

        buffer = io.BytesIO()
        pcsv.write_csv(table, buffer)
        text = buffer.getvalue().decode("utf-8")
    elif args.format == "json":
        rows = render.jsonable(table.to_pylist())
        doc = envelope("query", {"rows": rows, "report": report})
        text = json_safe(json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False)) + "\n"
    else:
        shown = table if args.limit is None else table.slice(0, args.limit)
        text = render.table(table.column_names, [[visible(str(v)) for v in row.values()] for row in shown.to_pylist()])
        text += f"\n({table.num_rows} row{'s' if table.num_rows != 1 else ''})\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        out.write(text)


def cmd_doctor(args: argparse.Namespace, out: TextIO) -> int:
    """Leftovers of interrupted attaches: listed (exit 1 if any), or with --fix recovered.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    out : TextIO
        Where the report goes (stdout).

    Returns
    -------
    int
        The exit code (0 success, 1 violations or leftovers found, 2 usage error or could not
        check, 3 any other error: ``secure-bloom --help`` lists them).

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A problem with a file or an option, as one line naming it (its exit code from its kind).
    """
    from ..parquet.file.leftovers import clean_leftovers, find_leftovers

    directories: list[str] = []
    for path in args.paths:
        if not os.path.exists(path):
            raise CliError(f"{display_uri(path)}: No such file or directory", ErrorKind.FILE_NOT_FOUND)
        directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        if directory not in directories:
            directories.append(directory)
    found = [leftover for d in directories for leftover in find_leftovers(d)]
    fixed = [item for d in directories for item in clean_leftovers(d)] if args.fix else []
    if args.json:
        print_json({"leftovers": [f.to_dict() for f in found],
                    "fixed": [{**f.to_dict(), "action": action} for f, action in fixed]}, out, "doctor")
    else:
        out.write(render.doctor_text(found, fixed, args.fix))
    remaining = [left for d in directories for left in find_leftovers(d)] if args.fix else found
    return 1 if remaining else EXIT_OK


def cmd_dev_keys(args: argparse.Namespace, out: TextIO) -> int:
    """``dev-keys``: write a throwaway development key list (no key bytes are printed).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    out : TextIO
        Where the report goes (stdout).

    Returns
    -------
    int
        The exit code (0 success, 1 violations or leftovers found, 2 usage error or could not
        check, 3 any other error: ``secure-bloom --help`` lists them).

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A problem with a file or an option, as one line naming it (its exit code from its kind).
    """
    from ..kms.key_list import DEVELOPMENT_KEY_IDS, write_development_key_list

    ids = tuple(args.key_ids) or DEVELOPMENT_KEY_IDS
    try:
        path = write_development_key_list(args.path, ids)
    except SecureBloomError as e:
        raise CliError(visible(str(e)), error_kind(e)) from e
    except OSError as e:
        raise CliError(describe(args.path, e), ErrorKind.IO_ERROR) from e
    out.write(f"wrote throwaway development keys ({', '.join(ids)}) to {visible(str(path))}: never for real data\n")
    return EXIT_OK


#: The commands, by name.
COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "inspect": cmd_inspect, "probe": cmd_probe, "attach": cmd_attach, "audit": cmd_audit, "query": cmd_query,
    "encrypt": cmd_encrypt, "doctor": cmd_doctor,
    "dev-keys": cmd_dev_keys}


def run_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run the parsed command on ``out``; paths it could not check (under a directory) make it
    fail after its output, with at least EXIT_USAGE. With a deadline
    (:func:`~secure_bloom.cli.deadline.deadline_of`) the command runs on a worker thread and its
    report reaches ``out`` only if it finished in time (:mod:`secure_bloom.cli.deadline`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    out : TextIO
        Where the report goes (stdout).

    Returns
    -------
    int
        The exit code (0 success, 1 violations or leftovers found, 2 usage error or could not
        check, 3 any other error: ``secure-bloom --help`` lists them).

    Raises
    ------
    secure_bloom.cli.exits.CliError
        A problem with a file or an option, as one line naming it (its exit code from its kind).
    """
    seconds = deadline_of(args)
    if seconds is None:
        return _run_command(args, out)
    report = io.StringIO()
    try:
        code = run_within(seconds, lambda: _run_command(args, report))
    except DeadlineExceededError:
        raise  # nothing of a command that ran out of time is shown
    except BaseException:
        out.write(report.getvalue())  # what was reported before the error, as without a deadline
        raise
    out.write(report.getvalue())
    return code


def _run_command(args: argparse.Namespace, out: TextIO) -> int:
    unchecked: list[tuple[ErrorKind, str]] = []
    token = _UNCHECKED.set(unchecked)
    try:
        code = COMMANDS[args.command](args, out)
    finally:
        _UNCHECKED.reset(token)
    if unchecked:
        out.flush()
        raise CliError(f"could not check {len(unchecked)} path{'s' if len(unchecked) > 1 else ''} (the output "
                       f"above is incomplete): {'; '.join(visible(text) for _, text in unchecked)}",
                       unchecked[0][0], code=max(code, EXIT_USAGE))
    return code
