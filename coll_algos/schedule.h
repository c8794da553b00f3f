/*
 * schedule.h - the schedule form shared by the exact algorithms.
 *
 * A schedule is a list of rounds.  In a round a rank sends at most one range
 * of its working vector to one peer and receives at most one range from one
 * peer, which it either reduces into its vector or copies over it.  Round
 * indices are the same on every rank (an idle rank has an empty round), so
 * the round number can go into the message tag.
 *
 * Builders are pure functions of (p, rank, count): no MPI, no I/O, no clock.
 * The unit tests run all ranks' schedules through a symbolic simulator for
 * p = 2..64 and check that every rank ends with every element reduced over
 * all ranks exactly once, and that each element was reduced at one place.
 */
#ifndef SAMPI_SCHEDULE_H
#define SAMPI_SCHEDULE_H

#include <stddef.h>

/* REDUCE: vector = received OP vector (the kernel's inout is the vector).
 * REDUCE_SWAP: vector = vector OP received.  A pair that reduces the same
 * range at both ends uses REDUCE at one end and REDUCE_SWAP at the other, so
 * both apply the operands in the same order and end with the same bits even
 * where the op is order-sensitive (NaN payloads under SUM, MIN, MAX). */
enum sampi_recv_action { SAMPI_RECV_REDUCE, SAMPI_RECV_COPY, SAMPI_RECV_REDUCE_SWAP };

/* A contiguous range of elements exchanged with `peer`; peer -1: none. */
struct sampi_xfer {
    int peer;
    size_t offset;
    size_t count;
};

struct sampi_round {
    struct sampi_xfer send;
    struct sampi_xfer recv;
    enum sampi_recv_action action;
};

/* Block b of `count` elements cut into `nblocks` near-equal blocks (the first
 * count % nblocks blocks are one element longer). */
static inline void sampi_block_range(size_t count, int nblocks, int b, size_t *offset, size_t *len)
{
    size_t base = count / (size_t)nblocks, extra = count % (size_t)nblocks, ub = (size_t)b;
    *offset = ub * base + (ub < extra ? ub : extra);
    *len = base + (ub < extra ? 1 : 0);
}

/* Number of rounds the builders produce for p ranks (same on every rank). */
int sampi_ring_rounds(int p);
int sampi_rhd_rounds(int p);

/* Fill rounds[0..n) for `rank`; returns n, or -EINVAL for p < 2 or a bad rank,
 * or -ENOSPC when max_rounds is too small. */
int sampi_ring_schedule(int p, int rank, size_t count, struct sampi_round *rounds, int max_rounds);
int sampi_rhd_schedule(int p, int rank, size_t count, struct sampi_round *rounds, int max_rounds);

#endif
