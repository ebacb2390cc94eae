"""The split-block Bloom filter (SBBF) of Parquet.

Spec: Parquet BloomFilter.md, "Technical Approach" (https://parquet.apache.org/docs/file-format/bloomfilter/).

A filter is ``z`` blocks of 256 bits, each block eight little-endian 32-bit words. For a 64-bit
hash ``h``::

    block = ((h >> 32) * z) >> 32            # 64-bit product, so block < z
    key   = h & 0xFFFFFFFF
    for i in 0..7:  word[i] of block  |=  1 << ((key * SALT[i]) mod 2^32 >> 27)

A value may be present iff all eight bits are set. The bitset on disk is the words in order,
each little-endian. A bitset read from a file may end in 1..31 bytes that are no whole block
(parquet-java caps filters at ``parquet.bloom.filter.max.bytes`` unrounded): as in parquet-java,
z = floor(numBytes / 32) and the tail is kept as stored, never read or written. Sizing follows parquet-java (:func:`optimal_num_bytes`): bits for (ndv, fpp)
are ``-8 ndv / ln(1 - fpp^(1/8))``, then rounded as BlockSplitBloomFilter rounds them, to a power
of two in [32 bytes, 128 MiB].

Two paths, equal bit for bit: scalar (:meth:`insert_hash`, :meth:`check_hash`) and batch
(:meth:`insert_hashes`, :meth:`check_hashes`, :meth:`insert`, :meth:`might_contain_many`). The batch
calls run :mod:`secure_bloom.kernels`: the compiled kernel where it is built (values hashed straight
from numpy / Arrow buffers into the bitset, GIL released), else the numpy code of
:mod:`secure_bloom.sbbf_numpy`.

Threads: one filter may be shared. Inserts into it are serialised by a lock of the filter (an
insert is a read-modify-write of 32-byte blocks: two at once could lose bits, i.e. give false
negatives); checks take no lock and run alongside each other and alongside an insert, seeing every
insert that finished before they started (and perhaps part of one still running). :attr:`bitset`
(so :meth:`to_bytes`, :meth:`copy`) is taken between inserts.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import MalformedBitsetError
from . import kernels
from .header import parse_header, serialize_header, validate_num_bytes
from .sbbf_numpy import SALT, insert_strategy
from .spec import BYTES_PER_BLOCK, DEFAULT_FPP, MIN_BITSET_BYTES, SPEC_MAX_BITSET_BYTES
from .types import PhysicalType
from .values.physical import hash_value, hash_values, plain_arrays

__all__ = ["SplitBlockBloomFilter", "SALT", "optimal_num_bytes", "optimal_num_bits", "round_num_bytes",
           "ndv_range", "insert_strategy"]

_BITS_PER_BLOCK = BYTES_PER_BLOCK * 8
#: A bitset word (BloomFilter.md: blocks of eight little-endian 32-bit words).
_WORD = np.dtype("<u4")


def optimal_num_bits(ndv: int, fpp: float) -> int:
    """parquet-java ``BlockSplitBloomFilter.optimalNumOfBits(ndv, fpp)``, quirks included.

    ``m = -8 ndv / ln(1 - fpp^(1/8))``, truncated, capped at 2^30, then ``(m + 255) & ~256`` (the
    writer's rounding, which clears only bit 8), at least 256.

    Parameters
    ----------
    ndv : int
        Distinct values (>= 0).
    fpp : float
        False-positive probability, in (0, 1).

    Returns
    -------
    int
        Bits.

    Raises
    ------
    ValueError
        ``ndv`` < 0 or ``fpp`` outside (0, 1).
    """
    if not 0.0 < fpp < 1.0:
        raise ValueError(f"fpp must be in (0, 1), got {fpp}")
    if ndv < 0:
        raise ValueError(f"ndv must be >= 0, got {ndv}")
    m = -8.0 * ndv / math.log(1.0 - fpp ** (1.0 / 8.0))
    num_bits = int(m)
    if num_bits > SPEC_MAX_BITSET_BYTES * 8 or m < 0:
        num_bits = SPEC_MAX_BITSET_BYTES * 8
    num_bits = (num_bits + _BITS_PER_BLOCK - 1) & ~_BITS_PER_BLOCK
    return max(num_bits, MIN_BITSET_BYTES * 8)


def round_num_bytes(num_bytes: int, max_bytes: int = SPEC_MAX_BITSET_BYTES) -> int:
    """parquet-java's bitset sizing: at least 32, next power of two, at most ``max_bytes``.

    A ``max_bytes`` that is not a power of two caps at the largest power of two below it
    (parquet-java would use the cap itself, which may not even be whole blocks, and Arrow C++
    refuses such filters; we never write one). A ``max_bytes`` of 32 or less is ignored (the cap
    is 128 MiB), as parquet-java ignores it.

    Parameters
    ----------
    num_bytes : int
        The size wanted.
    max_bytes : int, default 128 MiB
        The cap.

    Returns
    -------
    int
        A power of two from 32 to the cap.

    Raises
    ------
    None
        Nothing of its own.
    """
    if not 0 < max_bytes <= SPEC_MAX_BITSET_BYTES:
        raise ValueError(f"max_bytes must be in [1, {SPEC_MAX_BITSET_BYTES}], got {max_bytes}")
    if max_bytes <= MIN_BITSET_BYTES:
        max_bytes = SPEC_MAX_BITSET_BYTES  # BlockSplitBloomFilter honours only a maximum above 32 bytes
    cap = 1 << (int(max_bytes).bit_length() - 1)
    n = max(int(num_bytes), MIN_BITSET_BYTES)
    if n & (n - 1):
        n = 1 << n.bit_length()
    return min(n, cap)


def optimal_num_bytes(ndv: int, fpp: float = DEFAULT_FPP, max_bytes: int = SPEC_MAX_BITSET_BYTES) -> int:
    """Bitset bytes parquet-java allocates for ``ndv`` distinct values at false-positive rate ``fpp``.

    Parameters
    ----------
    ndv : int
        Distinct values (>= 0).
    fpp : float, default 0.01
        False-positive probability, in (0, 1).
    max_bytes : int, default 128 MiB
        The cap.

    Returns
    -------
    int
        A power of two from 32 to ``max_bytes``.

    Raises
    ------
    ValueError
        ``ndv`` < 0 or ``fpp`` outside (0, 1).

    Examples
    --------
    >>> from secure_bloom import optimal_num_bytes
    >>> optimal_num_bytes(10_000), optimal_num_bytes(10_000, fpp=0.001), optimal_num_bytes(10**8)
    (16384, 32768, 134217728)
    """
    return round_num_bytes(optimal_num_bits(ndv, fpp) // 8, max_bytes)


def ndv_range(num_bytes: int, fpp: float) -> tuple[int, int | None]:
    """The distinct counts a writer that sizes filters as :func:`optimal_num_bytes` does would
    give a bitset of ``num_bytes`` at ``fpp``: what a filter's size, visible without any key,
    reveals about its chunk (docs/security-model/filter-sizes.md).

    A power of two ``S`` holds the counts whose unrounded size lies in ``(S/2, S]``, i.e.
    ``ndv`` in ``(4 S c, 8 S c]`` with ``c = -ln(1 - fpp^(1/8)) / 8`` distinct values per bit
    (from 0 for the 32-byte minimum); any other size is a writer's cap (parquet-java's
    ``parquet.bloom.filter.max.bytes``), which says only "more than the next smaller power of
    two holds", as does the format's 128 MiB maximum. The writer's rounding (``(m + 255) & ~256`` bits, :func:`optimal_num_bits`) moves
    each end by up to 256 bits: the range returned includes those (a superset, never a subset).

    Parameters
    ----------
    num_bytes : int
        A bitset size (32 bytes to 128 MiB).
    fpp : float
        The false-positive rate the writer sized for, in (0, 1).

    Returns
    -------
    tuple of (int, int or None)
        The lowest and highest count; None: no upper bound (a capped size).

    Raises
    ------
    ValueError
        ``fpp`` out of (0, 1) or ``num_bytes`` out of range.
    """
    if not 0.0 < fpp < 1.0:
        raise ValueError(f"fpp must be in (0, 1), got {fpp}")
    n = int(num_bytes)
    if not MIN_BITSET_BYTES <= n <= SPEC_MAX_BITSET_BYTES:
        raise ValueError(f"num_bytes must be in [{MIN_BITSET_BYTES}, {SPEC_MAX_BITSET_BYTES}], got {n}")
    per_bit = -math.log(1.0 - fpp ** (1.0 / 8.0)) / 8.0

    def lowest(size: int) -> int:  # the fewest values a writer gives more than size / 2 bytes
        return 0 if size <= MIN_BITSET_BYTES else max(0, int((4 * size - _BITS_PER_BLOCK) * per_bit))

    if n & (n - 1):
        return lowest(2 * (1 << (n.bit_length() - 1))), None
    if n == SPEC_MAX_BITSET_BYTES:  # the format's own cap: any count above it too
        return lowest(n), None
    return lowest(n), int((8 * n + 9) * per_bit) + 1


def _check_hash_array(hashes: Any) -> npt.NDArray[np.uint64]:
    if isinstance(hashes, (list, tuple)) and all(isinstance(h, int) for h in hashes):
        # np.asarray([0, 2**63]) is float64 and np.asarray([]) too: convert Python ints exactly.
        if any(not -(1 << 63) <= h < (1 << 64) for h in hashes):
            raise ValueError("hashes must be 64-bit integers")
        return np.array([h & 0xFFFFFFFFFFFFFFFF for h in hashes], dtype=np.uint64)
    arr = np.asarray(hashes)
    if arr.dtype != np.uint64:
        if arr.dtype.kind == "i":
            arr = arr.astype(np.int64).view(np.uint64)
        elif arr.dtype.kind == "u":
            arr = arr.astype(np.uint64)
        else:
            raise TypeError(f"hashes must be an unsigned 64-bit integer array, got dtype {arr.dtype}")
    return arr.reshape(-1)


def _maybe_in_block(k: int) -> float:
    """Chance that a random hash finds its eight bits set in a block holding ``k`` values."""
    return float((1.0 - (31.0 / 32.0) ** k) ** 8)


class SplitBlockBloomFilter:
    """A Parquet split-block Bloom filter.

    ``SplitBlockBloomFilter(num_bytes)`` makes an empty filter; :meth:`for_ndv` sizes one as
    parquet-java does; :meth:`from_bytes` parses a serialised header + bitset. Values are hashed
    as Parquet writers hash their plain encoding (XXH64, seed 0), so a filter built here equals
    parquet-java's bit for bit. One filter may be shared by threads: inserts are serialised by a
    lock of its own; checks see every insert that finished before they started.

    Parameters
    ----------
    num_bytes : int
        The bitset size: a power of two in [32, 128 MiB].

    Raises
    ------
    TypeError
        ``num_bytes`` is not an int.
    ValueError
        ``num_bytes`` is not a power of two in range.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from secure_bloom import SplitBlockBloomFilter
    >>> bf = SplitBlockBloomFilter.for_ndv(1_000, fpp=0.01)
    >>> bf.num_bytes
    2048
    >>> bf.insert(pa.array(["alice@example.com", "bob@example.com", None]), "BYTE_ARRAY")
    2
    >>> bf.might_contain("alice@example.com", "BYTE_ARRAY"), bf.might_contain("mallory@example.com", "BYTE_ARRAY")
    (True, False)
    >>> SplitBlockBloomFilter.from_bytes(bf.to_bytes()) == bf
    True
    """

    __slots__ = ("_words", "_view", "_tail", "_lock")

    def __init__(self, num_bytes: int) -> None:
        if isinstance(num_bytes, bool) or not isinstance(num_bytes, (int, np.integer)):
            raise TypeError(f"num_bytes must be an int, got {type(num_bytes).__name__}")
        n = int(num_bytes)
        if not MIN_BITSET_BYTES <= n <= SPEC_MAX_BITSET_BYTES or n & (n - 1):
            raise ValueError(f"num_bytes must be a power of two in [{MIN_BITSET_BYTES}, {SPEC_MAX_BITSET_BYTES}], got {n}")
        self._words = np.zeros(n // 4, dtype="<u4")
        self._view = self._words.data  # indexed by check_hash: Python ints, no numpy scalars
        self._tail = b""
        self._lock = threading.Lock()  # serialises inserts (module docstring)

    # ---------------------------------------------------------------- construction

    @classmethod
    def for_ndv(cls, ndv: int, fpp: float = DEFAULT_FPP, max_bytes: int = SPEC_MAX_BITSET_BYTES) -> SplitBlockBloomFilter:
        """An empty filter sized for ``ndv`` distinct values at ``fpp``, exactly as parquet-java sizes it.

        Parameters
        ----------
        ndv : int
            The number of distinct values to size for (>= 0).
        fpp : float, default 0.01
            The false-positive probability wanted, in (0, 1).
        max_bytes : int, default 128 MiB
            The cap on the bitset size.

        Returns
        -------
        SplitBlockBloomFilter
            An empty filter of :func:`optimal_num_bytes` bytes.

        Raises
        ------
        ValueError
            ``ndv`` < 0 or ``fpp`` outside (0, 1).
        """
        return cls(optimal_num_bytes(ndv, fpp, max_bytes))

    @classmethod
    def from_bitset(cls, bitset: bytes | bytearray | memoryview, *, copy: bool = True) -> SplitBlockBloomFilter:
        """A filter over a copy of ``bitset``: any size from 32 bytes to 128 MiB a file may hold;
        floor(size / 32) blocks are used and the tail bytes are kept as they are (parquet-java).

        Parameters
        ----------
        bitset : bytes-like
            The bitset, as a file stores it.
        copy : bool, default True
            False with ``bytes`` (immutable): a read-only filter over them, for probing only
            (inserting raises TypeError or ValueError).

        Returns
        -------
        SplitBlockBloomFilter
            The filter.

        Raises
        ------
        secure_bloom.errors.MalformedBitsetError
            The bitset is shorter than 32 bytes or longer than 128 MiB.
        """
        exact_bytes = type(bitset) is bytes  # the common case (a decrypted or read bitset): no view
        raw = bitset if exact_bytes else memoryview(bitset).cast("B")
        size = len(raw)
        if not MIN_BITSET_BYTES <= size <= SPEC_MAX_BITSET_BYTES:
            raise MalformedBitsetError(
                f"bitset of {size} bytes is outside {MIN_BITSET_BYTES}..{SPEC_MAX_BITSET_BYTES} (at least one 32-byte block)")
        whole = size - size % BYTES_PER_BLOCK
        obj = cls.__new__(cls)
        words = np.frombuffer(raw if whole == size else raw[:whole], dtype=_WORD)
        obj._words = words if not copy and isinstance(bitset, bytes) else words.copy()
        obj._view = obj._words.data
        obj._tail = b"" if whole == size else bytes(raw[whole:])
        obj._lock = threading.Lock()
        return obj

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, *,
                   return_consumed: bool = False) -> Any:
        """Parse header + bitset (the plaintext on-disk form).

        Parameters
        ----------
        data : bytes-like
            A Thrift compact ``BloomFilterHeader`` followed by its bitset.
        return_consumed : bool, default False
            Return ``(filter, bytes consumed)`` and leave trailing bytes to the caller, instead of
            refusing them.

        Returns
        -------
        SplitBlockBloomFilter or (SplitBlockBloomFilter, int)
            The filter (a copy of the bitset), with the bytes consumed when asked.

        Raises
        ------
        secure_bloom.errors.MalformedHeaderError
            The header does not parse, or names an unsupported algorithm, hash or compression.
        secure_bloom.errors.MalformedBitsetError
            The bitset is shorter than the header says, out of range, or followed by trailing
            bytes (without ``return_consumed``); both numbers are in the message.
        """
        view = memoryview(data).cast("B")
        header, used = parse_header(view)
        validate_num_bytes(header.num_bytes, available=len(view) - used)
        end = used + header.num_bytes
        if not return_consumed and end != len(view):
            raise MalformedBitsetError(
                f"{len(view) - end} trailing bytes after a {header.num_bytes}-byte bitset "
                f"(header {used} bytes, buffer {len(view)} bytes)")
        bf = cls.from_bitset(view[used:end])
        return (bf, end) if return_consumed else bf

    def to_bytes(self) -> bytes:
        """Thrift compact BloomFilterHeader followed by the bitset (the plaintext on-disk form).

        Returns
        -------
        bytes
            What :meth:`from_bytes` parses back.

        Raises
        ------
        None
            Nothing of its own.
        """
        return serialize_header(self.num_bytes) + self.bitset

    def copy(self) -> SplitBlockBloomFilter:
        """An independent copy (its own bitset and lock).

        Returns
        -------
        SplitBlockBloomFilter
            Equal to this filter.

        Raises
        ------
        None
            Nothing of its own.
        """
        return SplitBlockBloomFilter.from_bitset(self.bitset)

    def folded(self, num_bytes: int) -> SplitBlockBloomFilter:
        """This filter folded down to ``num_bytes``: equal, bit for bit, to the filter of that
        size built from the same hashes.

        For a power-of-two block count ``z = 2^k`` the block index ``((h >> 32) * z) >> 32`` is
        the top ``k`` bits of ``h >> 32`` and the bits set inside a block depend only on the low
        32 bits of ``h``; so at ``z / 2^j`` blocks, block ``i`` holds exactly what blocks
        ``i * 2^j .. (i + 1) * 2^j - 1`` hold here, OR-ed together. A writer that must give every
        row group one size, known only once all are counted, builds each filter at an upper
        bound and folds it (:class:`~secure_bloom.types.FilterSizing`).

        Parameters
        ----------
        num_bytes : int
            The new size: a power of two from 32 bytes up to this filter's size.

        Returns
        -------
        SplitBlockBloomFilter
            A new filter (this one is unchanged; the same size gives a copy).

        Raises
        ------
        ValueError
            ``num_bytes`` is not a power of two, is larger than this filter, or this filter's
            size is no power of two (a capped parquet-java filter).
        """
        n, own = int(num_bytes), self.num_bytes
        if self._tail or own & (own - 1):
            raise ValueError(f"only a filter of a power-of-two size folds; this one has {own} bytes")
        if not MIN_BITSET_BYTES <= n <= own or n & (n - 1):
            raise ValueError(f"num_bytes must be a power of two from {MIN_BITSET_BYTES} to {own}, got {n}")
        with self._lock:
            blocks = self._words.reshape(n // BYTES_PER_BLOCK, own // n, BYTES_PER_BLOCK // 4)
            words = np.bitwise_or.reduce(blocks, axis=1).reshape(-1)
        return SplitBlockBloomFilter.from_bitset(words.astype("<u4").tobytes())

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:  # pickles as its bitset (a lock does not pickle)
        return SplitBlockBloomFilter.from_bitset, (self.bitset,)

    # ---------------------------------------------------------------- properties

    @property
    def num_bytes(self) -> int:
        """The bitset size in bytes (tail bytes of an odd-sized file filter included)."""
        return int(self._words.nbytes) + len(self._tail)

    @property
    def num_blocks(self) -> int:
        """The number of 32-byte blocks (floor(num_bytes / 32))."""
        return int(self._words.nbytes) // BYTES_PER_BLOCK

    @property
    def bitset(self) -> bytes:
        """The bitset as stored on disk (words in order, each little-endian, then any tail bytes)."""
        with self._lock:
            return self._words.tobytes() + self._tail

    def bits_set(self) -> int:
        """The number of bits set in the blocks (tail bytes not counted).

        Returns
        -------
        int
            From 0 to ``8 * num_blocks * 32``.

        Raises
        ------
        None
            Nothing of its own.
        """
        return int(np.unpackbits(self._words.view(np.uint8)).sum())  # bits of the blocks (not the tail)

    def effective_fpp(self) -> float:
        """The false-positive rate of this filter as it is, from the bits it has set: a random
        absent value picks a block uniformly and one bit in each of its eight words, so it is
        "maybe" with probability mean over blocks of prod_i (bits set in word i / 32). Needs no
        distinct count; a near-zero value on a small domain means the filter answers exactly.

        Returns
        -------
        float
            In [0, 1]; a policy's ``min_fpp`` is checked against it.

        Raises
        ------
        None
            Nothing of its own.
        """
        if self.num_blocks == 0:
            return 1.0
        counts = np.unpackbits(self._words.view(np.uint8).reshape(self.num_blocks, 8, 4), axis=2).sum(axis=2)
        return float(np.prod(counts / 32.0, axis=1).mean())

    def fpp_estimate(self, n_inserted: int) -> float:
        """Expected false-positive rate after ``n_inserted`` distinct values.

        A block holding k values answers a random probe "maybe" with probability
        (1 - (31/32)^k)^8; the values per block follow Binomial(n, 1/z) exactly (one block: all n
        in it), so the estimate also holds for the smallest filters.

        Parameters
        ----------
        n_inserted : int
            Distinct values inserted (>= 0).

        Returns
        -------
        float
            The expected rate, in [0, 1].

        Raises
        ------
        ValueError
            ``n_inserted`` < 0.
        """
        if n_inserted < 0:
            raise ValueError("n_inserted must be >= 0")
        n, z = int(n_inserted), self.num_blocks
        if n == 0:
            return 0.0
        if z == 1:
            return _maybe_in_block(n)
        mean, log_p, log_q = n / z, -math.log(z), math.log1p(-1.0 / z)
        spread = 12 * math.sqrt(mean) + 30
        log_n = math.lgamma(n + 1)
        total = mass = 0.0
        for k in range(max(0, int(mean - spread)), min(n, int(mean + spread)) + 1):
            pk = math.exp(log_n - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q)
            total += pk * _maybe_in_block(k)
            mass += pk
        return min(1.0, total / mass)  # / mass: lgamma's rounding at large n cancels out

    # ---------------------------------------------------------------- scalar hash level

    def _block_and_key(self, h: int) -> tuple[int, int]:
        h = int(h)
        if not 0 <= h < (1 << 64):
            raise ValueError(f"hash must be an unsigned 64-bit integer, got {h}")
        return ((h >> 32) * self.num_blocks) >> 32, h & 0xFFFFFFFF

    def insert_hash(self, h: int) -> None:
        """Insert one hash (bit-exact: :func:`~secure_bloom.values.physical.hash_value`'s output).

        Parameters
        ----------
        h : int
            An unsigned 64-bit hash.

        Raises
        ------
        TypeError, ValueError
            ``h`` is not an int in the 64-bit range.
        """
        block, key = self._block_and_key(h)
        words = self._words
        base = block * 8
        with self._lock:
            for i in range(8):
                words[base + i] |= 1 << (((key * SALT[i]) & 0xFFFFFFFF) >> 27)

    def check_hash(self, h: int) -> bool:
        """Whether the filter may contain hash ``h`` (False = certainly absent). Bit-exact, as the
        spec's filter is: the hash of +0.0 does not find -0.0, nor one NaN another. A query for a
        value uses :func:`secure_bloom.values.column.query_hashes` (both zeros, NaN always maybe).

        Parameters
        ----------
        h : int
            An unsigned 64-bit hash.

        Returns
        -------
        bool
            False only if ``h`` was never inserted.

        Raises
        ------
        TypeError, ValueError
            ``h`` is not an int in the 64-bit range.
        """
        h = int(h)
        if not 0 <= h < (1 << 64):
            raise ValueError(f"hash must be an unsigned 64-bit integer, got {h}")
        words = self._view
        key = h & 0xFFFFFFFF
        base = (((h >> 32) * (len(words) >> 3)) >> 32) * 8  # the block: ((h >> 32) * num_blocks) >> 32
        for i, salt in enumerate(SALT):
            if not words[base + i] >> (((key * salt) & 0xFFFFFFFF) >> 27) & 1:
                return False
        return True

    # ---------------------------------------------------------------- batch hash level

    def insert_hashes(self, hashes: Any) -> None:
        """Insert every hash of a uint64 array (repeats and shared blocks are handled).

        Parameters
        ----------
        hashes : array-like of uint64
            A numpy array (int64 is reinterpreted), or a list of ints.

        Raises
        ------
        TypeError
            ``hashes`` is not an integer array (or list of ints).
        ValueError
            A hash is outside the 64-bit range.
        """
        h = _check_hash_array(hashes)
        with self._lock:
            kernels.sbbf_insert(self._words, h)

    def check_hashes(self, hashes: Any) -> npt.NDArray[np.bool_]:
        """For each hash, whether the filter may contain it (False = certainly absent); bit-exact
        like :meth:`check_hash`.

        Parameters
        ----------
        hashes : array-like of uint64
            A numpy array (int64 is reinterpreted), or a list of ints.

        Returns
        -------
        numpy.ndarray of bool
            One answer per hash.

        Raises
        ------
        TypeError
            ``hashes`` is not an integer array (or list of ints).
        ValueError
            A hash is outside the 64-bit range.
        """
        return kernels.sbbf_check(self._words, _check_hash_array(hashes))

    @staticmethod
    def check_many(filters: Sequence[SplitBlockBloomFilter], hashes: Any) -> npt.NDArray[np.bool_]:
        """:meth:`check_hashes` of every filter with one array of hashes, in one kernel call (the
        filters of a file's row groups, probed with hashes made once).

        Parameters
        ----------
        filters : sequence of SplitBlockBloomFilter
        hashes : uint64 array or sequence of ints

        Returns
        -------
        numpy.ndarray of bool, shape ``(len(filters), len(hashes))``
            Row ``f``: ``filters[f].check_hashes(hashes)`` (False = certainly absent).

        Raises
        ------
        TypeError
            An item of ``filters`` is not a SplitBlockBloomFilter.
        ValueError
            A hash outside the unsigned 64-bit range.
        """
        for f in filters:
            if not isinstance(f, SplitBlockBloomFilter):
                raise TypeError(f"filters must be SplitBlockBloomFilter objects, got {type(f).__name__}")
        return kernels.sbbf_check_many([f._words for f in filters], _check_hash_array(hashes))

    # ---------------------------------------------------------------- value level

    def insert(self, values: Any, physical_type: PhysicalType | str | int, *, type_length: int | None = None) -> int:
        """Hash and insert values (scalar, sequence, numpy or pyarrow; nulls skipped).

        With the compiled kernel, values whose buffers hold their plain encoding
        (:func:`~secure_bloom.values.physical.plain_arrays`) are hashed and inserted in one pass,
        without an array of hashes.

        Parameters
        ----------
        values : scalar, sequence, numpy array or pyarrow array
            The values, in the physical type's Python form (int, float, bytes / str...).
        physical_type : PhysicalType, str or int
            The column's Parquet physical type (``"INT64"``, ``"BYTE_ARRAY"``...).
        type_length : int, optional
            The width of a FIXED_LEN_BYTE_ARRAY column.

        Returns
        -------
        int
            How many values were inserted (nulls are not).

        Raises
        ------
        secure_bloom.errors.InvalidValueError
            A value does not fit the physical type (wrong type, out of range, wrong width).
        ValueError
            BOOLEAN (Parquet has no Bloom filter for it) or a missing ``type_length``.
        """
        parts = plain_arrays(values, physical_type, type_length=type_length) if kernels.BACKEND == "native" else None
        if parts is not None:
            with self._lock:
                return sum(kernels.sbbf_insert_array(self._words, part) for part in parts)
        hashes = hash_values(values, physical_type, type_length=type_length)
        self.insert_hashes(hashes)
        return int(hashes.size)

    def might_contain(self, value: Any, physical_type: PhysicalType | str | int, *,
                      type_length: int | None = None) -> bool:
        """False if ``value`` is certainly absent; True if it may be present.

        Parameters
        ----------
        value : object
            One value in the physical type's Python form (not None).
        physical_type : PhysicalType, str or int
            The column's Parquet physical type.
        type_length : int, optional
            The width of a FIXED_LEN_BYTE_ARRAY column.

        Returns
        -------
        bool
            False only if ``value`` was never inserted.

        Raises
        ------
        ValueError
            ``value`` is None (filters record no nulls: use the column's null count).
        secure_bloom.errors.InvalidValueError
            ``value`` does not fit the physical type.
        """
        if value is None:
            raise ValueError("Bloom filters do not record nulls; use the column's null_count")
        return self.check_hash(hash_value(value, physical_type, type_length=type_length))

    def might_contain_many(self, values: Any, physical_type: PhysicalType | str | int, *,
                           type_length: int | None = None) -> npt.NDArray[np.bool_]:
        """:meth:`might_contain` for many values; nulls are skipped (one result per non-null).

        Parameters
        ----------
        values : sequence, numpy array or pyarrow array
            The values, as for :meth:`insert`.
        physical_type : PhysicalType, str or int
            The column's Parquet physical type.
        type_length : int, optional
            The width of a FIXED_LEN_BYTE_ARRAY column.

        Returns
        -------
        numpy.ndarray of bool
            One answer per non-null value, in order.

        Raises
        ------
        secure_bloom.errors.InvalidValueError
            A value does not fit the physical type.
        """
        parts = plain_arrays(values, physical_type, type_length=type_length) if kernels.BACKEND == "native" else None
        if parts is not None:
            return kernels.concat_parts([kernels.sbbf_check_array(self._words, part) for part in parts], np.bool_)
        return self.check_hashes(hash_values(values, physical_type, type_length=type_length))

    # ---------------------------------------------------------------- set operations

    def union(self, other: SplitBlockBloomFilter) -> SplitBlockBloomFilter:
        """A filter of both sets: the OR of two filters of equal size.

        Parameters
        ----------
        other : SplitBlockBloomFilter
            A filter of the same size.

        Returns
        -------
        SplitBlockBloomFilter
            A new filter; neither input changes.

        Raises
        ------
        TypeError
            ``other`` is not a SplitBlockBloomFilter.
        ValueError
            The sizes differ.
        """
        if not isinstance(other, SplitBlockBloomFilter):
            raise TypeError(f"can only union with a SplitBlockBloomFilter, not {type(other).__name__}")
        if other.num_bytes != self.num_bytes:
            raise ValueError(f"cannot union filters of {self.num_bytes} and {other.num_bytes} bytes")
        out = SplitBlockBloomFilter.__new__(SplitBlockBloomFilter)
        out._words = self._words | other._words
        out._view = out._words.data
        out._tail = bytes(a | b for a, b in zip(self._tail, other._tail))
        out._lock = threading.Lock()
        return out

    def __or__(self, other: SplitBlockBloomFilter) -> SplitBlockBloomFilter:
        return self.union(other)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SplitBlockBloomFilter):
            return NotImplemented
        return (self.num_bytes == other.num_bytes and bool(np.array_equal(self._words, other._words))
                and self._tail == other._tail)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"SplitBlockBloomFilter(num_bytes={self.num_bytes}, bits_set={self.bits_set()})"
