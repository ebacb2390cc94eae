"""The per-file mechanics of pruning, lean: what :mod:`.prune` asks of a file, without a reader.

:mod:`.prune` decides (statistics, then Bloom filters) through a *source* that answers two
questions per row group and leaf column: its bounds and its filter. Its reference source opens
a :class:`~secure_bloom.parquet.file.reader.ParquetBloomReader`, which indexes every chunk, keeps
Python objects per chunk and resolves keys and crypto contexts per file. :class:`FastSource`
answers the same questions for one local file with the least work:

* the tail is read with the same three reads the reader makes (so ``metadata_bytes_read`` and
  ``metadata_requests`` are unchanged), the footer decrypted (or its signature checked);
* the footer is checked as the reader checks it (chunk counts, crypto metadata paths, ordinals,
  metadata presence), but only the chunks of the filtered columns are looked at further;
* a ColumnMetaData is decrypted and parsed only when the evaluator asks for its bounds or
  filter location, a filter only when it asks for the filter;
* one AES-GCM context per data key for the whole lookup, and each distinct self-contained key
  metadata unwrapped once per lookup (:class:`LookupKeys`);
* the ColumnMetaData of a filtered column decrypted for all its row groups at once, and the
  filters the evaluator asks for probed together (:meth:`FastSource.fetch_filters`: the
  evaluator first collects the row groups whose statistics did not rule them out, so exactly the
  filters the reference path reads are read).

Where the optional C extension ``secure_bloom.native_prune`` (secure_bloom/_native/prune.c,
OpenSSL's EVP AES-GCM) is built, the decrypts, filter reads, header checks and probes run there
with the GIL released (``SECURE_BLOOM_PRUNE=python`` chooses the Python twin below: cryptography's
AES-GCM, :class:`BitsetProbe`). Its answers are those of the Python twin, bit for bit; whatever it
refuses (it accepts only the header encoding every writer emits) is declined.

The decisions are not here: :func:`~secure_bloom.parquet.read.prune.prune_files` runs the same
evaluator over either source. This module only ever *declines*: anything it does not handle (an
object store, a filter without ``bloom_filter_length``, external key material it cannot pin to
one file, a missing key, and every error: a truncated or tampered file, a failed tag) makes
:func:`fast_source` or the source's methods raise :class:`Declined`, and the caller prunes that
file with the reference path, which gives the answer or the named error.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Sequence
from typing import Any

from ... import thrift_codec
from ...crypto.gcm import GcmKey, decrypt
from ...extensions import load_extension
from ...crypto.modules import MAX_ORDINAL, ModuleType, chunk_ordinals, footer_aad, module_aad_prefix
from ...encrypted_filter import COALESCED_FILTER_BYTES, MAX_ENCRYPTED_FILTER_BYTES
from ...errors import AuthenticationError, SecureBloomError
from ...fileio import open_regular_stat
from ...header import parse_header_plaintext
from ...kms import KeyMetadata
from ...sbbf_numpy import SALT
from ...spec import (
    BYTES_PER_BLOCK,
    LENGTH_PREFIX,
    MAX_HEADER_BYTES,
    MIN_BITSET_BYTES,
    NONCE_LENGTH,
    SPEC_MAX_BITSET_BYTES,
    TAG_LENGTH,
)
from ..file.crypto_context import (
    SIGNATURE_LENGTH,
    EncryptionParams,
    resolve_file_aad,
    verify_footer_signature,
)
from ..file.arrow_source import kms_path_opens
from ..file.filter_io import check_plaintext_header
from ..file.identity import Identity, local_identity
from ..file.keys import KeyAccess
from ..file.schema import ColumnInfo, leaf_columns
from ..file.sources import locate
from ..file.tail import ENCRYPTED_MAGIC, MAX_FOOTER_BYTES, PLAIN_MAGIC
from .statistics import Bounds, chunk_bounds, stat_kind

__all__ = ["Declined", "LookupKeys", "FileKeys", "FastSource", "BitsetProbe", "fast_source", "close_source", "NATIVE",
           "NATIVE_UNAVAILABLE"]

#: The environment switch of the native path: ``auto`` (default), ``native`` (demand it) or ``python``.
ENV_VAR = "SECURE_BLOOM_PRUNE"
_native, NATIVE_UNAVAILABLE = load_extension("native_prune", ENV_VAR, "python",
                                             fallback_text="the Python pruning path (cryptography's AES-GCM)",
                                             remedy="Install OpenSSL's libcrypto (1.1 or 3: the libssl3 or "
                                                    "openssl-libs package), which it loads at run time, or "
                                                    "reinstall with a C compiler and the Python headers")
#: Whether the native reads, decrypts and probes are in use.
NATIVE = _native is not None
_NATIVE_ERRORS: tuple[type[BaseException], ...] = (
    (_native.Failed, ValueError, TypeError, OverflowError) if _native is not None else ())

_MODULE_GCM = NONCE_LENGTH + TAG_LENGTH
_MAX_THRIFT_MODULE = 256 << 20
_LEN = struct.Struct("<I")
_BLOCK = struct.Struct("<8I")
_SALTS = tuple(SALT)
#: Distinct schemas a lookup remembers the leaf columns of (most datasets have one).
_LAYOUTS = 8
#: Not asked yet (a bounds value may be None).
_NOT_SEEN = object()


class BitsetProbe:
    """A filter's bitset probed where it lies (the decrypted or read bytes; never kept): the
    evaluator's one or few hashes per row group, without building a
    :class:`~secure_bloom.filter.SplitBlockBloomFilter` (whose ``check_hash`` this is, bit for
    bit: floor(size / 32) blocks, the tail bytes ignored)."""

    __slots__ = ("_raw", "num_blocks")

    def __init__(self, raw: bytes | memoryview) -> None:
        if not MIN_BITSET_BYTES <= len(raw) <= SPEC_MAX_BITSET_BYTES:
            raise Declined("bitset size")
        self._raw = raw
        self.num_blocks = len(raw) // BYTES_PER_BLOCK

    def check_hash(self, h: int) -> bool:
        """Whether the filter may contain hash ``h`` (an unsigned 64-bit int)."""
        key = h & 0xFFFFFFFF
        words = _BLOCK.unpack_from(self._raw, (((h >> 32) * self.num_blocks) >> 32) * BYTES_PER_BLOCK)
        for word, salt in zip(words, _SALTS):
            if not word >> (((key * salt) & 0xFFFFFFFF) >> 27) & 1:
                return False
        return True


class Declined(Exception):
    """This file is not for the fast path: prune it with the reference path. Never escapes
    :func:`~secure_bloom.parquet.read.prune.prune_files` (not a :class:`SecureBloomError`: it is
    control flow, not an outcome)."""


def _cipher(raw: bytes) -> Any:
    """The decrypt context of one data key: the native key where built, else a :class:`GcmKey`."""
    return _native.GcmKey(raw) if _native is not None else GcmKey(raw)


def _same_schema(known: Sequence[Any], schema: Sequence[Any]) -> bool:
    """``known == schema`` for two lists of Thrift SchemaElements, the elements' fields compared
    without a Python ``__eq__`` per element (a subclass is "not the same": built anew)."""
    if known is schema:
        return True
    if len(known) != len(schema):
        return False
    for a, b in zip(known, schema):
        if type(a) is not type(b) or a.__dict__ != b.__dict__:
            return False
    return True


class LookupKeys:
    """What one lookup (one :func:`prune_files` call) shares across its files: its keys (each
    distinct key metadata unwrapped once, one decrypt context per data key: :meth:`cipher`) and
    its column layouts (the leaf columns of each distinct schema, built once). Dropped with the lookup, so
    it holds keys no longer than the lookup; shared by its worker threads. Key metadata naming
    external key material (a sidecar per file) is never shared across files."""

    def __init__(self, keys: KeyAccess) -> None:
        self.keys = keys
        self._lock = threading.Lock()
        self._unwrapped: dict[tuple[bytes | None, bytes], bytes] = {}
        self._contained: dict[bytes, bool] = {}
        self._gcm: dict[bytes, Any] = {}
        self._layouts: list[tuple[Sequence[Any], tuple[ColumnInfo, ...]]] = []

    def leaf_columns(self, schema: Sequence[Any]) -> tuple[ColumnInfo, ...]:
        """:func:`~secure_bloom.parquet.file.schema.leaf_columns` of ``schema``, once per distinct
        schema among the last :data:`_LAYOUTS` (Thrift structs compare by value; comparing is
        ten times cheaper than building the columns, hashing them no cheaper)."""
        for known, columns in self._layouts:
            if _same_schema(known, schema):
                return columns
        columns = tuple(leaf_columns(schema))
        with self._lock:
            self._layouts = [(schema, columns), *self._layouts[:_LAYOUTS - 1]]
        return columns

    def __repr__(self) -> str:
        return f"LookupKeys(keys held={len(self._gcm)})"

    def _self_contained(self, kmd: bytes) -> bool:
        """Whether ``kmd`` names its key by itself (an explicit key id, or key material inside
        it), not through the file's sidecar."""
        known = self._contained.get(kmd)
        if known is None:
            if not KeyMetadata.looks_like_key_tools(kmd):
                known = True
            else:
                try:
                    known = KeyMetadata.from_bytes(kmd).material is not None
                except (SecureBloomError, ValueError):
                    known = False
            self._contained[kmd] = known
        return known

    def for_file(self, path: str) -> FileKeys:
        return FileKeys(self, path)

    def cipher(self, raw: bytes) -> Any:
        """The one decrypt context of data key ``raw`` in this lookup."""
        found = self._gcm.get(raw)
        if found is None:
            made = _cipher(raw)
            with self._lock:
                found = self._gcm.setdefault(raw, made)
        return found


class FileKeys:
    """The keys of one file in a lookup: its own unwrapper (made on first need), each key
    metadata looked up once in this file, then in the lookup's shared keys (self-contained key
    metadata only: the same bytes with the same footer key metadata name the same key)."""

    def __init__(self, lookup: LookupKeys, path: str) -> None:
        self._lookup = lookup
        self._path = path
        self._unwrap: Any = None
        self._mine: dict[bytes, Any] = {}
        self._footer_kmd: bytes | None = None

    def key(self, kmd: bytes, *, footer: bool = False) -> Any:
        """The decrypt context of the key ``kmd`` names (``footer``: the footer key, asked first).
        Declined when missing."""
        found = self._mine.get(kmd)
        if found is not None:
            return found
        return self.hold(kmd, self.raw(kmd, footer=footer))

    def hold(self, kmd: bytes, raw: bytes) -> Any:
        """Remember ``raw`` (from :meth:`raw`) as this file's key for ``kmd``; its decrypt context."""
        gcm = self._mine[kmd] = self._lookup.cipher(raw)
        return gcm

    def raw(self, kmd: bytes, *, footer: bool = False) -> bytes:
        """The bytes of the key ``kmd`` names (see :meth:`key`)."""
        lookup = self._lookup
        at = (None if footer else self._footer_kmd, kmd)
        shared = lookup._unwrapped.get(at)
        if shared is not None and lookup._self_contained(kmd) and (at[0] is None or lookup._self_contained(at[0])):
            if footer:
                self._footer_kmd = kmd
            return shared
        try:
            if self._unwrap is None:
                self._unwrap = lookup.keys.retriever(self._path)
                if not footer and self._footer_kmd is not None:
                    self._unwrap(self._footer_kmd)  # as the reader does: the footer's material first
            raw = bytes(self._unwrap(kmd))
        except Exception:  # noqa: BLE001 - any failure is the reference path's to name
            raise Declined("key") from None
        with lookup._lock:
            lookup._unwrapped[at] = raw
        if footer:
            self._footer_kmd = kmd
        return raw


def _pread(fd: int, offset: int, n: int, reads: list[tuple[int, int]]) -> bytes:
    data = os.pread(fd, n, offset)
    reads.append((offset, len(data)))
    if len(data) != n:
        raise Declined("short read")
    return data


def _fail() -> AuthenticationError:
    return AuthenticationError("module")


def _decrypt(module: memoryview, key: Any, aad: bytes, max_plaintext: int) -> bytes:
    """The plaintext of the module (``length | nonce | ciphertext | tag``) filling ``module``
    exactly, its length checked as :func:`~secure_bloom.crypto.modules.decrypt_module` checks it
    (whose errors the reference path names)."""
    if _native is not None:
        return _decrypt_many([module], key, [aad], max_plaintext)[0]
    return _python_decrypt(module, key, aad, max_plaintext)


def _python_decrypt(module: memoryview, key: GcmKey, aad: bytes, max_plaintext: int) -> bytes:
    """:func:`_decrypt` by Python (cryptography's AES-GCM): the twin of ``GcmKey.decrypt_modules``."""
    if len(module) < LENGTH_PREFIX:
        raise Declined("module")
    (length,) = _LEN.unpack_from(module, 0)
    if not _MODULE_GCM <= length <= _MODULE_GCM + max_plaintext or length != len(module) - LENGTH_PREFIX:
        raise Declined("module length")
    try:
        return decrypt(key, module[LENGTH_PREFIX:], aad, error=_fail)
    except AuthenticationError:
        raise Declined("module") from None


def _decrypt_many(modules: list[Any], key: Any, aads: list[bytes], max_plaintext: int) -> list[bytes]:
    """:func:`_decrypt` of each module with its AAD (natively: one call, the GIL released)."""
    if _native is None:
        return [_python_decrypt(memoryview(m), key, a, max_plaintext) for m, a in zip(modules, aads)]
    try:
        plains: list[bytes] = key.decrypt_modules(modules, aads, max_plaintext)
    except _NATIVE_ERRORS:
        raise Declined("module") from None
    return plains


def _parse(cls: Any, data: bytes | memoryview, padded: bool) -> Any:
    """One Thrift struct filling ``data`` (``padded``: then only zero padding)."""
    try:
        obj, used = thrift_codec.parse(cls, data)
    except SecureBloomError:
        raise Declined("thrift") from None
    rest = memoryview(data)[used:]
    if rest and (not padded or bytes(rest).count(0) != len(rest)):
        raise Declined("trailing bytes")
    return obj


class FastSource:
    """A file's :class:`~.evaluate.RowGroupFacts` (as :class:`~.facts.ReaderFacts` gives them):
    ``num_row_groups``, ``columns``, ``type_order``, :meth:`bounds` and :meth:`may_contain`.
    Made by :func:`fast_source`; every method raises :class:`Declined` for what it does not
    handle. ``reads`` lists every (offset, length) read."""

    def __init__(self, path: str, fd: int, size: int, footer_offset: int, metadata: Any,
                 columns: Sequence[ColumnInfo], file_aad: bytes | None, footer_kmd: bytes | None,
                 footer_gcm: Any, file_keys: FileKeys | None, reads: list[tuple[int, int]]) -> None:
        self.path = path
        self._fd = fd
        self.file_size = size
        #: the version read (:func:`~secure_bloom.parquet.file.identity.local_identity` of the descriptor)
        self.identity: Identity | None = None
        #: the file's encryption parameters (None: a plaintext footer without encryption)
        self.params: EncryptionParams | None = None
        self._data_end = footer_offset
        self._md = metadata
        self.columns = tuple(columns)
        self.num_row_groups = len(metadata.row_groups)
        self._file_aad = file_aad
        self._footer_kmd = footer_kmd
        self._footer_gcm = footer_gcm
        self._keys = file_keys
        self.reads = reads
        self._meta: dict[int, list[tuple[Any, Any, bytes]]] = {}
        self._bounds: dict[tuple[int, int], Bounds | None] = {}
        #: per column ordinal asked: its :func:`stat_kind` and whether its ColumnOrder is TYPE_ORDER
        self._kinds: dict[int, tuple[str | None, bool]] = {}

    @property
    def type_order(self) -> frozenset[int]:
        """The column ordinals whose ColumnOrder is TYPE_ORDER."""
        orders = getattr(self._md, "column_orders", None) or []
        return frozenset(i for i, o in enumerate(orders) if getattr(o, "TYPE_ORDER", None) is not None)

    def _type_order(self, ordinal: int) -> bool:
        """Whether ``ordinal`` is in :attr:`type_order` (without building it)."""
        orders = getattr(self._md, "column_orders", None) or []
        return ordinal < len(orders) and getattr(orders[ordinal], "TYPE_ORDER", None) is not None

    # the chunk's metadata, key and AAD ordinals

    def _chunk(self, rg: int, info: ColumnInfo) -> tuple[Any, Any, bytes]:
        chunks = self._meta.get(info.ordinal)
        if chunks is None:
            chunks = self._meta[info.ordinal] = self._leaf_chunks(info)
        return chunks[rg]

    def _leaf_chunks(self, info: ColumnInfo) -> list[tuple[Any, Any, bytes]]:
        """(ColumnMetaData, key, AAD ordinals) of the leaf's chunk in every row group: the
        encrypted ColumnMetaData decrypted together (one call per key), then parsed."""
        chunks: list[tuple[Any, Any, bytes]] = []
        batches: dict[int, tuple[Any, list[int], list[Any], list[bytes]]] = {}
        prefix = b""  # the AAD up to the ordinals, made at the first encrypted ColumnMetaData
        for rg, group in enumerate(self._md.row_groups):
            cc = group.columns[info.ordinal]
            crypto = cc.crypto_metadata
            if crypto is None:
                chunks.append((cc.meta_data, None, b""))
                continue
            ordinal = group.ordinal if group.ordinal is not None else rg
            tail = chunk_ordinals(ordinal, info.ordinal)  # checked in range by fast_source
            key = self._key(crypto)
            module = cc.encrypted_column_metadata
            chunks.append((cc.meta_data if module is None else None, key, tail))
            if module is not None:
                batch = batches.get(id(key))
                if batch is None:
                    batch = batches[id(key)] = (key, [], [], [])
                batch[1].append(rg)
                batch[2].append(module)
                if not prefix:
                    prefix = self._aad(ModuleType.COLUMN_META_DATA, b"")
                batch[3].append(prefix + tail)
        cls = thrift_codec.idl().ColumnMetaData
        for key, rgs, modules, aads in batches.values():
            for rg, plain in zip(rgs, _decrypt_many(modules, key, aads, _MAX_THRIFT_MODULE)):
                chunks[rg] = (_parse(cls, plain, padded=True), key, chunks[rg][2])
        return chunks

    def _aad(self, module_type: ModuleType, ordinals: bytes) -> bytes:
        if self._file_aad is None:
            raise Declined("file AAD")
        return module_aad_prefix(self._file_aad, module_type) + ordinals

    def _key(self, crypto: Any) -> Any:
        if crypto.ENCRYPTION_WITH_FOOTER_KEY is not None:
            if self._footer_gcm is None:
                raise Declined("footer key")
            return self._footer_gcm
        if self._keys is None:
            raise Declined("no keys")
        kmd = crypto.ENCRYPTION_WITH_COLUMN_KEY.key_metadata
        if kmd is None:
            raise Declined("no key metadata")
        return self._keys.key(bytes(kmd))

    # what the evaluator asks

    def shared_format_opens(self) -> bool:
        """What :func:`~secure_bloom.parquet.file.arrow_source.shared_format_opens` says of this
        file (pyarrow's one KMS-configured format opens it), from the footer already read: a
        plaintext footer, or the footer key and every column key of its own key tools material
        and the AAD prefix not withheld."""
        if self.params is None:
            return True
        column_keys = [crypto.ENCRYPTION_WITH_COLUMN_KEY.key_metadata
                       for group in self._md.row_groups for cc in group.columns
                       if (crypto := cc.crypto_metadata) is not None and crypto.ENCRYPTION_WITH_COLUMN_KEY is not None]
        return kms_path_opens(self.params, self._footer_kmd, column_keys)

    def bounds(self, info: ColumnInfo, row_groups: Sequence[int]) -> list[Bounds | None]:
        """Each row group's statistics of ``info`` (:class:`~.evaluate.RowGroupFacts`): the
        column's ColumnMetaData of every row group decrypted together on first need."""
        known = self._kinds.get(info.ordinal)
        if known is None:
            known = self._kinds[info.ordinal] = (stat_kind(info), self._type_order(info.ordinal))
        out = []
        for rg in row_groups:
            at = (rg, info.ordinal)
            found = self._bounds.get(at, _NOT_SEEN)
            if found is _NOT_SEEN:
                found = self._bounds[at] = chunk_bounds(self._chunk(rg, info)[0], info, known[1], known[0])
            out.append(found)
        return out

    def may_contain(self, info: ColumnInfo, row_groups: Sequence[int], hashes: Sequence[int]) -> list[bool]:
        """Per row group, whether its filter of ``info`` may hold any of ``hashes``
        (:class:`~.evaluate.RowGroupFacts`): the filters read and probed together (natively:
        one call per key, the GIL released); a chunk without a filter may."""
        requests: dict[int, tuple[Any, list[int], list[tuple[int, int, bytes, bytes]]]] = {}
        answers: dict[int, bool] = {}
        header = bitset = b""
        for rg in row_groups:
            location = self._location(rg, info)
            if location is None:
                answers[rg] = True
                continue
            if _native is None:
                probe = self._read_filter(rg, info)
                answers[rg] = any(probe.check_hash(h) for h in hashes)
                continue
            _, key, ordinals = self._chunk(rg, info)
            group = requests.get(id(key))
            if group is None:
                group = requests[id(key)] = (key, [], [])
            group[1].append(rg)
            if key is None:
                group[2].append((*location, b"", b""))
            else:
                if not header:
                    header = self._aad(ModuleType.BLOOM_FILTER_HEADER, b"")
                    bitset = self._aad(ModuleType.BLOOM_FILTER_BITSET, b"")
                group[2].append((*location, header + ordinals, bitset + ordinals))
        column = tuple(hashes)
        for key, rgs, batch in requests.values():
            try:
                found, reads = _native.probe_filters(self._fd, self._data_end, key, batch, column)
            except _NATIVE_ERRORS:
                raise Declined("filter") from None
            self.reads.extend(reads)
            for rg, bits in zip(rgs, found):
                answers[rg] = any(bits)
        return [answers[rg] for rg in row_groups]

    def _location(self, rg: int, info: ColumnInfo) -> tuple[int, int] | None:
        """The filter's (offset, length), checked; None when the chunk has no filter."""
        meta = self._chunk(rg, info)[0]  # FilterLocation.of, without the object
        if meta is None or meta.bloom_filter_offset is None:
            return None
        offset = int(meta.bloom_filter_offset)
        length = None if meta.bloom_filter_length is None else int(meta.bloom_filter_length)
        if length is None or length > COALESCED_FILTER_BYTES or length <= 0 or offset < 4 \
                or offset >= self._data_end or offset + length > self._data_end:
            raise Declined("filter location")
        return offset, length

    def _read_filter(self, rg: int, info: ColumnInfo) -> BitsetProbe:
        """The filter read and checked by Python (without the native extension)."""
        _, key, ordinals = self._chunk(rg, info)
        location = self._location(rg, info)
        if location is None:
            raise Declined("no filter")
        offset, length = location
        data = memoryview(_pread(self._fd, offset, length, self.reads))
        if key is None:
            return _python_filter(data, None, b"", b"")
        return _python_filter(data, key, self._aad(ModuleType.BLOOM_FILTER_HEADER, ordinals),
                              self._aad(ModuleType.BLOOM_FILTER_BITSET, ordinals))


def _python_filter(data: memoryview, key: GcmKey | None, header_aad: bytes, bitset_aad: bytes) -> BitsetProbe:
    """The filter filling ``data`` (its location checked), read by Python: the plaintext header
    checked, or both modules decrypted and checked (the twin of ``native_prune.probe_filters``)."""
    length = len(data)
    if key is None:
        try:
            _, used = check_plaintext_header(data, length, length, "filter")
            return BitsetProbe(data[used:])
        except SecureBloomError:
            raise Declined("plaintext filter") from None
    if length < 2 * (LENGTH_PREFIX + _MODULE_GCM) or length > MAX_ENCRYPTED_FILTER_BYTES:
        raise Declined("filter length")
    (first,) = _LEN.unpack_from(data, 0)
    used = LENGTH_PREFIX + first
    if first > _MODULE_GCM + MAX_HEADER_BYTES or used + LENGTH_PREFIX > length:
        raise Declined("header module")
    header = _python_decrypt(data[:used], key, header_aad, MAX_HEADER_BYTES)
    try:
        num_bytes = parse_header_plaintext(header).num_bytes
    except SecureBloomError:
        raise Declined("header") from None
    (second,) = _LEN.unpack_from(data, used)
    if second != _MODULE_GCM + num_bytes or used + LENGTH_PREFIX + second != length:
        raise Declined("bitset module")
    bitset = _python_decrypt(data[used:], key, bitset_aad, num_bytes)
    if len(bitset) != num_bytes:
        raise Declined("bitset size")
    return BitsetProbe(bitset)  # probed, never kept


def _check_chunks(metadata: Any, leaves: Sequence[ColumnInfo], encrypted_file: bool) -> None:
    """What the reader checks of every chunk as it indexes the footer: any doubt declines."""
    for i, group in enumerate(metadata.row_groups):
        chunks = group.columns
        if len(chunks) != len(leaves):
            raise Declined("chunk count")
        ordinal = group.ordinal if group.ordinal is not None else i
        for leaf, cc in zip(leaves, chunks):
            crypto = cc.crypto_metadata
            if crypto is None:
                if cc.encrypted_column_metadata is not None:
                    raise Declined("encrypted metadata without crypto metadata")
                if cc.meta_data is None:
                    raise Declined("no metadata")
                continue
            if not encrypted_file:
                raise Declined("stripped encryption")
            if not 0 <= ordinal <= MAX_ORDINAL or leaf.ordinal > MAX_ORDINAL:
                raise Declined("ordinals")
            with_key = crypto.ENCRYPTION_WITH_COLUMN_KEY
            if crypto.ENCRYPTION_WITH_FOOTER_KEY is None and (
                    with_key is None or tuple(with_key.path_in_schema) != leaf.path_in_schema):
                raise Declined("crypto path")
            if cc.meta_data is None and cc.encrypted_column_metadata is None:
                raise Declined("no metadata")


def fast_source(path: str, filesystem: Any, keys: KeyAccess, lookup: LookupKeys) -> FastSource:
    """Open ``path`` (a local file) for the fast path: tail, footer, checks. The caller closes
    it with :func:`close_source`. Declined for anything else (nothing is left open then)."""
    if not isinstance(path, str):
        raise Declined("not a path")
    fs, text = locate(path, filesystem)
    if fs is not None:
        raise Declined("object store")
    try:
        fd, stat = open_regular_stat(text)
    except (OSError, SecureBloomError):
        raise Declined("open") from None
    try:
        return _open(text, fd, stat, keys, lookup)
    except BaseException:
        os.close(fd)
        raise


def close_source(source: FastSource) -> None:
    os.close(source._fd)


def _python_tail(fd: int, size: int, reads: list[tuple[int, int]]) -> tuple[bytes, int, bytes]:
    """(magic, footer offset, footer) of a file of ``size`` bytes: the three reads the reader
    makes (leading magic; length and trailing magic; footer), checked (the twin of
    ``native_prune.read_tail``)."""
    if size <= 12:
        raise Declined("too short")
    head = _pread(fd, 0, 4, reads)
    end = _pread(fd, size - 8, 8, reads)
    magic = end[4:]
    if magic not in (PLAIN_MAGIC, ENCRYPTED_MAGIC) or head != magic:
        raise Declined("magic")
    (length,) = _LEN.unpack_from(end, 0)
    if length == 0 or length > size - 12 or length > MAX_FOOTER_BYTES:
        raise Declined("footer length")
    footer_offset = size - 8 - length
    return magic, footer_offset, _pread(fd, footer_offset, length, reads)


def _open(path: str, fd: int, stat: os.stat_result, keys: KeyAccess, lookup: LookupKeys) -> FastSource:
    reads: list[tuple[int, int]] = []
    size = stat.st_size
    if _native is None:
        magic, footer_offset, footer_bytes = _python_tail(fd, size, reads)
    else:
        try:
            magic, footer_offset, footer_bytes, made = _native.read_tail(fd, size)
        except _NATIVE_ERRORS:
            raise Declined("tail") from None
        reads.extend(made)
    footer = memoryview(footer_bytes)
    m = thrift_codec.idl()
    file_keys = lookup.for_file(path) if keys.has_keys else None

    footer_gcm: Any = None
    footer_kmd: bytes | None = None
    file_aad: bytes | None = None
    params: EncryptionParams | None = None
    if magic == ENCRYPTED_MAGIC:
        if file_keys is None:
            raise Declined("no keys")
        try:
            crypto, used = thrift_codec.parse(m.FileCryptoMetaData, footer)
            params = EncryptionParams.from_thrift(crypto.encryption_algorithm)
            file_aad = resolve_file_aad(params, keys.aad_prefix, path)
        except SecureBloomError:
            raise Declined("crypto metadata") from None
        if crypto.key_metadata is None:
            raise Declined("footer key metadata")
        footer_kmd = bytes(crypto.key_metadata)
        footer_gcm = file_keys.key(footer_kmd, footer=True)
        plain = _decrypt(footer[used:], footer_gcm, footer_aad(file_aad), _MAX_THRIFT_MODULE)
        metadata = _parse(m.FileMetaData, plain, padded=True)
    else:
        try:
            metadata, used = thrift_codec.parse(m.FileMetaData, footer)
        except SecureBloomError:
            raise Declined("footer") from None
        rest = len(footer) - used
        if metadata.encryption_algorithm is None:
            if rest:
                raise Declined("trailing bytes")
        else:
            # A signed plaintext footer: read only with its signature checked (keys given).
            if rest != SIGNATURE_LENGTH or file_keys is None or not keys.has_keys:
                raise Declined("signed footer")
            kmd = metadata.footer_signing_key_metadata
            if kmd is None:
                raise Declined("footer key metadata")
            try:
                params = EncryptionParams.from_thrift(metadata.encryption_algorithm)
                file_aad = resolve_file_aad(params, keys.aad_prefix, path)
            except SecureBloomError:
                raise Declined("file AAD") from None
            footer_kmd = bytes(kmd)
            raw = file_keys.raw(footer_kmd, footer=True)
            footer_gcm = file_keys.hold(footer_kmd, raw)
            try:
                verify_footer_signature(bytes(footer[:used]), bytes(footer[used:]), raw, file_aad, path)
            except SecureBloomError:
                raise Declined("signature") from None
    try:
        leaves = lookup.leaf_columns(metadata.schema)
    except SecureBloomError:
        raise Declined("schema") from None
    _check_chunks(metadata, leaves, metadata.encryption_algorithm is not None or magic == ENCRYPTED_MAGIC)
    source = FastSource(path, fd, size, footer_offset, metadata, leaves, file_aad, footer_kmd, footer_gcm, file_keys,
                        reads)
    source.identity = local_identity(stat)
    source.params = params
    return source
