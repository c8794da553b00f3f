/*
 * executor.h - runs a schedule (schedule.h) over the communicator's netdev.
 *
 * Two ways in.  The blocking functions (sampi_execute_*) run a whole call
 * and return when it is over: what every algorithm uses today.  Underneath
 * them is a call object, struct sampi_exec, that holds one executing
 * schedule between visits: start posts its first round, test makes what
 * progress it can without blocking and returns, abort settles it.  It
 * exists so that a call need not own the thread until it ends: several
 * calls can be in flight on a communicator, and a progress engine can test
 * them in turn while the program computes (as MPICH's nonblocking
 * schedules and UCC's tasks are driven).  The blocking functions are
 * start, then test-or-wait in the waiter's slices until done: one code path
 * for both.  executor.c's header has the state machine and an example.
 */
#ifndef SAMPI_EXECUTOR_H
#define SAMPI_EXECUTOR_H

#include "algos.h"
#include "netdev.h"
#include "own_ranges.h"
#include "schedule.h"
#include "wait.h"

#include <stdint.h>

typedef int (*sampi_schedule_builder)(int p, int rank, size_t count, struct sampi_round *rounds,
                                      int max_rounds);
typedef int (*sampi_schedule_rounds)(int p);

/* Build this rank's schedule and run it: per round, post every segment's
 * receive and send, and reduce or copy each received segment as it lands;
 * not in place, the rank's own values come from sendbuf as the rounds need
 * them (own_ranges.h), and recvbuf holds the whole result at the end.  0 or
 * a negative errno. */
int sampi_execute_schedule(const struct sampi_coll_args *args, sampi_schedule_builder build,
                           sampi_schedule_rounds rounds);

/* Run already built rounds (for algorithms that build their own), tagged
 * with the communicator's next call sequence number. */
int sampi_execute_rounds(const struct sampi_coll_args *args, const struct sampi_round *rounds,
                         int nrounds);

/* The same with the sequence number given: for calls that only some ranks
 * make (selective reduce's groups), whose members agree on a number that the
 * communicator's per-rank count would not give them.  c->seq is left alone.
 * seq must not collide with another call's in flight on the communicator. */
int sampi_execute_rounds_seq(const struct sampi_coll_args *args, const struct sampi_round *rounds,
                             int nrounds, uint64_t seq);

/* ------------------------------------------------------------ call object */

enum sampi_exec_phase {
    SAMPI_EXEC_IDLE,    /* not started (or freed) */
    SAMPI_EXEC_RUNNING, /* one round posted: `round` */
    SAMPI_EXEC_DONE,    /* recvbuf holds the result; nothing posted */
    SAMPI_EXEC_FAILED,  /* settled with `rc`: nothing posted touches the buffers */
};

/* The round posted: its requests (receives first, then sends), which of
 * its received segments were reduced or copied.  The arrays are kept from
 * round to round, grown to the largest. */
struct sampi_exec_round {
    sampi_netdev_req_t *reqs;
    sampi_netdev_req_t **pending; /* scratch for the netdev's wait */
    unsigned char *reduced;       /* per receive segment */
    size_t capacity;
    size_t nrecv, nsend; /* segments of the round posted */
    size_t posted;       /* requests posted so far: reqs[0, posted) */
};

/* One executing schedule.  The caller owns the storage and keeps args,
 * args->ctx and rounds alive and unchanged until the call is DONE or FAILED
 * (nothing is copied: the blocking functions' callers build rounds on
 * their stack).  Fields are the executor's; read `phase` and `rc` only. */
struct sampi_exec {
    const struct sampi_coll_args *args;
    const struct sampi_round *rounds;
    int nrounds;
    uint64_t seq;      /* in every tag of the call */
    int round;         /* the round posted while RUNNING */
    size_t seg;        /* elements per segment, the same for every round */
    char *scratch;     /* receive buffer of reducing rounds (the host's or own) */
    char *own_scratch; /* the call's own (sampi_exec_start_own), freed with it */
    struct sampi_exec_round st;
    struct sampi_own_ranges own; /* what recvbuf holds of the rank's value */
    /* the call's wait (its silence clocks, its revocation poll): progress
     * made by test restarts its clocks, as a blocking wait's would */
    struct sampi_waiter w;
    enum sampi_exec_phase phase;
    int rc; /* the failure, once FAILED */
};

/* Start the call: work out its segments, take its scratch and waiter from
 * the host, post its first round (rounds without peers are skipped; a
 * schedule with none is DONE at once).  Tags carry `seq` (see
 * sampi_execute_rounds_seq).  0, or a negative errno: the call FAILED,
 * already settled.  Either way sampi_exec_free must follow. */
int sampi_exec_start(struct sampi_exec *x, const struct sampi_coll_args *args,
                     const struct sampi_round *rounds, int nrounds, uint64_t seq);

/* The same, with a reduce scratch of the call's own instead of the
 * communicator's one buffer (freed by sampi_exec_free): for a call in flight
 * beside others on the same communicator.  Such calls need distinct `seq`
 * (the mpi netdev tells apart 16 consecutive ones, mpi.c) and must be started
 * in the same order on every rank, like any collective. */
int sampi_exec_start_own(struct sampi_exec *x, const struct sampi_coll_args *args,
                         const struct sampi_round *rounds, int nrounds, uint64_t seq);

/* Make what progress is possible now, never blocking: look at the netdev
 * once for the round's requests (a deadline already passed), reduce or copy
 * what landed, and when the round is complete post the next and look again.
 * 0 with *done set (1: DONE, recvbuf holds the result), or a negative
 * errno: the call FAILED, settled as sampi_exec_abort settles it (each later
 * test answers the same).  It does not poll the communicator's revocation
 * or apply sampi_timeout_ms: that is the waiter's, which only a wait
 * consults (a caller that tests a call forever must watch x->w itself). */
int sampi_exec_test(struct sampi_exec *x, int *done);

/* Give up on a RUNNING call with `why` (a negative errno): cancel the round's
 * receives (one already matched is let land), and wait for its pending
 * sends until they completed or their peer said it takes nothing more,
 * bounded by sampi_timeout_ms (executor.c's header says why).  May block.
 * Then FAILED with `why`; nothing SAMPI posted reads or writes the caller's
 * buffers.  A call that is not RUNNING is left as it is. */
void sampi_exec_abort(struct sampi_exec *x, int why);

/* Release what the call holds (a call still RUNNING is aborted first, with
 * -ECANCELED).  Back to IDLE. */
void sampi_exec_free(struct sampi_exec *x);

#endif
