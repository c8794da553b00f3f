/*
 * auto.c - `auto`'s decision for one call (auto.h).
 *
 * The arms of a call: native, rhd and ring always (ring only where each of
 * its messages carries at least RING_MIN_BLOCK bytes: below, its 2(p-1)
 * latency-bound rounds cannot beat rhd's 2 log2 p on any machine, so the
 * model rules it out instead of a measurement); stragglar when a straggler is
 * predicted (or set) and it can run the call on 4 or more ranks; optcc when a
 * degraded link is known and it can run the call.  The model's favourite
 * (select.c's table and hint rules) is explored first; measurements decide.
 */
#include "auto.h"
#include "comm.h"
#include "sampi_internal.h"
#include "select.h"
#include "tracker.h"

#include <stdio.h>
#include <stdlib.h>

#define RING_MIN_BLOCK 4096

static struct sampi_autosel *table_of(struct sampi_comm *c)
{
    if (!c->autosel && (c->autosel = malloc(sizeof(*c->autosel))))
        sampi_autosel_init(c->autosel);
    return c->autosel;
}

const struct sampi_autosel *sampi_auto_table(const struct sampi_comm *c)
{
    return c->autosel;
}

static uint32_t arm(enum sampi_algo_id id)
{
    return 1u << id;
}

enum sampi_algo_id sampi_auto_decide(struct sampi_comm *c, const struct sampi_coll_args *a,
                                     struct sampi_auto_call *call)
{
    const size_t bytes = a->count * a->dt.extent;
    struct sampi_select_hints h;
    sampi_tracker_hints(c, a->count, a->dt.extent, &h);
    enum sampi_regime regime = h.degraded >= 0    ? SAMPI_REGIME_DEGRADED
                               : h.straggler >= 0 ? SAMPI_REGIME_STRAGGLER
                                                  : SAMPI_REGIME_NONE;
    uint32_t allowed = arm(SAMPI_ALGO_NATIVE) | arm(SAMPI_ALGO_RHD);
    if (bytes / (size_t)c->size >= RING_MIN_BLOCK)
        allowed |= arm(SAMPI_ALGO_RING);
    if (regime == SAMPI_REGIME_STRAGGLER && c->size >= 4 && sampi_stragglar_suited(a))
        allowed |= arm(SAMPI_ALGO_STRAGGLAR);
    if (regime == SAMPI_REGIME_DEGRADED && sampi_optcc_suited(a))
        allowed |= arm(SAMPI_ALGO_OPTCC);
    enum sampi_algo_id prior = sampi_select_auto_hinted(bytes, c->size, &h);
    if (!(allowed & arm(prior)))
        prior = SAMPI_ALGO_NATIVE;

    *call = (struct sampi_auto_call){
        .in = {.bytes = bytes, .regime = regime, .allowed = allowed, .prior = prior}};
    struct sampi_autosel *s = table_of(c);
    if (!s || sampi_autosel_decide(s, &call->in, &call->d))
        return prior; /* out of memory: the model alone, the same on every rank */
    call->active = 1;
    if (s->regime_changes != c->auto_regime_changes) {
        c->auto_regime_changes = s->regime_changes;
        sampi_log(SAMPI_LOG_SETUP, "communicator %llu: auto now sees regime '%s'",
                  (unsigned long long)sampi_comm_label(c), sampi_regime_names[regime]);
    }
    return (enum sampi_algo_id)call->d.algo;
}

void sampi_auto_learn(struct sampi_comm *c, const struct sampi_auto_call *call, double cost_ns)
{
    if (!call->active || !c->autosel)
        return;
    if (!sampi_autosel_note(c->autosel, &call->in, call->d.algo, cost_ns))
        return;
    const struct sampi_autosel_cell *cell =
        sampi_autosel_cell(c->autosel, call->d.bucket, call->in.regime);
    int best, next;
    double best_ns, next_ns;
    if (sampi_autosel_ranking(cell, &best, &best_ns, &next, &next_ns))
        return;
    char tail[96] = "";
    if (next >= 0 && best_ns > 0)
        snprintf(tail, sizeof(tail), ", next %s %+.0f%%", sampi_algos[next].name,
                 100 * (next_ns / best_ns - 1));
    sampi_log(SAMPI_LOG_SETUP,
              "communicator %llu: auto chose %s for calls up to %zu bytes (regime %s): %.0f us "
              "from the last arrival%s",
              (unsigned long long)sampi_comm_label(c), sampi_algos[best].name,
              (size_t)1 << call->d.bucket, sampi_regime_names[call->in.regime], best_ns / 1e3,
              tail);
}

void sampi_auto_log_table(const struct sampi_comm *c)
{
    if (!c->autosel || !sampi_log_enabled(SAMPI_LOG_INFO))
        return;
    for (int r = 0; r < SAMPI_REGIME__COUNT; r++)
        for (int b = 0; b < SAMPI_AUTOSEL_BUCKETS; b++) {
            const struct sampi_autosel_cell *cell = sampi_autosel_cell(c->autosel, b, r);
            int best, next;
            double best_ns, next_ns;
            if (!cell || sampi_autosel_ranking(cell, &best, &best_ns, &next, &next_ns))
                continue;
            char tail[96] = ", no other arm measured";
            if (next >= 0 && best_ns > 0)
                snprintf(tail, sizeof(tail), ", next best %s %+.0f%%", sampi_algos[next].name,
                         100 * (next_ns / best_ns - 1));
            sampi_log(SAMPI_LOG_INFO,
                      "auto table: communicator %llu (%d ranks), up to %zu bytes, regime %s: %s "
                      "%.1f us%s; %llu calls, %llu measured, %llu explorations%s",
                      (unsigned long long)sampi_comm_label(c), c->size, (size_t)1 << b,
                      sampi_regime_names[r], sampi_algos[best].name, best_ns / 1e3, tail,
                      (unsigned long long)cell->calls, (unsigned long long)cell->measured,
                      (unsigned long long)cell->explorations,
                      cell->state == SAMPI_CELL_EXPLORING ? " (still exploring)" : "");
        }
}
