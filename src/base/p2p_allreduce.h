/*
 * p2p_allreduce.h - SAMPI's own small nonblocking allreduce, over
 * point-to-point messages on one of its private communicators.
 *
 * Why not PMPI_Iallreduce: Open MPI 4.1.4's coll/libnbc schedules and
 * allocates for every request, which costs more than the exchange itself for
 * a few bytes (docs/notes/2026-11-small-call-costs.md), and its progress function, once
 * registered, runs in every later opal_progress of the process.  The
 * per-call argument check (src/core/argcheck.c) and the waiter's helpers
 * (wait.h: agreements, the tracker's allgather) use this instead.
 *
 * The schedule: up to SAMPI_P2P_DIRECT_MAX ranks, every rank sends its
 * vector to every other one when it starts and reduces the p vectors in rank
 * order once they are there: one round, and nothing to drive after the
 * start, so a rank that started and then went on with other work (a
 * straggler's data exchange) delays nobody.  Above, recursive doubling, with
 * the ranks beyond the largest power of two folded in first and sent the
 * result last, whose later steps advance when the exchange is tested (see
 * p2p_allreduce.c for the worked example and why one call's message never
 * meets another call's receive).  Every rank ends with the same bits: the
 * direct exchange reduces in one fixed order, and partners of a doubling
 * step both compute high OP low (the value of the rank with the larger rank
 * number on the left), so even MAX on NaN or -0.0 against +0.0 agrees.
 *
 * Tags (all with the low two bits 3, which the netdevs' data and probes
 * never use, netdev.h): SAMPI_P2P_TAG(sub, seq) = 3 | sub << 2 | (seq mod
 * 512) << 5.  sub 0 is the revocation notice (SAMPI_REVOKE_TAG 3), sub 1 the
 * roll call (SAMPI_ROLLCALL_TAG 7); the sub-kinds below are this file's.
 * The largest tag is 16383, below the 32767 every MPI allows.
 */
#ifndef SAMPI_P2P_ALLREDUCE_H
#define SAMPI_P2P_ALLREDUCE_H

#include "kernels.h"

#include <mpi.h>
#include <stddef.h>

enum sampi_p2p_sub {
    SAMPI_P2P_SUB_CHECK = 2,     /* the per-call argument check */
    SAMPI_P2P_SUB_ALLREDUCE = 3, /* sampi_waiter_allreduce */
    SAMPI_P2P_SUB_ALLGATHER = 4, /* sampi_waiter_allgather */
    SAMPI_P2P_SUB_BARRIER = 5,   /* sampi_waiter_barrier */
};
#define SAMPI_P2P_SEQ_BITS 9
#define SAMPI_P2P_TAG(sub, seq)                                                                    \
    (3 | (int)(sub) << 2 | (int)((unsigned)(seq) & ((1u << SAMPI_P2P_SEQ_BITS) - 1)) << 5)

/* ---------------------------------------------------------------- the plan (pure) */

/* Stages: 0 the fold-in, 1 + i doubling step i (partner vrank ^ 2^i), and
 * SAMPI_P2P_STAGE_OUT the fold-out. */
#define SAMPI_P2P_STAGE_OUT 31
#define SAMPI_P2P_MAX_STEPS 32
/* Communicators up to this size exchange directly (all to all). */
#define SAMPI_P2P_DIRECT_MAX 8

enum sampi_p2p_recv {
    SAMPI_P2P_RECV_NONE,   /* send only */
    SAMPI_P2P_RECV_REDUCE, /* receive the peer's vector and reduce it in */
    SAMPI_P2P_RECV_COPY,   /* receive the result */
};

struct sampi_p2p_step {
    int stage;
    int peer;
    int send;                 /* send this rank's vector to peer */
    enum sampi_p2p_recv recv; /* and/or receive peer's */
    int mine_low;             /* REDUCE: this rank's number is below peer's */
};

/* Rank `rank` of `p`'s steps in order into steps[SAMPI_P2P_MAX_STEPS]: the
 * count (0 when p == 1), or -EINVAL. */
int sampi_p2p_plan(int p, int rank, struct sampi_p2p_step *steps);

/* ---------------------------------------------------------------- one allreduce in flight */

struct sampi_p2p_allreduce {
    MPI_Comm comm;
    int tag;
    int nsteps, at; /* the plan, and the step being done (direct: one step) */
    int posted;     /* step `at`'s messages were posted */
    int direct;     /* size <= SAMPI_P2P_DIRECT_MAX: all to all */
    int rank, size;
    int nrecv, nreq; /* req[0, nrecv) receives, req[nrecv, nreq) sends */
    MPI_Request req[2 * SAMPI_P2P_DIRECT_MAX];
    sampi_reduce_fn fn;
    size_t bytes, count;
    unsigned char *acc, *rx; /* the running value and the receive buffer, in mem */
    void *mem;
    size_t mem_size;
    struct sampi_p2p_step steps[SAMPI_P2P_MAX_STEPS];
};

/* For tests: communicators up to `n` ranks (at most SAMPI_P2P_DIRECT_MAX)
 * exchange directly from now on, larger ones by doubling; the previous
 * value.  Every rank must set the same. */
int sampi_p2p_set_direct_max(int n);

/* Before the first start (or after a release). */
void sampi_p2p_allreduce_init(struct sampi_p2p_allreduce *allreduce);

/* Start reducing `count` elements of `dt` under `op` from every rank of
 * comm, with MPI tag `tag` (SAMPI_P2P_TAG).  Collective: every rank of comm
 * starts it with the same count, dt, op and tag, and comm's ranks start
 * their exchanges of one tag in the same order.  0; -ENOTSUP when dt or op
 * is not a predefined pair SAMPI's kernels reduce (the caller uses PMPI,
 * deciding alike on every rank); -ENOMEM; -EIO.  Reuses allreduce's buffers. */
int sampi_p2p_allreduce_start(struct sampi_p2p_allreduce *allreduce, const void *in, int count,
                              MPI_Datatype dt, MPI_Op op, MPI_Comm comm, int tag);

/* Progress without waiting: 1 when complete (again on every later call),
 * 0 while pending, -EIO.  *progressed (may be NULL) is set when a step
 * completed. */
int sampi_p2p_allreduce_test(struct sampi_p2p_allreduce *allreduce, int *progressed);

/* The reduced vector, once test said 1 (the same bits on every rank). */
static inline const void *sampi_p2p_allreduce_result(const struct sampi_p2p_allreduce *allreduce)
{
    return allreduce->acc;
}

/* Done with allreduce, complete or not: a pending receive is cancelled; a pending
 * send is let go with its buffers (they are never freed then: the message
 * may still be taken), so that nothing SAMPI reads or writes stays with the
 * caller.  allreduce is then as after init. */
void sampi_p2p_allreduce_release(struct sampi_p2p_allreduce *allreduce);

/* The peers whose message the current step still waits for, into
 * ranks[0..max): their number (for a stall warning). */
int sampi_p2p_allreduce_waiting_for(const struct sampi_p2p_allreduce *allreduce, int *ranks,
                                    int max);

/* Cancel a pending point-to-point receive of SAMPI's own and wait for it
 * to end (cancelled or completed); a no-op on MPI_REQUEST_NULL.  1 when it
 * completed with its message instead of being cancelled. */
int sampi_request_cancel(MPI_Request *req);

#endif
