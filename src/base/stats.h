/*
 * stats.h - counters SAMPI keeps per communicator and per process.
 *
 * They are the performance variables' storage (MPI_T pvars read them) and the
 * source of the summary printed at MPI_Finalize with sampi_verbose >= 1.
 * Updated with relaxed atomics: a reader may see a slightly stale value, never
 * a torn one.
 */
#ifndef SAMPI_STATS_H
#define SAMPI_STATS_H

#include <stdatomic.h>
#include <stdint.h>

/* Why a call went to PMPI_Allreduce instead of a SAMPI algorithm. */
enum sampi_fallback_reason {
    SAMPI_FALLBACK_DATATYPE,    /* not a predefined datatype SAMPI reduces */
    SAMPI_FALLBACK_OP,          /* user-defined op, or op not defined on the type */
    SAMPI_FALLBACK_COMM,        /* intercommunicator or a single rank */
    SAMPI_FALLBACK_COUNT_LARGE, /* count x extent beyond what the data path takes */
    SAMPI_FALLBACK_BROKEN,      /* an earlier error left the communicator's data path unusable */
    SAMPI_FALLBACK_MISMATCH,    /* ranks were configured differently */
    SAMPI_FALLBACK_UNSUITED,    /* the forced algorithm cannot run this call: it ran as ring */
    SAMPI_FALLBACK__COUNT
};

extern const char *const sampi_fallback_reason_names[SAMPI_FALLBACK__COUNT];

/* Room for the per-algorithm call counters.  The statistics do not know the
 * algorithms: the upper layer indexes calls[] by its algorithm id and checks
 * at compile time that its ids fit (runtime.c). */
#define SAMPI_STATS_ALGOS_MAX 16

struct sampi_stats {
    _Atomic uint64_t calls[SAMPI_STATS_ALGOS_MAX]; /* by the algorithm that ran */
    _Atomic uint64_t fallbacks[SAMPI_FALLBACK__COUNT];
    _Atomic uint64_t bytes_sent;
    _Atomic uint64_t bytes_received;
    _Atomic uint64_t errors;
    _Atomic uint64_t revocations;   /* communicators SAMPI gave up on (revoke.h) */
    _Atomic uint64_t native_chosen; /* calls[native] that auto or the user chose (not fallbacks) */
    _Atomic uint64_t lane;          /* of those, calls that took the lane (src/core/lane.h) */
    /* nonblocking and persistent allreduce calls (pmpi_wrap/iallreduce.c):
     * run by SAMPI's progress threads, and left to Open MPI's own
     * nonblocking allreduce (progress mode calls, or calls SAMPI does not
     * take); not in calls[] */
    _Atomic uint64_t nb_calls;
    _Atomic uint64_t nb_native;
    /* Arrival of the ranks, as the tracker observes it in tracked calls:
     * see sampi_stats_note_arrival. */
    _Atomic uint64_t arrival_samples;     /* tracked calls */
    _Atomic uint64_t arrival_skew_sum_ns; /* sum of the last ranks' gaps to the second-last */
    _Atomic uint64_t arrival_skew_max_ns; /* largest such gap */
    /* Tracked calls run while a straggler was predicted, and how many of
     * them it did arrive last in (tracker.c). */
    _Atomic uint64_t predictions;
    _Atomic uint64_t predictions_right;
    /* Per communicator only.  Rank observed last most often, plus one, so
     * that a zeroed struct means "none yet". */
    _Atomic int late_rank_mode1;
    /* Per communicator only: how often each rank was observed last, one
     * entry per rank, followed by the sum of its gaps (ns) in those calls,
     * one entry per rank; allocated at the first observation (or the first
     * MPI_T handle on it), freed by sampi_stats_release. */
    _Atomic uint64_t *_Atomic peer_late;
};

/* The whole process: every communicator's counters are added here too. */
extern struct sampi_stats sampi_process_stats;

static inline void sampi_stat_add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static inline uint64_t sampi_stat_get(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* Log the process-wide counters (one line) at sampi_verbose >= 1.  The
 * caller names the algorithms: names[a] for calls[a], a < nalgos, NULL for
 * one that is never counted on its own; `native` is Open MPI's own, counted
 * apart from SAMPI's. */
void sampi_stats_log_summary(const char *const *names, int nalgos, int native);

/* A rank less than this late is not "late": scheduling noise on a loaded host
 * is of this order, and so is a first receive that waited for its transfer
 * rather than for its peer (executor.c, tracker.c). */
#define SAMPI_LATE_THRESHOLD_NS 50000

/* The tracker calls this once per tracked call on a communicator of `size`
 * ranks whose counters are s, on every rank, from the durations the ranks
 * exchanged: `peer` is the rank that arrived last (-1 when none arrived
 * SAMPI_LATE_THRESHOLD_NS after the second-last) and `late_ns` how long after
 * the second-last rank it arrived (the gap between the two shortest
 * durations, the same on every rank; 0 with peer -1, negative values count as
 * 0).  Feeds the arrival pvars of s and of the process.  Lock-free; any
 * thread. */
void sampi_stats_note_arrival(struct sampi_stats *s, int size, int peer, int64_t late_ns);

/* s's per-peer late counts (`size` entries, the communicator's size, then
 * `size` sums of their gaps in ns), allocated on first use when `create` is
 * set; NULL when absent or out of memory. */
_Atomic uint64_t *sampi_stats_peer_late(struct sampi_stats *s, int size, int create);

/* Free what sampi_stats_note_arrival allocated in s (when a communicator's
 * state is freed). */
void sampi_stats_release(struct sampi_stats *s);

#endif
