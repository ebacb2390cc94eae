/*
 * secure_bloom.native_kernels: XXH64 (seed 0) and Parquet split-block Bloom filter kernels.
 *
 * Written for secure_bloom from the specifications only:
 *   - XXH64: the xxHash specification (doc/xxhash_spec.md in the xxHash project), seed 0;
 *   - SBBF: Parquet BloomFilter.md "Technical Approach"; the salt, block index and block
 *     insert/check are sbbf.h's (one definition, shared with gcm.c), this file loops them over
 *     many hashes (with prefetch and AVX2 versions). z = floor(numBytes / 32): tail bytes of a
 *     bitset that is not whole blocks are never touched (as parquet-java does).
 *
 * This is a private module: secure_bloom.kernels is the public API (it allocates the output
 * arrays, converts errors and provides the numpy fallback). Every function here:
 *   - takes C-contiguous buffer-protocol objects and validates every length, offset and index
 *     against the buffer sizes BEFORE touching memory (ValueError otherwise);
 *   - releases the GIL for the loops over large inputs (gil.h: from about 2,000 values; the buffers
 *     stay exported, so they cannot be resized);
 *   - writes results into caller-provided output buffers (no numpy C API: the module builds
 *     against Python's headers alone).
 * Arrow validity bitmaps (bit i of the bitmap at bit offset `validity_offset`, 1 = valid) make
 * the kernels skip nulls: Parquet never hashes a null. Outputs then hold one entry per non-null
 * value, in order, and the functions return that count.
 *
 * Buffers another thread may write while the GIL is released (a zero-copy Arrow array over a
 * numpy buffer, a bytearray): their SIZES cannot change (they stay exported), their CONTENTS
 * can. So no loop trusts an earlier validation: every offset, view or hash that decides an
 * address is loaded ONCE into a local (sb_once: the compiler may not load it again), checked
 * against the buffer sizes the call captured, and only the local is used:
 *   - binary offsets: each offset is read once and serves as the end of value i and the start
 *     of value i + 1; a pair outside [0, data_len] or decreasing is not hashed;
 *   - views: length, buffer index and offset are read once and checked against the captured
 *     buffer table (pointer and size of each data buffer, copied when the call starts);
 *   - validity bits only choose which values are hashed (their index comes from the loop);
 *   - a hash only selects a block, and ((h >> 32) * z) >> 32 < z for every 64-bit h;
 *   - count_distinct reads each hash once per pass and the scatter pass checks every slot.
 * The checks are source_validate's rules, value by value. An insert runs source_validate first
 * (malformed input leaves the bitset untouched), a hash or check only after a failed check, for
 * the message; a failure that validation does not confirm means the input changed under the
 * call: ValueError "changed while being read". Other changes give hashes of whatever bytes were
 * there. Never an access outside the buffers.
 *
 * Concurrency on one bitset: any number of checks, and checks during an insert, are safe (an
 * insert only sets bits; a check sees the inserts that finished before it and perhaps part of
 * one that runs). Inserts into ONE bitset from several threads at once race (plain
 * read-modify-write of 32-byte blocks, no atomics) and can lose bits: serialise them
 * (secure_bloom.filter.SplitBlockBloomFilter holds a lock for its inserts).
 *
 * The x86-64 build adds AVX2 versions of the block insert/check (one 256-bit register is one
 * block), chosen at import with __builtin_cpu_supports; the compiled baseline stays generic.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gil.h"
#include "sbbf.h"

#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
/* The kernels read XXH64 lanes and bitset words as little-endian through native loads. A
 * big-endian build fails here on purpose: the extension is optional, so the package installs
 * and uses its numpy path, which is endian-correct. */
#error "secure_bloom.native_kernels supports little-endian hosts only (the numpy fallback is used elsewhere)"
#endif

#if defined(__GNUC__) && (defined(__x86_64__) || defined(_M_X64)) && !defined(SB_NO_AVX2)
#define SB_HAVE_AVX2_BUILD 1
#include <immintrin.h>
#endif

#if defined(__GNUC__)
#define SB_INLINE static inline __attribute__((always_inline))
#define SB_PREFETCH_W(p) __builtin_prefetch((p), 1, 3)
#define SB_PREFETCH_R(p) __builtin_prefetch((p), 0, 3)
#define SB_LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define SB_INLINE static inline
#define SB_PREFETCH_W(p) ((void)0)
#define SB_PREFETCH_R(p) ((void)0)
#define SB_LIKELY(x) (x)
#endif

/* sb_once(v): v was loaded from memory another thread may write; from here on the compiler must
 * treat it as an opaque value and may not re-load it from that memory (a "double fetch" that
 * would undo the bounds check done on v). */
#if defined(__GNUC__)
#define sb_once(v) __asm__ volatile("" : "+r"(v))
#define SB_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define sb_once(v) ((void)0)
#define SB_UNLIKELY(x) (x)
#endif

#ifndef SB_BUILD_FLAGS
#define SB_BUILD_FLAGS "unknown"
#endif

/* ------------------------------------------------------------------ XXH64 */

#define P1 UINT64_C(0x9E3779B185EBCA87)
#define P2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define P3 UINT64_C(0x165667B19E3779F9)
#define P4 UINT64_C(0x85EBCA77C2B2AE63)
#define P5 UINT64_C(0x27D4EB2F165667C5)

SB_INLINE uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
SB_INLINE uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
/* Loads of values that are then bounds-checked: once (see sb_once). */
SB_INLINE uint64_t rd64_once(const uint8_t *p) { uint64_t v = rd64(p); sb_once(v); return v; }
SB_INLINE uint32_t rd32_once(const uint8_t *p) { uint32_t v = rd32(p); sb_once(v); return v; }
SB_INLINE uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

SB_INLINE uint64_t xxh_round(uint64_t acc, uint64_t lane)
{
    acc += lane * P2;
    return rotl64(acc, 31) * P1;
}

SB_INLINE uint64_t xxh_merge(uint64_t h, uint64_t v)
{
    h ^= xxh_round(0, v);
    return h * P1 + P4;
}

/* XXH64 of p[0:len]; inlined with a constant len it reduces to the straight-line sequence. */
SB_INLINE uint64_t xxh64(const uint8_t *p, uint64_t len)
{
    const uint8_t *const end = p + len;
    uint64_t h;
    if (len >= 32) {
        const uint8_t *const limit = end - 32;
        uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = (uint64_t)0 - P1;
        do {
            v1 = xxh_round(v1, rd64(p));
            v2 = xxh_round(v2, rd64(p + 8));
            v3 = xxh_round(v3, rd64(p + 16));
            v4 = xxh_round(v4, rd64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = xxh_merge(h, v1);
        h = xxh_merge(h, v2);
        h = xxh_merge(h, v3);
        h = xxh_merge(h, v4);
    } else {
        h = P5;
    }
    h += len;
    while (p + 8 <= end) {
        h ^= xxh_round(0, rd64(p));
        h = rotl64(h, 27) * P1 + P4;
        p += 8;
    }
    if (p + 4 <= end) {
        h ^= (uint64_t)rd32(p) * P1;
        h = rotl64(h, 23) * P2 + P3;
        p += 4;
    }
    while (p < end) {
        h ^= (uint64_t)(*p) * P5;
        h = rotl64(h, 11) * P1;
        p++;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

/* cond (0 or 1) ? a : b, as arithmetic so that no compiler turns it into a branch. */
SB_INLINE uint64_t sb_select(uint64_t cond, uint64_t a, uint64_t b) { return b ^ ((a ^ b) & ((uint64_t)0 - cond)); }

/* XXH64 of four values p[j][0:len[j]], each shorter than 32 bytes with 32 bytes readable at p[j].
 * Every step runs for every value and a select keeps its result only where the value has that
 * step (the bytes read past a value are never mixed in): variable lengths cost no branch
 * mispredictions, and the four dependency chains interleave. */
#define SB_W 4
SB_INLINE void xxh64_short4(const uint8_t *const *p, const uint64_t *len, uint64_t *out)
{
    uint64_t h[SB_W], lanes[SB_W], pos[SB_W], rest[SB_W], t;
    for (int j = 0; j < SB_W; j++) {
        h[j] = P5 + len[j];
        lanes[j] = len[j] >> 3;
    }
    for (uint64_t k = 0; k < 3; k++)
        for (int j = 0; j < SB_W; j++) {
            t = rotl64(h[j] ^ xxh_round(0, rd64(p[j] + 8 * k)), 27) * P1 + P4;
            h[j] = sb_select(k < lanes[j], t, h[j]);
        }
    for (int j = 0; j < SB_W; j++) {
        pos[j] = lanes[j] * 8;
        t = rotl64(h[j] ^ (uint64_t)rd32(p[j] + pos[j]) * P1, 23) * P2 + P3;
        h[j] = sb_select((len[j] >> 2) & 1, t, h[j]);
        pos[j] += len[j] & 4;
        rest[j] = len[j] & 3;
    }
    for (uint64_t k = 0; k < 3; k++)
        for (int j = 0; j < SB_W; j++) {
            t = rotl64(h[j] ^ (uint64_t)p[j][pos[j] + k] * P5, 11) * P1;
            h[j] = sb_select(k < rest[j], t, h[j]);
        }
    for (int j = 0; j < SB_W; j++) {
        uint64_t x = h[j];
        x ^= x >> 33;
        x *= P2;
        x ^= x >> 29;
        x *= P3;
        x ^= x >> 32;
        out[j] = x;
    }
}

/* XXH64 of m variable-length values (pointer, length, and whether the 4-way short path may read
 * 32 bytes at the pointer): four at a time where all four may, one by one otherwise. */
static void xxh64_var_many(const uint8_t *const *p, const uint64_t *len, const uint8_t *padded, Py_ssize_t m,
                           uint64_t *out)
{
    Py_ssize_t i = 0;
    for (; i + SB_W <= m; i += SB_W) {
        if (padded[i] & padded[i + 1] & padded[i + 2] & padded[i + 3]) {
            xxh64_short4(p + i, len + i, out + i);
        } else {
            for (int j = 0; j < SB_W; j++)
                out[i + j] = xxh64(p[i + j], len[i + j]);
        }
    }
    for (; i < m; i++)
        out[i] = xxh64(p[i], len[i]);
}

/* ------------------------------------------------------------------ SBBF block operations */

/* SBBF_SALT, the block index and the block insert/check: sbbf.h (shared with gcm.c); here the
 * loops over many hashes, with prefetch, and their AVX2 versions (one register is one block). */

/* Insert/check hashes h[0:n] into/against the z blocks at `bits`. PF = prefetch distance. */
#define SB_PF 8

static void insert_scalar(uint8_t *bits, uint64_t z, const uint64_t *h, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + SB_PF < n)
            SB_PREFETCH_W(bits + SBBF_BYTES_PER_BLOCK * sbbf_block_index(h[i + SB_PF], z));
        sbbf_block_insert(bits + SBBF_BYTES_PER_BLOCK * sbbf_block_index(h[i], z), (uint32_t)h[i]);
    }
}

static void check_scalar(const uint8_t *bits, uint64_t z, const uint64_t *h, Py_ssize_t n, uint8_t *out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + SB_PF < n)
            SB_PREFETCH_R(bits + SBBF_BYTES_PER_BLOCK * sbbf_block_index(h[i + SB_PF], z));
        out[i] = (uint8_t)sbbf_check(bits, z, h[i]);
    }
}

#ifdef SB_HAVE_AVX2_BUILD
__attribute__((target("avx2"))) static void insert_avx2(uint8_t *bits, uint64_t z, const uint64_t *h, Py_ssize_t n)
{
    const __m256i salt = _mm256_setr_epi32((int)SBBF_SALT[0], (int)SBBF_SALT[1], (int)SBBF_SALT[2], (int)SBBF_SALT[3],
                                           (int)SBBF_SALT[4], (int)SBBF_SALT[5], (int)SBBF_SALT[6],
                                           (int)SBBF_SALT[7]);
    const __m256i one = _mm256_set1_epi32(1);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + SB_PF < n)
            SB_PREFETCH_W(bits + SBBF_BYTES_PER_BLOCK * sbbf_block_index(h[i + SB_PF], z));
        __m256i *blk = (__m256i *)(bits + SBBF_BYTES_PER_BLOCK * sbbf_block_index(h[i], z));
        __m256i k = _mm256_set1_epi32((int)(uint32_t)h[i]);
        __m256i m = _mm256_sllv_epi32(one, _mm256_srli_epi32(_mm256_mullo_epi32(k, salt), 27));
        _mm256_storeu_si256(blk, _mm256_or_si256(_mm256_loadu_si256(blk), m));
    }
}

__attribute__((target("avx2"))) static void check_avx2(const uint8_t *bits, uint64_t z, const uint64_t *h,
                                                       Py_ssize_t n, uint8_t *out)
{
    const __m256i salt = _mm256_setr_epi32((int)SBBF_SALT[0], (int)SBBF_SALT[1], (int)SBBF_SALT[2], (int)SBBF_SALT[3],
                                           (int)SBBF_SALT[4], (int)SBBF_SALT[5], (int)SBBF_SALT[6],
                                           (int)SBBF_SALT[7]);
    const __m256i one = _mm256_set1_epi32(1);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + SB_PF < n)
            SB_PREFETCH_R(bits + SBBF_BYTES_PER_BLOCK * sbbf_block_index(h[i + SB_PF], z));
        const __m256i *blk = (const __m256i *)(bits + SBBF_BYTES_PER_BLOCK * sbbf_block_index(h[i], z));
        __m256i k = _mm256_set1_epi32((int)(uint32_t)h[i]);
        __m256i m = _mm256_sllv_epi32(one, _mm256_srli_epi32(_mm256_mullo_epi32(k, salt), 27));
        out[i] = (uint8_t)_mm256_testc_si256(_mm256_loadu_si256(blk), m);  /* (~block & m) == 0 */
    }
}
#endif

typedef void (*insert_fn)(uint8_t *, uint64_t, const uint64_t *, Py_ssize_t);
typedef void (*check_fn)(const uint8_t *, uint64_t, const uint64_t *, Py_ssize_t, uint8_t *);

static insert_fn sb_insert = insert_scalar;
static check_fn sb_check = check_scalar;
static int sb_simd_available = 0;  /* the CPU has AVX2 and this build has the AVX2 kernels */
static int sb_simd_active = 0;

/* ------------------------------------------------------------------ value sources */

/* A column of values to hash: fixed width, Arrow binary (int32/int64 offsets) or binary views,
 * with an optional validity bitmap. source_validate (GIL released) finds malformed input and
 * says why; source_hash checks each offset / view it uses on its own single load, whether or not
 * validation ran, since another thread may write the buffers at any time. */
enum { SRC_FIXED, SRC_BIN32, SRC_BIN64, SRC_VIEW };

typedef struct {
    int kind;
    Py_ssize_t n;            /* number of values (nulls included) */
    const uint8_t *data;     /* fixed: the values; binary: the data buffer */
    Py_ssize_t data_len;
    Py_ssize_t width;        /* fixed width */
    const uint8_t *aux;      /* binary: offsets (n + 1); view: the 16-byte views */
    Py_ssize_t nbuf;         /* view: number of data buffers */
    const uint8_t **bufs;    /* view: data buffers (a table of the call's own: nbuf entries) */
    const Py_ssize_t *buf_lens;
    const uint8_t *validity; /* NULL: all valid */
    Py_ssize_t voff;
} source_t;

/* Error found while validating (GIL released): reported once the GIL is back. */
typedef struct {
    const char *what;
    Py_ssize_t index;
    long long a, b;
} verr_t;

SB_INLINE int is_valid(const source_t *s, Py_ssize_t i)
{
    if (s->validity == NULL)
        return 1;
    Py_ssize_t bit = s->voff + i;
    return (s->validity[bit >> 3] >> (bit & 7)) & 1;
}

SB_INLINE int64_t rd_offset_k(const uint8_t *aux, int kind, Py_ssize_t i)
{
    if (kind == SRC_BIN32)
        return (int32_t)rd32_once(aux + 4 * i);
    return (int64_t)rd64_once(aux + 8 * i);
}

SB_INLINE int64_t rd_offset(const source_t *s, Py_ssize_t i) { return rd_offset_k(s->aux, s->kind, i); }

/* Every offset pair and view must lie inside its buffer. Binary offsets must be non-decreasing
 * from a non-negative first offset to a last offset within the data (Arrow's rule, checked for
 * null slots too); then every value data[o[i]:o[i+1]] is in bounds. Returns 0 when valid. */
static int source_validate(const source_t *s, verr_t *err)
{
    if (s->kind == SRC_BIN32 || s->kind == SRC_BIN64) {
        if (s->n == 0)
            return 0;
        int64_t prev = rd_offset(s, 0);
        if (prev < 0) {
            *err = (verr_t){"offset %zd is negative (%lld)", 0, prev, 0};
            return -1;
        }
        for (Py_ssize_t i = 1; i <= s->n; i++) {
            int64_t cur = rd_offset(s, i);
            if (cur < prev) {
                *err = (verr_t){"offsets decrease at value %zd (%lld after %lld)", i - 1, cur, prev};
                return -1;
            }
            prev = cur;
        }
        if (prev > (int64_t)s->data_len) {
            *err = (verr_t){"last offset (value %zd) is %lld, past the %lld-byte data buffer", s->n - 1, prev,
                            (long long)s->data_len};
            return -1;
        }
    } else if (s->kind == SRC_VIEW) {
        for (Py_ssize_t i = 0; i < s->n; i++) {
            if (!is_valid(s, i))
                continue;  /* Arrow leaves null views undefined */
            const uint8_t *v = s->aux + 16 * i;
            int32_t len = (int32_t)rd32_once(v);
            if (len < 0) {
                *err = (verr_t){"view %zd has a negative length (%lld)", i, len, 0};
                return -1;
            }
            if (len <= 12)
                continue;
            int32_t bi = (int32_t)rd32_once(v + 8), off = (int32_t)rd32_once(v + 12);
            if (bi < 0 || bi >= s->nbuf) {
                *err = (verr_t){"view %zd names data buffer %lld of %lld", i, bi, (long long)s->nbuf};
                return -1;
            }
            if (off < 0 || (int64_t)off + len > (int64_t)s->buf_lens[bi]) {
                *err = (verr_t){"view %zd: offset %lld + length is past its data buffer of %lld bytes", i, off,
                                (long long)s->buf_lens[bi]};
                return -1;
            }
        }
    }
    return 0;
}

/* The values [start, end) of a binary source as pointers and lengths for xxh64_var_many, and
 * whether 32 bytes are readable from each pointer (the short 4-way path); nulls are skipped.
 * kind is a constant at each call site. Each offset is loaded once: offset i + 1 is the end of
 * value i and the start of value i + 1. Every pair, null slots included, must satisfy
 * 0 <= start <= end <= data_len (source_validate's rule, pair by pair); a pair that does not is
 * counted in *bad and its value is not hashed. */
SB_INLINE Py_ssize_t gather_binary(const source_t *s, int kind, Py_ssize_t start, Py_ssize_t end,
                                   const uint8_t **ptr, uint64_t *len, uint8_t *padded, Py_ssize_t *bad)
{
    const uint64_t data_len = (uint64_t)s->data_len;
    Py_ssize_t m = 0;
    uint64_t lo = (uint64_t)rd_offset_k(s->aux, kind, start);  /* negative: huge, caught below */
    for (Py_ssize_t i = start; i < end; i++) {
        uint64_t hi = (uint64_t)rd_offset_k(s->aux, kind, i + 1);
        if (SB_UNLIKELY((lo > hi) | (hi > data_len))) {
            ++*bad;
        } else if (is_valid(s, i)) {
            ptr[m] = s->data + lo;
            len[m] = hi - lo;
            padded[m] = len[m] < 32 && data_len - lo >= 32;
            m++;
        }
        lo = hi;
    }
    return m;
}

/* The same for views: length, buffer index and offset loaded once each and checked, as
 * source_validate does, against the call's buffer table (null views are not read: Arrow leaves
 * them undefined). An inline value (length <= 12) lies inside its own view; the views after it
 * are the padding, where there are two. */
static Py_ssize_t gather_view(const source_t *s, Py_ssize_t start, Py_ssize_t end, const uint8_t **ptr,
                              uint64_t *len, uint8_t *padded, Py_ssize_t *bad)
{
    Py_ssize_t m = 0;
    for (Py_ssize_t i = start; i < end; i++) {
        if (!is_valid(s, i))
            continue;
        const uint8_t *v = s->aux + 16 * i;
        uint64_t l = rd32_once(v);
        if (l <= 12) {
            ptr[m] = v + 4;
            len[m] = l;
            padded[m] = 16 * (s->n - i) - 4 >= 32;
            m++;
            continue;
        }
        uint64_t bi = rd32_once(v + 8), off = rd32_once(v + 12);  /* int32 < 0: >= 2^31 here */
        uint64_t size = bi < (uint64_t)s->nbuf ? (uint64_t)s->buf_lens[bi] : 0;
        if (SB_UNLIKELY((bi >= (uint64_t)s->nbuf) | (l > INT32_MAX) | (off > INT32_MAX) | (off + l > size))) {
            ++*bad;
            continue;
        }
        ptr[m] = s->bufs[bi] + off;
        len[m] = l;
        padded[m] = l < 32 && size - off >= 32;
        m++;
    }
    return m;
}

#define SB_CHUNK 512 /* values hashed per step (stack buffers) */

/* Hash values [start, end) of a validated source into out; nulls are skipped. Returns the count. */
#define SB_HASH_LOOP(EXPR)                                                                    \
    do {                                                                                      \
        if (s->validity == NULL) {                                                            \
            for (Py_ssize_t i = start; i < end; i++)                                          \
                out[m++] = (EXPR);                                                            \
        } else {                                                                              \
            for (Py_ssize_t i = start; i < end; i++)                                          \
                if (is_valid(s, i))                                                           \
                    out[m++] = (EXPR);                                                        \
        }                                                                                     \
    } while (0)

/* Hash values [start, end) of a source into out (at most end - start entries): fixed width
 * values by their index (nothing read from the buffers decides an address), binary values and
 * views through the checked gathers above. Returns the number hashed; offset pairs and views
 * that fail their check are counted in *bad. */
static Py_ssize_t source_hash(const source_t *src, Py_ssize_t start, Py_ssize_t end, uint64_t *out,
                              Py_ssize_t *bad)
{
    /* A local copy: stores to out cannot alias it, so its fields stay in registers. */
    const source_t local = *src, *s = &local;
    Py_ssize_t m = 0;
    const uint8_t *d = s->data;
    switch (s->kind) {
    case SRC_FIXED:
        switch (s->width) {
        case 4: SB_HASH_LOOP(xxh64(d + 4 * i, 4)); break;
        case 8: SB_HASH_LOOP(xxh64(d + 8 * i, 8)); break;
        case 12: SB_HASH_LOOP(xxh64(d + 12 * i, 12)); break;
        case 16: SB_HASH_LOOP(xxh64(d + 16 * i, 16)); break;
        default: {
            const uint64_t w = (uint64_t)s->width;
            SB_HASH_LOOP(xxh64(d + w * (uint64_t)i, w));
        }
        }
        break;
    case SRC_BIN32:
    case SRC_BIN64:
    case SRC_VIEW: {
        /* Gather the non-null values' pointers and lengths, then hash them (4-way where short). */
        const uint8_t *ptr[SB_CHUNK];
        uint64_t len[SB_CHUNK];
        uint8_t padded[SB_CHUNK];
        if (s->kind == SRC_BIN32)
            m = gather_binary(s, SRC_BIN32, start, end, ptr, len, padded, bad);
        else if (s->kind == SRC_BIN64)
            m = gather_binary(s, SRC_BIN64, start, end, ptr, len, padded, bad);
        else
            m = gather_view(s, start, end, ptr, len, padded, bad);
        xxh64_var_many(ptr, len, padded, m, out);
        break;
    }
    }
    return m;
}

/* ------------------------------------------------------------------ argument helpers */

typedef struct {
    Py_buffer views[4];  /* 0 bitset/out, 1-2 the source's buffers, 2 or 3 the validity bitmap */
    int used[4];
    Py_buffer *many;   /* view data buffers */
    Py_ssize_t nmany;
    const uint8_t **ptrs;
    Py_ssize_t *lens;
} buffers_t;

static void buffers_release(buffers_t *b)
{
    for (int i = 0; i < 4; i++)
        if (b->used[i])
            PyBuffer_Release(&b->views[i]);
    for (Py_ssize_t i = 0; i < b->nmany; i++)
        PyBuffer_Release(&b->many[i]);
    PyMem_Free(b->many);
    PyMem_Free(b->ptrs);
    PyMem_Free(b->lens);
    memset(b, 0, sizeof(*b));
}

/* Export obj's bytes (C-contiguous) into slot i; writable on request. */
static int get_buffer(buffers_t *b, int i, PyObject *obj, int writable, const char *name)
{
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->views[i], flags) < 0) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        Py_XDECREF(t); Py_XDECREF(v); Py_XDECREF(tb);
        PyErr_Format(PyExc_TypeError, "%s must be a %sC-contiguous buffer (bytes-like object), got %.100s",
                     name, writable ? "writable " : "", Py_TYPE(obj)->tp_name);
        return -1;
    }
    b->used[i] = 1;
    return 0;
}

static int check_validity(const Py_buffer *v, Py_ssize_t voff, Py_ssize_t n)
{
    if (voff < 0) {
        PyErr_Format(PyExc_ValueError, "validity_offset must be >= 0, got %zd", voff);
        return -1;
    }
    if (voff > PY_SSIZE_T_MAX - n || (voff + n + 7) / 8 > v->len) {
        PyErr_Format(PyExc_ValueError,
                     "validity bitmap of %zd bytes is too short for %zd values at bit offset %zd",
                     v->len, n, voff);
        return -1;
    }
    return 0;
}

/* The bitset's block count: floor(numBytes / 32), for 32 <= numBytes <= 128 MiB (the sizes
 * Parquet readers accept; header.MAX_BITSET_BYTES). */
#define SB_MAX_BITSET_BYTES ((Py_ssize_t)SBBF_MAX_BITSET_BYTES)
static int bitset_blocks(const Py_buffer *v, uint64_t *z)
{
    Py_ssize_t blocks = v->len / 32;
    if (v->len < SBBF_MIN_BITSET_BYTES || v->len > SB_MAX_BITSET_BYTES) {
        PyErr_Format(PyExc_ValueError, "bitset of %zd bytes is outside [32, %zd] bytes", v->len,
                     SB_MAX_BITSET_BYTES);
        return -1;
    }
    *z = (uint64_t)blocks;
    return 0;
}

/* Parse the value-source arguments shared by the hash/insert/check families into s (buffers in
 * b, slots 1 and 2; slot 0 is the bitset or output). kind: SRC_FIXED uses (data, width);
 * binary uses (offsets, data, offset_width); views use (views, data_buffers). */
static int build_source(source_t *s, buffers_t *b, int kind, PyObject *a, PyObject *c, Py_ssize_t param,
                        PyObject *validity, Py_ssize_t voff)
{
    memset(s, 0, sizeof(*s));
    if (kind == SRC_FIXED) {
        if (get_buffer(b, 1, a, 0, "data") < 0)
            return -1;
        if (param < 1 || param > ((Py_ssize_t)1 << 31)) {
            PyErr_Format(PyExc_ValueError, "width must be in [1, 2^31], got %zd", param);
            return -1;
        }
        if (b->views[1].len % param) {
            PyErr_Format(PyExc_ValueError, "data of %zd bytes is not a whole number of %zd-byte values",
                         b->views[1].len, param);
            return -1;
        }
        s->kind = SRC_FIXED;
        s->width = param;
        s->data = b->views[1].buf;
        s->data_len = b->views[1].len;
        s->n = s->data_len / param;
    } else if (kind == SRC_BIN32) {
        if (param != 4 && param != 8) {
            PyErr_Format(PyExc_ValueError, "offset_width must be 4 (binary/string) or 8 (large_*), got %zd", param);
            return -1;
        }
        if (get_buffer(b, 1, a, 0, "offsets") < 0 || get_buffer(b, 2, c, 0, "data") < 0)
            return -1;
        if (b->views[1].len % param) {
            PyErr_Format(PyExc_ValueError, "offsets buffer of %zd bytes is not a whole number of %zd-byte offsets",
                         b->views[1].len, param);
            return -1;
        }
        s->kind = param == 4 ? SRC_BIN32 : SRC_BIN64;
        s->aux = b->views[1].buf;
        s->n = b->views[1].len ? b->views[1].len / param - 1 : 0;
        s->data = b->views[2].buf;
        s->data_len = b->views[2].len;
    } else {
        if (get_buffer(b, 1, a, 0, "views") < 0)
            return -1;
        if (b->views[1].len % 16) {
            PyErr_Format(PyExc_ValueError, "views buffer of %zd bytes is not a whole number of 16-byte views",
                         b->views[1].len);
            return -1;
        }
        /* A tuple of our own: exporting an item may run code that changes the caller's list. */
        PyObject *seq = PySequence_Tuple(c);
        if (seq == NULL) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_TypeError, "data_buffers must be a sequence of buffers");
            }
            return -1;
        }
        Py_ssize_t nb = PyTuple_GET_SIZE(seq);
        if (nb > INT32_MAX) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "too many data buffers");
            return -1;
        }
        b->many = PyMem_Calloc(nb ? nb : 1, sizeof(Py_buffer));
        b->ptrs = PyMem_Calloc(nb ? nb : 1, sizeof(*b->ptrs));
        b->lens = PyMem_Calloc(nb ? nb : 1, sizeof(*b->lens));
        if (!b->many || !b->ptrs || !b->lens) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < nb; i++) {
            PyObject *item = PyTuple_GET_ITEM(seq, i);
            if (PyObject_GetBuffer(item, &b->many[i], PyBUF_C_CONTIGUOUS) < 0) {
                Py_DECREF(seq);
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "data_buffers[%zd] must be a C-contiguous buffer, got %.100s", i,
                             Py_TYPE(item)->tp_name);
                return -1;
            }
            b->nmany = i + 1;
            b->ptrs[i] = b->many[i].buf;
            b->lens[i] = b->many[i].len;
        }
        Py_DECREF(seq);
        s->kind = SRC_VIEW;
        s->aux = b->views[1].buf;
        s->n = b->views[1].len / 16;
        s->nbuf = nb;
        s->bufs = b->ptrs;
        s->buf_lens = b->lens;
    }
    if (validity != NULL && validity != Py_None) {
        if (get_buffer(b, 2 + (kind != SRC_FIXED), validity, 0, "validity") < 0)
            return -1;
        const Py_buffer *v = &b->views[2 + (kind != SRC_FIXED)];
        if (check_validity(v, voff, s->n) < 0)
            return -1;
        s->validity = v->buf;
        s->voff = voff;
    }
    return 0;
}

/* Validate with the GIL released; raise ValueError if invalid. */
static int validate_source(const source_t *s)
{
    verr_t err = {0};
    int rc;
    SB_BEGIN_ALLOW_THREADS_FOR((long long)s->n * 32)
    rc = source_validate(s, &err);
    SB_END_ALLOW_THREADS_FOR
    if (rc < 0) {
        char msg[200];
        PyOS_snprintf(msg, sizeof(msg), err.what, err.index, err.a, err.b);
        PyErr_SetString(PyExc_ValueError, msg);
    }
    return rc;
}

/* ------------------------------------------------------------------ operations on a source */

enum { OP_HASH, OP_INSERT, OP_CHECK };

/* Hash the source; per op: write hashes to out (uint64), insert into bits, or write check
 * results to out (uint8). Returns the number of non-null values hashed (at most n, the size
 * check_out checked); *bad counts the offset pairs / views that failed their check (those
 * values are left out). GIL released by caller. */
static Py_ssize_t run_source(const source_t *s, int op, uint8_t *bits, uint64_t z, uint8_t *out,
                             Py_ssize_t *bad)
{
    uint64_t buf[SB_CHUNK];
    Py_ssize_t count = 0;
    for (Py_ssize_t start = 0; start < s->n; start += SB_CHUNK) {
        Py_ssize_t end = s->n - start < SB_CHUNK ? s->n : start + SB_CHUNK;
        if (op == OP_HASH) {
            count += source_hash(s, start, end, (uint64_t *)(void *)(out + 8 * count), bad);
            continue;
        }
        Py_ssize_t m = source_hash(s, start, end, buf, bad);
        if (op == OP_INSERT)
            sb_insert(bits, z, buf, m);
        else
            sb_check(bits, z, buf, m, out + count);
        count += m;
    }
    return count;
}

/* Output buffer checks: out must be writable, aligned for uint64 when hashing, and hold n items. */
static int check_out(const Py_buffer *o, Py_ssize_t n, Py_ssize_t itemsize)
{
    if (o->len / itemsize < n) {
        PyErr_Format(PyExc_ValueError, "output buffer of %zd bytes is too small for %zd values of %zd bytes",
                     o->len, n, itemsize);
        return -1;
    }
    if (itemsize == 8 && ((uintptr_t)o->buf & 7)) {
        PyErr_SetString(PyExc_ValueError, "output buffer for hashes must be 8-byte aligned");
        return -1;
    }
    return 0;
}

static PyObject *do_source(int kind, int op, PyObject *bitset, PyObject *a, PyObject *c, Py_ssize_t param,
                           PyObject *out, PyObject *validity, Py_ssize_t voff)
{
    buffers_t b;
    source_t s;
    Py_buffer ob = {0};
    int have_out = 0;
    uint64_t z = 0;
    PyObject *result = NULL;
    memset(&b, 0, sizeof(b));
    if (op != OP_HASH) {
        if (get_buffer(&b, 0, bitset, op == OP_INSERT, "bitset") < 0 || bitset_blocks(&b.views[0], &z) < 0)
            goto done;
    }
    if (build_source(&s, &b, kind, a, c, param, validity, voff) < 0)
        goto done;
    if (op != OP_INSERT) {
        if (PyObject_GetBuffer(out, &ob, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
            goto done;
        have_out = 1;
        if (check_out(&ob, s.n, op == OP_HASH ? 8 : 1) < 0)
            goto done;
    }
    /* An insert validates first, so that malformed input leaves the bitset as it was. A hash or
     * check writes only its own output: the single pass checks every offset / view it uses and
     * only a failure runs the validation, for its message. */
    if (op == OP_INSERT && validate_source(&s) < 0)
        goto done;
    Py_ssize_t count, bad = 0;
    SB_BEGIN_ALLOW_THREADS_FOR((long long)s.n * 32)
    count = run_source(&s, op, b.used[0] ? b.views[0].buf : NULL, z, have_out ? ob.buf : NULL, &bad);
    SB_END_ALLOW_THREADS_FOR
    if (bad == 0)
        result = PyLong_FromSsize_t(count);
    else if (op == OP_INSERT || validate_source(&s) == 0)  /* valid now, or validated before: changed */
        PyErr_Format(PyExc_ValueError,
                     "the input changed while being read (another thread wrote to it): %zd %s pointed "
                     "outside their buffers and were not hashed", bad,
                     kind == SRC_VIEW ? "views" : "offset pairs");
done:
    if (have_out)
        PyBuffer_Release(&ob);
    buffers_release(&b);
    return result;
}

/* ------------------------------------------------------------------ Python entry points */

static PyObject *py_hash_fixed(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"data", "width", "out", "validity", "validity_offset", NULL};
    PyObject *data, *out, *validity = Py_None;
    Py_ssize_t width, voff = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OnO|On", kwl, &data, &width, &out, &validity, &voff))
        return NULL;
    return do_source(SRC_FIXED, OP_HASH, NULL, data, NULL, width, out, validity, voff);
}

static PyObject *py_hash_binary(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"offsets", "data", "offset_width", "out", "validity", "validity_offset", NULL};
    PyObject *offsets, *data, *out, *validity = Py_None;
    Py_ssize_t ow, voff = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOnO|On", kwl, &offsets, &data, &ow, &out, &validity, &voff))
        return NULL;
    return do_source(SRC_BIN32, OP_HASH, NULL, offsets, data, ow, out, validity, voff);
}

static PyObject *py_hash_view(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"views", "data_buffers", "out", "validity", "validity_offset", NULL};
    PyObject *views, *bufs, *out, *validity = Py_None;
    Py_ssize_t voff = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|On", kwl, &views, &bufs, &out, &validity, &voff))
        return NULL;
    return do_source(SRC_VIEW, OP_HASH, NULL, views, bufs, 0, out, validity, voff);
}

/* xxh64_objects(values, out) -> count | None: XXH64 of the UTF-8 bytes of each str and of the bytes of
 * each bytes object of a list or tuple (None skipped: a null), into out (uint64, one slot per item),
 * for BYTE_ARRAY columns given as Python objects (no conversion through an Arrow array). None when an
 * item is of another type or a str has no UTF-8 form (a lone surrogate): the caller takes the
 * per-value path, which names the problem. The GIL is held throughout (the items are objects) and
 * no Python code runs while they are read (reading a str's UTF-8 form allocates no tracked
 * object), so no other thread can change them; the list's length is still checked at each item
 * (no copy of the list: touching a million objects twice cost more than the hashing). */
static PyObject *py_hash_objects(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"values", "out", NULL};
    PyObject *values, *out, *result = NULL;
    Py_buffer ob = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO", kwl, &values, &out))
        return NULL;
    int list = PyList_CheckExact(values);
    if (!list && !PyTuple_CheckExact(values)) {
        PyErr_SetString(PyExc_TypeError, "values must be a list or a tuple");
        return NULL;
    }
    Py_INCREF(values);
    Py_ssize_t n = Py_SIZE(values), count = 0;
    if (PyObject_GetBuffer(out, &ob, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    if (check_out(&ob, n, 8) < 0)
        goto release;
    uint64_t *hashes = (uint64_t *)ob.buf;
    for (Py_ssize_t i = 0; i < n && i < Py_SIZE(values); i++) {
        PyObject *item = list ? PyList_GET_ITEM(values, i) : PyTuple_GET_ITEM(values, i);
        const char *p;
        Py_ssize_t len;
        if (item == Py_None)
            continue;
        if (PyUnicode_CheckExact(item)) {
            p = PyUnicode_AsUTF8AndSize(item, &len);
            if (p == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeError))
                    goto release;
                PyErr_Clear();
                result = Py_None;
                Py_INCREF(result);
                goto release;
            }
        } else if (PyBytes_CheckExact(item)) {
            p = PyBytes_AS_STRING(item);
            len = PyBytes_GET_SIZE(item);
        } else {
            result = Py_None;
            Py_INCREF(result);
            goto release;
        }
        hashes[count++] = xxh64((const uint8_t *)p, (uint64_t)len);
    }
    result = PyLong_FromSsize_t(count);
release:
    PyBuffer_Release(&ob);
done:
    Py_DECREF(values);
    return result;
}

/* sbbf_{insert,check}_{fixed,binary,view}: op taken from the function's data pointer. */
static PyObject *py_fused_fixed(PyObject *self, PyObject *args, PyObject *kw, int op)
{
    static char *kwl_i[] = {"bitset", "data", "width", "validity", "validity_offset", NULL};
    static char *kwl_c[] = {"bitset", "data", "width", "out", "validity", "validity_offset", NULL};
    PyObject *bitset, *data, *out = NULL, *validity = Py_None;
    Py_ssize_t width, voff = 0;
    int ok = op == OP_INSERT
        ? PyArg_ParseTupleAndKeywords(args, kw, "OOn|On", kwl_i, &bitset, &data, &width, &validity, &voff)
        : PyArg_ParseTupleAndKeywords(args, kw, "OOnO|On", kwl_c, &bitset, &data, &width, &out, &validity, &voff);
    if (!ok)
        return NULL;
    return do_source(SRC_FIXED, op, bitset, data, NULL, width, out, validity, voff);
}

static PyObject *py_fused_binary(PyObject *self, PyObject *args, PyObject *kw, int op)
{
    static char *kwl_i[] = {"bitset", "offsets", "data", "offset_width", "validity", "validity_offset", NULL};
    static char *kwl_c[] = {"bitset", "offsets", "data", "offset_width", "out", "validity", "validity_offset", NULL};
    PyObject *bitset, *offsets, *data, *out = NULL, *validity = Py_None;
    Py_ssize_t ow, voff = 0;
    int ok = op == OP_INSERT
        ? PyArg_ParseTupleAndKeywords(args, kw, "OOOn|On", kwl_i, &bitset, &offsets, &data, &ow, &validity, &voff)
        : PyArg_ParseTupleAndKeywords(args, kw, "OOOnO|On", kwl_c, &bitset, &offsets, &data, &ow, &out, &validity,
                                      &voff);
    if (!ok)
        return NULL;
    return do_source(SRC_BIN32, op, bitset, offsets, data, ow, out, validity, voff);
}

static PyObject *py_fused_view(PyObject *self, PyObject *args, PyObject *kw, int op)
{
    static char *kwl_i[] = {"bitset", "views", "data_buffers", "validity", "validity_offset", NULL};
    static char *kwl_c[] = {"bitset", "views", "data_buffers", "out", "validity", "validity_offset", NULL};
    PyObject *bitset, *views, *bufs, *out = NULL, *validity = Py_None;
    Py_ssize_t voff = 0;
    int ok = op == OP_INSERT
        ? PyArg_ParseTupleAndKeywords(args, kw, "OOO|On", kwl_i, &bitset, &views, &bufs, &validity, &voff)
        : PyArg_ParseTupleAndKeywords(args, kw, "OOOO|On", kwl_c, &bitset, &views, &bufs, &out, &validity, &voff);
    if (!ok)
        return NULL;
    return do_source(SRC_VIEW, op, bitset, views, bufs, 0, out, validity, voff);
}

#define SB_FUSED(name, base, op) \
    static PyObject *name(PyObject *self, PyObject *args, PyObject *kw) { return base(self, args, kw, op); }
SB_FUSED(py_insert_fixed, py_fused_fixed, OP_INSERT)
SB_FUSED(py_check_fixed, py_fused_fixed, OP_CHECK)
SB_FUSED(py_insert_binary, py_fused_binary, OP_INSERT)
SB_FUSED(py_check_binary, py_fused_binary, OP_CHECK)
SB_FUSED(py_insert_view, py_fused_view, OP_INSERT)
SB_FUSED(py_check_view, py_fused_view, OP_CHECK)

/* Hashes arrive as a buffer of native uint64; copy unaligned ones in chunks (rarely needed). */
static void hashes_op(int op, uint8_t *bits, uint64_t z, const uint8_t *h, Py_ssize_t n, uint8_t *out)
{
    if (((uintptr_t)h & 7) == 0) {
        if (op == OP_INSERT)
            sb_insert(bits, z, (const uint64_t *)(const void *)h, n);
        else
            sb_check(bits, z, (const uint64_t *)(const void *)h, n, out);
        return;
    }
    uint64_t buf[SB_CHUNK];
    for (Py_ssize_t start = 0; start < n; start += SB_CHUNK) {
        Py_ssize_t m = n - start < SB_CHUNK ? n - start : SB_CHUNK;
        memcpy(buf, h + 8 * start, 8 * (size_t)m);
        if (op == OP_INSERT)
            sb_insert(bits, z, buf, m);
        else
            sb_check(bits, z, buf, m, out + start);
    }
}

/* Export a buffer of native uint64 hashes into slot i; *n = their count. */
static int get_hashes(buffers_t *b, int i, PyObject *hashes, Py_ssize_t *n)
{
    if (get_buffer(b, i, hashes, 0, "hashes") < 0)
        return -1;
    if (b->views[i].len % 8) {
        PyErr_Format(PyExc_ValueError, "hashes buffer of %zd bytes is not a whole number of 8-byte hashes",
                     b->views[i].len);
        return -1;
    }
    *n = b->views[i].len / 8;
    return 0;
}

static PyObject *py_hashes_op(PyObject *args, PyObject *kw, int op)
{
    static char *kwl_i[] = {"bitset", "hashes", NULL};
    static char *kwl_c[] = {"bitset", "hashes", "out", NULL};
    PyObject *bitset, *hashes, *out = NULL, *result = NULL;
    buffers_t b;
    uint64_t z;
    memset(&b, 0, sizeof(b));
    int ok = op == OP_INSERT ? PyArg_ParseTupleAndKeywords(args, kw, "OO", kwl_i, &bitset, &hashes)
                             : PyArg_ParseTupleAndKeywords(args, kw, "OOO", kwl_c, &bitset, &hashes, &out);
    if (!ok)
        return NULL;
    Py_ssize_t n;
    if (get_buffer(&b, 0, bitset, op == OP_INSERT, "bitset") < 0 || bitset_blocks(&b.views[0], &z) < 0 ||
        get_hashes(&b, 1, hashes, &n) < 0)
        goto done;
    if (op == OP_CHECK) {
        if (get_buffer(&b, 2, out, 1, "out") < 0 || check_out(&b.views[2], n, 1) < 0)
            goto done;
    }
    SB_BEGIN_ALLOW_THREADS_FOR((long long)n * 32)
    hashes_op(op, b.views[0].buf, z, b.views[1].buf, n, op == OP_CHECK ? b.views[2].buf : NULL);
    SB_END_ALLOW_THREADS_FOR
    result = Py_NewRef(Py_None);
done:
    buffers_release(&b);
    return result;
}

static PyObject *py_insert(PyObject *self, PyObject *args, PyObject *kw) { return py_hashes_op(args, kw, OP_INSERT); }
static PyObject *py_check(PyObject *self, PyObject *args, PyObject *kw) { return py_hashes_op(args, kw, OP_CHECK); }

/* check_many(bitsets, hashes, out): out[f * n + i] = hash i against bitsets[f], for a sequence of
 * bitsets (the filters of one file's row groups) and one array of n hashes (hashed once): every
 * filter in one call, with the GIL released once. Each bitset is validated here, as sbbf_check's is
 * (its buffer held from then on): the Python wrapper hands the sequence over unchecked. */
static PyObject *py_check_many(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"bitsets", "hashes", "out", NULL};
    PyObject *bitsets_arg, *hashes, *out, *bitsets = NULL, *result = NULL;
    buffers_t b;
    Py_buffer *views = NULL;
    uint64_t *blocks = NULL;
    Py_ssize_t f = 0, held = 0;
    memset(&b, 0, sizeof(b));
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO", kwl, &bitsets_arg, &hashes, &out))
        return NULL;
    bitsets = PySequence_Fast(bitsets_arg, "bitsets must be a sequence of buffers");
    if (bitsets == NULL)
        return NULL;
    f = PySequence_Fast_GET_SIZE(bitsets);
    Py_ssize_t n;
    if (get_hashes(&b, 1, hashes, &n) < 0 || get_buffer(&b, 2, out, 1, "out") < 0)
        goto done;
    if (n > 0 && f > PY_SSIZE_T_MAX / n) {
        PyErr_SetString(PyExc_ValueError, "too many bitsets x hashes");
        goto done;
    }
    if (check_out(&b.views[2], f * n, 1) < 0)
        goto done;
    views = PyMem_Calloc((size_t)f + 1, sizeof(Py_buffer));
    blocks = PyMem_Calloc((size_t)f + 1, sizeof(uint64_t));
    if (views == NULL || blocks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; held < f; held++) {
        PyObject *item = PySequence_Fast_GET_ITEM(bitsets, held);
        if (PyObject_GetBuffer(item, &views[held], PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "bitsets[%zd]: bitset must be a bytes-like object (buffer protocol), "
                         "C-contiguous, got %.100s", held, Py_TYPE(item)->tp_name);
            goto done;
        }
        if (bitset_blocks(&views[held], &blocks[held]) < 0) {
            held++;
            goto done;
        }
    }
    SB_BEGIN_ALLOW_THREADS_FOR((long long)f * n * 32)
    for (Py_ssize_t i = 0; i < f; i++)
        hashes_op(OP_CHECK, views[i].buf, blocks[i], b.views[1].buf, n, (uint8_t *)b.views[2].buf + i * n);
    SB_END_ALLOW_THREADS_FOR
    result = Py_NewRef(Py_None);
done:
    for (Py_ssize_t i = 0; views != NULL && i < held; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(blocks);
    buffers_release(&b);
    Py_DECREF(bitsets);
    return result;
}

/* ------------------------------------------------------------------ exact distinct count */

/* Heapsort: the O(n log n) worst case for a bucket whose hash table probes too long (only
 * crafted inputs get here). */
static void sift_down(uint64_t *a, size_t start, size_t n)
{
    size_t root = start;
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && a[child] < a[child + 1])
            child++;
        if (a[root] >= a[child])
            return;
        uint64_t t = a[root]; a[root] = a[child]; a[child] = t;
        root = child;
    }
}

static size_t distinct_sorted(uint64_t *a, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n - 1; end > 0; end--) {
        uint64_t t = a[0]; a[0] = a[end]; a[end] = t;
        sift_down(a, 0, end);
    }
    size_t d = 1;
    for (size_t i = 1; i < n; i++)
        d += a[i] != a[i - 1];
    return d;
}

#define SB_TABLE_MAX_BITS 20 /* a bucket's table: at most 2^20 slots (8 MiB) */

/* Distinct values of a[0:n] with an open-addressing table of 2^bits slots (>= 2n). Slot 0
 * marks empty, so the value 0 is counted separately. Returns -1 when probing gets too long. */
static long long distinct_table(const uint64_t *a, size_t n, uint64_t *table, int bits)
{
    size_t mask = ((size_t)1 << bits) - 1, probes = 0, limit = 16 * n + 64;
    long long d = 0;
    int zero = 0;
    memset(table, 0, (mask + 1) * sizeof(uint64_t));
    for (size_t i = 0; i < n; i++) {
        uint64_t x = a[i];
        if (x == 0) {
            zero = 1;
            continue;
        }
        size_t slot = (size_t)((x * P1) >> (64 - bits)) & mask;
        while (table[slot] != 0 && table[slot] != x) {
            slot = (slot + 1) & mask;
            if (++probes > limit)
                return -1;
        }
        if (table[slot] == 0) {
            table[slot] = x;
            d++;
        }
    }
    return d + zero;
}

/* Partition by the top bits into buckets of about 2048 hashes (one counting pass, one scatter
 * pass, into a copy), then count each bucket in a cache-sized table; a bucket that is too big
 * or probes too long (crafted hashes) is heap-sorted instead. Memory: n + O(table) words.
 * h may change between the two passes (another thread): the scatter writes a hash only into a
 * slot of its bucket that is free, and *changed is set if any did not fit (the slots left are
 * zeroed, the count is then meaningless and the caller raises). */
static long long count_distinct(const uint64_t *h, size_t n, int *nomem, int *changed)
{
    if (n == 0)
        return 0;
    int pbits = 0;
    while (pbits < 16 && ((size_t)2048 << pbits) < n)
        pbits++;
    size_t nb = (size_t)1 << pbits;
    size_t *start = calloc(nb + 1, sizeof(size_t));
    uint64_t *copy = malloc(n * sizeof(uint64_t));
    uint64_t *table = NULL;
    long long total = 0;
    if (!start || !copy) {
        *nomem = 1;
        goto out;
    }
    int shift = 64 - pbits;
#define SB_BUCKET(x) (pbits ? (size_t)((x) >> shift) : 0)
    for (size_t i = 0; i < n; i++)
        start[SB_BUCKET(h[i]) + 1]++;
    size_t biggest = 0;
    for (size_t b = 0; b < nb; b++) {
        biggest = start[b + 1] > biggest ? start[b + 1] : biggest;
        start[b + 1] += start[b];
    }
    int table_bits = 4;
    while (table_bits < SB_TABLE_MAX_BITS && ((size_t)1 << table_bits) < 2 * biggest)
        table_bits++;
    table = malloc(((size_t)1 << table_bits) * sizeof(uint64_t));
    if (!table) {
        *nomem = 1;
        goto out;
    }
    {
        size_t *pos = malloc(nb * sizeof(size_t));
        if (!pos) {
            *nomem = 1;
            goto out;
        }
        memcpy(pos, start, nb * sizeof(size_t));
        for (size_t i = 0; i < n; i++) {
            uint64_t x = h[i];
            sb_once(x);
            size_t b = SB_BUCKET(x);
            if (SB_LIKELY(pos[b] < start[b + 1]))
                copy[pos[b]++] = x;
            else
                *changed = 1;
        }
        if (*changed)
            for (size_t b = 0; b < nb; b++)
                for (; pos[b] < start[b + 1]; pos[b]++)
                    copy[pos[b]] = 0;
        free(pos);
    }
#undef SB_BUCKET
    for (size_t b = 0; b < nb; b++) {
        size_t m = start[b + 1] - start[b];
        uint64_t *a = copy + start[b];
        int bits = 4;
        while (bits < SB_TABLE_MAX_BITS && ((size_t)1 << bits) < 2 * m)
            bits++;
        long long d = ((size_t)1 << bits) >= 2 * m ? distinct_table(a, m, table, bits) : -1;
        total += d >= 0 ? d : (long long)distinct_sorted(a, m);
    }
out:
    free(start);
    free(copy);
    free(table);
    return total;
}

static PyObject *py_count_distinct(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"hashes", NULL};
    PyObject *hashes;
    buffers_t b;
    memset(&b, 0, sizeof(b));
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O", kwl, &hashes))
        return NULL;
    if (get_buffer(&b, 0, hashes, 0, "hashes") < 0)
        return NULL;
    PyObject *result = NULL;
    if (b.views[0].len % 8 || ((uintptr_t)b.views[0].buf & 7)) {
        PyErr_Format(PyExc_ValueError, "hashes must be an 8-byte aligned buffer of whole 8-byte hashes (%zd bytes)",
                     b.views[0].len);
        goto done;
    }
    int nomem = 0, changed = 0;
    long long d;
    SB_BEGIN_ALLOW_THREADS_FOR((long long)b.views[0].len * 4)
    d = count_distinct(b.views[0].buf, (size_t)(b.views[0].len / 8), &nomem, &changed);
    SB_END_ALLOW_THREADS_FOR
    if (nomem)
        result = PyErr_NoMemory();
    else if (changed)
        PyErr_SetString(PyExc_ValueError,
                        "hashes changed while being counted (another thread wrote to the input)");
    else
        result = PyLong_FromLongLong(d);
done:
    buffers_release(&b);
    return result;
}

/* ------------------------------------------------------------------ build information */

static PyObject *py_info(PyObject *self, PyObject *unused)
{
#if defined(__clang__)
    const char *compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    const char *compiler = "gcc " __VERSION__;
#elif defined(_MSC_VER)
    const char *compiler = "msvc " Py_STRINGIFY(_MSC_VER);
#else
    const char *compiler = "unknown";
#endif
    return Py_BuildValue("{s:s,s:s,s:O,s:s}", "compiler", compiler, "flags", SB_BUILD_FLAGS, "simd_available",
                         sb_simd_available ? Py_True : Py_False, "simd", sb_simd_active ? "avx2" : "scalar");
}

/* set_simd(enable) -> previous: switch between the AVX2 and the scalar block kernels (tests hold
 * them equal). Not thread-safe with respect to running kernels; meant for tests and debugging. */
static PyObject *py_set_simd(PyObject *self, PyObject *arg)
{
    int want = PyObject_IsTrue(arg);
    if (want < 0)
        return NULL;
    int previous = sb_simd_active;
    sb_simd_active = want && sb_simd_available;
#ifdef SB_HAVE_AVX2_BUILD
    sb_insert = sb_simd_active ? insert_avx2 : insert_scalar;
    sb_check = sb_simd_active ? check_avx2 : check_scalar;
#endif
    return PyBool_FromLong(previous);
}

#define KW (PyCFunction)(void (*)(void))
static PyMethodDef methods[] = {
    {"xxh64_fixed", KW py_hash_fixed, METH_VARARGS | METH_KEYWORDS, "XXH64 of each width-byte value into out (uint64)."},
    {"xxh64_binary", KW py_hash_binary, METH_VARARGS | METH_KEYWORDS, "XXH64 of Arrow binary values into out."},
    {"xxh64_objects", KW py_hash_objects, METH_VARARGS | METH_KEYWORDS,
     "XXH64 of the str (UTF-8) and bytes items of a list or tuple into out; None: another item type."},
    {"xxh64_binary_view", KW py_hash_view, METH_VARARGS | METH_KEYWORDS, "XXH64 of Arrow binary views into out."},
    {"sbbf_insert", KW py_insert, METH_VARARGS | METH_KEYWORDS, "Insert uint64 hashes into a bitset."},
    {"sbbf_check", KW py_check, METH_VARARGS | METH_KEYWORDS, "Check uint64 hashes against a bitset into out."},
    {"sbbf_check_many", KW py_check_many, METH_VARARGS | METH_KEYWORDS,
     "Check uint64 hashes against each of a sequence of bitsets into out (one row per bitset)."},
    {"sbbf_insert_fixed", KW py_insert_fixed, METH_VARARGS | METH_KEYWORDS, "Hash and insert fixed-width values."},
    {"sbbf_check_fixed", KW py_check_fixed, METH_VARARGS | METH_KEYWORDS, "Hash and check fixed-width values."},
    {"sbbf_insert_binary", KW py_insert_binary, METH_VARARGS | METH_KEYWORDS, "Hash and insert Arrow binary values."},
    {"sbbf_check_binary", KW py_check_binary, METH_VARARGS | METH_KEYWORDS, "Hash and check Arrow binary values."},
    {"sbbf_insert_view", KW py_insert_view, METH_VARARGS | METH_KEYWORDS, "Hash and insert Arrow binary views."},
    {"sbbf_check_view", KW py_check_view, METH_VARARGS | METH_KEYWORDS, "Hash and check Arrow binary views."},
    {"count_distinct", KW py_count_distinct, METH_VARARGS | METH_KEYWORDS, "Exact number of distinct uint64 values."},
    {"info", py_info, METH_NOARGS, "Build information: compiler, flags, SIMD."},
    {"set_simd", py_set_simd, METH_O, "Enable/disable the AVX2 block kernels; returns the previous setting."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "native_kernels",
                                    "Private XXH64 / SBBF kernels; use secure_bloom.kernels.", -1, methods};

PyMODINIT_FUNC PyInit_native_kernels(void)
{
#ifdef SB_HAVE_AVX2_BUILD
    __builtin_cpu_init();
    sb_simd_available = __builtin_cpu_supports("avx2") != 0;
    if (sb_simd_available && getenv("SECURE_BLOOM_NO_SIMD") == NULL) {
        sb_simd_active = 1;
        sb_insert = insert_avx2;
        sb_check = check_avx2;
    }
#endif
    return PyModule_Create(&module);
}
