/*
 * allreduce.c - the MPI_Allreduce entry point: one call, top to bottom.
 *
 *   admit   check the arguments the way Open MPI does (validate.c) and
 *           decide eligibility (predefined contiguous datatype, predefined
 *           op defined on it, intracommunicator of two or more ranks), else
 *           PMPI_Allreduce, counted as a fallback; find the communicator's
 *           state, fail at once on a revoked one, finish the first call's
 *           agreement; fill the call context, once;
 *   choose  the algorithm: a forced one (ring where it does not suit the
 *           call), or auto's selector, which also says whether to measure
 *           the call (all agreed across ranks);
 *   prepare what the branch needs: where native calls are checked
 *           (sampi_check_native, or a limit), the argument check before
 *           anything else a branch waits for; SAMPI's data path opened on
 *           first use;
 *   run     the algorithm (SAMPI's with its overlapped argument check);
 *   settle  one ending for both branches (settle_outcome): the argument
 *           check's verdict, the tracking exchange, and on failure the
 *           revocation and the same error class on every rank;
 *   learn   the measured cost goes to auto's selector.
 * A call that repeats the previous one's arguments, where that one ran Open
 * MPI's allreduce and auto (or the setting) would decide the same again,
 * skips all of this: it takes the lane (src/core/lane.h), a key comparison
 * and the counts before PMPI_Allreduce.  That is what a converged small call
 * costs; the full path adds auto's table walk, the argument checks and the
 * attribute lookup.
 */
#include "argcheck.h"
#include "auto.h"
#include "coll_ctx.h"
#include "comm.h"
#include "dtype.h"
#include "errors.h"
#include "debug_delay.h"
#include "lane.h"
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

/* `chosen`: SAMPI decided to run it this way (not a fallback).  A composed
 * algorithm's stage (c a part) counts on its own communicator only: the
 * process counts the program's calls. */
static void count_call(struct sampi_comm *c, enum sampi_algo_id algo, int chosen)
{
    sampi_stat_add(&c->stats.calls[algo], 1);
    if (!c->parent) {
        sampi_stat_add(&sampi_process_stats.calls[algo], 1);
        if (algo == SAMPI_ALGO_NATIVE && chosen)
            sampi_stat_add(&sampi_process_stats.native_chosen, 1);
    }
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

struct call;
static int pmpi(const struct call *k);

/* The call goes to PMPI_Allreduce for reason `why`, counted (c may be NULL:
 * no state). */
static int fall_back(struct sampi_comm *c, int why, const struct call *k);

/* The error a failed call returns: the mismatch the argument check found
 * (the same class on every rank), or the revocation. */
static int failure(const struct sampi_comm *c)
{
    return sampi_errno_is_mismatch(c->revoked) ? c->revoked : -SAMPI_EREVOKED;
}

/* One call as it goes through the steps above. */
struct call {
    /* the caller's arguments, for PMPI_Allreduce and messages */
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
    struct sampi_coll_args a;
    struct sampi_coll_ctx ctx; /* a.ctx: filled once, in admit */
    struct sampi_comm *c;
    size_t bytes;
    enum sampi_algo_id algo;
    int forced;  /* the algorithm was set, not auto's */
    int tracked; /* the call is measured (tracker.h) */
    int checked; /* the argument check ran first (prepare) */
    /* run by a progress thread for a nonblocking call (progress.c): errors
     * come back as a class for the request's status, never through the
     * handler here, and Open MPI's allreduce runs on SAMPI's duplicate, in
     * the order of the communicator's calls */
    int nb;
    struct sampi_auto_call ac; /* auto's decision, for learn */
};

/* The class a failed call returns: through comm's error handler for a
 * blocking call, as it is for a nonblocking one (its request's status). */
static int report(const struct call *k, int neg_errno)
{
    if (!k->nb)
        return sampi_report_error(k->comm, neg_errno);
    return neg_errno ? sampi_errno_to_mpi(neg_errno) : MPI_SUCCESS;
}

static int pmpi(const struct call *k)
{
    MPI_Comm comm = k->nb && k->c && k->c->ctl != MPI_COMM_NULL ? k->c->ctl : k->comm;
    return PMPI_Allreduce(k->sendbuf, k->recvbuf, k->count, k->datatype, k->op, comm);
}

static int fall_back(struct sampi_comm *c, int why, const struct call *k)
{
    char what[MPI_MAX_OBJECT_NAME + 64], name[64];
    describe_call(k->datatype, k->op, what, sizeof(what));
    int rc = sampi_comm_note_fallback(c, (enum sampi_fallback_reason)why, what);
    if (rc)
        return report(k, rc);
    if (c)
        count_call(c, SAMPI_ALGO_NATIVE, 0);
    if (sampi_log_enabled(SAMPI_LOG_CALL)) {
        comm_name(c, k->comm, name, sizeof(name));
        sampi_log(SAMPI_LOG_CALL, "allreduce on %s: algorithm=native count=%d %s fallback=%s", name,
                  k->count, what, sampi_fallback_reason_names[why]);
    }
    return pmpi(k);
}

static int enter(struct call *k, int *rc);

/* Whether SAMPI takes the call: 1 with k ready to choose, or 0 with *rc
 * the call's outcome (answered here, or by PMPI_Allreduce). */
static int admit(struct call *k, int *rc)
{
    int why = 0;
    switch (sampi_check_allreduce(k->sendbuf, k->recvbuf, k->count, k->datatype, k->op, k->comm,
                                  &k->a, &why, rc)) {
    case SAMPI_CHECK_TO_PMPI:
        *rc = pmpi(k);
        return 0;
    case SAMPI_CHECK_ANSWERED:
        return 0;
    case SAMPI_CHECK_INELIGIBLE: {
        int inter = 1;
        PMPI_Comm_test_inter(k->comm, &inter);
        if (!inter) /* intercommunicators get no state: SAMPI never runs on them */
            sampi_comm_get(k->comm, 1, &k->c);
        *rc = fall_back(k->c, why, k);
        return 0;
    }
    case SAMPI_CHECK_OK:
        break;
    }
    if (sampi_selective_route(&k->a, rc))
        return 0;
    if (sampi_comm_get(k->comm, 1, &k->c)) {
        *rc = fall_back(NULL, SAMPI_FALLBACK_COMM, k);
        return 0;
    }
    if (k->count == 0) { /* as Open MPI: nothing to reduce, no communication */
        count_call(k->c, SAMPI_ALGO_NATIVE, 1);
        log_call(k->c, &k->a, SAMPI_ALGO_NATIVE);
        *rc = MPI_SUCCESS;
        return 0;
    }
    /* the nonblocking calls posted before this one on c come first (MPI's
     * order of a communicator's collectives) */
    sampi_comm_wait_pending(k->c);
    return enter(k, rc);
}

/* The part of admitting a call that runs where the call runs (a progress
 * thread's for a nonblocking one): the communicator's revocation, the
 * first call's agreement, the call context.  1, or 0 with *rc the outcome. */
static int enter(struct call *k, int *rc)
{
    struct sampi_comm *c = k->c;
    /* a communicator SAMPI gave up on fails at once on every rank, a late
     * one included: never PMPI_Allreduce, which would pair with the others'
     * previous call.  After a quiet call (settle_outcome) there is nothing to
     * look for, which keeps Open MPI's progress engine out of a small call.  The
     * call is counted before the look, so that a late rank that learns of
     * the revocation here names the call its peers gave up on (messages
     * number calls); calls on a communicator already revoked are not. */
    if (c->revoked) {
        *rc = report(k, -SAMPI_EREVOKED);
        return 0;
    }
    c->calls++;
    if (!c->quiet && sampi_comm_poll(c)) {
        *rc = report(k, -SAMPI_EREVOKED);
        return 0;
    }
    c->quiet = 0;
    int jrc = sampi_comm_join(c);
    if (jrc) {
        *rc =
            jrc == -EINVAL ? fall_back(c, SAMPI_FALLBACK_MISMATCH, k) : report(k, -SAMPI_EREVOKED);
        return 0;
    }
    sampi_coll_ctx_fill(c, &k->ctx); /* what suited and auto read */
    k->a.ctx = &k->ctx;
    k->bytes = k->a.count * k->a.dt.extent;
    return 1;
}

/* The algorithm for the call: auto asks its selector, which also says
 * whether to measure it; a forced algorithm is never overridden (ring
 * where it does not suit the call), and is tracked by size.  0, or the
 * negative errno the call fails with. */
static int choose(struct call *k)
{
    struct sampi_comm *c = k->c;
    const int setting = sampi_comm_algorithm_setting(c);
    if (setting <= SAMPI_ALGO_AUTO || setting >= SAMPI_ALGO__COUNT) {
        k->algo = sampi_auto_decide(c, &k->a, &k->ac);
        k->tracked = k->ac.d.measure;
        return 0;
    }
    k->algo = (enum sampi_algo_id)setting;
    k->forced = 1;
    k->tracked = sampi_tracker_wanted(c, k->bytes);
    if (!sampi_algos[k->algo].suited || sampi_algos[k->algo].suited(&k->a))
        return 0;
    /* e.g. no straggler or degraded rank known, too few ranks or elements:
     * decided from agreed inputs, so every rank runs ring */
    char what[MPI_MAX_OBJECT_NAME + 64];
    describe_call(k->datatype, k->op, what, sizeof(what));
    k->algo = SAMPI_ALGO_RING;
    return sampi_comm_note_substitute(c, SAMPI_FALLBACK_UNSUITED, SAMPI_ALGO_RING, what);
}

/* The argument check, posted and waited for before the branch waits for
 * anything else; 0, or the failure (c revoked). */
static int check_first(struct call *k)
{
    k->checked = 1;
    int rc = sampi_argcheck_post(k->c, &k->a, k->algo, sampi_comm_pattern_hash(k->c));
    if (!rc)
        rc = sampi_comm_check_finish(k->c);
    if (rc)
        sampi_revoke(k->c, rc, "the argument check");
    return rc;
}

/* What the branch needs before it runs: 1 to run; 0 with *rc the call's
 * outcome.  Where the calls left to Open MPI are checked
 * (sampi_comm_checks_native: sampi_check_native, or a limit), ranks whose
 * byte counts sent them down different branches must meet in the check
 * before anything else either branch waits for: native checks first, and
 * SAMPI's branch, before it opens the data path on first use (an
 * agreement the ranks gone native never join), checks first too; once
 * the path is open its check overlaps the call (run).  A failure to open
 * agreed on every rank falls back. */
static int prepare(struct call *k, int *rc)
{
    struct sampi_comm *c = k->c;
    int prc = 0;
    int meet = sampi_comm_checks_native(c);
    if (k->algo == SAMPI_ALGO_NATIVE ? meet : meet && !c->nd_tried)
        prc = check_first(k);
    if (!prc && k->algo != SAMPI_ALGO_NATIVE) {
        prc = sampi_comm_open_netdev(c);
        if (prc && !c->revoked) {
            *rc = fall_back(c, SAMPI_FALLBACK_BROKEN, k); /* agreed on every rank */
            return 0;
        }
    }
    if (prc) {
        *rc = report(k, failure(c));
        return 0;
    }
    count_call(c, k->algo, 1);
    log_call(c, &k->a, k->algo);
    return 1;
}

/* The algorithm runs; SAMPI's with its argument check overlapped. */
static int run(struct call *k)
{
    struct sampi_comm *c = k->c;
    int rc = 0;
    if (k->algo != SAMPI_ALGO_NATIVE) {
        if (!k->checked)
            rc = sampi_argcheck_post(c, &k->a, k->algo, sampi_comm_pattern_hash(c));
        sampi_debug_stall_apply();
    }
    if (!rc) {
        sampi_coll_ctx_bind(c, &k->a, k->algo);
        rc = sampi_algos[k->algo].run(&k->a);
        if (!c->parent) /* the program's calls, not a composition's stages */
            sampi_debug_algo_delay_apply(k->algo, sampi_algo_delayable);
    }
    return rc;
}

/* What a call must repeat to take a lane. */
static struct sampi_lane_key lane_key(const void *sendbuf, int count, MPI_Datatype datatype,
                                      MPI_Op op, MPI_Comm comm)
{
    return (struct sampi_lane_key){comm, datatype, op, count, sendbuf == MPI_IN_PLACE};
}

/* The calls after a quiet native one that will be decided the same way, if
 * they repeat its arguments, take a lane (lane.h): all of them where native
 * was set, auto's up to its cell's next measured call or re-check.  Not
 * where each call must be logged or selective reduce may take it. */
static void open_lane(struct call *k)
{
    uint64_t *counter = NULL;
    uint64_t n = k->forced ? UINT64_MAX : sampi_auto_repeats(k->c, &k->ac, &counter);
    if (!n || sampi_log_enabled(SAMPI_LOG_CALL) || sampi_selective_may_route())
        return;
    const struct sampi_lane_key key = lane_key(k->sendbuf, k->count, k->datatype, k->op, k->comm);
    sampi_lane_open(&key, k->c, counter, n);
}

/* The class of Open MPI's error code from its allreduce. */
static int native_class(int code)
{
    int cls = MPI_ERR_OTHER;
    PMPI_Error_class(code, &cls);
    return cls;
}

/* One ending for both branches.  `rc`: run's outcome (Open MPI's own for
 * native, which stands as it is).  A message of the wrong size points at a
 * mismatch: the check says which, the same on every rank.  A measured
 * call's cost goes to auto (learn). */
static int settle_outcome(struct call *k, int rc)
{
    struct sampi_comm *c = k->c;
    if (rc && k->algo == SAMPI_ALGO_NATIVE)
        return k->nb ? native_class(rc) : sampi_report_error(k->comm, rc);
    if (k->algo == SAMPI_ALGO_NATIVE && !k->tracked && !k->checked && !k->nb) {
        /* every rank joined Open MPI's allreduce, and none of SAMPI's
         * exchanges ran: none can have given up on c (admit) */
        c->quiet = !c->parent;
        if (c->quiet)
            open_lane(k);
        return MPI_SUCCESS;
    }
    rc = sampi_comm_check_cause(c, rc);
    const char *where = "the data exchange";
    if (!rc && k->tracked) {
        double cost = -1;
        rc = sampi_tracker_end(c, k->algo, k->bytes, &cost);
        where = "the tracking exchange";
        if (!rc && cost >= 0 && k->ac.active)
            sampi_auto_learn(c, &k->ac, cost);
    }
    if (!rc)
        return MPI_SUCCESS;
    sampi_revoke(c, rc, where); /* no-op when a notice came first */
    return report(k, failure(c));
}

/* What follows admitting a call: the algorithm, and the call itself. */
static int run_admitted(struct call *k)
{
    int rc;
    if ((rc = choose(k)))
        return report(k, rc);
    if (k->tracked)
        sampi_tracker_begin(k->c);
    if (!prepare(k, &rc))
        return rc;
    return settle_outcome(k, run(k));
}

static int allreduce(struct call *k)
{
    int rc = MPI_SUCCESS;
    if (!admit(k, &rc))
        return rc;
    return run_admitted(k);
}

/* A call on a lane: Open MPI's allreduce, counted as the full path counts it
 * (the lane advanced c->calls and auto's cell).  Open MPI's error, which
 * its handler has seen, closes c's lanes: the next call looks again. */
static int replay(struct sampi_comm *c, const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    count_call(c, SAMPI_ALGO_NATIVE, 1);
    sampi_stat_add(&c->stats.lane, 1);
    sampi_stat_add(&sampi_process_stats.lane, 1);
    int rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    sampi_debug_algo_delay_apply(SAMPI_ALGO_NATIVE, sampi_algo_delayable);
    if (rc != MPI_SUCCESS)
        c->quiet = 0; /* closes c's lanes */
    return rc;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    if (!sampi_runtime_mpi_ready())
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    sampi_debug_delay_apply();
    if (sendbuf && recvbuf && sendbuf != recvbuf) {
        const struct sampi_lane_key key = lane_key(sendbuf, count, datatype, op, comm);
        struct sampi_comm *c = sampi_lane_take(&key);
        if (c)
            return replay(c, sendbuf, recvbuf, count, datatype, op, comm);
    }
    struct call k = {.sendbuf = sendbuf,
                     .recvbuf = recvbuf,
                     .count = count,
                     .datatype = datatype,
                     .op = op,
                     .comm = comm};
    return allreduce(&k);
}

/* A stage's call never reaches the user's error handler: comm is SAMPI's own
 * (its handler returns), and the caller's call reports the failure.  The
 * algorithm is comm's own setting, which the host set (coll_ctx.c). */
int sampi_allreduce_part(void *buf, size_t count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    struct call k = {.sendbuf = MPI_IN_PLACE,
                     .recvbuf = buf,
                     .count = (int)count,
                     .datatype = datatype,
                     .op = op,
                     .comm = comm};
    if (allreduce(&k) == MPI_SUCCESS)
        return 0;
    return k.c && k.c->revoked ? k.c->revoked : -EIO;
}

/* A composition's parts run the whole of this file's call (coll_ctx.c's
 * part_allreduce): handed to the core when the library is loaded, so that
 * the start-up (runtime.c) need not know this file. */
__attribute__((constructor)) static void hand_part_entry(void)
{
    sampi_coll_ctx_set_part_entry(sampi_allreduce_part);
}

int sampi_allreduce_nb(const struct sampi_nb_args *n)
{
    struct call k = {.sendbuf = n->sendbuf,
                     .recvbuf = n->recvbuf,
                     .count = n->count,
                     .datatype = n->datatype,
                     .op = n->op,
                     .comm = n->comm,
                     .a = n->a,
                     .c = n->c,
                     .nb = 1};
    int rc = MPI_SUCCESS;
    if (!enter(&k, &rc))
        return rc;
    return run_admitted(&k);
}
