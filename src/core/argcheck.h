/*
 * argcheck.h - sampi_check_args: the ranks compare what each passed to a
 * call (count, datatype, op) and what each chose to run (algorithm and the
 * settings that shape its messages), so that a mismatch gives every rank
 * the same error instead of a hang or wrong data on some ranks.
 *
 * One allreduce of (v, -v) pairs under MAX on the communicator's private
 * duplicate per call SAMPI runs itself (SAMPI's own, over point-to-point:
 * src/base/p2p_allreduce.h): a field differs somewhere exactly
 * when max(v) != -max(-v), and every rank sees the same reduced vector, so
 * every rank names the same field.  The check is posted when the call starts
 * and runs beside the data exchange (a straggler-aware algorithm must not
 * wait for the straggler before it starts); a data exchange that a mismatch
 * blocks ends when the check completes (the waiter's poll looks at it), and
 * the call's outcome waits for the check.  Cost: one exchange of 80 bytes
 * per doubling step, overlapped with the call; its later steps (p > 2) advance when the check is
 * looked at (a waiter's poll, the end of the call), since nothing else drives them.
 *
 * Calls SAMPI leaves to PMPI_Allreduce are checked only where
 * sampi_comm_checks_native says so (sampi_check_native, or a limit): then
 * before they start, waited for (pmpi_wrap/allreduce.c, prepare).
 */
#ifndef SAMPI_ARGCHECK_H
#define SAMPI_ARGCHECK_H

#include "algos.h"
#include "p2p_allreduce.h"

#include <mpi.h>
#include <stdint.h>

enum sampi_argcheck_field {
    SAMPI_ARGCHECK_COUNT,
    SAMPI_ARGCHECK_DATATYPE,
    SAMPI_ARGCHECK_OP,
    SAMPI_ARGCHECK_ALGORITHM,
    SAMPI_ARGCHECK_SETTINGS,
    SAMPI_ARGCHECK__COUNT
};

struct sampi_argcheck {
    /* the exchange; its buffers are its own, let go when it is released
     * in flight (a revoked communicator freed) */
    struct sampi_p2p_allreduce x;
    unsigned seq; /* checks posted on this communicator, for the tag */
    int posted;   /* a check of the current call was posted */
    int judged;   /* ... and its result was read (verdict below) */
    int verdict;  /* 0, or the negative errno of the first field that differs */
};

struct sampi_comm;
struct sampi_waiter;

/* Set up check (the state was just made). */
void sampi_argcheck_init(struct sampi_argcheck *check);

/* Post the check of call `args` running `algo` on c (when sampi_check_args
 * is set); `settings` is what the call must agree on beyond its arguments
 * (sampi_comm_pattern_hash).  0, -ENOMEM or -EIO. */
int sampi_argcheck_post(struct sampi_comm *c, const struct sampi_coll_args *args,
                        enum sampi_algo_id algo, uint32_t settings);

/* Non-blocking: 0 while the check is pending or passed, or the mismatch
 * error once it completed and found one. */
int sampi_argcheck_poll(struct sampi_argcheck *k);

/* Whether a check was posted and its verdict is not known yet. */
int sampi_argcheck_pending(const struct sampi_argcheck *k);

/* Wait for the check through w (needed only while it is pending) and
 * return 0, the mismatch error, or the wait's error; called again in the
 * same call, the same verdict.  0 when none was posted.  The communicator's
 * own is sampi_comm_check_finish (comm.h). */
int sampi_argcheck_finish(struct sampi_argcheck *check, struct sampi_waiter *w);

/* The state is being freed: release the exchange (a check still in flight
 * keeps its buffers, let go). */
void sampi_argcheck_release(struct sampi_argcheck *check);

/* Pure: judge a reduced vector of (v, -v) pairs (for tests).  0, or the
 * errno of the first field that differs. */
int sampi_argcheck_judge(const long long *out);

#endif
