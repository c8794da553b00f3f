/*
 * fallback.c - what happens when a call does not run the algorithm the user
 * forced: the counters, and the report sampi_fallback asks for.
 */
#include "comm.h"
#include "sampi_internal.h"

#include <errno.h>
#include <stdatomic.h>

int sampi_comm_note_fallback(struct sampi_comm *c, enum sampi_fallback_reason why, const char *what)
{
    return sampi_comm_note_substitute(c, why, SAMPI_ALGO_NATIVE, what);
}

int sampi_comm_note_substitute(struct sampi_comm *c, enum sampi_fallback_reason why,
                               enum sampi_algo_id instead, const char *what)
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
        sampi_log_warn("%s cannot run %s (%s) and sampi_fallback=error", sampi_algos[setting].name,
                       what ? what : "this call", sampi_fallback_reason_names[why]);
        return -ENOTSUP;
    case SAMPI_FALLBACK_WARN: {
        /* once per process and reason (a program with many communicators or
         * datatypes would otherwise repeat it); the rest at sampi_verbose 2 */
        static _Atomic unsigned process_warned;
        unsigned bit = 1u << why;
        int first = !(atomic_fetch_or(&process_warned, bit) & bit);
        sampi_log(first ? SAMPI_LOG_WARN : SAMPI_LOG_SETUP,
                  "%s cannot run %s (reason: %s): using %s%s", sampi_algos[setting].name,
                  what ? what : "a call", sampi_fallback_reason_names[why], target,
                  first ? " (said once per reason; SAMPI_FALLBACK=silent hides it, "
                          "SAMPI_VERBOSE=2 shows every one)"
                        : "");
        return 0;
    }
    case SAMPI_FALLBACK_SILENT:
        break;
    }
    return 0;
}
