"""Thrift compact protocol for the Parquet structures in ``specs/parquet_subset.thrift``.

The IDL is loaded with thriftpy2 at import time. Parsing goes through a bounded reader, because
thriftpy2's compact reader trusts declared sizes: here every binary length and collection size is
checked against the bytes that remain *before* anything is read or allocated, a collection of a
non-empty type is the only kind allowed to have elements, and every thriftpy2 failure mode (short
read, bad type nibble, runaway nesting) becomes one :class:`MalformedThriftError`.

Work is linear in the input. Varints are decoded here, not by thriftpy2, whose decoder accepts a
run of any length and shifts a Python int by 7 more bits per byte (quadratic: a 1 MiB run of 0xFF
took 24 s): a varint longer than its type allows (compact protocol: 3 bytes for i16, 5 for i32 and
sizes, 10 for i64) is malformed at once, and a decoded integer must fit its type. Structs, lists,
sets and maps together may nest at most ``_MAX_NESTING`` deep, also inside skipped unknown fields.

After a parse, required fields are checked recursively and every union must have exactly one
member set (Thrift semantics the library itself does not enforce).

Two decoders do the reading, with equal results: :mod:`secure_bloom.native_thrift`
(``secure_bloom/_native/thrift_compact.c``, an optional C extension built at ``pip install``, the
same checks in the same order, ~30x faster) and the bounded thriftpy2 protocol below, used where
the extension is not built or ``SECURE_BLOOM_THRIFT=python`` is set. :data:`BACKEND` says which
one runs and :func:`thrift_info` why. Both create the same thriftpy2 objects (``cls()`` then one
attribute per field), consume the same bytes and fail with the same messages.

Raw fields: :func:`raw_struct` marks a struct field kept as its exact Thrift bytes, checked (every
field, every check) as decoding it would be but not made into objects. :func:`footer_idl` is the
IDL with ``ColumnChunk.meta_data`` kept so (``meta_data_thrift``) and decoded when first read: a
reader decodes the ColumnMetaData of the chunks it looks at, not of every chunk of its footer
(most of a footer's objects: a 100,000-row-group footer decodes ~4x faster).

Picked fields: :func:`parse_fields` reads a few fields of each of many structures of one class
(what a lookup reads of a ColumnMetaData), every other field checked as :func:`parse` checks it
but not made: one native call for the batch, no object per structure.

``python -m benchmarks bench-thrift [FILE.parquet ...]`` (from a checkout) prints the time per footer parse
of both decoders.
"""

from __future__ import annotations

import gc
import re
import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import thriftpy2
from thriftpy2.protocol.compact import CompactType, TCompactProtocol
from thriftpy2.thrift import TException, TType
from thriftpy2.transport import TMemoryBuffer

from .errors import MalformedInputError, MalformedThriftError
from .extensions import load_extension

__all__ = ["idl", "footer_idl", "raw_struct", "parse", "parse_fields", "gc_paused", "gc_paused_for", "GC_PAUSE_BYTES", "serialize", "IDL_FILENAME", "MAX_COLLECTION_ELEMENTS", "BACKEND", "thrift_info",
           "thrift_summary", "forced_backend"]

IDL_FILENAME = "parquet_subset.thrift"
_MAX_NESTING = 64  # Parquet structures nest at most ~8 deep; anything deeper is hostile.
_INT_BITS = {TType.I16: 16, TType.I32: 32, TType.I64: 64}
#: Longest varint of each integer width: ceil(bits / 7) bytes.
_VARINT_BYTES = {16: 3, 32: 5, 64: 10}
#: Collection elements one parse may create, all collections together. Each element costs one
#: input byte but ~170 bytes of Python objects, so without a budget a 256 MiB footer of empty
#: structs would need ~40 GiB. Arrow C++ caps each container at 1,000,000 elements; real footers
#: (10^5 column chunks, ~10 elements each) stay well below this.
MAX_COLLECTION_ELEMENTS = 1 << 22

T = TypeVar("T")
ENV_VAR = "SECURE_BLOOM_THRIFT"


_loaded, _why_not = load_extension("native_thrift", ENV_VAR, "python",
                                   fallback_text="the Python (thriftpy2) Thrift decoder")
_native = _loaded
#: "native" (the C decoder) or "python" (thriftpy2 with bounded reads).
BACKEND = "native" if _native is not None else "python"


@contextmanager
def forced_backend(name: str) -> Iterator[None]:
    """Parse with one decoder, ``"python"`` or ``"native"`` (where it is built, even if
    ``SECURE_BLOOM_THRIFT=python``), whatever :data:`BACKEND` was: for benchmarks and tests that
    compare them in one process. Process-wide and not thread-safe: other threads see the switch.

    Parameters
    ----------
    name : str
        ``"python"`` or ``"native"``.

    Returns
    -------
    context manager
        Restores the previous decoder (and :data:`BACKEND`) on exit.

    Raises
    ------
    ValueError
        ``name`` is neither.
    ImportError
        ``"native"`` and the extension is not built or cannot be loaded (the message says why).
    """
    global _native, BACKEND
    if name not in ("native", "python"):
        raise ValueError(f"backend must be native or python, got {name!r}")
    module = _loaded
    if name == "native" and module is None:  # not loaded: not built, or SECURE_BLOOM_THRIFT=python
        try:
            from . import native_thrift as module
        except ImportError as e:
            raise ImportError(f"the native Thrift decoder is not available: {_why_not}") from e
    saved = _native, BACKEND
    _native, BACKEND = (module, "native") if name == "native" else (None, "python")
    try:
        yield
    finally:
        _native, BACKEND = saved


def thrift_info() -> dict[str, Any]:
    """Which decoder runs, why the native one does not (if so), and how it was built.

    Returns
    -------
    dict
        ``backend`` (``"native"`` or ``"python"``), ``unavailable_reason`` (None when native;
        else the import failure, the ``SECURE_BLOOM_THRIFT`` setting or
        ``"forced_backend('python')"``), and with the native decoder its build details
        (``compiler``, ``flags``...).

    Raises
    ------
    None
        It reports what was loaded at import.
    """
    why = _why_not if _loaded is None or _native is not None else "forced_backend('python')"
    info: dict[str, Any] = {"backend": BACKEND, "unavailable_reason": None if _native is not None else why}
    if _native is not None:
        info.update(_native.info())
    return info


def thrift_summary() -> str:
    """One line naming the decoder in use, e.g. ``native (gcc 12.2.0 -O3)`` or ``python fallback
    (SECURE_BLOOM_THRIFT=python)`` (for ``--version``).

    Returns
    -------
    str
        The line, from :func:`thrift_info`.

    Raises
    ------
    None
        It reports what was loaded at import.
    """
    info = thrift_info()
    if info["backend"] == "native":
        return f"native ({info.get('compiler')} {info.get('flags')})"
    return f"python fallback ({info['unavailable_reason']})"


def _idl_path() -> Path:
    """The IDL ships in the wheel as ``secure_bloom/_idl``; a source checkout reads ``specs/``."""
    packaged = resources.files("secure_bloom").joinpath("_idl").joinpath(IDL_FILENAME)
    if packaged.is_file():
        return Path(str(packaged))
    source = Path(__file__).resolve().parent.parent / "specs" / IDL_FILENAME
    if source.is_file():
        return source
    raise FileNotFoundError(f"Thrift IDL {IDL_FILENAME} not found in the package or in specs/")


@lru_cache(maxsize=1)
def idl() -> ModuleType:
    """The loaded IDL module; its classes are the Parquet structures (``idl().FileMetaData``)."""
    path = _idl_path()
    return thriftpy2.load(str(path), module_name="secure_bloom_parquet_thrift")


@lru_cache(maxsize=None)
def raw_struct(cls: type, name: str) -> type:
    """The spec class of a struct field kept as its exact Thrift bytes (up to and including its
    STOP), checked as ``cls`` when the enclosing struct is decoded; ``name`` is how messages and
    the decoded attribute call the field (``meta_data``).

    Parameters
    ----------
    cls : type
        The IDL struct the bytes hold (``idl().ColumnMetaData``).
    name : str
        The field's name (the raw bytes are ``{name}_thrift``).

    Returns
    -------
    type
        A marker class (``thrift_raw_of`` is ``cls``), one per (cls, name).

    Raises
    ------
    None
        It makes a class.
    """
    return type(f"Raw{cls.__name__}", (), {"__slots__": (), "thrift_raw_of": cls, "thrift_raw_name": name})


def _raw_of(spec: Any) -> Any:
    """The struct class a field spec's raw marker checks as (None: not a raw field)."""
    return getattr(spec, "thrift_raw_of", None) if isinstance(spec, type) else None


class _Decoded:
    """A non-data descriptor: the struct a raw field holds (``{name}_thrift``), decoded (and
    checked) on first read and kept in the instance's dict; None when the raw field is unset."""

    def __init__(self, cls: type, name: str) -> None:
        self.cls, self.name, self.raw = cls, name, f"{name}_thrift"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        raw = obj.__dict__.get(self.raw)
        value = None if raw is None else parse(self.cls, raw, what=self.cls.__name__)[0]
        obj.__dict__[self.name] = value  # one decode; two threads at once store equal objects
        return value


def _field_value(obj: Any, spec: tuple[Any, ...]) -> Any:
    """The value of field ``spec`` of ``obj``: of a raw field, its bytes, or once read or set (the
    struct may have been changed since), the struct's Thrift as it is now (None: unset)."""
    ttype, name = spec[0], spec[1]
    raw_of = _raw_of(spec[2]) if ttype == TType.STRUCT and len(spec) == 4 else None
    if raw_of is None:
        return getattr(obj, name, None)
    decoded = obj.__dict__.get(spec[2].thrift_raw_name, _UNREAD)
    if decoded is _UNREAD:
        return getattr(obj, name, None)
    return None if decoded is None else serialize(decoded)


_UNREAD = object()


def _fields(obj: Any) -> dict[str, Any]:
    """The Thrift fields of ``obj`` by its spec's names (raw fields: :func:`_field_value`)."""
    return {spec[1]: _field_value(obj, spec) for spec in type(obj).thrift_spec.values() if spec is not None}


def _with_raw_fields(cls: Any, raw: dict[int, type], lists: dict[int, type]) -> type:
    """A subclass of the IDL struct ``cls`` with field ids ``raw`` kept as bytes (their class:
    ``raw[fid]``) and decoded on first read, and list fields ``lists`` of other element classes."""
    spec = dict(cls.thrift_spec)  # same ids in the same order
    attrs: dict[str, Any] = {"__module__": __name__, "__qualname__": cls.__name__}
    for fid, target in raw.items():
        ttype, name, _, required = spec[fid]
        spec[fid] = (ttype, f"{name}_thrift", raw_struct(target, name), required)
        attrs[name] = _Decoded(target, name)
    for fid, element in lists.items():
        ttype, name, (etype, _), required = spec[fid]
        spec[fid] = (ttype, name, (etype, element), required)
    attrs["thrift_spec"] = spec
    attrs["default_spec"] = [(field[1], None) for field in spec.values() if field is not None]
    if raw:
        attrs["thrift_raw_fields"] = True  # serialize() writes it field by field (_field_value)
        names = [field[1] for field in spec.values() if field is not None]
        shown = {f"{cls.thrift_spec[fid][1]}_thrift": cls.thrift_spec[fid][1] for fid in raw}
        attrs["__eq__"] = lambda self, other: isinstance(other, type(self)) and _fields(self) == _fields(other)
        attrs["__hash__"] = lambda self: hash((type(self), tuple(map(repr, _fields(self).values()))))
        attrs["__repr__"] = lambda self: "{}({})".format(cls.__name__, ", ".join(
            f"{shown.get(n, n)}={getattr(self, shown.get(n, n))!r}" for n in names))
    made: type = type(cls)(cls.__name__, (cls,), attrs)
    return made


@lru_cache(maxsize=1)
def footer_idl() -> Any:
    """The structures a reader decodes a footer into: the IDL's (subclasses of them), with
    ``ColumnChunk.meta_data`` kept as its exact Thrift (``meta_data_thrift``), checked when the
    footer is decoded and made into a ColumnMetaData when first read (``cc.meta_data``).
    Serialised, a ColumnMetaData never read is written as its bytes, one read (and changed) or
    set as it is now; equal objects have equal fields, read or not.

    Returns
    -------
    object
        ``FileMetaData``, ``RowGroup`` and ``ColumnChunk`` attributes (the others are
        :func:`idl`'s).

    Raises
    ------
    None
        It makes three classes.
    """
    m = idl()
    chunk = _with_raw_fields(m.ColumnChunk, {3: m.ColumnMetaData}, {})
    group = _with_raw_fields(m.RowGroup, {}, {1: chunk})
    meta = _with_raw_fields(m.FileMetaData, {}, {4: group})
    return type("FooterIdl", (), {"FileMetaData": meta, "RowGroup": group, "ColumnChunk": chunk})


@lru_cache(maxsize=1)
def _union_names() -> frozenset[str]:
    text = _idl_path().read_text(encoding="utf-8")
    return frozenset(re.findall(r"^\s*union\s+(\w+)", text, flags=re.MULTILINE))


class _Short(Exception):
    pass


class _BoundedBuffer:
    """A read-only transport over bytes that raises on any read past the end."""

    __slots__ = ("_data", "pos")

    def __init__(self, data: bytes | memoryview) -> None:
        self._data = bytes(data)
        self.pos = 0

    def remaining(self) -> int:
        return len(self._data) - self.pos

    def varint(self, max_bytes: int, what: str) -> int:
        """Consume an unsigned varint of at most ``max_bytes`` bytes."""
        pos, data, value = self.pos, self._data, 0
        for i in range(max_bytes):
            if pos + i >= len(data):
                raise _Short(f"varint at offset {pos} runs past the end")
            byte = data[pos + i]
            value |= (byte & 0x7F) << (7 * i)
            if byte < 0x80:
                self.pos = pos + i + 1
                return value
        raise MalformedThriftError(f"{what} varint at offset {pos} is longer than {max_bytes} bytes")

    def byte(self) -> int:
        if self.pos >= len(self._data):
            raise _Short(f"needs 1 byte at offset {self.pos}, 0 left")
        self.pos += 1
        return self._data[self.pos - 1]

    def taken(self, start: int) -> bytes:
        """The bytes consumed since ``start``."""
        return self._data[start:self.pos]

    def read(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self._data):
            raise _Short(f"needs {n} bytes at offset {self.pos}, {self.remaining()} left")
        out = self._data[self.pos:end]
        self.pos = end
        return out


class _BoundedCompactProtocol(TCompactProtocol):
    """Compact protocol whose sizes are validated against the bytes that remain."""

    def __init__(self, trans: _BoundedBuffer) -> None:
        super().__init__(trans, decode_response=True, strict_decode=True)
        self._bounded = trans
        self._elements_left = MAX_COLLECTION_ELEMENTS
        self._depth = 0

    def _enter(self) -> None:
        self._depth += 1
        if self._depth > _MAX_NESTING:
            raise MalformedThriftError(f"structures and collections nested deeper than {_MAX_NESTING}")

    def _integer(self, bits: int, what: str = "") -> int:
        """A zigzag varint that must fit a signed ``bits``-bit integer."""
        at = self._bounded.pos
        what = what or f"i{bits}"
        raw = self._bounded.varint(_VARINT_BYTES[bits], what)
        value = (raw >> 1) ^ -(raw & 1)
        if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
            raise MalformedThriftError(f"{what} at offset {at} is out of the i{bits} range ({value})")
        return value

    def _read_int(self) -> int:
        return self._integer(64)

    def _read_val(self, ttype: int, spec: Any = None) -> Any:
        bits = _INT_BITS.get(ttype)
        if bits is not None:
            return self._integer(bits)
        raw_of = _raw_of(spec) if ttype == TType.STRUCT else None
        if raw_of is None:
            return super()._read_val(ttype, spec)
        start = self._bounded.pos  # a raw field: decoded as its class (the checks), kept as bytes
        super()._read_val(ttype, raw_of)
        return self._bounded.taken(start)

    def skip(self, ttype: int) -> None:
        bits = _INT_BITS.get(ttype)
        if bits is None:
            super().skip(ttype)
        else:
            self._integer(bits)

    def _read_field_begin(self) -> tuple[None, int, int]:
        """Field header: type nibble and id delta; delta 0 is followed by the id as an i16."""
        header = self._bounded.byte()
        ctype = header & 0x0F
        if ctype == TType.STOP:
            return None, TType.STOP, 0
        delta = header >> 4
        fid = self._last_fid + delta if delta else self._integer(16, "field id")
        self._last_fid = fid
        if ctype == CompactType.TRUE:
            self._bool_value = True
        elif ctype == CompactType.FALSE:
            self._bool_value = False
        return None, self._get_ttype(ctype), fid

    def _take_elements(self, size: int) -> None:
        self._elements_left -= size
        if self._elements_left < 0:
            raise MalformedThriftError(
                f"more than {MAX_COLLECTION_ELEMENTS} collection elements in one structure")

    def _read_size(self) -> int:
        size = self._bounded.varint(_VARINT_BYTES[32], "size")
        if size > self._bounded.remaining():
            raise _Short(f"declared size {size} exceeds the {self._bounded.remaining()} bytes left")
        return int(size)

    def _read_collection_begin(self) -> tuple[int, int]:
        self._enter()
        ttype, size = super()._read_collection_begin()
        if size > self._bounded.remaining():
            raise _Short(f"collection of {size} elements exceeds the {self._bounded.remaining()} bytes left")
        if size and ttype == TType.STOP:
            raise MalformedThriftError("collection with elements of type STOP")
        self._take_elements(size)
        return ttype, size

    def _read_map_begin(self) -> tuple[int, int, int]:
        self._enter()
        ktype, vtype, size = super()._read_map_begin()
        if size > self._bounded.remaining():
            raise _Short(f"map of {size} entries exceeds the {self._bounded.remaining()} bytes left")
        if size and (ktype == TType.STOP or vtype == TType.STOP):
            raise MalformedThriftError("map with entries of type STOP")
        self._take_elements(size)
        return ktype, vtype, size

    def _read_collection_end(self) -> None:
        self._depth -= 1

    def _read_struct_begin(self) -> None:
        self._enter()
        super()._read_struct_begin()

    def _read_struct_end(self) -> None:
        self._depth -= 1
        super()._read_struct_end()


def parse(cls: type[T], data: bytes | memoryview, *, what: str | None = None,
          error: type[MalformedInputError] | None = None) -> tuple[T, int]:
    """Parse one ``cls`` structure from the start of ``data``.

    Returns ``(obj, consumed)`` where ``consumed`` counts the bytes up to and including the
    structure's STOP byte; what follows is the caller's business. Both decoders (native, or
    thriftpy2 with bounded reads) accept and refuse the same bytes: at most 64 levels of
    nesting and :data:`MAX_COLLECTION_ELEMENTS` collection elements, required fields present,
    a union with exactly one member.

    Parameters
    ----------
    cls : type
        A structure of the IDL (``idl().FileMetaData``, ``idl().BloomFilterHeader``...).
    data : bytes or memoryview
        Compact-protocol bytes starting with the structure.
    what : str, optional
        How messages name the structure (default: the class name).
    error : type, optional
        The :class:`MalformedInputError` subclass to raise (default
        :class:`MalformedThriftError`; e.g. ``MalformedHeaderError``).

    Returns
    -------
    (object, int)
        The structure and the bytes it took, up to and including its STOP byte.

    Raises
    ------
    secure_bloom.errors.MalformedInputError
        ``error`` (default ``MalformedThriftError``): truncated or invalid compact encoding, too
        deep, too many elements, a required field missing or a union not of one member.
    """
    name = what or cls.__name__
    exc = error or MalformedThriftError
    if len(data) < GC_PAUSE_BYTES:  # the common case, without a context manager's cost
        return _parse(cls, data, name, exc)
    with gc_paused_for(len(data)):
        return _parse(cls, data, name, exc)


def parse_fields(cls: type, datas: Sequence[bytes | memoryview], names: tuple[str, ...], *,
                 zero_padding: bool = False) -> list[tuple[tuple[Any, ...], int] | None]:
    """The fields ``names`` of one ``cls`` structure at the start of each of ``datas``, the
    structure checked as :func:`parse` checks it (its other fields decoded but not made).

    Parameters
    ----------
    cls : type
        A structure of the IDL (``idl().ColumnMetaData``).
    datas : sequence of bytes-like
        Compact-protocol bytes, each starting with a structure.
    names : tuple of str
        Top-level fields of ``cls``.
    zero_padding : bool, default False
        The bytes after each structure's STOP must all be zero (a decrypted module's padding,
        Encryption.md).

    Returns
    -------
    list of ((values, consumed) or None)
        Per input, the fields' values in ``names`` order (None: not set) and the bytes up to
        and including the STOP; None where :func:`parse` would raise (or, native, where only its
        required-field check can say): the caller parses that input with :func:`parse`, which
        names the problem (or gives the structure).

    Raises
    ------
    ValueError
        A name is not a field of ``cls``.
    """
    fids = _field_ids(cls, names)
    native = _native
    if native is not None:
        try:
            picked: list[tuple[tuple[Any, ...], int] | None] = native.decode_fields(
                cls, datas, fids, _MAX_NESTING, MAX_COLLECTION_ELEMENTS, _union_names(), zero_padding)
            return picked
        except (native.UnsupportedSpec, BufferError):  # a map field, a non-contiguous buffer
            pass
    out: list[tuple[tuple[Any, ...], int] | None] = []
    for data in datas:
        try:
            obj, used = _parse(cls, data, cls.__name__, MalformedThriftError)  # type: tuple[Any, int]
        except MalformedInputError:
            out.append(None)
            continue
        rest = bytes(memoryview(data)[used:])
        out.append(None if zero_padding and rest.count(0) != len(rest)
                   else (tuple(getattr(obj, name) for name in names), used))
    return out


@lru_cache(maxsize=None)
def _field_ids(cls: type, names: tuple[str, ...]) -> tuple[int, ...]:
    """The field ids of ``names`` in ``cls.thrift_spec``."""
    by_name = {spec[1]: fid for fid, spec in cls.thrift_spec.items()}  # type: ignore[attr-defined]
    missing = [name for name in names if name not in by_name]
    if missing:
        raise ValueError(f"{cls.__name__} has no field {missing[0]!r}")
    return tuple(by_name[name] for name in names)


#: Structures encoded in at least this many bytes are decoded with the cyclic GC paused.
GC_PAUSE_BYTES = 64 << 10


class _GcPause:
    """The process's one pause of the cyclic garbage collector, reentrant and shared by threads:
    the first entry turns the collector off (if it is on: otherwise it is the caller's choice and
    is left alone), the last exit turns it back on. Concurrent pauses on several threads thus
    never turn it on under one another, nor leave it off. Python's collector switch is one flag
    for the process with no owner: a ``gc.disable()`` another thread makes while a pause is on
    cannot be told from the pause's own, and the last exit turns the collector back on; code
    that keeps the collector off does so before its first lookup, or keeps it off itself."""

    __slots__ = ("_lock", "_depth", "_was_enabled")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._was_enabled = False

    def __enter__(self) -> None:
        with self._lock:
            if self._depth == 0:
                self._was_enabled = gc.isenabled()
                if self._was_enabled:
                    gc.disable()
            self._depth += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._was_enabled:
                gc.enable()


_GC_PAUSE = _GcPause()
_NO_PAUSE = nullcontext()


def gc_paused() -> AbstractContextManager[None]:
    """Pause Python's cyclic garbage collector while objects none of which are in a cycle are
    made in bulk (a large footer, the ColumnMetaData of many row groups): a collection in the
    middle would walk them, and every object already alive (a large footer's), again and again.
    Reentrant and shared by threads (one pause for the process: see :class:`_GcPause`); leaves
    the collector alone when it is off already (the caller's choice).

    Returns
    -------
    context manager
        Restores the collector when the last pause ends.

    Raises
    ------
    None
        Nothing of its own: what the body raises propagates, the collector restored.
    """
    return _GC_PAUSE


def gc_paused_for(nbytes: int) -> AbstractContextManager[None]:
    """:func:`gc_paused` while the objects of ``nbytes`` of Thrift (at least
    :data:`GC_PAUSE_BYTES`) are made: a large footer becomes millions of objects (a
    100,000-row-group footer opened 2.5x faster); nothing for smaller inputs.

    Parameters
    ----------
    nbytes : int
        The size of the Thrift to decode.

    Returns
    -------
    context manager
        Restores the collector on exit.

    Raises
    ------
    None
        Nothing of its own: what the body raises propagates, the collector restored.
    """
    return _GC_PAUSE if nbytes >= GC_PAUSE_BYTES else _NO_PAUSE


def _parse(cls: type[T], data: bytes | memoryview, name: str, exc: type[MalformedInputError]) -> tuple[T, int]:
    obj, consumed, needs_check = _decode(cls, data, name, exc)
    if needs_check:  # a problem the decoder found (the Python one always asks): _check names it
        _check(obj, name, exc)
    return obj, consumed


def _decode(cls: type[T], data: bytes | memoryview, name: str,
            exc: type[MalformedInputError]) -> tuple[T, int, bool]:
    """(object, bytes consumed, whether required fields and unions still need :func:`_check`)."""
    native = _native
    if native is None:
        return (*_parse_python(cls, data, name, exc), True)
    try:
        obj, consumed, needs_check = native.decode(cls, data, _MAX_NESTING, MAX_COLLECTION_ELEMENTS,
                                                   _union_names())
    except native.DecodeError as e:
        kind, message, nbytes = e.args
        if kind == "short":
            raise exc(f"{name}: truncated Thrift ({message}; {nbytes} bytes given)") from None
        if kind == "malformed":
            raise exc(f"{name}: {message}") from None
        raise exc(f"{name}: invalid Thrift compact encoding ({message})") from None
    except (native.UnsupportedSpec, BufferError):  # a map field, a non-contiguous buffer
        return (*_parse_python(cls, data, name, exc), True)
    return obj, consumed, needs_check


def _parse_python(cls: type[T], data: bytes | memoryview, name: str,
                  exc: type[MalformedInputError]) -> tuple[T, int]:
    buf = _BoundedBuffer(data)
    obj = cls()
    try:
        _BoundedCompactProtocol(buf).read_struct(obj)
    except _Short as e:
        raise exc(f"{name}: truncated Thrift ({e}; {len(buf._data)} bytes given)") from None
    except MalformedThriftError as e:
        raise exc(f"{name}: {e}") from None
    except (TException, struct.error, KeyError, TypeError, ValueError, IndexError,
            UnicodeDecodeError, RecursionError, OverflowError) as e:
        raise exc(f"{name}: invalid Thrift compact encoding ({type(e).__name__})") from None
    return obj, buf.pos


def _check(obj: Any, where: str, exc: type[MalformedInputError]) -> None:
    """Required fields present, unions with exactly one member, recursively."""
    spec = type(obj).thrift_spec
    is_union = type(obj).__name__ in _union_names()
    set_members = 0
    for field in spec.values():
        ttype, fname = field[0], field[1]
        required = field[-1] is True
        value = getattr(obj, fname, None)
        if value is None:
            if required:
                raise exc(f"{where}: required field {fname!r} missing")
            continue
        set_members += 1
        raw_of = _raw_of(field[2]) if ttype == TType.STRUCT and len(field) == 4 else None
        if raw_of is not None:  # a raw field: its struct, decoded again for the check that names the problem
            inner, _, _ = _decode(raw_of, value, f"{where}.{field[2].thrift_raw_name}", exc)
            _check(inner, f"{where}.{field[2].thrift_raw_name}", exc)
        elif ttype == TType.STRUCT:
            _check(value, f"{where}.{fname}", exc)
        elif ttype == TType.LIST and isinstance(field[2], tuple) and field[2][0] == TType.STRUCT:
            for i, item in enumerate(value):
                _check(item, f"{where}.{fname}[{i}]", exc)
    if is_union and set_members != 1:
        raise exc(f"{where}: union {type(obj).__name__} has {set_members} members set, needs exactly 1")


def serialize(obj: Any) -> bytes:
    """Compact-protocol bytes of ``obj`` (fields in id order, as every Parquet writer emits;
    unset fields are left out).

    Parameters
    ----------
    obj : object
        A structure of the IDL.

    Returns
    -------
    bytes
        Its compact-protocol encoding, ending with the STOP byte.

    Raises
    ------
    TypeError
        A field holds a value of the wrong Python type.
    thriftpy2.protocol.exc.TProtocolException
        An integer outside its field's width (e.g. an i32 over 2**31 - 1).
    """

    trans = TMemoryBuffer()
    _RawCompactProtocol(trans).write_struct(obj)
    return bytes(trans.getvalue())


class _RawCompactProtocol(TCompactProtocol):
    """thriftpy2's compact writer; a raw field (:func:`raw_struct`) is written as its bytes, or
    once read or set, as the struct is now."""

    def write_struct(self, obj: Any) -> None:
        if not getattr(obj, "thrift_raw_fields", False):  # nested structs come back here, each on its own
            super().write_struct(obj)
            return
        self._write_struct_begin()
        for fid, spec in obj.thrift_spec.items():  # the IDL's order: ids ascending
            if spec is None:
                continue
            value = _field_value(obj, spec)
            if value is None:
                continue
            self._write_field_begin(spec[1], spec[0], fid)
            if isinstance(value, bytes) and spec[0] == TType.STRUCT:  # a raw field's Thrift
                self.trans.write(value)
            else:
                self._write_val(spec[0], value, spec[2] if len(spec) == 4 else None)
            self._write_field_end()
        self._write_field_stop()
        self._write_struct_end()

