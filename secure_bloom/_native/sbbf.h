/*
 * The Parquet split-block Bloom filter primitive, shared by the C extensions (kernels.c, gcm.c):
 * one definition of the salt, the block index, the block insert/check and the BloomFilterHeader
 * parser. No Python, no I/O, no allocation: bytes in, answers out.
 *
 * Spec: Parquet BloomFilter.md "Technical Approach" and "File Format". For a 64-bit hash h of a
 * filter of z = floor(numBytes / 32) blocks of eight 32-bit little-endian words:
 *     block = ((h >> 32) * z) >> 32       (a 64-bit product, so block < z for every h)
 *     key   = h & 0xFFFFFFFF
 *     bit i = (key * SALT[i]) mod 2^32 >> 27,   i = 0..7
 * insert sets bit i of word i of the block; check answers "maybe" when all eight are set. Tail
 * bytes of a bitset that is not whole blocks are never touched (as parquet-java does).
 * secure_bloom/spec.py and secure_bloom/filter.py hold the same constants for Python.
 */
#ifndef SECURE_BLOOM_SBBF_H
#define SECURE_BLOOM_SBBF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SBBF_BYTES_PER_BLOCK 32
#define SBBF_MIN_BITSET_BYTES 32                       /* BloomFilter.md: at least one block */
#define SBBF_MAX_BITSET_BYTES (128LL * 1024 * 1024)    /* 128 MiB: parquet-java's and Arrow's cap */

#if defined(__GNUC__) || defined(__clang__)
#define SBBF_UNUSED __attribute__((unused))
#define SBBF_INLINE static inline __attribute__((always_inline, unused))
#else
#define SBBF_UNUSED
#define SBBF_INLINE static __inline
#endif

/* BloomFilter.md "Technical Approach", the eight odd salt constants. */
static const uint32_t SBBF_SALT[8] SBBF_UNUSED = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
                                      0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};


/* Little-endian 32-bit load/store (one instruction on little-endian targets). */
SBBF_INLINE uint32_t sbbf_load32le(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

SBBF_INLINE void sbbf_store32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* The block of hash h in a filter of z blocks: ((h >> 32) * z) >> 32, always < z. */
SBBF_INLINE uint64_t sbbf_block_index(uint64_t h, uint64_t z)
{
    return ((h >> 32) * z) >> 32;
}

/* The bit of word i a key sets: 1 << ((key * SALT[i]) mod 2^32 >> 27). */
SBBF_INLINE uint32_t sbbf_word_mask(uint32_t key, int i)
{
    return (uint32_t)1 << ((uint32_t)(key * SBBF_SALT[i]) >> 27);
}

/* Insert the key (the low 32 bits of a hash) into the 32-byte block at blk. */
SBBF_INLINE void sbbf_block_insert(uint8_t *blk, uint32_t key)
{
    for (int i = 0; i < 8; i++)
        sbbf_store32le(blk + 4 * i, sbbf_load32le(blk + 4 * i) | sbbf_word_mask(key, i));
}

/* 1 when the 32-byte block at blk holds all eight bits of the key ("maybe"), else 0 ("absent"). */
SBBF_INLINE int sbbf_block_check(const uint8_t *blk, uint32_t key)
{
    uint32_t missing = 0;
    for (int i = 0; i < 8; i++) {
        uint32_t mask = sbbf_word_mask(key, i);
        missing |= mask & ~sbbf_load32le(blk + 4 * i);
    }
    return missing == 0;
}

/* Hash h against the bitset of z blocks at bits: 1 "maybe", 0 "absent". z must be >= 1. */
SBBF_INLINE int sbbf_check(const uint8_t *bits, uint64_t z, uint64_t h)
{
    return sbbf_block_check(bits + SBBF_BYTES_PER_BLOCK * sbbf_block_index(h, z), (uint32_t)h);
}

/* The one BloomFilterHeader encoding every writer emits (secure_bloom/header.py's docstring):
 *     0x15 <numBytes: zigzag varint, minimal> 1c 1c 00 00 1c 1c 00 00 1c 1c 00 00 00
 * (numBytes, then algorithm BLOCK, hash XXHASH and compression UNCOMPRESSED, each an empty
 * struct in a struct, then STOP). A strict subset of what the Python parser accepts, with the
 * same numBytes. At the start of p[0..n): 0 with numBytes (checked within
 * [SBBF_MIN_BITSET_BYTES, SBBF_MAX_BITSET_BYTES], as header.validate_num_bytes checks it without
 * the bytes available: the caller checks those) and the bytes used; -1 for anything else. */
static const uint8_t SBBF_HEADER_TAIL[13] SBBF_UNUSED = {0x1c, 0x1c, 0x00, 0x00, 0x1c, 0x1c, 0x00, 0x00,
                                             0x1c, 0x1c, 0x00, 0x00, 0x00};

SBBF_INLINE int sbbf_parse_header(const uint8_t *p, size_t n, uint32_t *num_bytes, size_t *used)
{
    size_t at = 1;
    uint64_t v = 0;
    if (n < 1 || p[0] != 0x15)
        return -1;
    for (int i = 0;; i++) {
        if (i >= 5 || at >= n)
            return -1;
        uint8_t b = p[at++];
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (b == 0 && i > 0)
                return -1;   /* not minimal */
            break;
        }
    }
    if (v > 0xffffffffULL || (v & 1))
        return -1;           /* negative or too large after zigzag */
    v >>= 1;
    if (v < SBBF_MIN_BITSET_BYTES || v > (uint64_t)SBBF_MAX_BITSET_BYTES)
        return -1;
    if (n - at < sizeof(SBBF_HEADER_TAIL) || memcmp(p + at, SBBF_HEADER_TAIL, sizeof(SBBF_HEADER_TAIL)) != 0)
        return -1;
    *num_bytes = (uint32_t)v;
    *used = at + sizeof(SBBF_HEADER_TAIL);
    return 0;
}

#endif /* SECURE_BLOOM_SBBF_H */
