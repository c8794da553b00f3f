/*
 * model.c - the alpha-beta model the bandwidth-optimal algorithms share.
 *
 * After the last arrival a ring moves 2(p-1)/p of the vector per rank (its
 * reduce-scatter and allgather); rhd and Open MPI's large-message algorithms
 * move about as much, so one beta sample serves them all: a 1 MiB call at
 * p = 4 that took 1.5 ms after its last arrival says beta = 1.5 ms / (1.5 *
 * 1 MiB) = 0.95 ns per byte.
 */
#include "model.h"

double sampi_ring_factor(int n)
{
    return n > 1 ? 2.0 * (n - 1) / n : 0;
}

static double ring_beta_factor(const struct sampi_algo_world *w, double gap_ns)
{
    (void)gap_ns;
    return sampi_ring_factor(w->n);
}

/* A ring whose messages carry less than RING_MIN_BLOCK bytes pays 2(p-1)
 * latency-bound rounds where rhd pays 2 log2 p, on any machine. */
#define RING_MIN_BLOCK 4096
static int ring_hopeless(size_t bytes, int n)
{
    return bytes / (size_t)n < RING_MIN_BLOCK;
}

const struct sampi_algo_model sampi_ring_model = {
    .beta_factor = ring_beta_factor,
    .hopeless = ring_hopeless,
};

const struct sampi_algo_model sampi_ring_like_model = {
    .beta_factor = ring_beta_factor,
};
