/*
 * ring.c - `ring`: ring reduce-scatter followed by ring allgather.
 *
 * Accepts:  any p >= 2, any count (blocks may be empty when count < p), any
 *           predefined commutative op, MPI_IN_PLACE.
 * Cost:     2(p-1) rounds; each rank sends and receives 2(p-1)/p * n bytes:
 *           2(p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma.  Bandwidth-
 *           optimal, so it is the large-message choice of `auto`.
 * Stragglers: none assumed.  A late rank delays every rank by its delay plus
 *           the whole ring, since round 1 already needs its data.
 * Exactness: block b is reduced along the chain b, b+1, ..., b-1 and ends
 *           complete at rank b-1, which alone computed it; the allgather
 *           only copies, so every rank holds the same bits.
 *
 * Example, p = 3, blocks A B C, rank r starts with A_r B_r C_r:
 *   reduce-scatter round 0: 0 sends A0 to 1, 1 sends B1 to 2, 2 sends C2 to 0
 *                           0: C=C0+C2   1: A=A1+A0   2: B=B2+B1
 *   reduce-scatter round 1: 0 sends C to 1, 1 sends A to 2, 2 sends B to 0
 *                           0: B complete  1: C complete  2: A complete
 *   allgather rounds 2, 3:  each passes its complete block on, twice.
 *
 * The executor splits each round's transfer into segments so that reducing
 * one segment overlaps receiving the next.
 */
#include "algos.h"
#include "executor.h"
#include "schedule.h"

#include <errno.h>

int sampi_ring_rounds(int p)
{
    return 2 * (p - 1);
}

static void set_round(struct sampi_round *rd, int p, size_t count, int to, int send_block, int from,
                      int recv_block, enum sampi_recv_action action)
{
    sampi_block_range(count, p, send_block, &rd->send.offset, &rd->send.count);
    sampi_block_range(count, p, recv_block, &rd->recv.offset, &rd->recv.count);
    /* an empty block is not sent: both ends compute the same sizes */
    rd->send.peer = rd->send.count ? to : -1;
    rd->recv.peer = rd->recv.count ? from : -1;
    rd->action = action;
}

int sampi_ring_schedule(int p, int rank, size_t count, struct sampi_round *rounds, int max_rounds)
{
    if (p < 2 || rank < 0 || rank >= p)
        return -EINVAL;
    if (max_rounds < sampi_ring_rounds(p))
        return -ENOSPC;
    int next = (rank + 1) % p, prev = (rank + p - 1) % p, n = 0;
    for (int k = 0; k < p - 1; k++)
        set_round(&rounds[n++], p, count, next, (rank - k + p) % p, prev,
                  (rank - k - 1 + 2 * p) % p, SAMPI_RECV_REDUCE);
    for (int k = 0; k < p - 1; k++)
        set_round(&rounds[n++], p, count, next, (rank + 1 - k + p) % p, prev, (rank - k + p) % p,
                  SAMPI_RECV_COPY);
    return n;
}

int sampi_allreduce_ring(const struct sampi_coll_args *a)
{
    return sampi_execute_schedule(a, sampi_ring_schedule, sampi_ring_rounds);
}
