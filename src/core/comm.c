/*
 * comm.c - per-communicator state as a cached attribute.
 */
#include "comm.h"
#include "lane.h"
#include "revoke.h"
#include "rollcall.h"
#include "wait.h"
#include "wait_mode.h"
#include "sampi_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static int keyval = MPI_KEYVAL_INVALID;
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sampi_comm *all_states;
/* sampi_comm_init's modules with a part in every state */
static const struct sampi_comm_owner *owners;
static size_t n_owners;

static void state_free(struct sampi_comm *c)
{
    sampi_lane_close_all(); /* a lane may point to c */
    pthread_mutex_lock(&list_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        all_states = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&list_lock);
    /* before the data path closes: an algorithm's state may hold a transport
     * of its own, closed while MPI still works */
    for (int i = 0; i < SAMPI_ALGO__COUNT; i++) {
        void *st = atomic_exchange(&c->algo_state[i], NULL);
        if (st)
            sampi_algos[i].state->destroy(st);
    }
    if (c->nd)
        c->nd->ops->close(c->nd);
    if (c->ctl != MPI_COMM_NULL) {
        int finalized = 0;
        PMPI_Finalized(&finalized);
        if (!finalized) {
            sampi_comm_poll(c); /* a notice that came meanwhile counts too */
            sampi_revoke_disarm(c);
            /* A revoked communicator's messages may still be in flight, and
             * Open MPI gives a freed communicator's context id to the next
             * one it makes, which would receive them: a revoked ctl is kept
             * (one communicator per revocation) so that its id stays taken. */
            if (!c->revoked)
                PMPI_Comm_free(&c->ctl);
        }
    }
    sampi_argcheck_release(&c->check);
    free(c->scratch);
    for (size_t i = 0; i < n_owners; i++)
        if (owners[i].release)
            owners[i].release(c);
    sampi_stats_release(&c->stats);
    free(c);
}

static int delete_state(MPI_Comm comm, int kv, void *value, void *extra)
{
    state_free(value);
    return MPI_SUCCESS;
}

/* A duplicated communicator starts without SAMPI state: its data path is its
 * own, and per-communicator choices are not inherited (as MPI_Comm_dup does
 * not inherit MPI_T bindings). */
int sampi_comm_init(const struct sampi_comm_owner *o, size_t n)
{
    if (keyval != MPI_KEYVAL_INVALID)
        return 0;
    owners = o;
    n_owners = n;
    int rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &keyval, NULL);
    return rc == MPI_SUCCESS ? 0 : -ENOMEM;
}

int sampi_comm_get(MPI_Comm comm, int create, struct sampi_comm **out)
{
    void *value = NULL;
    int flag = 0;
    *out = NULL;
    if (keyval == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL)
        return -EINVAL;
    if (PMPI_Comm_get_attr(comm, keyval, &value, &flag) != MPI_SUCCESS)
        return -EINVAL;
    if (flag) {
        *out = value;
        return 0;
    }
    if (!create)
        return -ENOENT;

    struct sampi_comm *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->comm = comm;
    c->ctl = MPI_COMM_NULL;
    c->revoke_rx = MPI_REQUEST_NULL;
    sampi_argcheck_init(&c->check);
    c->join_req[0] = c->join_req[1] = MPI_REQUEST_NULL;
    c->dup_req = MPI_REQUEST_NULL;
    c->forced_algo = c->forced_netdev = -1;
    atomic_store(&c->last_algo, -1);
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_size(comm, &c->size);
    if (PMPI_Comm_set_attr(comm, keyval, c) != MPI_SUCCESS) {
        free(c);
        return -EINVAL;
    }
    pthread_mutex_lock(&list_lock);
    c->next = all_states;
    if (all_states)
        all_states->prev = c;
    all_states = c;
    pthread_mutex_unlock(&list_lock);
    *out = c;
    return 0;
}

uint32_t sampi_comm_pattern_hash(const struct sampi_comm *c)
{
    uint32_t h = sampi_config_pattern_hash();
    for (size_t i = 0; i < n_owners; i++) {
        uint64_t own = owners[i].pattern_hash ? owners[i].pattern_hash() : 0;
        h ^= (uint32_t)own ^ (uint32_t)(own >> 32);
    }
    h = h * 31u + (uint32_t)(c->forced_algo + 1);
    return h * 31u + (uint32_t)(c->forced_netdev + 1);
}

int sampi_comm_poll(struct sampi_comm *c)
{
    if (c->revoked)
        return c->revoked;
    int rc = sampi_argcheck_poll(&c->check);
    if (rc) {
        sampi_revoke(c, rc, "the argument check");
        return c->revoked;
    }
    if (c->parent && (rc = sampi_comm_poll(c->parent))) {
        /* the call this part serves failed: its peers here stop too */
        sampi_revoke(c, rc, "the communicator it is a part of");
        return c->revoked;
    }
    return sampi_revoke_poll(c);
}

static int poll_hook(void *owner)
{
    return sampi_comm_poll(owner);
}

static void describe_hook(void *owner, char *buf, size_t len)
{
    sampi_comm_describe(owner, buf, len);
}

void sampi_comm_waiter(struct sampi_comm *c, struct sampi_waiter *w, const char *what)
{
    sampi_waiter_init(w, what, poll_hook, describe_hook, c);
}

int sampi_comm_check_finish(struct sampi_comm *c)
{
    struct sampi_waiter w, *wp = NULL;
    if (sampi_argcheck_pending(&c->check)) {
        sampi_comm_waiter(c, &w, "the argument check");
        wp = &w;
    }
    return sampi_argcheck_finish(&c->check, wp);
}

int sampi_comm_check_cause(struct sampi_comm *c, int rc)
{
    if (rc && rc != -EBADMSG)
        return rc;
    int verdict = sampi_comm_check_finish(c);
    return verdict ? verdict : rc;
}

/* Proposals for communicator ids: (counter << 24) | world rank.  The join
 * takes the largest proposal, and every rank then moves its counter past
 * it, so two communicators that share a process get different ids however
 * the ranks interleave their first calls (a Lamport clock): the same
 * proposer never proposes twice the same counter. */
static _Atomic uint64_t next_label;

static uint64_t propose_id(void)
{
    int wrank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    return (atomic_fetch_add(&next_label, 1) << SAMPI_COMM_LABEL_SHIFT) |
           (uint64_t)(wrank & 0xffffff);
}

static void adopt_id(struct sampi_comm *c, uint64_t id)
{
    c->id = id;
    uint64_t want = (id >> SAMPI_COMM_LABEL_SHIFT) + 1, have = atomic_load(&next_label);
    while (have < want && !atomic_compare_exchange_weak(&next_label, &have, want))
        ;
}

/* The join's two exchanges and the new communicator's handle live on the
 * heap: when a wait gives up, the requests stay pending (a nonblocking
 * collective cannot be cancelled) and complete into these buffers whenever
 * the late rank arrives, perhaps after the state is gone.  They are freed
 * only when both completed. */
enum { AGREE_HASH, AGREE_HASH_NEG, AGREE_LIMIT, AGREE__FACTS }; /* agreement_facts */

struct join_bufs {
    long long a[AGREE__FACTS + 1], a_out[AGREE__FACTS + 1]; /* agreement_facts, id proposal */
    long long b, b_out; /* "I gave up waiting in the first exchange" */
    MPI_Comm ctl;
};

/* Requests of the join left pending on the user's communicator: they hold
 * their buffers, and the communicator must outlive them (see
 * sampi_comm_outlives). */
static void leave_pending(struct sampi_comm *c, struct join_bufs *j, MPI_Request a, MPI_Request b)
{
    c->join = j;
    c->join_req[0] = a;
    c->join_req[1] = b;
}

/* What every agreement exchanges under MAX: the settings' hash and its
 * negation (equal on every rank exactly when out[0] == -out[1]) and whether
 * this rank has a limit (sampi_timeout_ms): where any rank has one, every
 * rank checks the calls it leaves to Open MPI (sampi_comm_checks_native),
 * so the ranks agree on it although the limit is each rank's own. */
static void agreement_facts(const struct sampi_comm *c, long long *v)
{
    uint32_t h = sampi_comm_pattern_hash(c);
    v[AGREE_HASH] = h;
    v[AGREE_HASH_NEG] = -(long long)h;
    v[AGREE_LIMIT] = sampi_cvar_int(SAMPI_CVAR_TIMEOUT_MS) > 0;
}

/* The agreed facts: 0, or -EINVAL where the settings differ. */
static int agreement_adopt(struct sampi_comm *c, const long long *out)
{
    if (out[AGREE_HASH] != -out[AGREE_HASH_NEG])
        return -EINVAL;
    c->limited = out[AGREE_LIMIT] != 0;
    return 0;
}

int sampi_comm_checks_native(const struct sampi_comm *c)
{
    return sampi_cvar_int(SAMPI_CVAR_CHECK_ARGS) &&
           (c->limited || sampi_cvar_int(SAMPI_CVAR_CHECK_NATIVE));
}

/* On the user's communicator, with Open MPI's nonblocking collectives (not
 * src/base/p2p_allreduce.c, whose messages a user's MPI_ANY_TAG receive
 * there could take).  Running it on c->ctl instead would not keep coll/libnbc
 * off the user's communicator: Open MPI 4.1's PMPI_Comm_idup and
 * PMPI_Comm_dup agree on the new context id with an iallreduce on the parent
 * (comm_cid.c, ompi_comm_allreduce_intra_nb), which registers libnbc's
 * progress until the parent is freed; it runs once per communicator. */
static int agree_first(struct sampi_comm *c)
{
    struct join_bufs *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    agreement_facts(c, j->a);
    j->a[AGREE__FACTS] = (long long)propose_id();
    struct sampi_waiter w;
    sampi_comm_waiter(c, &w, "the configuration agreement of its first call");
    MPI_Request ra, rb = MPI_REQUEST_NULL;
    if (PMPI_Iallreduce(j->a, j->a_out, AGREE__FACTS + 1, MPI_LONG_LONG, MPI_MAX, c->comm, &ra) !=
        MPI_SUCCESS) {
        free(j);
        return -EIO;
    }
    int rc = sampi_waiter_mpi(&w, &ra, 1, NULL);
    /* The second exchange tells a rank that arrives after the others gave
     * up in the first one: it completes the first with their contributions,
     * then learns from the second that they left. */
    j->b = rc != 0;
    if (PMPI_Iallreduce(&j->b, &j->b_out, 1, MPI_LONG_LONG, MPI_MAX, c->comm, &rb) != MPI_SUCCESS)
        rc = rc ? rc : -EIO;
    else if (!rc)
        rc = sampi_waiter_mpi(&w, &rb, 1, NULL);
    if (rc) {
        leave_pending(c, j, ra, rb);
        return rc;
    }
    if (j->b_out) {
        free(j);
        return -ETIMEDOUT; /* another rank gave up waiting for this one */
    }
    if (agreement_adopt(c, j->a_out)) {
        free(j);
        return -EINVAL;
    }
    adopt_id(c, (uint64_t)j->a_out[AGREE__FACTS]);
    MPI_Request rd;
    if (PMPI_Comm_idup(c->comm, &j->ctl, &rd) != MPI_SUCCESS) {
        free(j);
        return -EIO;
    }
    rc = sampi_waiter_mpi(&w, &rd, 1, NULL);
    if (rc) {
        leave_pending(c, j, rd, MPI_REQUEST_NULL);
        return rc;
    }
    c->ctl = j->ctl;
    free(j);
    /* SAMPI reads every error on its own communicator itself */
    PMPI_Comm_set_errhandler(c->ctl, MPI_ERRORS_RETURN);
    return sampi_revoke_arm(c);
}

void sampi_comm_wait_pending(struct sampi_comm *c)
{
    unsigned spins = 0;
    while (atomic_load_explicit(&c->nb_pending, memory_order_acquire))
        sampi_wait_pause(&spins);
}

int sampi_comm_outlives(MPI_Comm comm)
{
    struct sampi_comm *c = NULL;
    if (sampi_comm_get(comm, 0, &c) || !c->join)
        return 0;
    for (int i = 0; i < 2; i++) {
        int flag = 1;
        if (c->join_req[i] != MPI_REQUEST_NULL)
            PMPI_Test(&c->join_req[i], &flag, MPI_STATUS_IGNORE);
    }
    if (c->join_req[0] != MPI_REQUEST_NULL || c->join_req[1] != MPI_REQUEST_NULL)
        return 1;
    free(c->join);
    c->join = NULL;
    return 0;
}

int sampi_comm_join_post(struct sampi_comm *c)
{
    if (c->dup_posted || c->ctl != MPI_COMM_NULL || c->agreed)
        return 0;
    struct join_bufs *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    if (PMPI_Comm_idup(c->comm, &j->ctl, &c->dup_req) != MPI_SUCCESS) {
        free(j);
        return -EIO;
    }
    c->dup_bufs = j;
    c->dup_posted = 1;
    return 0;
}

/* The join of a nonblocking first call (sampi_comm_join_post): the same
 * agreement as agree_first's, over the new duplicate, after it is made.
 * A rank that gives up waiting for the duplicate leaves it pending on the
 * user's communicator (sampi_comm_outlives), as agree_first does. */
static int agree_posted(struct sampi_comm *c)
{
    struct join_bufs *j = c->dup_bufs;
    struct sampi_waiter w;
    sampi_comm_waiter(c, &w, "the duplicate of its first call");
    int rc = sampi_waiter_mpi(&w, &c->dup_req, 1, NULL);
    c->dup_bufs = NULL;
    if (rc) {
        leave_pending(c, j, c->dup_req, MPI_REQUEST_NULL);
        c->dup_req = MPI_REQUEST_NULL;
        return rc;
    }
    c->ctl = j->ctl;
    free(j);
    PMPI_Comm_set_errhandler(c->ctl, MPI_ERRORS_RETURN);
    long long v[AGREE__FACTS + 1], out[AGREE__FACTS + 1];
    agreement_facts(c, v);
    v[AGREE__FACTS] = (long long)propose_id();
    sampi_comm_waiter(c, &w, "the configuration agreement of its first call");
    rc = sampi_waiter_allreduce(&w, v, out, AGREE__FACTS + 1, MPI_LONG_LONG, MPI_MAX, c->ctl);
    if (rc)
        return rc;
    adopt_id(c, (uint64_t)out[AGREE__FACTS]);
    if (agreement_adopt(c, out))
        return -EINVAL;
    return sampi_revoke_arm(c);
}

/* A re-armed check (MPI_Comm_set_info), over c->ctl. */
static int agree_again(struct sampi_comm *c)
{
    long long v[AGREE__FACTS], out[AGREE__FACTS];
    agreement_facts(c, v);
    struct sampi_waiter w;
    sampi_comm_waiter(c, &w, "the configuration agreement");
    int rc = sampi_waiter_allreduce(&w, v, out, AGREE__FACTS, MPI_LONG_LONG, MPI_MAX, c->ctl);
    if (rc)
        return rc;
    return agreement_adopt(c, out);
}

int sampi_comm_join(struct sampi_comm *c)
{
    if (c->revoked)
        return c->revoked;
    if (c->agreed)
        return c->mismatch ? -EINVAL : 0;
    int first = c->ctl == MPI_COMM_NULL;
    int rc = c->dup_bufs ? agree_posted(c) : first ? agree_first(c) : agree_again(c);
    if (c->revoked)
        return c->revoked;
    if (rc == -EINVAL) {
        c->agreed = 1;
        c->mismatch = 1;
        if (c->rank == 0)
            sampi_log_warn("ranks of a communicator of size %d have different SAMPI settings "
                           "(algorithm, netdev, thresholds or segment size): using "
                           "PMPI_Allreduce on it",
                           c->size);
        return rc;
    }
    if (rc) {
        sampi_revoke(c, rc, first ? "its first call's agreement" : "the configuration agreement");
        return c->revoked;
    }
    c->agreed = 1;
    c->mismatch = 0;
    return 0;
}

static const char *choose_netdev(struct sampi_comm *c)
{
    long long choice = c->forced_netdev >= 0 ? c->forced_netdev : sampi_cvar_int(SAMPI_CVAR_NETDEV);
    return sampi_netdev_choice_name(c->comm, (int)choice);
}

/* Open `ops` and agree on the outcome: the same on every rank. */
static int open_agreed(struct sampi_comm *c, const struct sampi_netdev_ops *ops,
                       struct sampi_waiter *w)
{
    int rc = ops->open(c->ctl, w, &c->nd);
    if (rc && rc != -ENODEV && rc != -ENOMEM && rc != -ENOTSUP) {
        /* a wait inside open failed: the others may still be in there */
        sampi_revoke(c, rc, "opening the data path");
        return c->revoked;
    }
    int ok = rc == 0, all = 0;
    rc = sampi_waiter_allreduce(w, &ok, &all, 1, MPI_INT, MPI_MIN, c->ctl);
    if (rc) {
        sampi_revoke(c, rc, "opening the data path");
        all = 0;
    }
    if (!all && c->nd) {
        c->nd->ops->close(c->nd);
        c->nd = NULL;
    }
    return all ? 0 : c->revoked ? c->revoked : -ENODEV;
}

static int open_netdev(struct sampi_comm *c, struct sampi_waiter *w);

int sampi_comm_open_netdev(struct sampi_comm *c)
{
    if (c->nd_tried)
        return c->nd ? 0 : c->revoked ? c->revoked : -ENOTCONN;
    c->nd_tried = 1;
    struct sampi_waiter w;
    sampi_comm_waiter(c, &w, "opening the data path");
    /* its waits are collectives: the roll call names who is missing */
    struct sampi_rollcall roll;
    sampi_rollcall_start(&roll, c->ctl);
    w.absent = sampi_rollcall_absent;
    w.absent_ctx = &roll;
    int rc = open_netdev(c, &w);
    sampi_rollcall_end(&roll);
    return rc;
}

/* sampi_comm_open_netdev's work, every wait through w. */
static int open_netdev(struct sampi_comm *c, struct sampi_waiter *w)
{
    const char *name = choose_netdev(c);
    const struct sampi_netdev_ops *ops = NULL, *fallback = sampi_netdev_fallback;
    char instead[64];
    snprintf(instead, sizeof(instead), "all ranks use '%s'", fallback->name);
    /* A module is loaded by each rank; all ranks agree that every one has it
     * before any calls its collective open. */
    int rc = sampi_netdev_load_agreed(c->ctl, w, name, instead, &ops);
    if (rc && rc != -ENODEV) {
        sampi_revoke(c, rc, "opening the data path");
        return c->revoked;
    }
    if (ops) {
        rc = open_agreed(c, ops, w);
        if (rc && !c->revoked && ops != fallback && c->rank == 0)
            sampi_log_warn("netdev '%s' could not be opened on every rank: using '%s'", name,
                           fallback->name);
    }
    if (rc && !c->revoked && ops != fallback)
        rc = open_agreed(c, fallback, w);
    if (!rc)
        sampi_log(SAMPI_LOG_SETUP, "communicator %llu of size %d: netdev %s",
                  (unsigned long long)sampi_comm_label(c), c->size, c->nd->ops->name);
    return rc;
}

void *sampi_comm_scratch(struct sampi_comm *c, size_t size)
{
    if (size <= c->scratch_size)
        return c->scratch;
    void *p = NULL;
    /* 64-byte alignment keeps the reduction kernels on full vector loads */
    if (posix_memalign(&p, 64, size))
        return NULL;
    free(c->scratch);
    c->scratch = p;
    c->scratch_size = size;
    return p;
}

void *sampi_comm_algo_state(struct sampi_comm *c, enum sampi_algo_id id)
{
    return c ? atomic_load(&c->algo_state[id]) : NULL;
}

int sampi_comm_algo_state_make(struct sampi_comm *c, enum sampi_algo_id id,
                               const struct sampi_coll_args *args, void **out)
{
    const struct sampi_algo_state_hooks *h = sampi_algos[id].state;
    *out = atomic_load(&c->algo_state[id]);
    if (*out || !h)
        return 0;
    int rc = h->create(args, out);
    if (rc) {
        *out = NULL;
        return rc;
    }
    atomic_store(&c->algo_state[id], *out);
    return 0;
}

void sampi_comm_drop_state(MPI_Comm comm)
{
    if (keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_delete_attr(comm, keyval);
}

void sampi_comm_free_all(void)
{
    for (;;) {
        pthread_mutex_lock(&list_lock);
        struct sampi_comm *c = all_states;
        pthread_mutex_unlock(&list_lock);
        if (!c)
            break;
        /* the delete callback frees the state and unlinks it */
        if (PMPI_Comm_delete_attr(c->comm, keyval) != MPI_SUCCESS)
            state_free(c);
    }
    if (keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&keyval);
    keyval = MPI_KEYVAL_INVALID;
}

int sampi_comm_algorithm_setting(const struct sampi_comm *c)
{
    return c && c->forced_algo >= 0 ? c->forced_algo : (int)sampi_cvar_int(SAMPI_CVAR_ALGORITHM);
}
