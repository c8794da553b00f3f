/*
 * hadamard.c - randomized Hadamard transform and shard-major layout
 * (hadamard.h).
 *
 * Cost: encode and decode are each count * log2(B) additions plus one pass
 * for signs and scaling; B = 64 Ki floats (256 KiB) keeps each block in L2.
 * Scales are powers of two, so scaling adds no rounding.
 *
 * Example, n = 2, count 5, B = 4 (min block 4): one full block [x0..x3] and a
 * tail [x4 0 0 0] padded to 4.  Each block splits 2+2, so W = shard 0
 * [y0 y1 | t0 t1] then shard 1 [y2 y3 | t2 t3]; shard lengths 4 and 4.
 */
#include "hadamard.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static size_t pow2_floor(size_t v)
{
    size_t p = 1;
    while (p <= v / 2)
        p *= 2;
    return v ? p : 0;
}

static size_t pow2_ceil(size_t v)
{
    size_t p = 1;
    while (p < v)
        p *= 2;
    return p;
}

static void sub_range(size_t len, int n, int j, size_t *off, size_t *cnt)
{
    size_t base = len / (size_t)n, extra = len % (size_t)n, uj = (size_t)j;
    *off = uj * base + (uj < extra ? uj : extra);
    *cnt = base + (uj < extra ? 1 : 0);
}

int sampi_ht_layout_init(struct sampi_ht_layout *L, size_t count, int n, int enabled, size_t bmax,
                         size_t min_block)
{
    if (n < 1)
        return -EINVAL;
    memset(L, 0, sizeof(*L));
    L->count = count;
    L->n = n;
    bmax = pow2_floor(bmax ? bmax : 1);
    min_block = pow2_floor(min_block ? min_block : 1);
    if (min_block > bmax)
        min_block = bmax;
    if (enabled && count >= min_block * (size_t)n && count > 0) {
        L->enabled = 1;
        L->bmax = bmax;
        L->nfull = count / bmax;
        L->tail_in = count % bmax;
        L->tail_len = L->tail_in ? pow2_ceil(L->tail_in > min_block ? L->tail_in : min_block) : 0;
    } else {
        /* identity: one tail "block" of the whole vector, no padding */
        L->bmax = count;
        L->tail_in = L->tail_len = count;
    }
    L->total = L->nfull * L->bmax + L->tail_len;
    return 0;
}

size_t sampi_ht_shard_len(const struct sampi_ht_layout *L, int j)
{
    size_t o, a = 0, b = 0;
    if (L->nfull)
        sub_range(L->bmax, L->n, j, &o, &a);
    sub_range(L->tail_len, L->n, j, &o, &b);
    return L->nfull * a + b;
}

size_t sampi_ht_shard_off(const struct sampi_ht_layout *L, int j)
{
    size_t a = 0, b = 0, c;
    if (L->nfull)
        sub_range(L->bmax, L->n, j, &a, &c);
    sub_range(L->tail_len, L->n, j, &b, &c);
    return L->nfull * a + b;
}

/* The first three passes (h = 1, 2, 4) on 8-element groups in registers: the
 * generic loop's inner trip counts are too short there to vectorise. */
static void fwht8(float *v, size_t len)
{
    for (size_t i = 0; i < len; i += 8) {
        float a0 = v[i] + v[i + 1], a1 = v[i] - v[i + 1];
        float a2 = v[i + 2] + v[i + 3], a3 = v[i + 2] - v[i + 3];
        float a4 = v[i + 4] + v[i + 5], a5 = v[i + 4] - v[i + 5];
        float a6 = v[i + 6] + v[i + 7], a7 = v[i + 6] - v[i + 7];
        float b0 = a0 + a2, b1 = a1 + a3, b2 = a0 - a2, b3 = a1 - a3;
        float b4 = a4 + a6, b5 = a5 + a7, b6 = a4 - a6, b7 = a5 - a7;
        v[i] = b0 + b4, v[i + 1] = b1 + b5, v[i + 2] = b2 + b6, v[i + 3] = b3 + b7;
        v[i + 4] = b0 - b4, v[i + 5] = b1 - b5, v[i + 6] = b2 - b6, v[i + 7] = b3 - b7;
    }
}

/* Four floats as one value: GCC and clang lower arithmetic on it to one
 * vector instruction (SSE on baseline x86-64, NEON on arm64), where the plain
 * loop is left scalar at -O2.  Wider types would change the calling
 * convention on baseline x86-64 (-Wpsabi). */
typedef float sampi_v4f __attribute__((vector_size(16)));

static inline sampi_v4f load4(const float *p)
{
    sampi_v4f x;
    memcpy(&x, p, sizeof(x));
    return x;
}

static inline void store4(float *p, sampi_v4f x)
{
    memcpy(p, &x, sizeof(x));
}

/* Passes h and 2h at once (radix 4), h a multiple of 4: half the sweeps over
 * the block of the one-pass-at-a-time loop. */
static void fwht_radix4(float *v, size_t len, size_t h)
{
    for (size_t i = 0; i < len; i += 4 * h)
        for (size_t j = i; j < i + h; j += 4) {
            sampi_v4f a = load4(v + j), b = load4(v + j + h);
            sampi_v4f c = load4(v + j + 2 * h), d = load4(v + j + 3 * h);
            sampi_v4f ab = a + b, amb = a - b, cd = c + d, cmd = c - d;
            store4(v + j, ab + cd);
            store4(v + j + h, amb + cmd);
            store4(v + j + 2 * h, ab - cd);
            store4(v + j + 3 * h, amb - cmd);
        }
}

/* One pass of width h, a multiple of 4. */
static void fwht_radix2(float *v, size_t len, size_t h)
{
    for (size_t i = 0; i < len; i += 2 * h)
        for (size_t j = i; j < i + h; j += 4) {
            sampi_v4f a = load4(v + j), b = load4(v + j + h);
            store4(v + j, a + b);
            store4(v + j + h, a - b);
        }
}

void sampi_fwht(float *v, size_t len)
{
    if (len < 8) {
        for (size_t h = 1; h < len; h *= 2)
            for (size_t i = 0; i < len; i += 2 * h)
                for (size_t j = i; j < i + h; j++) {
                    float a = v[j], b = v[j + h];
                    v[j] = a + b;
                    v[j + h] = a - b;
                }
        return;
    }
    fwht8(v, len);
    size_t h = 8;
    for (; 4 * h <= len; h *= 4)
        fwht_radix4(v, len, h);
    if (h < len)
        fwht_radix2(v, len, h);
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t sampi_ht_seed(uint64_t base, uint32_t job_key, uint32_t comm_id, uint32_t seq)
{
    uint64_t s = splitmix64(base ^ job_key);
    s = splitmix64(s ^ ((uint64_t)comm_id << 32 | seq));
    return s;
}

int sampi_ht_sign(uint64_t seed, size_t g)
{
    return (splitmix64(seed ^ (uint64_t)(g >> 6) * 0xD1B54A32D192ED03ull) >> (g & 63)) & 1 ? -1 : 1;
}

typedef uint32_t sampi_v4u __attribute__((vector_size(16)));

/* The sign-bit masks of four consecutive elements, indexed by their four
 * sign bits (bit l of the index for element l). */
#define SIGN(nib, l) ((((nib) >> (l)) & 1u) << 31)
#define MASK(nib)                                                                                  \
    {                                                                                              \
        SIGN(nib, 0), SIGN(nib, 1), SIGN(nib, 2), SIGN(nib, 3)                                     \
    }
static const sampi_v4u nibble_masks[16] = {
    MASK(0), MASK(1), MASK(2),  MASK(3),  MASK(4),  MASK(5),  MASK(6),  MASK(7),
    MASK(8), MASK(9), MASK(10), MASK(11), MASK(12), MASK(13), MASK(14), MASK(15),
};
#undef MASK
#undef SIGN

/* v[i] *= sign(g0 + i) by flipping sign bits, 64 signs per draw.  Runs of 64
 * that start on a multiple of 64 (every block does: blocks start at multiples
 * of the block size) flip four floats at a time from a nibble's mask. */
static void apply_signs(float *v, size_t len, uint64_t seed, size_t g0)
{
    uint32_t bits;
    for (size_t i = 0; i < len;) {
        size_t g = g0 + i;
        uint64_t word = splitmix64(seed ^ (uint64_t)(g >> 6) * 0xD1B54A32D192ED03ull);
        if ((g & 63) == 0 && len - i >= 64) {
            for (unsigned k = 0; k < 16; k++, i += 4) {
                sampi_v4u x;
                memcpy(&x, &v[i], sizeof(x));
                x ^= nibble_masks[(word >> (4 * k)) & 15];
                memcpy(&v[i], &x, sizeof(x));
            }
            continue;
        }
        size_t end = i + (64 - (g & 63));
        if (end > len)
            end = len;
        for (; i < end; i++) {
            memcpy(&bits, &v[i], 4);
            bits ^= (uint32_t)((word >> ((g0 + i) & 63)) & 1) << 31;
            memcpy(&v[i], &bits, 4);
        }
    }
}

static unsigned log2_of(size_t p)
{
    unsigned k = 0;
    while ((size_t)1 << k < p)
        k++;
    return k;
}

/* Move block b (len elements in tmp) to its n sub-blocks in W (to_w), or
 * back (!to_w). */
static void shuffle(const struct sampi_ht_layout *L, float *tmp, size_t b, size_t len, float *w,
                    int to_w)
{
    for (int j = 0; j < L->n; j++) {
        size_t so, sc, full_sub = 0, o;
        sub_range(len, L->n, j, &so, &sc);
        if (L->nfull)
            sub_range(L->bmax, L->n, j, &o, &full_sub);
        float *in_w = w + sampi_ht_shard_off(L, j) + b * full_sub;
        memcpy(to_w ? in_w : tmp + so, to_w ? tmp + so : in_w, sc * sizeof(float));
    }
}

void sampi_ht_encode(const struct sampi_ht_layout *L, const float *x, float *w, uint64_t seed,
                     float *tmp)
{
    if (!L->enabled) {
        if (L->count && w != x)
            memcpy(w, x, L->count * sizeof(float));
        return;
    }
    size_t nb = L->nfull + (L->tail_len ? 1 : 0);
    for (size_t b = 0; b < nb; b++) {
        size_t len = b < L->nfull ? L->bmax : L->tail_len;
        size_t in = b < L->nfull ? L->bmax : L->tail_in;
        memcpy(tmp, x + b * L->bmax, in * sizeof(float));
        memset(tmp + in, 0, (len - in) * sizeof(float));
        apply_signs(tmp, in, seed, b * L->bmax);
        sampi_fwht(tmp, len);
        float s = ldexpf(1.0f, -(int)(log2_of(len) / 2));
        for (size_t i = 0; i < len; i++)
            tmp[i] *= s;
        shuffle(L, tmp, b, len, w, 1);
    }
}

void sampi_ht_decode(const struct sampi_ht_layout *L, const float *w, float *x, uint64_t seed,
                     float scale, float *tmp)
{
    if (!L->enabled) {
        if (scale == 1.0f) {
            if (L->count && w != x)
                memcpy(x, w, L->count * sizeof(float));
        } else {
            for (size_t i = 0; i < L->count; i++)
                x[i] = w[i] * scale;
        }
        return;
    }
    size_t nb = L->nfull + (L->tail_len ? 1 : 0);
    for (size_t b = 0; b < nb; b++) {
        size_t len = b < L->nfull ? L->bmax : L->tail_len;
        size_t in = b < L->nfull ? L->bmax : L->tail_in;
        shuffle(L, tmp, b, len, (float *)w, 0);
        sampi_fwht(tmp, len);
        unsigned k = log2_of(len);
        float s = ldexpf(1.0f, -(int)((k + 1) / 2)) * scale;
        for (size_t i = 0; i < in; i++)
            tmp[i] *= s;
        apply_signs(tmp, in, seed, b * L->bmax);
        memcpy(x + b * L->bmax, tmp, in * sizeof(float));
    }
}
