/*
 * stats.c - process-wide counters and their summary line.
 */
#include "stats.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>

const char *const sampi_fallback_reason_names[SAMPI_FALLBACK__COUNT] = {
    [SAMPI_FALLBACK_DATATYPE] = "datatype", [SAMPI_FALLBACK_OP] = "op",
    [SAMPI_FALLBACK_COMM] = "communicator", [SAMPI_FALLBACK_COUNT_LARGE] = "count",
    [SAMPI_FALLBACK_BROKEN] = "broken",     [SAMPI_FALLBACK_MISMATCH] = "config-mismatch",
    [SAMPI_FALLBACK_UNSUITED] = "unsuited",
};

struct sampi_stats sampi_process_stats;

void sampi_stats_log_summary(const char *const *names, int nalgos, int native)
{
    if (!sampi_log_enabled(SAMPI_LOG_INFO))
        return;
    const struct sampi_stats *p = &sampi_process_stats;
    uint64_t total = 0, by_sampi = 0;
    for (int a = 0; a < nalgos; a++) {
        uint64_t n = sampi_stat_get((_Atomic uint64_t *)&p->calls[a]);
        total += n;
        by_sampi += a == native ? 0 : n;
    }
    uint64_t openmpi = sampi_stat_get((_Atomic uint64_t *)&p->calls[native]);
    uint64_t chosen = sampi_stat_get((_Atomic uint64_t *)&p->native_chosen);
    char line[1024];
    size_t n = 0;
    n += (size_t)snprintf(line + n, sizeof(line) - n,
                          "summary: calls=%llu sampi=%llu openmpi=%llu openmpi-chosen=%llu "
                          "openmpi-fallback=%llu;",
                          (unsigned long long)total, (unsigned long long)by_sampi,
                          (unsigned long long)openmpi, (unsigned long long)chosen,
                          (unsigned long long)(openmpi - chosen));
    for (int a = 0; a < nalgos && n < sizeof(line); a++)
        if (names[a])
            n += (size_t)snprintf(
                line + n, sizeof(line) - n, " %s=%llu", names[a],
                (unsigned long long)sampi_stat_get((_Atomic uint64_t *)&p->calls[a]));
    for (int r = 0; r < SAMPI_FALLBACK__COUNT && n < sizeof(line); r++)
        n += (size_t)snprintf(
            line + n, sizeof(line) - n, " fallback-%s=%llu", sampi_fallback_reason_names[r],
            (unsigned long long)sampi_stat_get((_Atomic uint64_t *)&p->fallbacks[r]));
    if (n < sizeof(line))
        snprintf(line + n, sizeof(line) - n, "; sent=%llu received=%llu errors=%llu revoked=%llu",
                 (unsigned long long)sampi_stat_get((_Atomic uint64_t *)&p->bytes_sent),
                 (unsigned long long)sampi_stat_get((_Atomic uint64_t *)&p->bytes_received),
                 (unsigned long long)sampi_stat_get((_Atomic uint64_t *)&p->errors),
                 (unsigned long long)sampi_stat_get((_Atomic uint64_t *)&p->revocations));
    sampi_log(SAMPI_LOG_INFO, "%s", line);
}

static void raise_to(_Atomic uint64_t *c, uint64_t v)
{
    uint64_t old = atomic_load_explicit(c, memory_order_relaxed);
    while (v > old && !atomic_compare_exchange_weak_explicit(c, &old, v, memory_order_relaxed,
                                                             memory_order_relaxed))
        ;
}

_Atomic uint64_t *sampi_stats_peer_late(struct sampi_stats *s, int size, int create)
{
    _Atomic uint64_t *p = atomic_load_explicit(&s->peer_late, memory_order_acquire);
    if (p || !create || size <= 0)
        return p;
    _Atomic uint64_t *fresh = calloc(2 * (size_t)size, sizeof(*fresh)); /* counts, sums */
    if (!fresh)
        return NULL;
    /* An MPI_T reader on another thread may allocate at the same time. */
    if (!atomic_compare_exchange_strong_explicit(&s->peer_late, &p, fresh, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        free(fresh);
        return p;
    }
    return fresh;
}

void sampi_stats_note_arrival(struct sampi_stats *s, int size, int peer, int64_t late_ns)
{
    uint64_t late = late_ns > 0 ? (uint64_t)late_ns : 0;
    struct sampi_stats *const targets[] = {s, &sampi_process_stats};
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        sampi_stat_add(&targets[i]->arrival_samples, 1);
        sampi_stat_add(&targets[i]->arrival_skew_sum_ns, late);
        raise_to(&targets[i]->arrival_skew_max_ns, late);
    }
    if (peer < 0 || peer >= size)
        return;
    _Atomic uint64_t *counts = sampi_stats_peer_late(s, size, 1);
    if (!counts)
        return;
    uint64_t n = atomic_fetch_add_explicit(&counts[peer], 1, memory_order_relaxed) + 1;
    sampi_stat_add(&counts[size + peer], late);
    /* Only the thread running the collective on s's communicator writes the
     * mode, so a compare against the current leader is enough. */
    int mode = atomic_load_explicit(&s->late_rank_mode1, memory_order_relaxed) - 1;
    if (mode < 0 || (mode != peer && n > sampi_stat_get(&counts[mode])))
        atomic_store_explicit(&s->late_rank_mode1, peer + 1, memory_order_relaxed);
}

void sampi_stats_release(struct sampi_stats *s)
{
    free((void *)atomic_exchange(&s->peer_late, NULL));
}
