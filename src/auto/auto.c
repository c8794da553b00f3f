/*
 * auto.c - `auto`'s decision for one call (auto.h).
 *
 * The arms of a call come from the algorithm table (algos.def): every
 * algorithm `auto` may choose (SAMPI_CAP_AUTO) that can run the call (its
 * `suited`) and that the model does not rule out (sampi_select_hopeless: a
 * ring of tiny blocks, StragglAR on 3 ranks).  One that needs a hint runs only
 * in the regime that brings the hint: a straggler's algorithm
 * (SAMPI_CAP_NEEDS_STRAGGLER) when a straggler is predicted or set, a
 * degraded link's (SAMPI_CAP_NEEDS_SLOWDOWNS) when one is known; the others
 * are arms in every regime.  So today: native, rhd and ring always,
 * stragglar with a straggler on 4 or more ranks, optcc with a degraded link.
 * The model's favourite (select.c's table and hint rules) is explored first;
 * measurements decide.
 */
#include "auto.h"
#include "coll_ctx.h"
#include "comm.h"
#include "sampi_internal.h"
#include "select.h"
#include "tracker.h"
#include "tuning.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* A communicator's auto state: the selector, and what the performance
 * variables read from any thread (published after each decision). */
struct sampi_auto_state {
    struct sampi_autosel sel;
    _Atomic int pv_choice[SAMPI_AUTOSEL_BUCKETS];
    _Atomic uint64_t pv_cost_ns[SAMPI_AUTOSEL_BUCKETS];
    _Atomic uint64_t pv_explorations;
    _Atomic int pv_regime;
    /* regime changes across a composition acted on (follow_composition) */
    uint64_t seen_parts, seen_parent;
    _Atomic uint64_t pv_composition_changes;
    /* what the pvars show of each bucket's cell, so that a decision that
     * changed nothing publishes nothing (a ranking sorts every arm's costs) */
    struct shown {
        int state, choice, regime;
        uint64_t explorations;
    } shown[SAMPI_AUTOSEL_BUCKETS];
};

/* sampi_auto_learning's items, in this order. */
const char *const sampi_auto_learning_names[] = {"on", "frozen", NULL};
enum { LEARNING_ON, LEARNING_FROZEN };

static int frozen(void)
{
    return sampi_cvar_int(SAMPI_CVAR_AUTO_LEARNING) == LEARNING_FROZEN;
}

/* The tuning file (sampi_tuning_file): what was loaded when the library
 * started, and what this run learned, collected from each communicator as
 * its state is freed; MPI_COMM_WORLD rank 0 writes it at MPI_Finalize. */
static struct sampi_tuning kept, learned;
static uint64_t kept_hash;
/* The file was there but ignored (unreadable, malformed, too large, another
 * layout): it is never overwritten, what this run learned goes beside it. */
static int kept_ignored;
static pthread_mutex_t tuning_lock = PTHREAD_MUTEX_INITIALIZER;

void sampi_auto_tuning_load(void)
{
    char path[SAMPI_CVAR_STRING_MAX];
    sampi_tuning_init(&kept);
    sampi_tuning_init(&learned);
    sampi_cvar_text(SAMPI_CVAR_TUNING_FILE, path, sizeof(path));
    if (!path[0])
        return;
    int rc = sampi_tuning_load(path, sampi_tuning_layout_here(), &kept);
    kept_ignored = rc < 0;
    if (rc == 0 && kept.n)
        sampi_log(SAMPI_LOG_SETUP, "auto: %zu learned entries loaded from %s", kept.n, path);
    kept_hash = kept.n ? sampi_tuning_hash(&kept) : 0;
}

uint64_t sampi_auto_tuning_hash(void)
{
    return kept_hash;
}

void sampi_auto_tuning_save(void)
{
    char path[SAMPI_CVAR_STRING_MAX];
    int wrank = 0;
    sampi_cvar_text(SAMPI_CVAR_TUNING_FILE, path, sizeof(path));
    PMPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    pthread_mutex_lock(&tuning_lock);
    if (path[0] && wrank == 0 && frozen()) {
        sampi_log(SAMPI_LOG_INFO,
                  "auto: %s used as it is, not written (sampi_auto_learning=frozen)", path);
    } else if (path[0] && wrank == 0) {
        /* what this run measured wins; what it did not see is kept */
        for (size_t i = 0; i < kept.n; i++)
            if (!sampi_tuning_get(&learned, kept.e[i].ranks, kept.e[i].bucket, kept.e[i].regime))
                sampi_tuning_put(&learned, &kept.e[i]);
        learned.layout = sampi_tuning_layout_here();
        learned.has_layout = 1;
        if (kept_ignored && !sampi_tuning_may_write_beside(path)) {
            sampi_log_warn("tuning file '%s' was ignored at start-up and is not a regular file "
                           "in a directory of this user's: nothing is written beside it, and "
                           "the %zu entries this run learned are not kept",
                           path, learned.n);
        } else if (kept_ignored) {
            /* cannot overflow: path is shorter than SAMPI_CVAR_STRING_MAX */
            char beside[SAMPI_CVAR_STRING_MAX + 8];
            snprintf(beside, sizeof(beside), "%s.new", path);
            if (sampi_tuning_save(beside, &learned) == 0)
                sampi_log_warn("tuning file '%s' was ignored at start-up, so it is left as it "
                               "is; the %zu entries this run learned are in '%s'",
                               path, learned.n, beside);
        } else if (sampi_tuning_save(path, &learned) == 0) {
            sampi_log(SAMPI_LOG_INFO, "auto: %zu learned entries written to %s", learned.n, path);
        }
    }
    sampi_tuning_free(&learned);
    sampi_tuning_free(&kept);
    pthread_mutex_unlock(&tuning_lock);
}

void sampi_auto_release(struct sampi_comm *c)
{
    if (!c->autosel)
        return;
    sampi_auto_log_table(c);
    pthread_mutex_lock(&tuning_lock);
    sampi_tuning_collect(&learned, c->size, &c->autosel->sel);
    pthread_mutex_unlock(&tuning_lock);
    sampi_autosel_free(&c->autosel->sel);
    free(c->autosel);
    c->autosel = NULL;
}

static struct sampi_autosel *table_of(struct sampi_comm *c)
{
    if (!c->autosel && (c->autosel = calloc(1, sizeof(*c->autosel)))) {
        sampi_autosel_init(&c->autosel->sel);
        for (int b = 0; b < SAMPI_AUTOSEL_BUCKETS; b++) {
            atomic_store(&c->autosel->pv_choice[b], -1);
            c->autosel->shown[b].state = -2; /* nothing shown yet */
        }
        /* every rank loaded the same table: the join compared its hash */
        int n = sampi_tuning_seed(&kept, c->size, &c->autosel->sel);
        if (n > 0)
            sampi_log(SAMPI_LOG_SETUP, "communicator %llu: auto starts from %d learned entries",
                      (unsigned long long)sampi_comm_label(c), n);
    }
    return c->autosel ? &c->autosel->sel : NULL;
}

/* After a decision: what the cell of `bucket` in `regime` now says. */
static void publish(struct sampi_auto_state *st, int bucket, enum sampi_regime regime)
{
    const struct sampi_autosel_cell *cell = sampi_autosel_cell(&st->sel, bucket, regime);
    int best, next;
    double best_ns, next_ns;
    if (sampi_autosel_ranking(cell, &best, &best_ns, &next, &next_ns))
        best = -1;
    atomic_store_explicit(&st->pv_choice[bucket], best, memory_order_relaxed);
    atomic_store_explicit(&st->pv_cost_ns[bucket], best >= 0 ? (uint64_t)best_ns : 0,
                          memory_order_relaxed);
    uint64_t total = 0;
    for (int b = 0; b < SAMPI_AUTOSEL_BUCKETS; b++)
        for (int r = 0; r < SAMPI_REGIME__COUNT; r++)
            total += st->sel.cell[b][r] ? st->sel.cell[b][r]->explorations : 0;
    atomic_store_explicit(&st->pv_explorations, total, memory_order_relaxed);
    atomic_store_explicit(&st->pv_regime, regime, memory_order_relaxed);
}

/* publish() when the decision changed what the bucket's pvars show: the
 * cell's state, choice or explorations, or the regime. */
static void publish_if_changed(struct sampi_auto_state *st, int bucket, enum sampi_regime regime)
{
    const struct sampi_autosel_cell *cell = sampi_autosel_cell(&st->sel, bucket, regime);
    struct shown now = {cell ? (int)cell->state : -1, cell ? cell->choice : -1, (int)regime,
                        cell ? cell->explorations : 0};
    struct shown *was = &st->shown[bucket];
    if (now.state == was->state && now.choice == was->choice && now.regime == was->regime &&
        now.explorations == was->explorations)
        return;
    *was = now;
    publish(st, bucket, regime);
}

int sampi_auto_pvar_choice(const struct sampi_comm *c, int bucket)
{
    return c && c->autosel
               ? atomic_load_explicit(&c->autosel->pv_choice[bucket], memory_order_relaxed)
               : -1;
}

uint64_t sampi_auto_pvar_cost_ns(const struct sampi_comm *c, int bucket)
{
    return c && c->autosel
               ? atomic_load_explicit(&c->autosel->pv_cost_ns[bucket], memory_order_relaxed)
               : 0;
}

uint64_t sampi_auto_pvar_explorations(const struct sampi_comm *c)
{
    return c && c->autosel
               ? atomic_load_explicit(&c->autosel->pv_explorations, memory_order_relaxed)
               : 0;
}

int sampi_auto_pvar_regime(const struct sampi_comm *c)
{
    return c && c->autosel ? atomic_load_explicit(&c->autosel->pv_regime, memory_order_relaxed)
                           : SAMPI_REGIME_NONE;
}

const struct sampi_autosel *sampi_auto_table(const struct sampi_comm *c)
{
    return c->autosel ? &c->autosel->sel : NULL;
}

static uint32_t arm(enum sampi_algo_id id)
{
    return 1u << id;
}

/* The regime whose hint an algorithm needs (SAMPI_REGIME_NONE: none). */
static enum sampi_regime regime_needed(unsigned caps)
{
    if (caps & SAMPI_CAP_NEEDS_SLOWDOWNS)
        return SAMPI_REGIME_DEGRADED;
    if (caps & SAMPI_CAP_NEEDS_STRAGGLER)
        return SAMPI_REGIME_STRAGGLER;
    return SAMPI_REGIME_NONE;
}

/* The arms of a call per regime, from the table: arms[NONE] holds the
 * algorithms that need no hint, arms[r] those that need regime r's hint
 * (empty when the hint is missing). */
static void arms_for(struct sampi_comm *c, const struct sampi_coll_args *a, size_t bytes,
                     const struct sampi_select_hints *h, uint32_t arms[SAMPI_REGIME__COUNT])
{
    /* an algorithm that needs a hint is an arm when the call is informed
     * and its `suited` finds the hint it needs (a straggler, a degraded
     * rank) */
    const int hinted[SAMPI_REGIME__COUNT] = {
        [SAMPI_REGIME_NONE] = 1,
        [SAMPI_REGIME_STRAGGLER] = h->informed,
        [SAMPI_REGIME_DEGRADED] = h->informed,
    };
    for (int r = 0; r < SAMPI_REGIME__COUNT; r++)
        arms[r] = 0;
    for (int id = 0; id < SAMPI_ALGO__COUNT; id++) {
        const struct sampi_algo *x = &sampi_algos[id];
        enum sampi_regime r = regime_needed(x->caps);
        if (!(x->caps & SAMPI_CAP_AUTO) || !hinted[r] ||
            sampi_select_hopeless((enum sampi_algo_id)id, bytes, c->size) ||
            !sampi_coll_ctx_suited(c, a, (enum sampi_algo_id)id))
            continue;
        arms[r] |= arm((enum sampi_algo_id)id);
    }
}

/* sampi_auto_learning=frozen: a function of the call's size, the
 * communicator's size and the tuning file alone, so that runs with other
 * timing choose the same: no hint (the tracker's come from timing), no
 * measurement. */
static enum sampi_algo_id frozen_choice(struct sampi_comm *c, const struct sampi_coll_args *a,
                                        size_t bytes)
{
    const struct sampi_select_hints none = {0};
    uint32_t arms[SAMPI_REGIME__COUNT];
    arms_for(c, a, bytes, &none, arms);
    pthread_mutex_lock(&tuning_lock);
    const struct sampi_tuning_entry *e =
        sampi_tuning_get(&kept, c->size, sampi_autosel_bucket(bytes), SAMPI_REGIME_NONE);
    int filed = e ? e->algo : -1;
    pthread_mutex_unlock(&tuning_lock);
    if (filed >= 0 && (arms[SAMPI_REGIME_NONE] & arm((enum sampi_algo_id)filed)))
        return (enum sampi_algo_id)filed;
    enum sampi_algo_id model = sampi_select_auto(bytes, c->size);
    return arms[SAMPI_REGIME_NONE] & arm(model) ? model : SAMPI_ALGO_NATIVE;
}

/* The arms that run others on parts (SAMPI_CAP_COMPOSED). */
static uint32_t composed_arms(void)
{
    uint32_t m = 0;
    for (int id = 0; id < SAMPI_ALGO__COUNT; id++)
        if (sampi_algos[id].caps & SAMPI_CAP_COMPOSED)
            m |= arm(id);
    return m;
}

/* Regime changes across a composition (tracker.h): where a part of c saw
 * its regime change (agreed on c by its tracking exchange), what c measured
 * of its composed arms describes the world before; where c is a part and
 * the communicator it belongs to changed regime, so does what c measured of
 * every arm.  Both epochs are agreed, so every rank drops the same. */
static void follow_composition(struct sampi_comm *c, struct sampi_autosel *s)
{
    struct sampi_auto_state *st = c->autosel;
    uint64_t inside = sampi_tracker_parts_epoch(c);
    uint64_t outside = c->parent ? sampi_tracker_regime_epoch(c->parent) : 0;
    const char *what = NULL;
    if (inside != st->seen_parts) {
        st->seen_parts = inside;
        sampi_autosel_arms_changed(s, composed_arms());
        what = "a part of it";
    }
    if (outside != st->seen_parent) {
        st->seen_parent = outside;
        sampi_autosel_arms_changed(s, ~0u);
        what = "the communicator it is a part of";
    }
    if (!what)
        return;
    atomic_fetch_add_explicit(&st->pv_composition_changes, 1, memory_order_relaxed);
    sampi_log(SAMPI_LOG_SETUP, "communicator %llu: %s changed regime: auto measures again",
              (unsigned long long)sampi_comm_label(c), what);
}

uint64_t sampi_auto_pvar_composition_changes(const struct sampi_comm *c)
{
    return c && c->autosel
               ? atomic_load_explicit(&c->autosel->pv_composition_changes, memory_order_relaxed)
               : 0;
}

enum sampi_algo_id sampi_auto_decide(struct sampi_comm *c, const struct sampi_coll_args *args,
                                     struct sampi_auto_call *call)
{
    const size_t bytes = args->count * args->dt.extent;
    if (frozen()) {
        *call = (struct sampi_auto_call){0}; /* not measured, not tracked */
        return frozen_choice(c, args, bytes);
    }
    struct sampi_select_hints h;
    sampi_tracker_hints(c, args->ctx, args->count, args->dt.extent, &h);
    /* A regime is a different table only where it brings an arm: a
     * straggler on 3 ranks (where StragglAR cannot win) or a call optcc
     * cannot run keeps the calls in the regime without one. */
    uint32_t arms[SAMPI_REGIME__COUNT];
    arms_for(c, args, bytes, &h, arms);
    enum sampi_regime regime = arms[SAMPI_REGIME_DEGRADED]    ? SAMPI_REGIME_DEGRADED
                               : arms[SAMPI_REGIME_STRAGGLER] ? SAMPI_REGIME_STRAGGLER
                                                              : SAMPI_REGIME_NONE;
    uint32_t allowed = arms[SAMPI_REGIME_NONE] | (regime ? arms[regime] : 0);
    enum sampi_algo_id prior = sampi_select_auto_hinted(bytes, c->size, &h);
    if (!(allowed & arm(prior)))
        prior = SAMPI_ALGO_NATIVE;

    if (c->auto_model_only) {
        /* the model alone, and SAMPI's own algorithms only: the composed
         * call keeps SAMPI's limit and revocation, which a PMPI_Allreduce
         * inside would not (rhd is an arm at every size); tracked by size
         * like a forced call, so that the hints stay fresh */
        *call = (struct sampi_auto_call){.d = {.measure = sampi_tracker_wanted(c, bytes)}};
        if (prior == SAMPI_ALGO_NATIVE)
            prior = (allowed & arm(SAMPI_ALGO_RING)) &&
                            (long long)bytes > sampi_cvar_int(SAMPI_CVAR_RHD_MAX_BYTES)
                        ? SAMPI_ALGO_RING
                        : SAMPI_ALGO_RHD;
        return prior;
    }
    /* a late rank with no straggler regime, nobody late in one, or the last
     * measured call not what the tracker predicts (another rank late, the
     * predicted one far less late, nobody late with a rank predicted): the
     * world may be changing, so measure often until the tracker settles.
     * Priced by the exchange, a converged cell may measure 1 MiB calls only
     * one in 8, too seldom for a prediction to follow a straggler that moved
     * or left within 40 calls (tracking.test). */
    const int unsettled = !sampi_tracker_settled(c, regime == SAMPI_REGIME_STRAGGLER);
    *call = (struct sampi_auto_call){.in = {.bytes = bytes,
                                            .regime = regime,
                                            .allowed = allowed,
                                            .prior = prior,
                                            .unsettled = unsettled,
                                            .exchange_ns = sampi_tracker_exchange_ns(c)}};
    struct sampi_autosel *s = table_of(c);
    if (s)
        follow_composition(c, s);
    if (!s || sampi_autosel_decide(s, &call->in, &call->d))
        return prior; /* out of memory: the model alone, the same on every rank */
    call->active = 1;
    publish_if_changed(c->autosel, call->d.bucket, regime);
    if (s->regime_changes != c->auto_regime_changes) {
        c->auto_regime_changes = s->regime_changes;
        sampi_log(SAMPI_LOG_SETUP, "communicator %llu: auto now sees regime '%s'",
                  (unsigned long long)sampi_comm_label(c), sampi_regime_names[regime]);
    }
    return (enum sampi_algo_id)call->d.algo;
}

/* "rhd 812.4 us, next best ring +7%" for a cell with a winner: 0, or -1. */
static int rank_text(const struct sampi_autosel_cell *cell, char *buf, size_t len)
{
    int best, next;
    double best_ns, next_ns;
    if (!cell || sampi_autosel_ranking(cell, &best, &best_ns, &next, &next_ns))
        return -1;
    if (next >= 0 && best_ns > 0)
        snprintf(buf, len, "%s %.1f us from the last arrival, next best %s %+.0f%%",
                 sampi_algos[best].name, best_ns / 1e3, sampi_algos[next].name,
                 100 * (next_ns / best_ns - 1));
    else
        snprintf(buf, len, "%s %.1f us from the last arrival, no other arm measured",
                 sampi_algos[best].name, best_ns / 1e3);
    return 0;
}

uint64_t sampi_auto_repeats(struct sampi_comm *c, const struct sampi_auto_call *call,
                            uint64_t **calls)
{
    if (!call->active || !c->autosel)
        return 0;
    return sampi_autosel_repeats(&c->autosel->sel, &call->in, &call->d, calls);
}

void sampi_auto_learn(struct sampi_comm *c, const struct sampi_auto_call *call, double cost_ns)
{
    if (!call->active || !c->autosel)
        return;
    int converged = sampi_autosel_note(&c->autosel->sel, &call->in, call->d.algo, cost_ns);
    publish(c->autosel, call->d.bucket, call->in.regime);
    if (!converged)
        return;
    char text[160];
    if (rank_text(sampi_autosel_cell(&c->autosel->sel, call->d.bucket, call->in.regime), text,
                  sizeof(text)))
        return;
    sampi_log(SAMPI_LOG_SETUP,
              "communicator %llu: auto chose for calls up to %zu bytes (regime %s): %s",
              (unsigned long long)sampi_comm_label(c), (size_t)1 << call->d.bucket,
              sampi_regime_names[call->in.regime], text);
}

void sampi_auto_log_table(const struct sampi_comm *c)
{
    if (!c->autosel || !sampi_log_enabled(SAMPI_LOG_INFO))
        return;
    for (int r = 0; r < SAMPI_REGIME__COUNT; r++)
        for (int b = 0; b < SAMPI_AUTOSEL_BUCKETS; b++) {
            const struct sampi_autosel_cell *cell = sampi_autosel_cell(&c->autosel->sel, b, r);
            char text[160];
            if (!cell || !cell->calls)
                continue; /* no call of that size in that regime */
            /* every cell that saw calls, so that the table adds up to the
             * summary line's counts */
            if (rank_text(cell, text, sizeof(text)))
                snprintf(text, sizeof(text), "not ranked yet (too few measured calls)");
            sampi_log(SAMPI_LOG_INFO,
                      "auto table: communicator %llu (%d ranks), up to %zu bytes, regime %s: %s; "
                      "%llu calls, %llu measured, %llu explorations%s",
                      (unsigned long long)sampi_comm_label(c), c->size, (size_t)1 << b,
                      sampi_regime_names[r], text, (unsigned long long)cell->calls,
                      (unsigned long long)cell->measured, (unsigned long long)cell->explorations,
                      cell->state == SAMPI_CELL_EXPLORING ? " (still exploring)" : "");
        }
}
