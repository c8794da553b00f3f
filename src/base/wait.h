/*
 * wait.h - how SAMPI waits for its peers: never failing on a late rank by
 * default, warning when the wait is long, failing at a hard limit only when
 * the user set one, and stopping at once when the owner says so (the
 * communicator was revoked elsewhere).
 *
 * Every exchange SAMPI makes on its own behalf - the data path, the
 * configuration agreement, the tracking exchange, link probes - waits through
 * one of these, so that the rules are the same everywhere:
 *
 *  - A peer that has not arrived yet is a straggler, not a failure.  With
 *    sampi_timeout_ms = 0 (the default) the wait has no end; after
 *    sampi_stall_warn_ms without progress one line names the communicator,
 *    the call and whom this rank waits for, and it repeats after twice as
 *    long each time.
 *  - With sampi_timeout_ms = T > 0, T milliseconds without progress end the
 *    wait with -ETIMEDOUT.  Progress (any request completing) restarts both
 *    clocks: the limit is for a silent peer, not for a long transfer.
 *  - Between blocking waits the owner's poll hook runs at least every
 *    SAMPI_WAIT_POLL_MS: a non-zero answer (a negative errno) ends the wait
 *    with that answer.
 *
 * The waiter knows nothing of SAMPI's per-communicator state (struct
 * sampi_comm, src/core): the owner (src/core/revoke.c) gives it a poll hook
 * and a describe hook, which are all it learns of a communicator's
 * revocation or name.  It does work on MPI communicators: its collectives
 * run on the private communicator the caller passes, and keep a sequence
 * number per communicator as an attribute (wait.c).  Lower layers (netdev
 * open, the algorithms) receive a waiter and wait through it.
 */
#ifndef SAMPI_WAIT_H
#define SAMPI_WAIT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define SAMPI_WAIT_POLL_MS 100

/* A look at a wait later than its slice by more than this (a slice lasts
 * SAMPI_WAIT_POLL_MS at most) means this process did not run meanwhile
 * (stopped with SIGSTOP, a debugger, the scheduler): that time is not the
 * peers' silence, and neither the stall warning nor the limit counts it. */
#define SAMPI_WAIT_ABSENT_MS 1000

struct sampi_waiter {
    const char *what; /* "the data exchange", for messages */
    /* 0 to keep waiting, or a negative errno to stop (NULL: never stop) */
    int (*poll)(void *owner);
    /* "communicator 3 (4 ranks), call 17" into buf (NULL: "a communicator") */
    void (*describe)(void *owner, char *buf, size_t len);
    void *owner;
    /* who has not arrived, for a stall warning whose wait cannot tell (a
     * collective): "rank 2" into buf, "" when unknown (NULL: nobody asks;
     * see src/core/rollcall.h) */
    void (*absent)(void *ctx, char *buf, size_t len);
    void *absent_ctx;
    /* kept by the waiter */
    int64_t begin_ns;     /* the wait started */
    int64_t progress_ns;  /* last progress, moved on by the time this rank was absent */
    int64_t looked_ns;    /* the last look (progress or an idle slice's end) */
    int64_t absent_ns;    /* time this process did not run in this wait */
    int64_t next_warn_ns; /* next stall warning, from progress_ns */
    int64_t warn_ns;      /* sampi_stall_warn_ms, 0: none */
    int64_t limit_ns;     /* sampi_timeout_ms, 0: none */
    int warnings;         /* stall warnings printed in this wait */
};

/* Start a wait now with the values of sampi_timeout_ms and
 * sampi_stall_warn_ms in force.  `owner`'s hooks may be NULL. */
void sampi_waiter_init(struct sampi_waiter *w, const char *what, int (*poll)(void *owner),
                       void (*describe)(void *owner, char *buf, size_t len), void *owner);

/* The deadline (CLOCK_MONOTONIC ns) for the next blocking wait: the hard
 * limit, the next stall warning or the next poll, whichever comes first. */
int64_t sampi_waiter_slice_end(const struct sampi_waiter *w);

/* Something completed: restart the silence clocks. */
void sampi_waiter_progress(struct sampi_waiter *w);

/* A blocking wait ended at its slice end without progress.  `whom` says
 * whom this rank waits for ("rank 2", "ranks 1, 3", or NULL: "its peers").
 * Polls the owner, prints a stall warning when one is due, and returns 0 to
 * keep waiting, -ETIMEDOUT at the hard limit, or the owner's errno. */
int sampi_waiter_idle(struct sampi_waiter *w, const char *whom);

/* Wait for every request of reqs[0..n) (PMPI requests on SAMPI's own
 * communicators: collectives or point-to-point).  0 when all completed; a
 * negative errno otherwise, leaving the requests that did not complete
 * pending (nonblocking collectives cannot be cancelled: the caller revokes
 * the communicator and abandons them).  A request that completes with an
 * error gives -EIO. */
int sampi_waiter_mpi(struct sampi_waiter *w, MPI_Request *reqs, int n, const char *whom);

struct sampi_p2p_allreduce;

/* Wait for SAMPI's own allreduce (p2p_allreduce.h) through w: 0 once it
 * completed, or the wait's negative errno (-EIO when MPI failed), leaving
 * it pending for the caller to release. */
int sampi_waiter_p2p(struct sampi_waiter *w, struct sampi_p2p_allreduce *allreduce);

/* Collectives SAMPI makes on its own behalf (on its own communicators),
 * through w: 0, or the wait's negative errno.  They run over point-to-point
 * (p2p_allreduce.h, a tag of their own and a sequence number kept on comm),
 * so every rank of comm must make them in the same order; a datatype or op
 * SAMPI's kernels do not reduce goes to the PMPI nonblocking collective.
 * When the wait fails, the pending receive is cancelled and a pending send
 * keeps a private copy of the buffers, which is let go: the caller's
 * buffers are never written after the return.  w NULL: the blocking PMPI
 * collective (for callers without a communicator state). */
int sampi_waiter_allreduce(struct sampi_waiter *w, const void *in, void *out, int count,
                           MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
/* count elements of dt from every rank, gathered in rank order into out. */
int sampi_waiter_allgather(struct sampi_waiter *w, const void *in, int count, MPI_Datatype dt,
                           void *out, MPI_Comm comm);

/* A barrier on comm through w (NULL: PMPI_Barrier): 0, or the wait's
 * negative errno. */
int sampi_waiter_barrier(struct sampi_waiter *w, MPI_Comm comm);
/* Wait for one request *req through w (NULL: PMPI_Wait), for a collective
 * whose buffers the caller owns: when the wait fails (a negative errno) the
 * request stays pending, and the caller must let its buffers go (never free
 * or reuse them), as the functions above do with their copies. */
int sampi_waiter_one(struct sampi_waiter *w, MPI_Request *req);

/* "rank 2" / "ranks 1, 3" / "ranks 1, 3, 5 and 4 more" for a stall warning. */
void sampi_waiter_ranks(const int *ranks, int n, char *buf, size_t len);

#endif
