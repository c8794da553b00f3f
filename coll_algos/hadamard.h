/*
 * hadamard.h - the randomized Hadamard transform optireduce applies before
 * sending and inverts after receiving (OptiReduce's Hadamard transform), and the
 * shard-major layout it writes into.
 *
 * A vector of `count` floats is cut into blocks of B = 2^k elements (the last
 * one zero-padded to a power of two); block v becomes
 *     y = 2^-floor(k/2) H_B (d . v)        (encode)
 *     v = d . (2^-ceil(k/2) H_B y)         (decode)
 * with H_B the +-1 Sylvester-Hadamard matrix (H H = B I, so the pair is the
 * identity up to float rounding) and d random signs drawn from a seed all
 * ranks share.  Each block is split into n sub-blocks (the block_range rule)
 * and shard j of the working buffer W is the concatenation of every block's
 * sub-block j: losing a whole shard then removes 1/n of every block's
 * coefficients rather than 1/n of the coordinates.  The transform is linear,
 * so owners may sum encoded vectors.  With the transform off the layout is
 * the identity: W is the input and shard j is block_range(count, n, j).
 *
 * Pure code: no MPI, no I/O.
 */
#ifndef SAMPI_HADAMARD_H
#define SAMPI_HADAMARD_H

#include <stddef.h>
#include <stdint.h>

struct sampi_ht_layout {
    size_t count;    /* input elements */
    int n;           /* shards */
    int enabled;     /* the transform is applied */
    size_t bmax;     /* length of a full block (power of two when enabled) */
    size_t nfull;    /* full blocks */
    size_t tail_in;  /* input elements in the last, partial block */
    size_t tail_len; /* its length in W (padded to a power of two when enabled) */
    size_t total;    /* elements of W */
};

/* Plan the layout.  enabled: apply the transform when count >= min_block * n
 * (else the identity layout); bmax and min_block are rounded down to powers
 * of two, min_block <= bmax.  0, or -EINVAL for n < 1. */
int sampi_ht_layout_init(struct sampi_ht_layout *L, size_t count, int n, int enabled, size_t bmax,
                         size_t min_block);

/* Elements of shard j in W and where it starts. */
size_t sampi_ht_shard_len(const struct sampi_ht_layout *L, int j);
size_t sampi_ht_shard_off(const struct sampi_ht_layout *L, int j);

/* Unnormalised in-place fast Walsh-Hadamard transform, len a power of two:
 * len log2(len) additions. */
void sampi_fwht(float *v, size_t len);

/* The per-call sign seed: the same on every rank for the same inputs. */
uint64_t sampi_ht_seed(uint64_t base, uint32_t job_key, uint32_t comm_id, uint32_t seq);

/* Sign of global element g under seed: +1 or -1 (for tests). */
int sampi_ht_sign(uint64_t seed, size_t g);

/* x (count floats) -> W (L->total floats), padding written as zeros.  tmp
 * holds L->bmax floats (unused for the identity layout). */
void sampi_ht_encode(const struct sampi_ht_layout *L, const float *x, float *w, uint64_t seed,
                     float *tmp);

/* W -> x (count floats), times `scale` (1, or 1/n for an average).  tmp
 * holds L->bmax floats. */
void sampi_ht_decode(const struct sampi_ht_layout *L, const float *w, float *x, uint64_t seed,
                     float scale, float *tmp);

#endif
