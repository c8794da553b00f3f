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

#include "algos.h"

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
    SAMPI_FALLBACK__COUNT
};

extern const char *const sampi_fallback_reason_names[SAMPI_FALLBACK__COUNT];

struct sampi_stats {
    _Atomic uint64_t calls[SAMPI_ALGO__COUNT]; /* by the algorithm that ran */
    _Atomic uint64_t fallbacks[SAMPI_FALLBACK__COUNT];
    _Atomic uint64_t bytes_sent;
    _Atomic uint64_t bytes_received;
    _Atomic uint64_t errors;
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

/* Log the process-wide counters (one line) at sampi_verbose >= 1. */
void sampi_stats_log_summary(void);

#endif
