"""How pyarrow compares a column with a filter literal, and a chunk's bounds judged the same way.

The reference is ``pyarrow.dataset(...).to_table(filter=...)``: Arrow's Expression binding
(``compute/expression.cc`` ``BindNonRecursive``). A comparison whose column and literal types are
equal runs in that type. Otherwise the literal is first narrowed to its smallest type
(``SmallestTypeFor``: an int64 5 becomes int8, a float64 that is exact in float32 becomes float32,
a whole-second timestamp becomes timestamp[s], but a negative timestamp is never narrowed: Arrow tests
the stored int64 as a uint64), then the comparison's ``DispatchBest`` picks a
common type C (``CastBinaryDecimalArgs``: decimal with float -> float64, decimal with decimal or
integer -> a decimal of the larger scale; ``CommonNumeric``; ``CommonTemporal`` (finest unit);
``CommonBinary``); the literal is cast to C and the COLUMN gets a checked cast to C, which RAISES
on stored values it cannot convert exactly (int64 above 2^53 to float64, above 2^24 to float32,
uint64 >= 2^63 to int64, dates beyond timestamp[ns], a timestamp[us] column compared with a
timestamp[ns] literal of -1000 beyond 2262-04-11). ``is_in`` (``scalar_set_lookup.cc``) casts
its value set to the column's type (checked; float64 -> float32 rounds silently); when that cast
fails it casts the COLUMN to the value set's type instead (checked, may raise).

Each filter leaf gets one :class:`LeafPlan` per (column type in the file, dataset type), built once
per column layout:

* ``fast``: the comparison happens in the column's own type with a literal that is exactly what
  the column would store (same types; an integer literal that fits; a float literal exact in the
  float column's type; a decimal literal exact at the column's scale and precision; bytes; a
  timestamp literal exact in the column's unit; ``is_in`` whose value set Arrow casts to the
  column's type). The column is never cast, nothing can raise, and the statistics are compared with
  the literals as plain Python keys (:func:`~.statistics.literal_keys`); Bloom filters are probed
  (``==`` / ``in`` only) with the hashes of those exact values.
* ``bounds``: Arrow casts the column (float32 column with a float64 literal not exact in float32,
  integer or decimal column with a float literal, date column with a timestamp literal, coarser
  timestamp units, schema evolution from the file's type to the dataset's). A chunk's min and max
  are put in a tiny Arrow array of the file's type, cast to the dataset type, and the same
  comparison is evaluated on it by Arrow's own Expression binding (``x <= L`` at the min and
  ``x >= L`` at the max for ``==``; ``x < L`` at the min; ...). Every cast on that path is monotone
  and its checks hold for an interval if they hold at its ends, so the verdict at the bounds is the
  verdict for every stored value; an evaluation that raises keeps the row group, so pyarrow raises
  as it would. Decimal to float64 is Arrow's own (not always correctly rounded) conversion: the
  bounds are widened by :data:`DECIMAL_FLOAT_SLACK_ULPS` ulps before comparing. No Bloom filter.
* ``keep``: nothing is decided on this leaf (no usable type), and nothing can raise on the data.
* ``raise``: the comparison may raise on the data and the bounds cannot tell (binding itself
  raises, ``is_in`` casting the column, casts that are not monotone): every row group stays, also
  where other parts of the filter rule it out, so pyarrow evaluates and raises as it would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

__all__ = ["LeafPlan", "plan_leaf", "binds", "bounds_verdicts", "set_check_raises", "bounds_array", "value_type", "DECIMAL_FLOAT_SLACK_ULPS",
           "NO", "MAY", "RAISES"]

#: ulps by which decimal bounds converted to float64 are widened before comparing with a float
#: literal (Arrow converts the whole and fractional parts separately: a few ulps of error).
DECIMAL_FLOAT_SLACK_ULPS = 16

#: Verdicts of :func:`bounds_verdicts` per row group.
NO, MAY, RAISES = "no", "may", "raises"

_COMPARE_FN = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
               ">=": pc.greater_equal}


@dataclass(frozen=True)
class LeafPlan:
    """How one leaf is decided on files that store its column as ``own`` (the dataset's type
    ``typ``): one of the modes of the module docstring. Made by :func:`plan_leaf`, once per leaf
    and column layout.

    Parameters
    ----------
    mode : str
        ``fast``, ``bounds``, ``keep`` or ``raise``.
    own : pyarrow.DataType, optional
        The column's type in the file.
    typ : pyarrow.DataType, optional
        The type Arrow compares in (the dataset's, or the common type).
    values : pyarrow.Array, optional
        For ``fast``: the literals as the column stores them (type ``own``).
    reason : str, default ""
        Why this mode (for explanations and tests).
    """

    mode: str
    own: pa.DataType | None = None
    typ: pa.DataType | None = None
    values: pa.Array | None = None
    reason: str = ""


def value_type(typ: pa.DataType) -> pa.DataType:
    """The type comparisons see: dictionaries decoded, extension types as their storage.

    Parameters
    ----------
    typ : pyarrow.DataType
        A column's type.

    Returns
    -------
    pyarrow.DataType
        The type comparisons see.

    Raises
    ------
    None
        Nothing of its own.
    """
    if isinstance(typ, pa.BaseExtensionType):
        typ = typ.storage_type
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return typ


def _binary_like(typ: pa.DataType) -> bool:
    t = pa.types
    return bool(t.is_string(typ) or t.is_large_string(typ) or t.is_string_view(typ) or t.is_binary(typ)
                or t.is_large_binary(typ) or t.is_binary_view(typ))


def _same_domain(own: pa.DataType, typ: pa.DataType) -> bool:
    """Whether a file storing ``own`` holds exactly the values the dataset reads as ``typ``, in
    the same order (no cast that could change or reject a value)."""
    if own.equals(typ):
        return True
    if _binary_like(own) and _binary_like(typ):
        return bool(pa.types.is_string(own) == (pa.types.is_string(typ) or pa.types.is_large_string(typ)
                                                or pa.types.is_string_view(typ)))
    if pa.types.is_timestamp(own) and pa.types.is_timestamp(typ):
        return bool(own.unit == typ.unit and (own.tz is None) == (typ.tz is None))
    return False


def _int_range(typ: pa.DataType) -> tuple[int, int]:
    bits = typ.bit_width
    if pa.types.is_signed_integer(typ):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _smallest_int(value: int, literal_type: pa.DataType) -> pa.DataType:
    """``SmallestTypeFor`` of an integer literal (signed stays signed, unsigned unsigned)."""
    signed = pa.types.is_signed_integer(literal_type)
    for bits in (8, 16, 32, 64):
        typ = getattr(pa, f"{'' if signed else 'u'}int{bits}")()
        lo, hi = _int_range(typ)
        if lo <= value <= hi:
            return typ
    return literal_type


def _common_int(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """Arrow's ``CommonNumeric`` of two integer types."""
    signed = max((t.bit_width for t in (a, b) if pa.types.is_signed_integer(t)), default=0)
    unsigned = max((t.bit_width for t in (a, b) if pa.types.is_unsigned_integer(t)), default=0)
    if signed == 0:
        return getattr(pa, f"uint{unsigned}")()
    if signed <= unsigned:
        signed = min(64, 2 * unsigned)
    return getattr(pa, f"int{signed}")()


def _contains(wide: pa.DataType, narrow: pa.DataType) -> bool:
    lo, hi = _int_range(wide)
    nlo, nhi = _int_range(narrow)
    return lo <= nlo and nhi <= hi


_UNIT_FACTOR = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}


def _smallest_unit(value: int, unit: str) -> str:
    """``SmallestTypeFor`` of a timestamp literal: the coarsest unit it is whole in, tested as
    Arrow tests it, on the stored int64 read as a ``uint64_t`` (two's complement). A negative
    value is therefore never narrowed (2^64 is not a multiple of 1000): ``-1000`` ns stays
    ``ns``, and a ``us`` column compared with it is cast to ``ns`` (which raises beyond 2262)."""
    as_uint64 = value & 0xFFFF_FFFF_FFFF_FFFF
    per = _UNIT_FACTOR[unit]
    for candidate in ("s", "ms", "us"):
        step = per // _UNIT_FACTOR[candidate]
        if step >= 1 and _UNIT_FACTOR[candidate] <= per and as_uint64 % step == 0:
            return candidate
    return unit


def _literal_in_column_type(typ: pa.DataType, literal: pa.Array) -> pa.Array | None:
    """The one-element ``literal`` as a ``typ`` array when Arrow compares the column in its own
    type ``typ`` with the literal converted exactly; None otherwise."""
    lt = literal.type
    if lt.equals(typ):
        return literal
    numeric = (pa.types.is_integer(lt) or pa.types.is_floating(lt)) and not pa.types.is_float16(lt)
    py: Any = literal[0].as_py() if numeric else None
    if pa.types.is_integer(typ) and pa.types.is_integer(lt):
        common = _common_int(typ, _smallest_int(py, lt))
        lo, hi = _int_range(typ)
        if not _contains(common, typ) or not lo <= py <= hi:
            return None
        return pa.array([py], typ)
    if pa.types.is_floating(typ) and not pa.types.is_float16(typ):
        if pa.types.is_floating(lt) and not pa.types.is_float16(lt):
            if math.isnan(py):
                return None
            narrowed = pa.float32() if not math.isfinite(py) or float(pa.scalar(py, pa.float32()).as_py()) == py \
                else lt
            common = pa.float64() if pa.float64() in (typ, narrowed) else pa.float32()
            if not common.equals(typ):
                return None  # the float32 column is widened: the bounds path decides
            out = pa.array([py], typ)
            return out if out[0].as_py() == py or not math.isfinite(py) else None
        if pa.types.is_integer(lt):
            out = pa.array([float(py)], typ)
            return out if int(out[0].as_py()) == py else None  # else binding raises (probe)
        return None
    if pa.types.is_decimal(typ) and pa.types.is_decimal(lt):
        try:
            out = literal.cast(typ, safe=True)
            return out if out.cast(lt, safe=True).equals(literal) else None
        except (pa.ArrowException, ValueError):
            return None
    if _binary_like(typ) and _binary_like(lt):
        return literal.cast(pa.large_binary())
    if pa.types.is_timestamp(typ) and pa.types.is_timestamp(lt):
        if (typ.tz is None) != (lt.tz is None):
            return None
        stored = literal.view(pa.int64())[0].as_py()
        unit = _smallest_unit(stored, lt.unit)
        if _UNIT_FACTOR[unit] > _UNIT_FACTOR[typ.unit]:
            return None  # the column would be cast to a finer unit (may overflow): bounds path
        value = stored * _UNIT_FACTOR[typ.unit] // _UNIT_FACTOR[lt.unit] if _UNIT_FACTOR[typ.unit] >= \
            _UNIT_FACTOR[lt.unit] else stored // (_UNIT_FACTOR[lt.unit] // _UNIT_FACTOR[typ.unit])
        if not -(1 << 63) <= value < (1 << 63):
            return None
        return pa.array([value], pa.int64()).view(typ)
    return None


def _expression(op: str, literal: pa.Array, column: str = "v") -> Any:
    field = pc.field(column)
    if op in ("in", "not in"):
        return pc.is_in(field, value_set=literal)
    return _COMPARE_FN[op](field, pc.scalar(literal[0]))


def binds(op: str, literal: pa.Array, typ: pa.DataType) -> bool:
    """Whether pyarrow's binding of ``column op literal`` on a ``typ`` column succeeds.

    Parameters
    ----------
    op : str
        The comparison.
    literal : pyarrow.Array
        The literal.
    typ : pyarrow.DataType
        The column's type.

    Returns
    -------
    bool
        Whether it binds.

    Raises
    ------
    None
        Nothing of its own.
    """
    try:
        empty = pa.table({"v": pa.nulls(1, typ)})
        ds.dataset(empty).to_table(columns={"m": _expression(op, literal)})
        return True
    except (pa.ArrowException, ValueError, TypeError):
        return False


def plan_leaf(op: str, literal: pa.Array | None, own: pa.DataType | None, dataset_type: pa.DataType | None) -> LeafPlan:
    """The plan of leaf ``column op literal`` for files storing the column as ``own`` (None: a
    type the pruner does not read), in a dataset that reads it as ``dataset_type`` (None: as
    ``own``). A literal this module cannot handle plans ``raise``: nothing is dropped.

    Parameters
    ----------
    op : str
        The comparison.
    literal : pyarrow.Array or None
        The literal.
    own : pyarrow.DataType or None
        The file's type.
    dataset_type : pyarrow.DataType or None
        The dataset's type.

    Returns
    -------
    LeafPlan
        How to judge the leaf.

    Raises
    ------
    None
        Nothing of its own.
    """
    try:
        return _plan_leaf(op, literal, own, dataset_type)
    except (pa.ArrowException, ValueError, TypeError, OverflowError, ArithmeticError) as e:
        return LeafPlan("raise", own, dataset_type, reason=f"literal not understood ({type(e).__name__})")


def _plan_leaf(op: str, literal: pa.Array | None, own: pa.DataType | None, dataset_type: pa.DataType | None) -> LeafPlan:
    if literal is None:
        return LeafPlan("fast", own, own, reason="is_null / is_valid")
    raw_typ = dataset_type if dataset_type is not None else own
    if raw_typ is None:
        return LeafPlan("keep", reason="no type known")
    typ = value_type(raw_typ)
    if not (literal.type.equals(typ) and _plain_kernel(typ)) and not binds(op, literal, typ):
        return LeafPlan("raise", own, typ, reason="pyarrow's binding raises")
    if own is None:  # no bounds: only a comparison that casts nothing is known not to raise
        return LeafPlan("keep" if literal.type.equals(typ) else "raise", None, typ, reason="no bounds for this type")
    if op in ("in", "not in"):
        if literal.type.equals(typ):
            in_typ: pa.Array | None = literal
        else:
            try:
                in_typ = literal.cast(typ, safe=True)  # what is_in does to its value set
            except (pa.ArrowException, ValueError, TypeError):
                in_typ = None
        if in_typ is None:
            return LeafPlan("raise", own, typ, reason="is_in casts the column to the value set's type")
    else:
        in_typ = _literal_in_column_type(typ, literal)
    if in_typ is not None and _same_domain(own, typ):
        try:
            values = in_typ.cast(own, safe=True) if not in_typ.type.equals(own) else in_typ
        except (pa.ArrowException, ValueError, TypeError):
            values = None
        if values is not None:
            return LeafPlan("fast", own, typ, values, reason="compared in the column's own type")
    if not _monotone(own, typ):
        return LeafPlan("raise", own, typ, reason=f"the cast {own} -> {typ} does not keep order")
    if op in ("in", "not in"):
        return LeafPlan("bounds", own, typ, in_typ, reason="is_in in the dataset's type")
    return LeafPlan("bounds", own, typ, reason="Arrow casts the column")


def _plain_kernel(typ: pa.DataType) -> bool:
    """Types whose comparisons and ``is_in`` with a literal of the same type always bind."""
    t = pa.types
    return bool(t.is_integer(typ) or t.is_float32(typ) or t.is_float64(typ) or t.is_decimal(typ)
                or t.is_string(typ) or t.is_large_string(typ) or t.is_binary(typ) or t.is_large_binary(typ)
                or t.is_fixed_size_binary(typ) or t.is_date(typ) or t.is_timestamp(typ) or t.is_time(typ)
                or t.is_boolean(typ))


def _numeric(typ: pa.DataType) -> bool:
    return bool(pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ))


def _monotone(own: pa.DataType, typ: pa.DataType) -> bool:
    """Whether pyarrow's cast of a file's ``own`` column to the dataset's ``typ`` keeps order
    (and its checks hold on an interval when they hold at its ends)."""
    if _same_domain(own, typ):
        return True
    if _numeric(own) and _numeric(typ):
        return not (pa.types.is_floating(own) and not pa.types.is_floating(typ))  # float -> int truncation
    if pa.types.is_decimal(own) and pa.types.is_decimal(typ):
        return bool(typ.scale >= own.scale)
    temporal = (pa.types.is_date(own) or pa.types.is_timestamp(own)) and \
        (pa.types.is_date(typ) or pa.types.is_timestamp(typ))
    if temporal:
        return not (pa.types.is_timestamp(own) and pa.types.is_date(typ))  # truncates the time of day
    if pa.types.is_time(own) and pa.types.is_time(typ):
        return bool(_UNIT_FACTOR[typ.unit] >= _UNIT_FACTOR[own.unit])
    return False


def bounds_array(values: list[Any], own: pa.DataType, kind: str) -> pa.Array:
    """Decoded statistics (:func:`~.statistics.chunk_bounds` values, None where unknown) as an
    Arrow array of the file's type ``own``.

    Parameters
    ----------
    values : list
        Decoded bounds (None where unknown).
    own : pyarrow.DataType
        The file's type.
    kind : str
        The column's statistics kind.

    Returns
    -------
    pyarrow.Array
        The bounds.

    Raises
    ------
    None
        Nothing of its own.
    """
    if kind in ("int", "uint") and pa.types.is_decimal(own) or kind == "decimal_bytes":
        width = own.byte_width
        raw = b"".join((v if v is not None else 0).to_bytes(width, "little", signed=True) for v in values)
        mask = pa.array([v is None for v in values])
        storage = pa.Array.from_buffers(pa.binary(width), len(values), [None, pa.py_buffer(raw)])
        arr = storage.view(own)
        return pc.if_else(mask, pa.nulls(len(values), own), arr) if any(v is None for v in values) else arr
    if kind in ("int", "uint") and not pa.types.is_integer(own):
        width = own.bit_width
        storage = pa.array(values, pa.int32() if width == 32 else pa.int64())
        return storage.view(own)
    if kind == "bytes" and not _binary_like(own):
        return pa.array(values, pa.binary()).cast(own)
    if kind == "bytes" and pa.types.is_string(own):
        return pa.array(values, pa.binary()).cast(pa.string())
    return pa.array(values, own)


def _widened(bounds: pa.Array, down: bool) -> pa.Array:
    floats = bounds.cast(pa.float64()).to_pylist()
    out = []
    for f in floats:
        if f is None or not math.isfinite(f):
            out.append(f)
            continue
        step = DECIMAL_FLOAT_SLACK_ULPS * math.ulp(f)
        out.append(f - step if down else f + step)
    return pa.array(out, pa.float64())


def _masks(expressions: dict[str, Any], column: pa.Array) -> dict[str, list[bool | None]]:
    table = ds.dataset(pa.table({"v": column})).to_table(columns=expressions)
    return {name: table.column(name).to_pylist() for name in expressions}


def bounds_verdicts(plan: LeafPlan, op: str, literal: pa.Array, lows: pa.Array, highs: pa.Array,
                    floats_in_file: bool) -> list[str]:
    """Per row group (``lows``/``highs``: the chunks' bounds in ``plan.own``, null where unknown),
    whether ``column op literal`` can match (:data:`MAY`), cannot (:data:`NO`), or the evaluation
    may raise on its values (:data:`RAISES`): Arrow's own casts and comparisons on the bounds.
    Both bounds are always evaluated: a checked cast raises on some value of the interval iff it
    raises on one of its ends.

    Parameters
    ----------
    plan : LeafPlan
        From :func:`plan_leaf`.
    op : str
        The comparison.
    literal : pyarrow.Array
        The literal.
    lows : pyarrow.Array
        Per row group minimums.
    highs : pyarrow.Array
        Per row group maximums.
    floats_in_file : bool
        The file stores floating-point values.

    Returns
    -------
    list of str
        One verdict per row group.

    Raises
    ------
    None
        Nothing of its own.
    """
    n = len(lows)
    assert plan.typ is not None
    try:
        lo, hi = lows.cast(plan.typ, safe=True), highs.cast(plan.typ, safe=True)
        if op in ("in", "not in"):
            return _in_verdicts(plan, op, lo, hi)
        if pa.types.is_decimal(plan.typ) and pa.types.is_floating(literal.type):
            lo, hi = _widened(lo, True), _widened(hi, False)
        needed = {"==": ("<=", ">="), "!=": ("==",), "<": ("<",), "<=": ("<=",), ">": (">",), ">=": (">=",)}[op]
        both = _masks({o: _expression(o, literal) for o in needed}, pa.concat_arrays([lo, hi]))
    except (pa.ArrowException, ValueError, TypeError):
        if n == 1:
            return [RAISES]
        return [v for i in range(n)
                for v in bounds_verdicts(plan, op, literal, lows.slice(i, 1), highs.slice(i, 1), floats_in_file)]
    at_lo = {o: m[:n] for o, m in both.items()}
    at_hi = {o: m[n:] for o, m in both.items()}
    if op == "!=":  # no match only if every value equals the literal (a NaN is != everything)
        if floats_in_file:
            return [MAY] * n
        return [NO if at_lo["=="][i] is True and at_hi["=="][i] is True else MAY for i in range(n)]
    if op == "==":
        return [NO if at_lo["<="][i] is False or at_hi[">="][i] is False else MAY for i in range(n)]
    at = at_lo if op in ("<", "<=") else at_hi
    return [NO if at[op][i] is False else MAY for i in range(n)]


#: pyarrow simplifies ``is_in`` with row-group statistics only for value sets up to this size
#: (``kIsInSimplificationMaxValueSet`` in ``expression.cc``).
IS_IN_SIMPLIFICATION_MAX = 50


def set_check_raises(value_set: pa.Array, typ: pa.DataType, lows: pa.Array, highs: pa.Array) -> list[bool]:
    """Per row group: whether pyarrow's own statistics pass raises on it. Its ``SimplifyIsIn``
    compares the filter's ORIGINAL value set (not the one cast to the column's type) with the
    row group's min and max by a plain compute call (common numeric type, checked casts): an
    int64 bound beyond 2^53 against a float64 value set raises there, before any row is read.

    Parameters
    ----------
    value_set : pyarrow.Array
        The filter's value set.
    typ : pyarrow.DataType
        The column's type.
    lows : pyarrow.Array
        Per row group minimums.
    highs : pyarrow.Array
        Per row group maximums.

    Returns
    -------
    list of bool
        One per row group.

    Raises
    ------
    None
        Nothing of its own.
    """
    n = len(lows)
    if len(value_set) > IS_IN_SIMPLIFICATION_MAX or value_set.type.equals(typ):
        return [False] * n
    out = []
    for i in range(n):
        try:
            lo, hi = lows.slice(i, 1).cast(typ, safe=True), highs.slice(i, 1).cast(typ, safe=True)
            if lo[0].is_valid:
                pc.greater_equal(value_set, lo[0])
            if hi[0].is_valid:
                pc.less_equal(value_set, hi[0])
            out.append(False)
        except (pa.ArrowException, ValueError, TypeError):
            out.append(True)
    return out


def _in_verdicts(plan: LeafPlan, op: str, lo: pa.Array, hi: pa.Array) -> list[str]:
    n = len(lo)
    values = plan.values
    if op == "not in" or values is None:
        return [MAY] * n
    if pa.types.is_floating(values.type) and any(v is not None and math.isnan(v) for v in values.to_pylist()):
        return [MAY] * n
    out = []
    for i in range(n):
        if not lo[i].is_valid or not hi[i].is_valid:
            out.append(MAY)
            continue
        inside = pc.and_(pc.greater_equal(values, lo[i]), pc.less_equal(values, hi[i]))
        out.append(MAY if pc.any(pc.fill_null(inside, True)).as_py() else NO)
    return out
