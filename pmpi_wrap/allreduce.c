/*
 * allreduce.c - the MPI_Allreduce entry point.
 *
 * The order of work on each call:
 *   1. check the arguments the way Open MPI does (validate.c);
 *   2. decide eligibility (predefined contiguous datatype, predefined op
 *      defined on it, intracommunicator of two or more ranks), else
 *      PMPI_Allreduce, counted as a fallback;
 *   3. pick the algorithm from the per-communicator setting, sampi_algorithm
 *      and the selection table (all agreed across ranks);
 *   4. open the communicator's data path on first use, and run.
 * The small-message path (`native`) costs a datatype lookup, an attribute
 * lookup and a table walk on top of PMPI_Allreduce.
 */
#include "argcheck.h"
#include "auto.h"
#include "coll_ctx.h"
#include "comm.h"
#include "dtype.h"
#include "debug_delay.h"
#include "revoke.h"
#include "select.h"
#include "tracker.h"
#include "sampi_internal.h"
#include "selective_client.h"
#include "wrap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* "communicator 3 (4 ranks)", the same on every rank, for per-call lines;
 * "a communicator of N ranks" before its id is agreed. */
static void comm_name(const struct sampi_comm *c, MPI_Comm comm, char *buf, size_t len)
{
    int size = 0;
    if (c && c->ctl != MPI_COMM_NULL) {
        snprintf(buf, len, "communicator %llu (%d ranks)", (unsigned long long)sampi_comm_label(c),
                 c->size);
        return;
    }
    PMPI_Comm_size(comm, &size);
    snprintf(buf, len, "a communicator of %d ranks", size);
}

static void log_call(const struct sampi_comm *c, const struct sampi_coll_args *a,
                     enum sampi_algo_id algo)
{
    if (!sampi_log_enabled(SAMPI_LOG_CALL))
        return;
    char name[64];
    comm_name(c, a->comm, name, sizeof(name));
    sampi_log(SAMPI_LOG_CALL,
              "allreduce on %s: algorithm=%s netdev=%s count=%zu bytes=%zu op=%s elem=%s", name,
              sampi_algos[algo].name, c && c->nd ? c->nd->ops->name : "none", a->count,
              a->count * a->dt.extent, sampi_op_name(a->op), sampi_elem_name(a->dt.elem));
}

/* `chosen`: SAMPI decided to run it this way (not a fallback). */
static void count_call(struct sampi_comm *c, enum sampi_algo_id algo, int chosen)
{
    sampi_stat_add(&c->stats.calls[algo], 1);
    sampi_stat_add(&sampi_process_stats.calls[algo], 1);
    if (algo == SAMPI_ALGO_NATIVE && chosen)
        sampi_stat_add(&sampi_process_stats.native_chosen, 1);
    atomic_store_explicit(&c->last_algo, algo, memory_order_relaxed);
}

_Static_assert(
    SAMPI_ALGO__COUNT <= SAMPI_DEBUG_ALGOS_MAX,
    "sampi_debug_algo_delay holds a delay per algorithm id: raise SAMPI_DEBUG_ALGOS_MAX");

/* "MPI_SUM on MPI_CHAR" for messages: the op and the datatype by name. */
static void describe_call(MPI_Datatype datatype, MPI_Op op, char *buf, size_t len)
{
    char type[MPI_MAX_OBJECT_NAME] = "";
    int n = 0;
    if (datatype == MPI_DATATYPE_NULL || PMPI_Type_get_name(datatype, type, &n) != MPI_SUCCESS ||
        !type[0])
        snprintf(type, sizeof(type), "a derived datatype");
    int sop = sampi_op_lookup(op);
    snprintf(buf, len, "%s on %s",
             sop >= 0 ? sampi_op_name((enum sampi_op)sop) : "a user-defined op", type);
}

static int fall_back(struct sampi_comm *c, enum sampi_fallback_reason why, const void *sendbuf,
                     void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    char what[MPI_MAX_OBJECT_NAME + 64], name[64];
    describe_call(datatype, op, what, sizeof(what));
    int rc = sampi_comm_note_fallback(c, why, what);
    if (rc)
        return sampi_report_error(comm, rc);
    if (c)
        count_call(c, SAMPI_ALGO_NATIVE, 0);
    if (sampi_log_enabled(SAMPI_LOG_CALL)) {
        comm_name(c, comm, name, sizeof(name));
        sampi_log(SAMPI_LOG_CALL, "allreduce on %s: algorithm=native count=%d %s fallback=%s", name,
                  count, what, sampi_fallback_reason_names[why]);
    }
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

/* sampi_check_native: a call about to run as native checks the arguments
 * first, so that ranks whose byte counts sent them down different branches
 * (or whose forced algorithms differ) meet in the same check instead of
 * hanging apart.  0, or the error every rank returns. */
static int check_first(struct sampi_comm *c, const struct sampi_coll_args *a)
{
    if (!sampi_cvar_int(SAMPI_CVAR_CHECK_NATIVE))
        return 0;
    int rc = sampi_argcheck_post(c, a, SAMPI_ALGO_NATIVE);
    if (!rc)
        rc = sampi_argcheck_finish(c);
    if (!rc)
        return 0;
    sampi_revoke(c, rc, "the argument check");
    return sampi_errno_is_mismatch(c->revoked) ? c->revoked : -SAMPI_EREVOKED;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    if (!sampi_runtime_mpi_ready())
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    sampi_debug_delay_apply();

    struct sampi_coll_args a;
    int why = 0, rc = MPI_SUCCESS;
    struct sampi_comm *c = NULL;
    switch (sampi_check_allreduce(sendbuf, recvbuf, count, datatype, op, comm, &a, &why, &rc)) {
    case SAMPI_CHECK_TO_PMPI:
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    case SAMPI_CHECK_ANSWERED:
        return rc;
    case SAMPI_CHECK_INELIGIBLE: {
        int inter = 1;
        PMPI_Comm_test_inter(comm, &inter);
        if (!inter) /* intercommunicators get no state: SAMPI never runs on them */
            sampi_comm_get(comm, 1, &c);
        return fall_back(c, why, sendbuf, recvbuf, count, datatype, op, comm);
    }
    case SAMPI_CHECK_OK:
        break;
    }
    if (sampi_selective_route(&a, &rc))
        return rc;

    rc = sampi_comm_get(comm, 1, &c);
    if (rc)
        return fall_back(NULL, SAMPI_FALLBACK_COMM, sendbuf, recvbuf, count, datatype, op, comm);
    if (count == 0) { /* as Open MPI: nothing to reduce, no communication */
        count_call(c, SAMPI_ALGO_NATIVE, 1);
        log_call(c, &a, SAMPI_ALGO_NATIVE);
        return MPI_SUCCESS;
    }
    /* a communicator SAMPI gave up on fails at once on every rank, a late
     * one included: never PMPI_Allreduce, which would pair with the others'
     * previous call */
    if (sampi_revoke_poll(c))
        return sampi_report_error(comm, -SAMPI_EREVOKED);
    c->calls++;
    rc = sampi_comm_join(c);
    if (rc == -EINVAL)
        return fall_back(c, SAMPI_FALLBACK_MISMATCH, sendbuf, recvbuf, count, datatype, op, comm);
    if (rc)
        return sampi_report_error(comm, -SAMPI_EREVOKED);

    /* what the algorithms see of c: suited and auto read it, the run its
     * refilled copy (sampi_coll_ctx_bind) */
    struct sampi_coll_ctx ctx;
    sampi_coll_ctx_fill(c, &ctx);
    a.ctx = &ctx;
    const size_t bytes = a.count * a.dt.extent;
    /* auto asks its selector, which also says whether to measure the call;
     * a forced algorithm is never overridden, and is tracked by size */
    const int setting = sampi_comm_algorithm_setting(c);
    struct sampi_auto_call ac = {0};
    enum sampi_algo_id algo;
    int tracked;
    if (setting <= SAMPI_ALGO_AUTO || setting >= SAMPI_ALGO__COUNT) {
        algo = sampi_auto_decide(c, &a, &ac);
        tracked = ac.d.measure;
    } else {
        algo = (enum sampi_algo_id)setting;
        tracked = sampi_tracker_wanted(c, bytes);
        if (sampi_algos[algo].suited && !sampi_algos[algo].suited(&a)) {
            /* e.g. no straggler or degraded rank known, too few ranks or
             * elements: decided from agreed inputs, so every rank runs ring */
            char what[MPI_MAX_OBJECT_NAME + 64];
            describe_call(datatype, op, what, sizeof(what));
            rc = sampi_comm_note_substitute(c, SAMPI_FALLBACK_UNSUITED, SAMPI_ALGO_RING, what);
            if (rc)
                return sampi_report_error(comm, rc);
            algo = SAMPI_ALGO_RING;
        }
    }
    if (tracked)
        sampi_tracker_begin(c);
    if (algo == SAMPI_ALGO_NATIVE) {
        if ((rc = check_first(c, &a)))
            return sampi_report_error(comm, rc);
        count_call(c, algo, 1);
        log_call(c, &a, algo);
        sampi_coll_ctx_bind(c, &a, algo);
        rc = sampi_algos[algo].run(&a);
        sampi_debug_algo_delay_apply(algo, sampi_algo_delayable);
        if (rc || !tracked)
            return sampi_report_error(comm, rc); /* Open MPI's own outcome */
        if (!(rc = sampi_tracker_end(c, algo, bytes, ac.active ? &ac : NULL)))
            return MPI_SUCCESS;
        sampi_revoke(c, rc, "the tracking exchange");
        return sampi_report_error(comm, -SAMPI_EREVOKED);
    }
    rc = sampi_comm_open_netdev(c);
    if (rc && c->revoked)
        return sampi_report_error(comm, -SAMPI_EREVOKED);
    if (rc) /* the same answer on every rank: they agreed on the outcome */
        return fall_back(c, SAMPI_FALLBACK_BROKEN, sendbuf, recvbuf, count, datatype, op, comm);
    count_call(c, algo, 1);
    log_call(c, &a, algo);
    rc = sampi_argcheck_post(c, &a, algo);
    sampi_debug_stall_apply();
    if (!rc) {
        sampi_coll_ctx_bind(c, &a, algo);
        rc = sampi_algos[algo].run(&a);
        sampi_debug_algo_delay_apply(algo, sampi_algo_delayable);
    }
    /* a message of the wrong size points at a mismatch: the check says
     * which, the same on every rank */
    if (!rc || rc == -EBADMSG) {
        int crc = sampi_argcheck_finish(c);
        rc = crc ? crc : rc;
    }
    if (!rc && tracked)
        rc = sampi_tracker_end(c, algo, bytes, ac.active ? &ac : NULL);
    if (!rc)
        return MPI_SUCCESS;
    sampi_revoke(c, rc, "the data exchange"); /* no-op when a notice came first */
    /* this call returns its cause: a mismatch (the same class on every rank,
     * which all computed the same check) or the revocation */
    return sampi_report_error(comm,
                              sampi_errno_is_mismatch(c->revoked) ? c->revoked : -SAMPI_EREVOKED);
}
