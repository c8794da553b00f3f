/*
 * runtime.c - start-up and shutdown.
 *
 * The top of the library, below the entry points only: it starts and stops
 * every part (the registry, revocation, the communicator states, auto's
 * tuning file), so it names them all, and only the entry points call it.
 *
 * The registry is ready before MPI_Init (MPI_T tools start first), so it is
 * loaded once on first use from any entry point.  The MPI-dependent part (the
 * attribute keyval, the rank for log lines) is set up once MPI is initialised:
 * from our MPI_Init, or lazily from the first MPI_Allreduce when the program
 * initialised through a path we do not wrap (a program that loads SAMPI with
 * dlopen after MPI_Init; Fortran's MPI_INIT is wrapped in init_f.c).
 */
#define _GNU_SOURCE 1 /* dladdr */
#include "sampi_autoconf.h"

#include "algos.h"
#include "auto.h"
#include "comm.h"
#include "node.h"
#include "pin.h"
#include "progress.h"
#include "progress_mode.h"
#include "revoke.h"
#include "sampi_internal.h"
#include "tracker.h"
#include "wait_mode.h"
#include "wrap.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int mpi_ready;

static void release_tracker(struct sampi_comm *c)
{
    sampi_tracker_free(c->tracker);
}

/* The modules with a part in every communicator's state, released in this
 * order; auto's kept tuning table seeds its decisions, so the ranks must
 * have loaded the same one. */
static const struct sampi_comm_owner comm_owners[] = {
    {.release = sampi_report_keep}, /* reads the tracker's and auto's parts: first */
    {.release = release_tracker},
    {.release = sampi_auto_release, .pattern_hash = sampi_auto_tuning_hash},
    {.release = sampi_progress_release},
};

static void load_config(void)
{
    sampi_config_load();
}

void sampi_runtime_init(void)
{
    pthread_once(&config_once, load_config);
}

/* How this process waits (src/base/wait_mode.h), decided once from the
 * node: collectively when every rank of MPI_COMM_WORLD is here. */
static void resolve_wait_mode(int collective)
{
    struct sampi_node_facts f;
    sampi_node_facts_gather(&f, collective);
    sampi_wait_mode_resolve(&f);
}

/* This process's own progress decision, made before MPI_Init. */
static enum sampi_progress_mode local_progress = SAMPI_PROGRESS_CALLS;
static char local_progress_why[300] = "not decided before MPI_Init";

int sampi_runtime_wants_threads(void)
{
    int set = (int)sampi_cvar_int(SAMPI_CVAR_PROGRESS);
    if (set == SAMPI_PROGRESS_AUTO) {
        struct sampi_progress_facts f;
        char why[240];
        sampi_pin_progress_facts(&f);
        local_progress = sampi_progress_mode_decide(&f, why, sizeof(why));
        snprintf(local_progress_why, sizeof(local_progress_why), "auto: %s", why);
    } else {
        local_progress =
            set == SAMPI_PROGRESS_THREAD ? SAMPI_PROGRESS_THREAD : SAMPI_PROGRESS_CALLS;
        snprintf(local_progress_why, sizeof(local_progress_why), "set by sampi_progress");
    }
    return local_progress == SAMPI_PROGRESS_THREAD;
}

/* Thread only where every rank can: a nonblocking call runs SAMPI's
 * algorithm on every rank or Open MPI's on every rank, never both. */
static void resolve_progress_mode(int thread_level)
{
    int mine = local_progress == SAMPI_PROGRESS_THREAD && thread_level == MPI_THREAD_MULTIPLE;
    int all = 0;
    if (PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS)
        all = 0;
    char why[400];
    if (local_progress == SAMPI_PROGRESS_THREAD && thread_level != MPI_THREAD_MULTIPLE)
        snprintf(why, sizeof(why), "%s; but Open MPI gave no MPI_THREAD_MULTIPLE",
                 local_progress_why);
    else
        snprintf(why, sizeof(why), "%s", local_progress_why);
    sampi_progress_mode_resolve(local_progress, all, why);
    if (sampi_progress_mode_now() == SAMPI_PROGRESS_THREAD)
        sampi_progress_place();
}

int sampi_runtime_mpi_start(int thread_level)
{
    int initialized = 0;
    PMPI_Initialized(&initialized);
    if (initialized && !sampi_wait_mode_resolved()) {
        resolve_wait_mode(1);
        resolve_progress_mode(thread_level);
    }
    return sampi_runtime_mpi_ready();
}

int sampi_runtime_mpi_ready(void)
{
    if (atomic_load_explicit(&mpi_ready, memory_order_acquire))
        return 1;
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (!initialized || finalized)
        return 0;
    sampi_runtime_init();
    pthread_mutex_lock(&mpi_lock);
    if (!atomic_load(&mpi_ready)) {
        int rank = 0, size = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        PMPI_Comm_size(MPI_COMM_WORLD, &size);
        sampi_log_set_rank(rank);
        sampi_revoked_code(); /* registered now, while every thread is quiet */
        sampi_auto_tuning_load();
        if (!sampi_wait_mode_resolved())
            resolve_wait_mode(0);
        if (sampi_comm_init(comm_owners, sizeof(comm_owners) / sizeof(comm_owners[0])) == 0) {
            atomic_store_explicit(&mpi_ready, 1, memory_order_release);
            if (rank == 0) {
                char algo[64], nd[64], wait[400], progress[700];
                Dl_info dl;
                const char *lib = dladdr((void *)sampi_runtime_mpi_ready, &dl) && dl.dli_fname
                                      ? dl.dli_fname
                                      : "(location unknown)";
                sampi_log(SAMPI_LOG_INFO,
                          "SAMPI %s (%s) active on %d rank%s: algorithm=%s netdev=%s wait=%s "
                          "progress=%s",
                          PACKAGE_VERSION, lib, size, size == 1 ? "" : "s",
                          sampi_cvar_text(SAMPI_CVAR_ALGORITHM, algo, sizeof(algo)),
                          sampi_cvar_text(SAMPI_CVAR_NETDEV, nd, sizeof(nd)),
                          sampi_wait_mode_describe(wait, sizeof(wait)),
                          sampi_progress_mode_describe(progress, sizeof(progress)));
            }
        }
    }
    pthread_mutex_unlock(&mpi_lock);
    return atomic_load(&mpi_ready);
}

_Static_assert(SAMPI_ALGO__COUNT <= SAMPI_STATS_ALGOS_MAX,
               "struct sampi_stats counts calls per algorithm id: raise SAMPI_STATS_ALGOS_MAX");

/* The summary line at sampi_verbose >= 1, with the algorithms' names. */
static void log_summary(void)
{
    const char *names[SAMPI_ALGO__COUNT];
    for (int a = 0; a < SAMPI_ALGO__COUNT; a++)
        names[a] = sampi_algos[a].name;
    /* auto is never counted: a call counts under the algorithm auto chose */
    names[SAMPI_ALGO_AUTO] = NULL;
    sampi_stats_log_summary(names, SAMPI_ALGO__COUNT, SAMPI_ALGO_NATIVE);
}

void sampi_runtime_fini(void)
{
    if (!atomic_load(&mpi_ready))
        return;
    /* MPI: every collective completes before MPI_Finalize */
    sampi_progress_finish_all();
    uint64_t live = sampi_nb_live_requests();
    if (live)
        sampi_log_warn("MPI_Finalize: %llu request%s of MPI_Iallreduce never completed by "
                       "MPI_Wait/MPI_Test or freed by MPI_Request_free (the call%s finished)",
                       (unsigned long long)live, live == 1 ? "" : "s", live == 1 ? "" : "s");
    log_summary();
    sampi_comm_free_all();
    sampi_report_finalize(); /* the states kept their records as they went */
    sampi_auto_tuning_save();
    atomic_store(&mpi_ready, 0);
}
