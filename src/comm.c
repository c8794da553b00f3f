/*
 * comm.c - per-communicator state as a cached attribute.
 */
#include "comm.h"
#include "sampi_internal.h"
#include "stragglar_schedule.h"
#include "tracker.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

static int keyval = MPI_KEYVAL_INVALID;
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sampi_comm *all_states;

static void state_free(struct sampi_comm *c)
{
    pthread_mutex_lock(&list_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        all_states = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&list_lock);
    if (c->nd)
        c->nd->ops->close(c->nd);
    free(c->scratch);
    if (c->stragglar)
        sampi_stragglar_schedule_free(c->stragglar);
    free(c->stragglar);
    sampi_optcc_cache_free(c->optcc);
    sampi_tracker_free(c->tracker);
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
int sampi_comm_init(void)
{
    if (keyval != MPI_KEYVAL_INVALID)
        return 0;
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

/* Everything that shapes the message pattern must match on all ranks;
 * comparing a hash with one MAX reduction of (h, -h) finds any difference. */
int sampi_comm_agree(struct sampi_comm *c)
{
    if (c->agreed)
        return c->mismatch ? -EINVAL : 0;
    c->agreed = 1;
    uint32_t h = sampi_config_pattern_hash();
    h = h * 31u + (uint32_t)(c->forced_algo + 1);
    h = h * 31u + (uint32_t)(c->forced_netdev + 1);
    long v[2] = {(long)h, -(long)h};
    if (PMPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_LONG, MPI_MAX, c->comm) != MPI_SUCCESS)
        return -EIO;
    if (v[0] != -v[1]) {
        if (c->rank == 0)
            sampi_log_warn("ranks of a communicator of size %d have different SAMPI settings "
                           "(algorithm, netdev, thresholds or segment size): using "
                           "PMPI_Allreduce on it",
                           c->size);
        c->mismatch = 1;
        return -EINVAL;
    }
    return 0;
}

static const struct sampi_netdev_ops *choose_netdev(struct sampi_comm *c)
{
    long long choice = c->forced_netdev >= 0 ? c->forced_netdev : sampi_cvar_int(SAMPI_CVAR_NETDEV);
    if (choice == SAMPI_NETDEV_AUTO)
        choice = sampi_netdev_auto_choice(c->comm);
    return sampi_netdev_find(sampi_netdev_names[choice]);
}

int sampi_comm_open_netdev(struct sampi_comm *c)
{
    if (c->nd_tried)
        return c->nd ? 0 : -ENOTCONN;
    c->nd_tried = 1;
    int rc = 0;
    const struct sampi_netdev_ops *ops = choose_netdev(c);
    rc = ops->open(c->comm, &c->nd);
    if (rc && ops != &sampi_netdev_mpi_ops) {
        if (c->rank == 0)
            sampi_log_warn("netdev '%s' could not be opened on every rank: using 'mpi'", ops->name);
        rc = sampi_netdev_mpi_ops.open(c->comm, &c->nd);
    }
    if (!rc)
        sampi_log(SAMPI_LOG_SETUP, "communicator of size %d: netdev %s", c->size, c->nd->ops->name);
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

int sampi_comm_note_fallback(struct sampi_comm *c, enum sampi_fallback_reason why)
{
    return sampi_comm_note_substitute(c, why, SAMPI_ALGO_NATIVE);
}

int sampi_comm_note_substitute(struct sampi_comm *c, enum sampi_fallback_reason why,
                               enum sampi_algo_id instead)
{
    const char *target =
        instead == SAMPI_ALGO_NATIVE ? "PMPI_Allreduce" : sampi_algos[instead].name;
    sampi_stat_add(&sampi_process_stats.fallbacks[why], 1);
    if (c) {
        sampi_stat_add(&c->stats.fallbacks[why], 1);
        atomic_store_explicit(&c->last_algo, instead, memory_order_relaxed);
    }
    int setting = sampi_comm_algorithm_setting(c);
    if (setting == SAMPI_ALGO_AUTO || setting == SAMPI_ALGO_NATIVE)
        return 0; /* nothing was forced: falling back is the plan */
    switch ((enum sampi_fallback_policy)sampi_cvar_int(SAMPI_CVAR_FALLBACK)) {
    case SAMPI_FALLBACK_ERROR:
        sampi_log_warn("%s cannot run this call (%s) and sampi_fallback=error",
                       sampi_algos[setting].name, sampi_fallback_reason_names[why]);
        return -ENOTSUP;
    case SAMPI_FALLBACK_WARN: {
        /* once per communicator and reason; calls without state warn once per
         * process and reason */
        static _Atomic unsigned process_warned;
        unsigned bit = 1u << why;
        unsigned before = c ? c->warned : atomic_fetch_or(&process_warned, bit);
        if (c)
            c->warned |= bit;
        if (!(before & bit))
            sampi_log_warn("%s cannot run a call (reason: %s): using %s "
                           "(set SAMPI_FALLBACK=silent to hide this)",
                           sampi_algos[setting].name, sampi_fallback_reason_names[why], target);
        return 0;
    }
    case SAMPI_FALLBACK_SILENT:
        break;
    }
    return 0;
}
