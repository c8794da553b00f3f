/*
 * pvars.c - the performance-variable table and the readers of its values.
 *
 * Readers take the bound communicator's state, or NULL for the process-wide
 * variables, whose counters live in sampi_process_stats.
 */
#include "pvars.h"
#include "auto.h"
#include "comm.h"
#include "stats.h"
#include "stragglar_model.h"
#include "tracker.h"
#include "progress_mode.h"
#include "wait_mode.h"

#include <mpi.h>

#include <stdatomic.h>
#include <stddef.h>
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

const char *const sampi_pvar_summaries[SAMPI_PVAR__COUNT] = {
#define SAMPI_PVAR(...)
#define SAMPI_PVAR_SUMMARY(id, text) [SAMPI_PVAR_##id] = text,
#include "pvars.def"
#undef SAMPI_PVAR_SUMMARY
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

static void fetch_lane_calls(struct sampi_comm *c, void *out, int n)
{
    fetch_one(&stats_of(c)->lane, out, n);
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

static void fetch_nb_calls(struct sampi_comm *c, void *out, int n)
{
    fetch_one(&stats_of(c)->nb_calls, out, n);
}

static void fetch_nb_native(struct sampi_comm *c, void *out, int n)
{
    fetch_one(&stats_of(c)->nb_native, out, n);
}

static void fetch_progress_mode(struct sampi_comm *c, void *out, int n)
{
    (void)c;
    int *o = out;
    for (int i = 0; i < n; i++)
        o[i] = (int)sampi_progress_mode_now();
}

static void fetch_wait_mode(struct sampi_comm *c, void *out, int n)
{
    (void)c;
    int *o = out;
    for (int i = 0; i < n; i++)
        o[i] = (int)sampi_wait_mode_now();
}

static void fetch_wait_sleeps(struct sampi_comm *c, void *out, int n)
{
    (void)c;
    uint64_t *o = out;
    for (int i = 0; i < n; i++)
        o[i] = sampi_wait_sleeps();
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
    fetch_array(c ? sampi_stats_peer_late(&c->stats, c->size, 0) : NULL, c ? c->size : 0, out, n);
}

static void fetch_peer_late_sum(struct sampi_comm *c, void *out, int n)
{
    _Atomic uint64_t *p = c ? sampi_stats_peer_late(&c->stats, c->size, 0) : NULL;
    fetch_array(p ? p + c->size : NULL, c ? c->size : 0, out, n);
}

/* The tracker's published values (tracker.h); -1 / 0 before the first
 * tracked call. */
static void fetch_tracker_int(struct sampi_comm *c, size_t field, int none, void *out, int n)
{
    int *o = out;
    struct sampi_tracker *t = c ? c->tracker : NULL;
    for (int i = 0; i < n; i++)
        o[i] = t ? atomic_load_explicit((_Atomic int *)((char *)t + field), memory_order_relaxed)
                 : none;
}

static void fetch_tracker_ull(struct sampi_comm *c, size_t field, uint64_t none, void *out, int n)
{
    unsigned long long *o = out;
    struct sampi_tracker *t = c ? c->tracker : NULL;
    for (int i = 0; i < n; i++)
        o[i] =
            t ? atomic_load_explicit((_Atomic uint64_t *)((char *)t + field), memory_order_relaxed)
              : none;
}

static void fetch_predicted(struct sampi_comm *c, void *out, int n)
{
    fetch_tracker_int(c, offsetof(struct sampi_tracker, pv_predicted), -1, out, n);
}

static void fetch_predicted_lateness(struct sampi_comm *c, void *out, int n)
{
    fetch_tracker_ull(c, offsetof(struct sampi_tracker, pv_lateness_ns), 0, out, n);
}

/* StragglAR's critical delay for the last tracked call's size at the
 * measured beta (stragglar_model.h): UINT64_MAX while either is unknown or
 * where StragglAR never wins. */
static void fetch_critical_delay(struct sampi_comm *c, void *out, int n)
{
    unsigned long long *o = out;
    struct sampi_tracker *t = c ? c->tracker : NULL;
    double crit = -1;
    if (t) {
        double beta = (double)atomic_load_explicit(&t->pv_beta_ps, memory_order_relaxed) / 1000;
        double bytes = (double)atomic_load_explicit(&t->pv_bytes, memory_order_relaxed);
        int rounds = sampi_stragglar_matching_rounds(c->size);
        if (beta > 0 && bytes > 0 && rounds > 0)
            crit = sampi_stragglar_critical_delay_ns(c->size, rounds, bytes, beta);
    }
    for (int i = 0; i < n; i++)
        o[i] = crit >= 0 ? (unsigned long long)crit : UINT64_MAX;
}

static void fetch_beta(struct sampi_comm *c, void *out, int n)
{
    fetch_tracker_ull(c, offsetof(struct sampi_tracker, pv_beta_ps), 0, out, n);
}

static void fetch_degraded(struct sampi_comm *c, void *out, int n)
{
    fetch_tracker_int(c, offsetof(struct sampi_tracker, pv_degraded), -1, out, n);
}

static void fetch_degraded_slowdown(struct sampi_comm *c, void *out, int n)
{
    fetch_tracker_ull(c, offsetof(struct sampi_tracker, pv_slowdown_milli), 0, out, n);
}

static void fetch_predictions(struct sampi_comm *c, void *out, int n)
{
    fetch_one(c ? &c->stats.predictions : NULL, out, n);
}

static void fetch_predictions_right(struct sampi_comm *c, void *out, int n)
{
    fetch_one(c ? &c->stats.predictions_right : NULL, out, n);
}

/* Bucket b holds calls of up to 2^b bytes: named by that bound. */
static const char *const bucket_names[SAMPI_AUTOSEL_BUCKETS] = {
    "1B",   "2B",   "4B",   "8B",   "16B",   "32B",   "64B",   "128B",   "256B",   "512B",
    "1KiB", "2KiB", "4KiB", "8KiB", "16KiB", "32KiB", "64KiB", "128KiB", "256KiB", "512KiB",
    "1MiB", "2MiB", "4MiB", "8MiB", "16MiB", "32MiB", "64MiB", "128MiB", "256MiB", "512MiB",
    "1GiB", "2GiB", "4GiB", "8GiB", "16GiB", "32GiB", "64GiB", "128GiB", "256GiB", "512GiB",
    "1TiB", "2TiB", "4TiB", "8TiB", "16TiB", "32TiB", "64TiB", "128TiB",
};

static void fetch_auto_choice(struct sampi_comm *c, void *out, int n)
{
    int *o = out;
    for (int i = 0; i < n; i++)
        o[i] = sampi_auto_pvar_choice(c, i);
}

static void fetch_auto_cost(struct sampi_comm *c, void *out, int n)
{
    uint64_t *o = out;
    for (int i = 0; i < n; i++)
        o[i] = sampi_auto_pvar_cost_ns(c, i);
}

static void fetch_auto_explorations(struct sampi_comm *c, void *out, int n)
{
    uint64_t *o = out;
    for (int i = 0; i < n; i++)
        o[i] = sampi_auto_pvar_explorations(c);
}

static void fetch_auto_composition_changes(struct sampi_comm *c, void *out, int n)
{
    uint64_t *o = out;
    for (int i = 0; i < n; i++)
        o[i] = sampi_auto_pvar_composition_changes(c);
}

static void fetch_parts_regime_changes(struct sampi_comm *c, void *out, int n)
{
    uint64_t *o = out;
    for (int i = 0; i < n; i++)
        o[i] = c ? atomic_load_explicit(&c->parts_changes, memory_order_relaxed) : 0;
}

static void fetch_auto_regime(struct sampi_comm *c, void *out, int n)
{
    int *o = out;
    for (int i = 0; i < n; i++)
        o[i] = sampi_auto_pvar_regime(c);
}

int sampi_pvar_count(enum sampi_pvar_id id, const struct sampi_comm *c)
{
    static const int fixed[] = {
        [SAMPI_PVAR_COUNT_ONE] = 1,
        [SAMPI_PVAR_COUNT_ALGOS] = SAMPI_ALGO__COUNT,
        [SAMPI_PVAR_COUNT_FALLBACKS] = SAMPI_FALLBACK__COUNT,
        [SAMPI_PVAR_COUNT_BUCKETS] = SAMPI_AUTOSEL_BUCKETS,
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
    case SAMPI_PVAR_COUNT_BUCKETS:
        return i >= 0 && i < SAMPI_AUTOSEL_BUCKETS ? bucket_names[i] : NULL;
    default:
        return NULL;
    }
}

void sampi_pvar_fetch(enum sampi_pvar_id id, struct sampi_comm *c, void *out, int n)
{
    sampi_pvar_descs[id].fetch(c, out, n);
}

/* optireduce (coll_algos/optireduce.h): its counters live in its own state. */
#include "optireduce.h"

static const struct sampi_optireduce_state *opti_of(struct sampi_comm *c)
{
    return sampi_comm_algo_state(c, SAMPI_ALGO_OPTIREDUCE);
}

static void fetch_opti(struct sampi_comm *c, enum sampi_opti_counter k, void *out, int n)
{
    uint64_t *o = out;
    for (int i = 0; i < n; i++)
        o[i] = sampi_optireduce_counter(opti_of(c), k);
}

static void fetch_opti_calls(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_CALLS, out, n);
}

static void fetch_opti_calib_calls(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_CALIB_CALLS, out, n);
}

static void fetch_opti_expected1(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_EXPECTED1, out, n);
}

static void fetch_opti_expected2(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_EXPECTED2, out, n);
}

static void fetch_opti_received1(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_RECEIVED1, out, n);
}

static void fetch_opti_received2(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_RECEIVED2, out, n);
}

static void fetch_opti_lost1(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_LOST1, out, n);
}

static void fetch_opti_lost2(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_LOST2, out, n);
}

static void fetch_opti_end1_complete(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_END1_COMPLETE, out, n);
}

static void fetch_opti_end1_early(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_END1_EARLY, out, n);
}

static void fetch_opti_end1_hard(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_END1_HARD, out, n);
}

static void fetch_opti_end2_complete(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_END2_COMPLETE, out, n);
}

static void fetch_opti_end2_early(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_END2_EARLY, out, n);
}

static void fetch_opti_end2_hard(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_END2_HARD, out, n);
}

static void fetch_opti_bad_pkts(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_BAD_PKTS, out, n);
}

static void fetch_opti_stale_pkts(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_STALE_PKTS, out, n);
}

static void fetch_opti_dup_pkts(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_DUP_PKTS, out, n);
}

static void fetch_opti_excess(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_EXCESS, out, n);
}

static void fetch_opti_drop_ppm(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_DROP_PPM, out, n);
}

static void fetch_opti_tb_us(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_TB_US, out, n);
}

static void fetch_opti_ta_us(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_TA_US, out, n);
}

static void fetch_opti_incast(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_INCAST, out, n);
}

static void fetch_opti_repaired(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_REPAIRED, out, n);
}

static void fetch_opti_pkt_floats(struct sampi_comm *c, void *out, int n)
{
    fetch_opti(c, SAMPI_OPTI_C_PKT_FLOATS, out, n);
}

static void fetch_opti_peer_lost(struct sampi_comm *c, void *out, int n)
{
    sampi_optireduce_peer_lost(opti_of(c), out, n);
}

/* selective reduce (src/selective/selective_client.h): per-process counters of the
 * worker side. */
#include "selective_client.h"

static void fetch_sel(enum sampi_sel_counter k, void *out, int n)
{
    uint64_t *o = out;
    for (int i = 0; i < n; i++)
        o[i] = sampi_selective_counter(k);
}

/* One reader per variable, as the table names them. */
#define SEL_FETCH(fn, k)                                                                           \
    static void fetch_##fn(struct sampi_comm *c, void *out, int n)                                 \
    {                                                                                              \
        (void)c;                                                                                   \
        fetch_sel(k, out, n);                                                                      \
    }
SEL_FETCH(sel_calls, SAMPI_SEL_C_CALLS)
SEL_FETCH(sel_group_calls, SAMPI_SEL_C_GROUP)
SEL_FETCH(sel_full_calls, SAMPI_SEL_C_FULL)
SEL_FETCH(sel_exact_calls, SAMPI_SEL_C_EXACT)
SEL_FETCH(sel_last_size, SAMPI_SEL_C_LAST_SIZE)
SEL_FETCH(sel_fallbacks, SAMPI_SEL_C_FALLBACKS)
SEL_FETCH(sel_group_wait, SAMPI_SEL_C_GROUP_WAIT_NS)
#undef SEL_FETCH
