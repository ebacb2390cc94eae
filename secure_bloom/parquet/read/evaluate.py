"""The one evaluator: which row groups of one file may match a predicate tree, over a facts provider.

Like DataFusion's ``PruningPredicate`` over ``PruningStatistics``, the evaluator does no I/O: it
asks a :class:`RowGroupFacts` provider for two kinds of facts, each for one column and many row
groups at once:

* :meth:`RowGroupFacts.bounds`: min/max statistics and null counts (:class:`~.statistics.Bounds`);
* :meth:`RowGroupFacts.may_contain`: whether the column's Bloom filter may hold any of a query's
  hashes (no filter, or a key not given: "may").

The provider is :class:`~.facts.ReaderFacts`: a file's reader for this lookup, answering first
from the :class:`~.prune_cache.FileFacts` a :class:`~.prune_cache.PruneCache` holds of it (a warm
lookup and a cold one are this code over the same provider, with and without cached facts), or
:class:`~.facts.FilesFacts`: the files of a warm lookup the cache answers alone, joined, judged in
one evaluation. Its reads are batched per column: :meth:`~secure_bloom.parquet.file.reader.ParquetBloomReader.column_facts_many`
and :meth:`~secure_bloom.parquet.file.reader.ParquetBloomReader.bloom_filters`.

Per file, every candidate row group is judged at once and column-wise, in two passes. First the
statistics (:meth:`TreeVerdicts.judge`), then, for the row groups they leave, the Bloom filters of
the ``==`` / ``in`` leaves. AND passes to its next part only the row groups its earlier parts
left, OR only those they did not already prove: so exactly the facts a row-group-at-a-time,
short-circuit evaluation reads are asked for, each leaf's for all its row groups in one call (one
native probe of all the filters of a column). A part of the filter pyarrow may raise on keeps
the row group whatever the rest says (:mod:`.compare`), so pyarrow meets the values and raises
as it would.

Leaf plans (:class:`LeafView`) are built once per leaf and column layout, shared by the files of
a lookup that store the column alike (the memo passed in).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from ...errors import SecureBloomError
from ...types import PhysicalType
from ...values import QueryHashes
from ...values.arrow import hash_arrow, stored_form
from ..file.schema import ColumnInfo
from .compare import MAY, NO, RAISES, LeafPlan, binds, bounds_array, bounds_verdicts, plan_leaf, set_check_raises, value_type
from .predicate import AllOf, AnyOf, Leaf, Node, Unknown, hidden_leaves, leaves, raising_unknowns
from .statistics import Bounds, arrow_type_of, literal_keys, stat_kind

__all__ = ["RowGroupFacts", "LeafView", "TreePlan", "TreeVerdicts", "tree_plan", "uses_bloom"]


class RowGroupFacts(Protocol):
    """What the evaluator asks of one file (DataFusion's ``PruningStatistics``): its layout, and
    per column the facts of many row groups at once. No method reads more than it is asked for.

    Attributes
    ----------
    num_row_groups : int
        The file's row groups.
    columns : tuple of ColumnInfo
        Its leaf columns.
    type_order : frozenset of int
        The ordinals of the columns whose ColumnOrder is TYPE_ORDER (their statistics are usable).
    """

    num_row_groups: int
    columns: tuple[ColumnInfo, ...]
    type_order: frozenset[int]

    def bounds(self, info: ColumnInfo, row_groups: Sequence[int]) -> list[Bounds | None]:
        """Each row group's statistics of ``info`` (None: none usable, or the key is not given).

        Parameters
        ----------
        info : ColumnInfo
            One of :attr:`columns`.
        row_groups : sequence of int
            The row groups asked about (positions in the footer).

        Returns
        -------
        list of Bounds or None
            One per row group, in order.

        Raises
        ------
        secure_bloom.errors.SecureBloomError
            What reading the statistics raises (:meth:`.facts.ReaderFacts.bounds`: a KMS failure,
            encrypted metadata failing authentication, damaged metadata); a missing key is None.
        """

    def may_contain(self, info: ColumnInfo, row_groups: Sequence[int], hashes: Sequence[int]) -> list[bool]:
        """Per row group, whether the column's filter may hold any of ``hashes`` (True: it may,
        it has no filter, or its key is not given). BloomFilter.md: a filter never answers
        "absent" for a value inserted.

        Parameters
        ----------
        info : ColumnInfo
            One of :attr:`columns`.
        row_groups : sequence of int
            The row groups asked about.
        hashes : sequence of int
            The query's xxHash64 values (any hit: "may").

        Returns
        -------
        list of bool
            One per row group, in order.

        Raises
        ------
        secure_bloom.errors.SecureBloomError
            What reading the filters raises (:meth:`.facts.ReaderFacts.may_contain`: a KMS failure,
            a filter failing authentication or damaged, a plaintext filter on an encrypted column);
            a missing key is True.
        """


def _arrow_type(schema: pa.Schema | None, name: str) -> pa.DataType | None:
    if schema is None or schema.get_field_index(name) < 0:
        return None
    typ = schema.field(name).type
    return typ.value_type if pa.types.is_dictionary(typ) else typ


class LeafView:
    """A leaf bound to one column layout: its :class:`~.compare.LeafPlan`, and for the ``fast``
    plan its literals as the column orders them (``keys``) and its Bloom query (``query``).
    ``None`` parts mean "not usable" (the row group is kept).

    Parameters
    ----------
    leaf : Leaf
        The predicate leaf.
    info : ColumnInfo or None
        The file's column it names (None: not in the file).
    schema : pyarrow.Schema or None
        The dataset's schema (the type Arrow compares in).
    """

    def __init__(self, leaf: Leaf, info: ColumnInfo | None, schema: pa.Schema | None) -> None:
        self.leaf = leaf
        self.info = info
        self.keys: list[Any] | None = None
        self.query: QueryHashes | None = None
        self.nan = False
        self.own: pa.DataType | None = None
        #: pyarrow's statistics pass compares this ``is_in`` value set with the bounds (may raise)
        self.set_check = False
        typ = _arrow_type(schema, leaf.column)
        if info is None:  # not in this file: pyarrow reads nulls, which raise nothing once bound
            unbound = leaf.values is not None and typ is not None and not binds(leaf.op, leaf.values, value_type(typ))
            self.plan = LeafPlan("raise" if unbound else "keep", reason="column not in the file")
            return
        self.own = arrow_type_of(info)
        self.plan = plan_leaf(leaf.op, leaf.values, self.own, typ)
        self.set_check = (leaf.op in ("in", "not in") and leaf.values is not None and self.plan.typ is not None
                          and self.plan.mode in ("fast", "bounds") and not leaf.values.type.equals(self.plan.typ))
        if self.plan.mode != "fast" or self.plan.values is None:
            return
        values = self.plan.values
        floats = info.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE)
        if floats:
            self.nan = any(v is not None and math.isnan(v) for v in values.to_pylist())
        kind = stat_kind(info)
        if kind is not None and not self.nan:
            try:
                self.keys = literal_keys(values, info, kind)
            except (pa.ArrowException, ValueError, TypeError, ArithmeticError):
                self.keys = None
        if leaf.op in ("==", "in") and info.physical_type not in (PhysicalType.INT96, PhysicalType.BOOLEAN):
            self.query = _bloom_query(values, info, floats)

    def may_by_bounds(self, b: Bounds) -> bool:
        """Whether a row group with these statistics may hold a matching row (``fast`` plan).

        Parameters
        ----------
        b : Bounds
            The row group's statistics of the column.

        Returns
        -------
        bool
            False only on proof that no row matches.

        Raises
        ------
        None
            Nothing of its own.
        """
        op = self.leaf.op
        if op == "is_null":
            return b.null_count is None or b.null_count > 0
        if op == "is_valid":
            return not b.all_null
        if op == "not in" and (b.null_count is None or b.null_count > 0):
            return True  # not(is_in): is_in answers false (not null) for a null, so null rows match
        if b.all_null:
            return False  # every comparison with a null is null: no row matches
        keys = self.keys
        if keys is None or self.nan:
            return True
        low, high = b.low, b.high
        if op in ("==", "in"):
            for k in keys:  # a loop, not any(): this runs per row group of every lookup
                if (low is None or low <= k) and (high is None or k <= high):
                    return True
            return False
        if op in ("!=", "not in"):
            if self.info is not None and self.info.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
                return True  # a NaN is != everything and has no bound
            return not (b.exact and low == high and low in keys)
        k = keys[0]
        if op == "<":
            return low is None or low < k
        if op == "<=":
            return low is None or low <= k
        if op == ">":
            return high is None or high > k
        if op == ">=":
            return high is None or high >= k
        return True


def _bloom_query(values: pa.Array, info: ColumnInfo, floats: bool) -> QueryHashes | None:
    """Hashes of exactly the values the column would store for the literals (the ``fast`` plan:
    equality decided in the column's own type). SQL equality: 0.0 asks for both zeros; a NaN is
    always "maybe" (:func:`~secure_bloom.values.query_hashes` semantics)."""
    try:
        plain = values.drop_null()
        hashes = hash_arrow(stored_form(plain, info), info.physical_type, info.type_length).tolist()
        nan = False
        if floats:
            py = plain.to_pylist()
            nan = any(math.isnan(v) for v in py)
            if any(v == 0 for v in py):  # SQL: 0.0 = -0.0; the filter holds whichever was written
                zeros = pa.array([0.0, -0.0], type=plain.type)
                hashes += hash_arrow(zeros, info.physical_type, info.type_length).tolist()
        return QueryHashes(hashes=tuple(dict.fromkeys(int(h) for h in hashes)), always_maybe=nan)
    except (pa.ArrowException, SecureBloomError, ValueError, TypeError, OverflowError):
        return None


@dataclass(frozen=True)
class TreePlan:
    """A tree's leaf views over one column layout (``columns``, held so that a layout compared
    by identity cannot be another one at the same address), and what they make the evaluator
    keep: ``raising`` (a part pyarrow may raise on anywhere: every row group is kept),
    ``checked`` (the views whose bounds may show a raise), ``bloom`` (a leaf consults filters).

    Parameters
    ----------
    tree : Node
        The predicate tree.
    columns : tuple of ColumnInfo
        The column layout.
    views : dict
        ``id(leaf)`` -> :class:`LeafView`.
    raising : bool
        Whether pyarrow may raise on any row group.
    checked : list of LeafView
        The views whose bounds are checked for a raise.
    bloom : bool
        Whether the tree has an ``==`` / ``in`` leaf.
    """

    tree: Node
    columns: tuple[ColumnInfo, ...]
    views: dict[int, LeafView]
    raising: bool
    checked: list[LeafView]
    bloom: bool

    def asked(self) -> list[tuple[ColumnInfo, bool]]:
        """Every column judging may ask facts of (:class:`RowGroupFacts`), each with whether it
        may ask the column's filters too (a leaf with a query), not only its bounds: what a
        provider must hold to answer without reading.

        Returns
        -------
        list of (ColumnInfo, bool)
            One per leaf in the file; a column asked by two leaves appears twice.

        Raises
        ------
        None
            Nothing of its own.
        """
        return [(view.info, self.bloom and view.query is not None) for view in self.views.values()
                if view.info is not None]


def uses_bloom(tree: Node) -> bool:
    """Whether the tree may consult a Bloom filter (an ``==`` or ``in`` leaf).

    Parameters
    ----------
    tree : Node
        The predicate tree.

    Returns
    -------
    bool
        True when some leaf is ``==`` or ``in``.

    Raises
    ------
    None
        Nothing of its own.
    """
    return any(leaf.op in ("==", "in") for leaf in leaves(tree))


def tree_plan(tree: Node, columns: tuple[ColumnInfo, ...], schema: pa.Schema | None, memo: dict[Any, Any]) -> TreePlan:
    """The :class:`TreePlan` of ``tree`` over ``columns``, built once per layout: the memo's when
    it is of the same layout (the files of one schema share one ``columns`` tuple), its leaf
    views shared by every layout storing the column alike.

    Parameters
    ----------
    tree : Node
        The predicate tree.
    columns : tuple of ColumnInfo
        The file's leaf columns.
    schema : pyarrow.Schema or None
        The dataset's schema.
    memo : dict
        One lookup's plans and views (shared by its files and threads).

    Returns
    -------
    TreePlan
        The plan.

    Raises
    ------
    None
        Nothing of its own (a literal that cannot be used makes its leaf keep row groups).
    """
    key = ("plan", id(tree))
    plan = memo.get(key)
    if plan is not None and plan.columns is columns and plan.tree is tree:
        return plan  # type: ignore[no-any-return]
    views: dict[int, LeafView] = {}
    for leaf in hidden_leaves(tree):
        info = next((c for c in columns if c.path_in_schema == (leaf.column,)), None)
        view_key = (id(leaf), info)
        view = memo.get(view_key)
        if view is None:
            view = memo[view_key] = LeafView(leaf, info, schema)
        views[id(leaf)] = view
    plan = memo[key] = TreePlan(tree, columns, views,
                                raising_unknowns(tree) or any(v.plan.mode == "raise" for v in views.values()),
                                [v for v in views.values() if v.plan.mode == "bounds" or v.set_check],
                                uses_bloom(tree))
    return plan


def _array_verdicts(view: LeafView, rgs: list[int], lows: list[Any], highs: list[Any], own: pa.DataType,
                    kind: str, bounded: bool) -> dict[int, str]:
    """The verdicts of ``view`` on row groups ``rgs`` from their known bounds, compared as Arrow
    arrays of the file's type ``own``. Bounds that type cannot hold are RAISES: only the row
    groups holding them (each judged on its own then), whatever other row groups, of this file
    or of others judged with it, hold."""
    leaf = view.leaf
    try:
        low_array, high_array = bounds_array(lows, own, kind), bounds_array(highs, own, kind)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        if len(rgs) == 1:
            return {rgs[0]: RAISES}
        out: dict[int, str] = {}
        for rg, low, high in zip(rgs, lows, highs):
            out.update(_array_verdicts(view, [rg], [low], [high], own, kind, bounded))
        return out
    verdicts = bounds_verdicts(view.plan, leaf.op, leaf.values, low_array, high_array,
                               pa.types.is_floating(own)) if bounded else [MAY] * len(rgs)
    if view.set_check and view.plan.typ is not None:
        raises = set_check_raises(leaf.values, view.plan.typ, low_array, high_array)
        verdicts = [RAISES if r else v for v, r in zip(verdicts, raises)]
    return dict(zip(rgs, verdicts))


class TreeVerdicts:
    """One file judged by one plan: statistics for every candidate row group, then Bloom
    filters for those left (see the module docstring).

    Parameters
    ----------
    plan : TreePlan
        The tree's plan over the file's column layout.
    facts : RowGroupFacts
        The file's facts.
    candidates : sequence of int
        The row groups to judge.
    """

    def __init__(self, plan: TreePlan, facts: RowGroupFacts, candidates: Sequence[int]) -> None:
        self.plan = plan
        self.facts = facts
        self.candidates = list(candidates)
        #: per column ordinal: row group -> bounds (asked once per row group)
        self._bounds: dict[int, dict[int, Bounds | None]] = {}
        #: per leaf: row group -> the ``bounds`` plan's verdict (MAY / NO / RAISES)
        self._verdicts: dict[int, dict[int, str]] = {}
        #: per leaf: row group -> the ``fast`` plan's verdict on the bounds alone
        self._by_bounds: dict[int, dict[int, bool]] = {}

    def judge(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(row groups kept, pruned by statistics, pruned by Bloom filters).

        Returns
        -------
        tuple of three tuples of int
            Kept, pruned by statistics, pruned by Bloom filters, each in candidate order.

        Raises
        ------
        secure_bloom.errors.MalformedInputError, AuthenticationError
            Damaged or tampered metadata or filters (from the facts provider).
        secure_bloom.errors.KeyManagementError
            A key the provider needs cannot be obtained (a missing key is "may", not an error).
        """
        tree, candidates = self.plan.tree, self.candidates
        if (isinstance(tree, AllOf) and not tree.parts) or self.plan.raising or not candidates:
            return tuple(candidates), (), ()
        kept = self._must_keep() if self.plan.checked else set()
        judged = [rg for rg in candidates if rg not in kept]
        left = set(self._may(tree, judged, bloom=False))
        by_stats = tuple([rg for rg in judged if rg not in left])
        survived = [rg for rg in judged if rg in left]
        bloomed = set(self._may(tree, survived, bloom=True)) if self.plan.bloom and survived else set(survived)
        by_bloom = tuple([rg for rg in survived if rg not in bloomed])
        keep = tuple([rg for rg in candidates if rg in kept or rg in bloomed])
        return keep, by_stats, by_bloom

    # facts, each asked once

    def _bounds_of(self, info: ColumnInfo, rgs: Sequence[int]) -> dict[int, Bounds | None]:
        known = self._bounds.setdefault(info.ordinal, {})
        missing = [rg for rg in rgs if rg not in known]
        if missing:
            known.update(zip(missing, self.facts.bounds(info, missing)))
        return known

    def _must_keep(self) -> set[int]:
        """The row groups pyarrow's evaluation may raise on (kept whatever the rest says)."""
        return {rg for view in self.plan.checked for rg, v in self._verdict_map(view).items() if v == RAISES}

    def _verdict_map(self, view: LeafView) -> dict[int, str]:
        """The ``bounds`` plan's verdicts (:func:`~.compare.bounds_verdicts`) and the ``is_in``
        set check's raises, for every candidate row group at once (absent: MAY)."""
        done = self._verdicts.get(id(view))
        if done is not None:
            return done
        done = self._verdicts[id(view)] = self._bounds_verdicts(view)
        return done

    def _bounds_verdicts(self, view: LeafView) -> dict[int, str]:
        info, own, leaf = view.info, view.own, view.leaf
        kind = stat_kind(info) if info is not None else None
        if info is None or own is None or kind is None or leaf.values is None:
            return {rg: RAISES for rg in self.candidates}  # no bounds to judge a cast by
        bounded = view.plan.mode == "bounds"
        known = self._bounds_of(info, self.candidates)
        rgs, lows, highs = [], [], []
        unknown: dict[int, str] = {}
        for rg in self.candidates:
            b = known[rg]
            if b is not None and b.all_null:
                continue  # all null: no values to compare or to raise on
            if b is None or b.low is None or b.high is None:
                if bounded:
                    unknown[rg] = RAISES  # values nobody can see: pyarrow's cast may raise on them
                continue
            rgs.append(rg)
            lows.append(b.low)
            highs.append(b.high)
        if not rgs:
            return unknown
        return {**unknown, **_array_verdicts(view, rgs, lows, highs, own, kind, bounded)}

    # the tree, column-wise

    def _may(self, node: Node, rgs: list[int], bloom: bool) -> list[int]:
        """The row groups of ``rgs`` that may hold a row matching ``node`` (in ``rgs`` order)."""
        if not rgs:
            return rgs
        if isinstance(node, Leaf):
            return self._leaf(self.plan.views[id(node)], rgs, bloom)
        if isinstance(node, AllOf):
            for part in node.parts:
                rgs = self._may(part, rgs, bloom)
                if not rgs:
                    break
            return rgs
        if isinstance(node, AnyOf):
            found: set[int] = set()
            rest = rgs
            for part in node.parts:
                found.update(self._may(part, rest, bloom))
                rest = [rg for rg in rest if rg not in found]
                if not rest:
                    break
            return [rg for rg in rgs if rg in found]
        assert isinstance(node, Unknown)
        return rgs

    def _leaf(self, view: LeafView, rgs: list[int], bloom: bool) -> list[int]:
        info, mode = view.info, view.plan.mode
        if info is None or mode == "keep" or mode == "raise":
            return rgs
        known = self._bounds_of(info, rgs)
        if mode == "bounds":
            verdicts = self._verdict_map(view)
            not_in = view.leaf.op == "not in"
            return [rg for rg in rgs
                    if not (known[rg] is not None and known[rg].all_null and not not_in)  # type: ignore[union-attr]
                    and verdicts.get(rg, MAY) != NO]
        memo = self._by_bounds.setdefault(id(view), {})
        for rg in rgs:
            if rg not in memo:
                b = known[rg]
                memo[rg] = b is None or view.may_by_bounds(b)
        alive = [rg for rg in rgs if memo[rg]]
        query = view.query
        if not bloom or query is None or query.always_maybe or not alive:
            return alive
        maybe = self.facts.may_contain(info, alive, query.hashes)
        return [rg for rg, m in zip(alive, maybe) if m]
