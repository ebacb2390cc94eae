"""Compliance policies: per column, whether it is sensitive, the master keys its data and its
Bloom filter must be encrypted under, and which filters it may have (a TOML file).

A policy is a list of column rules; every rule applies to every leaf it matches (all of them
must hold)::

    version = 1                      # optional; 1 is the only version
    allow_footer_key = false         # accept filters under the footer key (default false)

    [[column]]
    path = "email"                   # a leaf path or a group (covers its leaves); or instead
    # glob = "pii.*"                 # a glob over column paths
    sensitive = true                 # default true: encrypted, no plaintext filter
    master_keys = ["pii_key"]        # the column's data key must be wrapped by one of these
    filter = "allowed"               # "required" | "allowed" (default) | "forbidden"
    filter_master_keys = ["pii_key"] # default: master_keys
    min_fpp = 0.001                  # refuse filters that answer almost exactly (a dictionary)
    max_bitset_bytes = 1048576       # refuse larger bitsets
    hide_filter_sizes = true         # all the column's filters in a file one size (default false):
                                     # sizes are visible without a key and reveal per-row-group
                                     # cardinality (docs/security-model/filter-sizes.md)

Globs (``glob = ...``; ``path`` is always taken literally, as column names may hold ``*``, ``?``
or ``[``): ``*`` matches within one path part, ``**`` across parts, ``?`` one character of a part,
``[abc]`` / ``[!abc]`` one of a set; a glob matching a group covers the group's leaves. An exact
path matches the leaf or group of that name, else case-insensitively (Spark's default).

Master key ids come from the key material (SPEC_NOTES 7): ``masterKeyID`` of internal material,
of the ``_KEY_MATERIAL_FOR_<file>.json`` sidecar for external material, or the plain key id of
explicit-key files. A filter's master key is that of the key it authenticates under (the column
key, or the footer key if a writer used it).

:func:`load_policy` / :func:`parse_policy` validate everything before any file is read and raise
:class:`~secure_bloom.errors.PolicyError` naming the file and line: invalid TOML, unknown keys,
bad globs, wrong types, and contradictory rules (a rule that forbids filters and sets filter
options; a non-sensitive column with master keys; two rules for overlapping columns that demand
a filter and forbid it, or disjoint master keys). Rules that can only be seen to overlap on a
file's columns (two globs) are checked per file: :meth:`Policy.conflict`.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ...errors import PolicyError
from ...spec import MIN_BITSET_BYTES, SPEC_MAX_BITSET_BYTES
from ..file.schema import ColumnInfo

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["FilterRequirement", "ColumnRule", "Policy", "load_policy", "parse_policy", "match_leaves",
           "match_sensitive"]

_TOP_KEYS = ("version", "allow_footer_key", "description", "column")
_RULE_KEYS = ("path", "glob", "sensitive", "master_keys", "filter", "filter_master_keys", "min_fpp",
              "max_bitset_bytes", "hide_filter_sizes", "description")


class FilterRequirement(str, Enum):
    """Whether a column must, may or must not have a Bloom filter (in every row group)."""

    REQUIRED = "required"
    ALLOWED = "allowed"
    FORBIDDEN = "forbidden"


def match_sensitive(name: str, columns: Sequence[ColumnInfo]) -> tuple[ColumnInfo, ...]:
    """Leaves a name covers: exact path, or a group prefix; else case-insensitively.

    Parameters
    ----------
    name : str
        A column path as a user gives it (``--sensitive``, a rule's ``path``): a leaf or a group.
    columns : sequence of ColumnInfo
        The file's leaf columns.

    Returns
    -------
    tuple of ColumnInfo
        The leaves whose path is ``name`` or lies under the group ``name``, compared exactly;
        only when none does, compared case-insensitively (``casefold``). Empty: no such column.

    Raises
    ------
    None
        A name that matches nothing gives an empty tuple.
    """
    def matches(fold: Callable[[str], str]) -> tuple[ColumnInfo, ...]:
        want = fold(name)
        return tuple(c for c in columns if fold(c.path) == want or fold(c.path).startswith(want + "."))

    return matches(lambda s: s) or matches(str.casefold)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex for a column glob; ValueError says what is wrong with a bad one."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                if pattern.startswith("***", i):
                    raise ValueError("'***' is not a glob (use '*' within a part, '**' across parts)")
                out.append(".*")
                i += 2
                continue
            out.append("[^.]*")
        elif c == "?":
            out.append("[^.]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern.startswith("[!", i) else i + 1)
            if end < 0:
                raise ValueError(f"'[' at position {i} is never closed")
            body = pattern[i + 1:end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            if not body:
                raise ValueError(f"empty character set at position {i}")
            out.append(f"[{'^' if negate else ''}{re.escape(body)}]")
            i = end + 1
            continue
        elif c == "]":
            raise ValueError(f"']' at position {i} without '['")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


@dataclass(frozen=True)
class ColumnRule:
    """One ``[[column]]`` rule: ``path`` is a column path, or a glob when ``glob`` is set.
    ``line`` is where it starts in its file (None when built in code).

    ``filter_master_keys`` None means "as ``master_keys``"; ``master_keys`` None means any key.
    ``hide_filter_sizes``: every row group's filter of the column has one size (a row group
    without a filter among others with one fails too).

    Parameters
    ----------
    path : str
        A column path or glob.
    glob : bool, default False
        ``path`` is a glob.
    sensitive : bool, default True
        Encryption is required.
    master_keys : tuple of str, optional
        The master keys the column key may be wrapped by.
    filter : FilterRequirement, default ALLOWED
        Required, allowed or forbidden.
    filter_master_keys : tuple of str, optional
        The master keys a filter's key may be wrapped by.
    min_fpp : float, optional
        The lowest effective false-positive rate a filter may have.
    max_bitset_bytes : int, optional
        The largest filter allowed.
    hide_filter_sizes : bool, default False
        Every row group's filter of the column must have one size (a filter's size tells how
        many distinct values its row group holds; ``docs/security-model/filter-sizes.md``).
    description : str, default ""
        Shown in reports.
    line : int, optional
        Where the rule starts in its file.

    Raises
    ------
    secure_bloom.errors.PolicyError
        Contradictory settings (a forbidden filter with filter options, ``sensitive = false``
        with master keys, a bad glob).
    """

    path: str
    glob: bool = False
    sensitive: bool = True
    master_keys: tuple[str, ...] | None = None
    filter: FilterRequirement = FilterRequirement.ALLOWED
    filter_master_keys: tuple[str, ...] | None = None
    min_fpp: float | None = None
    max_bitset_bytes: int | None = None
    hide_filter_sizes: bool = False
    description: str = ""
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise PolicyError(f"column rule {self.path!r}: {problem}")

    def problem(self) -> str | None:
        """What makes this rule unusable or self-contradictory, or None (the check the
        constructor makes before it raises).

        Returns
        -------
        str or None
            The first problem found, as the :class:`~secure_bloom.errors.PolicyError` message
            says it; None for a usable rule.

        Raises
        ------
        None
            Problems are returned, not raised.
        """
        if not self.path or self.path != self.path.strip():
            return "path must be a non-empty column path without surrounding spaces"
        if self.is_glob:
            try:
                _glob_regex(self.path)
            except ValueError as e:
                return f"bad glob: {e}"
        for name in ("master_keys", "filter_master_keys"):
            keys = getattr(self, name)
            if keys is not None and (not keys or not all(k for k in keys)):
                return f"{name} must list at least one non-empty master key id"
        if not self.sensitive and (self.master_keys is not None or self.filter_master_keys is not None):
            return ("contradictory: a column with sensitive = false has no encryption requirement, so it cannot "
                    "name master keys (set sensitive = true, or drop master_keys / filter_master_keys)")
        if self.filter is FilterRequirement.FORBIDDEN:
            extra = [n for n in ("filter_master_keys", "min_fpp", "max_bitset_bytes") if getattr(self, n) is not None]
            extra += ["hide_filter_sizes"] if self.hide_filter_sizes else []
            if extra:
                return f"contradictory: filter = \"forbidden\" with {', '.join(extra)} (options of a filter it forbids)"
        if self.min_fpp is not None and not 0.0 < self.min_fpp < 1.0:
            return f"min_fpp must be in (0, 1), got {self.min_fpp!r}"
        if self.max_bitset_bytes is not None and not MIN_BITSET_BYTES <= self.max_bitset_bytes <= SPEC_MAX_BITSET_BYTES:
            return (f"max_bitset_bytes must be from {MIN_BITSET_BYTES} to {SPEC_MAX_BITSET_BYTES}, "
                    f"got {self.max_bitset_bytes}")
        return None

    @property
    def is_glob(self) -> bool:
        """True if the rule names columns by a glob rather than a path."""
        return self.glob

    @property
    def required_filter_keys(self) -> tuple[str, ...] | None:
        """The master keys a filter may be encrypted under (None: any)."""
        return self.filter_master_keys if self.filter_master_keys is not None else self.master_keys

    @property
    def where(self) -> str:
        """The rule as messages name it: its path and its line in the policy file."""
        return f"rule {self.path!r}" + (f" (line {self.line})" if self.line is not None else "")

    def matches(self, columns: Sequence[ColumnInfo]) -> tuple[ColumnInfo, ...]:
        """The leaves this rule covers among ``columns``.

        Parameters
        ----------
        columns : sequence of ColumnInfo
            The file's leaf columns.

        Returns
        -------
        tuple of ColumnInfo
            For a path, what :func:`match_sensitive` finds; for a glob, the leaves of which the
            glob matches the whole path or a group above it (``*`` and ``?`` within one part,
            ``**`` across parts), compared exactly.

        Raises
        ------
        None
            The glob was checked when the rule was made.
        """
        if not self.is_glob:
            return match_sensitive(self.path, columns)
        regex = _glob_regex(self.path)

        def covered(path: str) -> bool:
            parts = path.split(".")
            return any(regex.fullmatch(".".join(parts[:n])) for n in range(1, len(parts) + 1))

        return tuple(c for c in columns if covered(c.path))

    def covers_path(self, path: str) -> bool:
        """Whether this rule covers the (leaf or group) path ``path``, by name alone (no schema:
        how a policy finds rules that contradict each other).

        Parameters
        ----------
        path : str
            A dotted column path, leaf or group.

        Returns
        -------
        bool
            For a path rule: ``path`` is the rule's path, under it or a group above it
            (exact case). For a glob: the glob matches ``path`` or a group above it.

        Raises
        ------
        None
            The glob was checked when the rule was made.
        """
        if not self.is_glob:
            return path == self.path or path.startswith(self.path + ".") or self.path.startswith(path + ".")
        parts = path.split(".")
        regex = _glob_regex(self.path)
        return any(regex.fullmatch(".".join(parts[:n])) for n in range(1, len(parts) + 1))

    def to_dict(self) -> dict[str, Any]:
        """The rule as JSON-ready data (an item of the report's ``policy.rules``).

        Returns
        -------
        dict
            Every field by its name: tuples as lists, ``filter`` as its value
            (``"required"``...), unset options as None.

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"path": self.path, "glob": self.glob, "sensitive": self.sensitive,
                "master_keys": None if self.master_keys is None else list(self.master_keys),
                "filter": self.filter.value,
                "filter_master_keys": None if self.filter_master_keys is None else list(self.filter_master_keys),
                "min_fpp": self.min_fpp, "max_bitset_bytes": self.max_bitset_bytes,
                "hide_filter_sizes": self.hide_filter_sizes, "line": self.line}


def _conflict(a: ColumnRule, b: ColumnRule) -> str | None:
    """Why no column can satisfy both rules, or None."""
    filters = {a.filter, b.filter}
    if FilterRequirement.FORBIDDEN in filters and FilterRequirement.REQUIRED in filters:
        return "one requires a Bloom filter, the other forbids it"
    if a.master_keys is not None and b.master_keys is not None and not set(a.master_keys) & set(b.master_keys):
        return f"their master_keys share no key ({sorted(a.master_keys)} vs {sorted(b.master_keys)})"
    fa, fb = a.required_filter_keys, b.required_filter_keys
    if FilterRequirement.FORBIDDEN not in filters and fa is not None and fb is not None and not set(fa) & set(fb):
        return f"their filter master keys share no key ({sorted(fa)} vs {sorted(fb)})"
    return None


@dataclass(frozen=True)
class Policy:
    """A compliance policy: column rules and the footer-key allowance (:func:`load_policy` reads one).

    Parameters
    ----------
    rules : tuple of ColumnRule
        The ``[[column]]`` rules, in file order.
    allow_footer_key : bool, default False
        Accept filters encrypted under the footer key.
    source : str, optional
        The policy file (messages name ``file:line``).

    Raises
    ------
    secure_bloom.errors.PolicyError
        No rule, or two rules that repeat or contradict each other.
    """

    rules: tuple[ColumnRule, ...]
    allow_footer_key: bool = False
    source: str | None = None

    def __post_init__(self) -> None:
        if not self.rules:
            raise PolicyError(f"{self.source or 'policy'}: the policy has no [[column]] rule")
        for i, a in enumerate(self.rules):
            for b in self.rules[i + 1:]:
                self._check_pair(a, b)

    def _check_pair(self, a: ColumnRule, b: ColumnRule) -> None:
        where = f"{self.source}:{b.line}: " if self.source and b.line else ""
        if a.path == b.path and a.glob == b.glob:
            raise PolicyError(f"{where}{b.where} repeats {a.where}: give each column one rule")
        # overlap visible by name: an exact path the other rule covers (globs vs globs: per file)
        overlap = (not a.is_glob and b.covers_path(a.path)) or (not b.is_glob and a.covers_path(b.path))
        if overlap:
            why = _conflict(a, b)
            if why is not None:
                raise PolicyError(f"{where}contradictory rules: {a.where} and {b.where} both cover "
                                  f"{a.path if not a.is_glob else b.path!r}, and {why}")

    @classmethod
    def from_sensitive(cls, names: Iterable[str], *, allow_footer_key: bool = False,
                       hide_filter_sizes: bool = False) -> Policy:
        """The policy ``--sensitive a,b`` means: each name sensitive, filters allowed (of one
        size per file with ``hide_filter_sizes``).

        Parameters
        ----------
        names : iterable of str
            Sensitive column names (stripped; blank ones and repeats are dropped).
        allow_footer_key : bool, default False
            Accept filters under the footer key.
        hide_filter_sizes : bool, default False
            Each rule requires one filter size per column in a file.

        Returns
        -------
        Policy
            One rule per distinct name, in the order given.

        Raises
        ------
        ValueError
            No name is left.
        """

        rules = tuple(ColumnRule(path=name, hide_filter_sizes=hide_filter_sizes)
                      for name in dict.fromkeys(n.strip() for n in names) if name)
        if not rules:
            raise ValueError("sensitive_columns names no column")
        return cls(rules=rules, allow_footer_key=allow_footer_key)

    @property
    def names(self) -> tuple[str, ...]:
        """The rules' paths, in order (the report's columns)."""
        return tuple(r.path for r in self.rules)

    def conflict(self, leaf: str) -> str | None:
        """Why the rules covering the leaf ``leaf`` cannot all hold (two globs), or None.

        Parameters
        ----------
        leaf : str
            A leaf column path.

        Returns
        -------
        str or None
            The reason, or None.

        Raises
        ------
        None
            Nothing of its own.
        """
        covering = [r for r in self.rules if r.covers_path(leaf)]
        for i, a in enumerate(covering):
            for b in covering[i + 1:]:
                why = _conflict(a, b)
                if why is not None:
                    return f"policy {a.where} and {b.where} both cover column {leaf!r}, and {why}"
        return None

    def with_rules(self, extra: Iterable[ColumnRule]) -> Policy:
        """This policy plus ``extra`` rules (e.g. ``--sensitive`` names next to ``--policy``).

        Parameters
        ----------
        extra : iterable of ColumnRule
            The rules to add.

        Returns
        -------
        Policy
            A new policy.

        Raises
        ------
        secure_bloom.errors.PolicyError
            The rules together repeat or contradict each other.
        """
        known = {(r.path, r.glob) for r in self.rules}  # a literal path is not the glob of the same text
        return Policy(rules=self.rules + tuple(r for r in extra if (r.path, r.glob) not in known),
                      allow_footer_key=self.allow_footer_key, source=self.source)

    def to_dict(self) -> dict[str, Any]:
        """The policy as JSON-able values (reports name it).

        Returns
        -------
        dict
            Plain JSON-able values.

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"source": self.source, "allow_footer_key": self.allow_footer_key,
                "rules": [r.to_dict() for r in self.rules]}


# --- parsing ------------------------------------------------------------------------------------


class _Lines:
    """Line numbers of ``[[column]]`` headers and ``key =`` lines in a TOML text (tomllib keeps none)."""

    _HEADER = re.compile(r"^\s*\[\[\s*column\s*\]\]")
    _TABLE = re.compile(r"^\s*\[")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.headers = [i + 1 for i, line in enumerate(self.lines) if self._HEADER.match(line)]

    def rule(self, index: int) -> int | None:
        return self.headers[index] if index < len(self.headers) else None

    def key(self, name: str, rule: int | None) -> int | None:
        """The line of ``name =`` in rule ``rule`` (None: the top level, before any table)."""
        start = 0 if rule is None else (self.rule(rule) or 0)
        pattern = re.compile(rf"^\s*(?:{re.escape(name)}|\"{re.escape(name)}\")\s*=")
        for i in range(start, len(self.lines)):
            if self._TABLE.match(self.lines[i]):
                break
            if pattern.match(self.lines[i]):
                return i + 1
        return None if rule is None else self.rule(rule)


def _where(source: str, line: int | None) -> str:
    return f"{source}:{line}: " if line else f"{source}: "


def _unknown(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown key {name!r} (known: {', '.join(known)}){hint}"


def _key_list(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{name} must be a list of master key id strings, got {_toml_type(value)}")
    return tuple(value)


def _toml_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array",
             dict: "a table"}
    return next((n for t, n in names.items() if type(value) is t), type(value).__name__)


def _rule_from(table: Any, index: int, lines: _Lines, source: str) -> ColumnRule:
    at = lines.rule(index)
    if not isinstance(table, dict):
        raise PolicyError(f"{_where(source, at)}[[column]] must be a table")
    for name in table:
        if name not in _RULE_KEYS:
            raise PolicyError(f"{_where(source, lines.key(name, index))}column rule {index + 1}: "
                              f"{_unknown(name, _RULE_KEYS)}")
    if ("path" in table) == ("glob" in table):
        raise PolicyError(f"{_where(source, at)}column rule {index + 1} needs exactly one of 'path' (a column "
                          "path) and 'glob' (a pattern)")
    kwargs: dict[str, Any] = {"line": at}
    if "glob" in table:
        table = dict(table)
        table["path"] = table.pop("glob")
        kwargs["glob"] = True
    checks: dict[str, Callable[[Any], Any]] = {
        "path": lambda v: v if isinstance(v, str) else _type_error("glob" if kwargs.get("glob") else "path",
                                                                    "a string", v),
        "sensitive": lambda v: v if isinstance(v, bool) else _type_error("sensitive", "true or false", v),
        "master_keys": lambda v: _key_list(v, "master_keys"),
        "filter_master_keys": lambda v: _key_list(v, "filter_master_keys"),
        "filter": _filter_requirement,
        "min_fpp": lambda v: float(v) if isinstance(v, (int, float)) and not isinstance(v, bool)
        else _type_error("min_fpp", "a number", v),
        "max_bitset_bytes": lambda v: v if isinstance(v, int) and not isinstance(v, bool)
        else _type_error("max_bitset_bytes", "an integer", v),
        "hide_filter_sizes": lambda v: v if isinstance(v, bool) else _type_error("hide_filter_sizes", "true or false", v),
        "description": lambda v: v if isinstance(v, str) else _type_error("description", "a string", v),
    }
    for name, value in table.items():
        try:
            kwargs[name] = checks[name](value)
        except (TypeError, ValueError) as e:
            raise PolicyError(f"{_where(source, lines.key(name, index))}column rule {index + 1}: {e}") from None
    try:
        return ColumnRule(**kwargs)
    except PolicyError as e:
        raise PolicyError(f"{_where(source, at)}{e}") from None


def _type_error(name: str, expected: str, value: Any) -> Any:
    raise TypeError(f"{name} must be {expected}, got {_toml_type(value)}")


def _filter_requirement(value: Any) -> FilterRequirement:
    if not isinstance(value, str):
        _type_error("filter", '"required", "allowed" or "forbidden"', value)
    try:
        return FilterRequirement(value)
    except ValueError:
        raise ValueError(f'filter must be "required", "allowed" or "forbidden", got {value!r}') from None


def parse_policy(text: str, source: str = "<policy>") -> Policy:
    """A :class:`Policy` from TOML text.

    Parameters
    ----------
    text : str
        The policy, as TOML.
    source : str, default "<policy>"
        What messages call it.

    Returns
    -------
    Policy
        The validated policy.

    Raises
    ------
    secure_bloom.errors.PolicyError
        As :func:`load_policy` (naming ``source`` and the line).

    Examples
    --------
    >>> from secure_bloom.parquet.audit.policy import parse_policy
    >>> policy = parse_policy('''
    ... version = 1
    ... [[column]]
    ... path = "email"
    ... master_keys = ["pii_key"]
    ... filter = "required"
    ... ''')
    >>> [(rule.path, rule.filter.value, rule.master_keys) for rule in policy.rules]
    [('email', 'required', ('pii_key',))]
    """
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PolicyError(f"{source}: invalid TOML: {e}") from None
    lines = _Lines(text)
    for name in doc:
        if name not in _TOP_KEYS:
            raise PolicyError(f"{_where(source, lines.key(name, None))}{_unknown(name, _TOP_KEYS)}")
    version = doc.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise PolicyError(f"{_where(source, lines.key('version', None))}version must be 1, got {version!r}")
    allow = doc.get("allow_footer_key", False)
    if not isinstance(allow, bool):
        raise PolicyError(f"{_where(source, lines.key('allow_footer_key', None))}allow_footer_key must be "
                          f"true or false, got {_toml_type(allow)}")
    tables = doc.get("column", [])
    if not isinstance(tables, list):
        raise PolicyError(f"{source}: 'column' must be an array of tables ([[column]]), got {_toml_type(tables)}")
    if not tables:
        raise PolicyError(f"{source}: the policy has no [[column]] rule")
    rules = tuple(_rule_from(t, i, lines, source) for i, t in enumerate(tables))
    return Policy(rules=rules, allow_footer_key=allow, source=source)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate a policy file (UTF-8 TOML).

    Parameters
    ----------
    path : str or os.PathLike
        The policy file.

    Returns
    -------
    Policy
        The validated policy.

    Raises
    ------
    secure_bloom.errors.PolicyError
        Not TOML, an unknown key, a bad glob, a wrong type or contradictory rules (named by
        ``file:line``).
    OSError
        The file cannot be read.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            raw = f.read((1 << 20) + 1)
    except OSError as e:
        raise PolicyError(f"{name}: cannot read the policy file: {e.strerror or type(e).__name__}") from None
    if len(raw) > 1 << 20:
        raise PolicyError(f"{name}: a policy file larger than 1 MiB is refused")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PolicyError(f"{name}: not UTF-8 text (byte {e.start})") from None
    return parse_policy(text, name)


def match_leaves(policy: Policy, columns: Sequence[ColumnInfo]) -> dict[str, tuple[ColumnInfo, ...]]:
    """Rule path -> the leaves it covers among ``columns``.

    Parameters
    ----------
    policy : Policy
        The policy whose rules are matched.
    columns : sequence of ColumnInfo
        The file's leaf columns.

    Returns
    -------
    dict of str to tuple of ColumnInfo
        Each rule's ``path`` and what :meth:`ColumnRule.matches` gives (empty for a rule that
        covers no column).

    Raises
    ------
    None
        Nothing of its own.
    """

    return {rule.path: rule.matches(columns) for rule in policy.rules}
