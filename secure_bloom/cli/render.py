"""Human-readable output of the ``secure-bloom`` commands: compact tables and one-line summaries.

Pure functions from the library's result values (``describe()`` dicts, ``ProbeResult``,
``AuditReport``) to text; no I/O. Names from files (file, column, key ids) and values pass through
:func:`~secure_bloom.display.visible`: no control character or terminal escape is printed raw.
JSON output does not pass through here except :func:`probe_json`, which labels the answers with
the values exactly as the user typed them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..display import visible
from ..types import ChunkEncryption, FilterForm, Verdict

__all__ = ["table", "jsonable", "inspect_table", "probe_json", "probe_table", "probe_summary",
           "probe_files_table", "attach_summary", "audit_text"]

def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = "-" if value is None else visible(str(value))
    return " ".join(text.split())


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ") -> str:
    """Left-aligned columns separated by two spaces; cells are flattened to one line.

    Parameters
    ----------
    headers : sequence of str
        Column titles.
    rows : sequence of sequences
        The cells.
    indent : str, default two spaces
        Prefix of every line.

    Returns
    -------
    str
        The table, lines ending in a newline.

    Raises
    ------
    None
        Nothing of its own.
    """
    cells = [[_cell(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))
    lines = [indent + "  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    for row in cells:
        lines.append(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(lines) + "\n"


def jsonable(obj: Any) -> Any:
    """Make a ``describe()`` result JSON-serialisable (bytes as hex, tuples as lists).

    Parameters
    ----------
    obj : object
        A ``describe()`` result.

    Returns
    -------
    object
        JSON-serialisable values.

    Raises
    ------
    None
        Nothing of its own.
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).hex()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    return jsonable(to_dict()) if callable(to_dict) else str(obj)


def _yes_no(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# --- inspect ---------------------------------------------------------------------------------


def _footer_line(footer: dict[str, Any]) -> str:
    mode = footer.get("mode")
    parts = [f"footer: {mode}"]
    enc = footer.get("encryption") or {}
    if enc.get("algorithm"):
        parts.append(str(enc["algorithm"]))
    if footer.get("footer_key_id") is not None:
        avail = footer.get("footer_key_available")
        state = "" if avail is None else (" (available)" if avail else " (not available)")
        parts.append(f"footer key {footer['footer_key_id']!r}{state}")
    if footer.get("signature"):
        parts.append(f"signature {footer['signature']}")
    if enc.get("supply_aad_prefix"):
        parts.append("AAD prefix withheld (--aad-prefix)")
    return ", ".join(parts)


def _encryption_label(chunk: dict[str, Any]) -> str:
    labels: dict[str, str] = {ChunkEncryption.PLAINTEXT: "no", ChunkEncryption.FOOTER_KEY: "footer key",
                              ChunkEncryption.COLUMN_KEY: "column key"}
    return labels.get(
        str(chunk.get("encryption")), "yes" if chunk.get("encrypted") else "no")


def inspect_table(desc: dict[str, Any]) -> str:
    """``inspect`` without ``--json``: file facts, the columns, then one row per chunk.

    Parameters
    ----------
    desc : dict
        What :meth:`~secure_bloom.parquet.file.reader.ParquetBloomReader.describe` returns.

    Returns
    -------
    str
        The text.

    Raises
    ------
    None
        Nothing of its own.
    """
    out = [f"file: {visible(str(desc.get('file')))} ({desc.get('file_size')} bytes, {desc.get('num_rows')} rows, "
           f"{_plural(int(desc.get('num_row_groups') or 0), 'row group')})\n",
           _footer_line(desc.get("footer") or {}) + "\n"]
    if desc.get("created_by"):
        out.append(f"created by: {visible(str(desc['created_by']))}\n")
    columns = desc.get("columns") or []
    out.append("\ncolumns:\n")
    out.append(table(["#", "column", "type", "encrypted", "key id"],
                     [[c.get("ordinal"), c.get("path"), c.get("type"), _yes_no(c.get("encrypted")),
                       c.get("key_id")] for c in columns]))
    rows = []
    problems = []
    with_filter = 0
    for rg in desc.get("row_groups") or []:
        for ch in rg.get("chunks") or []:
            with_filter += bool(ch.get("has_bloom_filter"))
            rows.append([rg.get("row_group"), ch.get("column"), _yes_no(ch.get("has_bloom_filter")),
                         _stored(ch), _encryption_label(ch), ch.get("key_id"), ch.get("filter_num_bytes"),
                         ch.get("bloom_filter_offset"), ch.get("bloom_filter_length")])
            if ch.get("filter_problem"):
                problems.append(visible(f"row group {rg.get('row_group')}, column {ch.get('column')!r}: "
                                        f"{ch['filter_problem']}"))
    out.append("\nBloom filters:\n")
    out.append(table(["rg", "column", "filter", "stored", "column encryption", "key id", "bitset bytes",
                      "offset", "length"], rows))
    unknown = sum(1 for r in rows if r[2] == "?")
    note = f"{with_filter} of {len(rows)} column chunks have a Bloom filter"
    if unknown:
        note += f"; {unknown} unknown (their metadata is encrypted with a key that was not given)"
    out.append(f"\n{note}\n")
    if problems:
        out.append("\nproblems:\n" + "".join(f"  {p}\n" for p in problems))
    return "".join(out)


def _stored(chunk: dict[str, Any]) -> str:
    """How the filter is stored: ``encrypted (verified)``, ``PLAINTEXT``, ``plaintext``, ..."""
    form = chunk.get("filter_storage")
    if form is None:
        return "-"
    if form == FilterForm.PLAINTEXT and chunk.get("encrypted"):
        return "PLAINTEXT (leak)"
    if chunk.get("filter_verified"):
        return f"{form} (verified)" if form == FilterForm.ENCRYPTED else str(form)
    return str(form)


# --- probe -----------------------------------------------------------------------------------


def probe_json(file: str, column: str, texts: Sequence[str], result: Any) -> dict[str, Any]:
    """The probe JSON: ``ProbeResult.to_dict()`` with each answer labelled by the value as typed.

    One answer per ``--value``, in order, duplicates kept::

        {"file", "column", "values": [V, ...],
         "row_groups": [{"row_group", "has_bloom_filter", "encrypted",
                         "values": [{"value": V, "answer": "maybe" | "absent"}, ...]}]}

    Parameters
    ----------
    file : str
        The file, as shown.
    column : str
        The column.
    texts : sequence of str
        The ``--value`` texts.
    result : ProbeResult
        The probe.

    Returns
    -------
    dict
        The document.

    Raises
    ------
    None
        Nothing of its own.
    """
    groups = []
    for rg in result.row_groups:
        answers = [answer for _, answer in rg.values]
        if len(answers) != len(texts):
            raise ValueError(f"probe returned {len(answers)} answers for {len(texts)} values")
        groups.append({"row_group": int(rg.row_group), "has_bloom_filter": bool(rg.has_bloom_filter),
                       "encrypted": bool(rg.encrypted),
                       "values": [{"value": text, "answer": answer} for text, answer in zip(texts, answers)]})
    return {"file": file, "column": column, "values": list(texts), "row_groups": groups}


def probe_by_value_json(results: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The ``--json --by-value`` probe document of ``(file, ProbeResult)`` pairs (one column,
    the same values in each): per value, in order, the files (by index into ``files``) and row
    groups that may hold it; a value no file may hold has ``"maybe": []``::

        {"column": C, "files": [{"file": F, "num_row_groups": N}, ...],
         "values": [{"value": V, "maybe": [{"file": INDEX, "row_groups": [0, 3]}, ...]}, ...]}
    """
    labels = results[0][1].labels if results else ()
    maybe: dict[int, list[dict[str, Any]]] = {}  # only values some file may hold (few, in a selective probe)
    for index, (_, result) in enumerate(results):
        if result.labels != labels:
            raise ValueError("every file must be probed for the same values")
        last = -1
        rgs: list[int] = []
        for value, rg in zip(*result.maybe_pairs()):
            if value != last:
                rgs = []
                maybe.setdefault(value, []).append({"file": index, "row_groups": rgs})
                last = value
            rgs.append(rg)
    nowhere: list[dict[str, Any]] = []
    return {"column": results[0][1].column if results else None,
            "files": [{"file": file, "num_row_groups": result.num_row_groups} for file, result in results],
            "values": [{"value": label, "maybe": maybe.get(i, nowhere)} for i, label in enumerate(labels)]}


def _maybe_groups(doc: dict[str, Any], index: int) -> list[int]:
    """Row groups of a probe document where the ``index``-th value may be."""
    return [g["row_group"] for g in doc["row_groups"] if g["values"][index]["answer"] == Verdict.MAYBE]


def probe_summary(doc: dict[str, Any]) -> list[str]:
    """``value X: may be in row groups 0, 3; absent from 6 of 8`` for each value.

    Parameters
    ----------
    doc : dict
        What :func:`probe_json` returns.

    Returns
    -------
    list of str
        One line per value.

    Raises
    ------
    None
        Nothing of its own.
    """
    from ..parquet.audit.report import format_row_groups  # lazily: keeps --help free of pyarrow

    n = len(doc["row_groups"])
    lines = []
    for i, text in enumerate(doc["values"]):
        maybe = _maybe_groups(doc, i)
        absent = n - len(maybe)
        if not maybe:
            lines.append(f"value {text}: may be in no row group; absent from {absent} of {n}")
        else:
            label = "row group" if len(maybe) == 1 else "row groups"
            lines.append(f"value {text}: may be in {label} {format_row_groups(maybe)}; absent from {absent} of {n}")
    return lines


def probe_table(doc: dict[str, Any]) -> str:
    """``probe`` without ``--json``: one row per row group, one column per value.

    Parameters
    ----------
    doc : dict
        What :func:`probe_json` returns.

    Returns
    -------
    str
        The text.

    Raises
    ------
    None
        Nothing of its own.
    """
    groups = doc["row_groups"]
    out = [f"file: {doc['file']}\ncolumn: {doc['column']}\n\n"]
    rows = [[g["row_group"], "yes" if g["has_bloom_filter"] else "no (maybe)",
             "yes" if g["encrypted"] else "no", *(v["answer"] for v in g["values"])] for g in groups]
    out.append(table(["rg", "filter", "encrypted", *doc["values"]], rows))
    if not groups:
        out.append("  (the file has no row groups)\n")
    out.append("\n" + "".join(line + "\n" for line in probe_summary(doc)))
    missing = sum(1 for g in groups if not g["has_bloom_filter"])
    if missing:
        out.append(f"{_plural(missing, 'row group')} without a Bloom filter answer 'maybe'.\n")
    return "".join(out)


def probe_files_table(docs: Sequence[dict[str, Any]], texts: Sequence[str]) -> str:
    """Probe of a directory: one line per file and value with the row groups that may hold it,
    then per value how many files and row groups can be skipped.

    Parameters
    ----------
    docs : sequence of dict
        One :func:`probe_json` document per file.
    texts : sequence of str
        The ``--value`` texts.

    Returns
    -------
    str
        The text.

    Raises
    ------
    None
        Nothing of its own.
    """
    from ..parquet.audit.report import format_row_groups

    rows = []
    for doc in docs:
        for i, text in enumerate(texts):
            maybe = _maybe_groups(doc, i)
            rows.append([doc["file"], text, format_row_groups(maybe) if maybe else "none", len(doc["row_groups"])])
    out = [table(["file", "value", "may be in row groups", "of"], rows), "\n"]
    total = sum(len(d["row_groups"]) for d in docs)
    for i, text in enumerate(texts):
        files = sum(1 for d in docs if _maybe_groups(d, i))
        hits = sum(len(_maybe_groups(d, i)) for d in docs)
        out.append(f"value {text}: may be in {files} of {len(docs)} files ({hits} of {total} row groups); "
                   f"absent from {total - hits} of {total} row groups\n")
    return "".join(out)


# --- attach ----------------------------------------------------------------------------------


def attach_summary(src: str, dst: str, columns: Sequence[str], result: Any) -> str:
    """One line per filter written when the attach result says, else one summary line.

    Parameters
    ----------
    src : str
        The source.
    dst : str
        The file written.
    columns : sequence of str
        The ``--bloom`` columns.
    result : AttachReport
        The report.

    Returns
    -------
    str
        The text.

    Raises
    ------
    None
        Nothing of its own.
    """
    lines = [f"wrote {dst} from {src}: Bloom filters for {', '.join(columns)}\n"]
    to_dict = getattr(result, "to_dict", None)
    info = to_dict() if callable(to_dict) else result if isinstance(result, dict) else None
    filters = info.get("filters") if isinstance(info, dict) else None
    if isinstance(filters, list) and filters and all(isinstance(f, dict) for f in filters):
        headers = [k for k in ("row_group", "column", "encrypted", "key_id", "num_bytes", "ndv", "expected_fpp")
                   if any(k in f for f in filters)]
        rows = [[f"{f[h]:.3%}" if h == "expected_fpp" else f.get(h) for h in headers] for f in filters]
        lines.append(table(headers, rows))
        capped = [f for f in filters if f.get("capped")]
        if capped:
            lines.append(f"warning: {len(capped)} filter(s) hit the size cap (--bloom-filter-max-bytes) and give a higher "
                         "false-positive rate than requested; see expected_fpp\n")
    return "".join(lines)


def encrypt_summary(src: str, report: Any) -> str:
    """What ``encrypt`` wrote: rows, row groups, footer mode, then the filters as attach shows them."""
    columns = list(dict.fromkeys(f.column for f in report.filters))
    head = (f"wrote {visible(report.path)} from {visible(src)}: {_plural(report.num_rows, 'row')} in "
            f"{_plural(report.row_groups, 'row group')}, {report.footer_mode} footer\n")
    if not columns:
        return head
    return head + attach_summary(src, report.path, columns, report).split("\n", 1)[1]


# --- audit -----------------------------------------------------------------------------------


def doctor_text(found: Any, fixed: Any, fix: bool) -> str:
    """``secure-bloom doctor``: each leftover, and what --fix did with it."""
    if not found:
        return "no leftovers of an interrupted attach\n"
    out = [f"{visible(f.notice())}\n" for f in found]
    if fix:
        out.append("\n")
        out += [f"FIXED  {visible(f.path)}: {visible(action)}\n" for f, action in fixed]
    return "".join(out)


def audit_text(report: Any) -> str:
    """Per file: PASS / FAIL / COULD NOT CHECK with the reasons, then a summary and the verdict.

    Parameters
    ----------
    report : AuditReport
        The audit.

    Returns
    -------
    str
        The text.

    Raises
    ------
    None
        Nothing of its own.
    """
    what = (f"policy {visible(report.policy.source or '(in code)')}: rules for"
            if report.policy is not None else "sensitive columns:")
    out = [f"audit of {_plural(len(report.files), 'file')}; {what} "
           f"{visible(', '.join(report.sensitive_columns))}"
           f"{' (filters under the footer key allowed)' if report.allow_footer_key else ''}\n\n"]
    labels = {"pass": "PASS", "violation": "FAIL", "could_not_check": "COULD NOT CHECK"}
    for fr in report.files:
        crypto = "" if fr.footer_mode is None else f"  [{fr.footer_mode} footer{', ' + fr.algorithm if fr.algorithm else ''}]"
        out.append(f"{labels.get(fr.status.value, fr.status.value.upper())}  {visible(fr.file)}{crypto}\n")
        if fr.error is not None:
            out.append(f"    [{fr.error_kind}] {visible(fr.error)}\n")
        for col in fr.columns:
            for f in col.findings:
                out.append(f"    {f.code.value} ({f.severity.value}): {visible(f.message)}\n")
            for reason in col.unchecked:
                out.append(f"    COULD NOT CHECK: {visible(reason)}\n")
            for sizes in col.filter_sizes:
                out.append(f"    filter sizes of {visible(repr(sizes.leaf))}: {visible(sizes.summary)}\n")
    for path, reason in report.skipped:
        out.append(f"SKIPPED  {visible(path)}: {reason}\n")
    for notice in report.notices:
        out.append(f"NOTICE  {visible(notice)}\n")
    unknown = report.unknown_columns
    for column in unknown:
        out.append(f"UNKNOWN COLUMN  {visible(column)}: in none of the files read (misspelt?)\n")
    d = report.to_dict()["summary"]
    out.append(f"\nsummary: {d['compliant']} compliant, {d['with_violations']} with violations, "
               f"{d['could_not_check']} could not be checked, {d['skipped']} skipped (not Parquet); "
               f"{_plural(d['violations'], 'violation')}, {_plural(d['warnings'], 'warning')}\n")
    if report.is_compliant:
        verdict = "COMPLIANT: no Bloom filter leaks a sensitive column"
    elif report.violations:
        verdict = "NOT COMPLIANT: violations found"
    elif unknown and not report.could_not_check:
        verdict = f"INCOMPLETE: sensitive column(s) {visible(', '.join(unknown))} in no file (this is not a pass)"
    else:
        verdict = "INCOMPLETE: some files could not be checked (this is not a pass)"
    out.append(f"result: {verdict}\n")
    return "".join(out)
