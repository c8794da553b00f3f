/*
 * pvars.c - the performance-variable table and the readers of its values.
 *
 * Readers take the bound communicator's state, or NULL for the process-wide
 * variables, whose counters live in sampi_process_stats.
 */
#include "pvars.h"
#include "comm.h"
#include "stats.h"

#include <mpi.h>

#include <stdatomic.h>
#include <string.h>

#define FETCH(fn)                                               static void fetch_##fn(struct sampi_comm *c, void *out, int n);
#define SAMPI_PVAR(id, nm, cl, ty, bi, cnt, kd, verb, fn, desc) FETCH(fn)
#include "pvars.def"
#undef SAMPI_PVAR
#undef FETCH

const struct sampi_pvar_desc sampi_pvar_descs[SAMPI_PVAR__COUNT] = {
#define SAMPI_PVAR(id, nm, cl, ty, bi, cnt, kd, verb, fn, desc)                                    \
    [SAMPI_PVAR_##id] = {.name = nm,                                                               \
                         .var_class = MPI_T_PVAR_CLASS_##cl,                                       \
                         .type = SAMPI_PVAR_TYPE_##ty,                                             \
                         .bind = MPI_T_BIND_##bi,                                                  \
                         .count = SAMPI_PVAR_COUNT_##cnt,                                          \
                         .kind = SAMPI_PVAR_##kd,                                                  \
                         .verbosity = MPI_T_VERBOSITY_##verb,                                      \
                         .fetch = fetch_##fn,                                                      \
                         .description = desc},
#include "pvars.def"
#undef SAMPI_PVAR
};

static struct sampi_stats *stats_of(struct sampi_comm *c)
{
    return c ? &c->stats : &sampi_process_stats;
}

static void fetch_array(_Atomic uint64_t *src, int have, void *out, int n)
{
    uint64_t *o = out;
    for (int i = 0; i < n; i++)
        o[i] = src && i < have ? sampi_stat_get(&src[i]) : 0;
}

static void fetch_one(_Atomic uint64_t *src, void *out, int n)
{
    fetch_array(src, 1, out, n);
}

static void fetch_calls(struct sampi_comm *c, void *out, int n)
{
    fetch_array(stats_of(c)->calls, SAMPI_ALGO__COUNT, out, n);
}

static void fetch_fallbacks(struct sampi_comm *c, void *out, int n)
{
    fetch_array(stats_of(c)->fallbacks, SAMPI_FALLBACK__COUNT, out, n);
}

static void fetch_bytes_sent(struct sampi_comm *c, void *out, int n)
{
    fetch_one(&stats_of(c)->bytes_sent, out, n);
}

static void fetch_bytes_received(struct sampi_comm *c, void *out, int n)
{
    fetch_one(&stats_of(c)->bytes_received, out, n);
}

static void fetch_errors(struct sampi_comm *c, void *out, int n)
{
    fetch_one(&stats_of(c)->errors, out, n);
}

static void fetch_arrival_samples(struct sampi_comm *c, void *out, int n)
{
    fetch_one(&stats_of(c)->arrival_samples, out, n);
}

static void fetch_arrival_skew_sum(struct sampi_comm *c, void *out, int n)
{
    fetch_one(&stats_of(c)->arrival_skew_sum_ns, out, n);
}

static void fetch_arrival_skew_max(struct sampi_comm *c, void *out, int n)
{
    fetch_one(&stats_of(c)->arrival_skew_max_ns, out, n);
}

static void fetch_algorithm_last(struct sampi_comm *c, void *out, int n)
{
    int *o = out;
    for (int i = 0; i < n; i++)
        o[i] = c ? atomic_load_explicit(&c->last_algo, memory_order_relaxed) : -1;
}

static void fetch_late_rank(struct sampi_comm *c, void *out, int n)
{
    int *o = out;
    for (int i = 0; i < n; i++)
        o[i] = c ? atomic_load_explicit(&c->stats.late_rank_mode1, memory_order_relaxed) - 1 : -1;
}

static void fetch_peer_late(struct sampi_comm *c, void *out, int n)
{
    fetch_array(c ? sampi_stats_peer_late(c, 0) : NULL, c ? c->size : 0, out, n);
}

int sampi_pvar_count(enum sampi_pvar_id id, const struct sampi_comm *c)
{
    static const int fixed[] = {
        [SAMPI_PVAR_COUNT_ONE] = 1,
        [SAMPI_PVAR_COUNT_ALGOS] = SAMPI_ALGO__COUNT,
        [SAMPI_PVAR_COUNT_FALLBACKS] = SAMPI_FALLBACK__COUNT,
    };
    enum sampi_pvar_count k = sampi_pvar_descs[id].count;
    if (k == SAMPI_PVAR_COUNT_PEERS)
        return c ? c->size : 0;
    return fixed[k];
}

const char *sampi_pvar_element_name(enum sampi_pvar_id id, int i)
{
    switch (sampi_pvar_descs[id].count) {
    case SAMPI_PVAR_COUNT_ALGOS:
        return i >= 0 && i < SAMPI_ALGO__COUNT ? sampi_algos[i].name : NULL;
    case SAMPI_PVAR_COUNT_FALLBACKS:
        return i >= 0 && i < SAMPI_FALLBACK__COUNT ? sampi_fallback_reason_names[i] : NULL;
    default:
        return NULL;
    }
}

void sampi_pvar_fetch(enum sampi_pvar_id id, struct sampi_comm *c, void *out, int n)
{
    sampi_pvar_descs[id].fetch(c, out, n);
}
