/*
 * rhd.c - `rhd`: recursive halving reduce-scatter, recursive doubling
 * allgather (Rabenseifner's algorithm), with the usual fold for p that is not
 * a power of two.
 *
 * Accepts:  any p >= 2, any count, any predefined commutative op, MPI_IN_PLACE.
 * Cost:     with p' the largest power of two <= p and r = p - p':
 *           2 log2(p') rounds (+2 when r > 0);
 *           2 log2(p') alpha + 2 (p'-1)/p' n beta + (p'-1)/p' n gamma
 *           (+ 2 n beta + n gamma for the fold).  Fewer rounds than `ring`,
 *           so `auto` uses it for medium messages.
 * Stragglers: none assumed.
 * Exactness: after the fold each element is reduced along one halving path and
 *           ends complete at one rank; doubling and the unfold only copy.
 *
 * Fold (r > 0): among ranks 0..2r-1 each even rank sends its whole vector to
 * the odd rank above it, which reduces and takes part as virtual rank
 * rank/2; ranks >= 2r take part as rank - r.  The even ranks sit out and get
 * the result back in the last round.
 *
 * Example, p = 4, virtual ranks 0..3, blocks 0..3:
 *   halving d=2:  0<->2 and 1<->3 swap halves: 0,1 keep blocks 0-1, 2,3 keep 2-3
 *   halving d=1:  0<->1, 2<->3 swap quarters: rank v keeps block v, complete
 *   doubling d=1: 0<->1, 2<->3 swap blocks; doubling d=2: swap halves.
 */
#include "algos.h"
#include "executor.h"
#include "schedule.h"

#include <errno.h>

static int log2_floor(int p)
{
    int l = 0;
    while ((2 << l) <= p)
        l++;
    return l;
}

int sampi_rhd_rounds(int p)
{
    /* fold + halvings + doublings + unfold; the fold rounds are empty when p is
     * a power of two, kept so every p has the same round numbering shape */
    return 2 + 2 * log2_floor(p);
}

static void clear(struct sampi_round *rd)
{
    rd->send.peer = rd->recv.peer = -1;
    rd->send.offset = rd->send.count = rd->recv.offset = rd->recv.count = 0;
    rd->action = SAMPI_RECV_COPY;
}

/* Elements of blocks [b0, b1) of `count` cut into `nb` blocks. */
static void blocks(size_t count, int nb, int b0, int b1, struct sampi_xfer *x, int peer)
{
    size_t off0, len0, off1, len1;
    sampi_block_range(count, nb, b0, &off0, &len0);
    sampi_block_range(count, nb, b1 - 1, &off1, &len1);
    x->offset = off0;
    x->count = off1 + len1 - off0;
    x->peer = x->count ? peer : -1;
}

int sampi_rhd_schedule(int p, int rank, size_t count, struct sampi_round *rounds, int max_rounds)
{
    if (p < 2 || rank < 0 || rank >= p)
        return -EINVAL;
    int levels = log2_floor(p), pof2 = 1 << levels, rem = p - pof2;
    int total = sampi_rhd_rounds(p);
    if (max_rounds < total)
        return -ENOSPC;
    for (int i = 0; i < total; i++)
        clear(&rounds[i]);

    struct sampi_round *fold = &rounds[0], *unfold = &rounds[total - 1];
    int vrank;
    if (rank < 2 * rem) {
        if (rank % 2 == 0) { /* sits out: hands its vector up, gets the result back */
            fold->send = (struct sampi_xfer){rank + 1, 0, count};
            unfold->recv = (struct sampi_xfer){rank + 1, 0, count};
            unfold->action = SAMPI_RECV_COPY;
            if (!count)
                fold->send.peer = unfold->recv.peer = -1;
            return total;
        }
        fold->recv = (struct sampi_xfer){rank - 1, 0, count};
        fold->action = SAMPI_RECV_REDUCE;
        unfold->send = (struct sampi_xfer){rank - 1, 0, count};
        if (!count)
            fold->recv.peer = unfold->send.peer = -1;
        vrank = rank / 2;
    } else {
        vrank = rank - rem;
    }

    /* virtual rank -> real rank */
#define REAL(v) ((v) < rem ? 2 * (v) + 1 : (v) + rem)
    int lo = 0, hi = pof2; /* the block window this rank is responsible for */
    for (int s = 0; s < levels; s++) {
        int d = pof2 >> (s + 1), partner = REAL(vrank ^ d), mid = lo + (hi - lo) / 2;
        struct sampi_round *rd = &rounds[1 + s];
        if (vrank & d) { /* keep the upper half */
            blocks(count, pof2, lo, mid, &rd->send, partner);
            blocks(count, pof2, mid, hi, &rd->recv, partner);
            lo = mid;
        } else {
            blocks(count, pof2, mid, hi, &rd->send, partner);
            blocks(count, pof2, lo, mid, &rd->recv, partner);
            hi = mid;
        }
        rd->action = SAMPI_RECV_REDUCE;
    }
    for (int s = 0; s < levels; s++) {
        int d = 1 << s, partner = REAL(vrank ^ d), width = hi - lo;
        struct sampi_round *rd = &rounds[1 + levels + s];
        int plo = (vrank & d) ? lo - width : hi; /* the partner's window is adjacent */
        blocks(count, pof2, lo, hi, &rd->send, partner);
        blocks(count, pof2, plo, plo + width, &rd->recv, partner);
        rd->action = SAMPI_RECV_COPY;
        if (plo < lo)
            lo = plo;
        else
            hi = plo + width;
    }
#undef REAL
    return total;
}

int sampi_allreduce_rhd(const struct sampi_coll_args *a)
{
    return sampi_execute_schedule(a, sampi_rhd_schedule, sampi_rhd_rounds);
}
