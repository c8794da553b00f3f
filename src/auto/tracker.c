/*
 * tracker.c - per-communicator arrival and link tracking (tracker.h).
 *
 * Cost: a barrier and an allgather of two doubles per rank after each
 * tracked call (tens of microseconds against the milliseconds a tracked call
 * takes), plus, every
 * sampi_optcc_probe_period calls, a probe moving 2 sampi_optcc_probe_bytes
 * per rank and an allgather of two doubles.
 */
#include "tracker.h"
#include "coll_ctx.h"
#include "comm.h"
#include "revoke.h"
#include "wait.h"
#include "sampi_internal.h"
#include "select.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPARE_RANKS 4096

static int mode(void)
{
    return (int)sampi_cvar_int(SAMPI_CVAR_STRAGGLAR_MODE);
}

static int slowdown_given(void)
{
    char buf[SAMPI_CVAR_STRING_MAX];
    sampi_cvar_text(SAMPI_CVAR_OPTCC_SLOWDOWN, buf, sizeof(buf));
    return buf[0] != '\0';
}

static struct sampi_tracker *tracker_of(struct sampi_comm *c)
{
    if (c->tracker)
        return c->tracker;
    struct sampi_tracker *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->dur = calloc((size_t)c->size, sizeof(double));
    t->exch = calloc(3 * (size_t)c->size, sizeof(double));
    t->probe_times = calloc(4 * (size_t)c->size, sizeof(double));
    if (!t->dur || !t->exch || !t->probe_times) {
        sampi_tracker_free(t);
        return NULL;
    }
    sampi_predictor_init(&t->pred, c->size, (int)sampi_cvar_int(SAMPI_CVAR_STRAGGLAR_WINDOW));
    sampi_predictor_predict(&t->pred, &t->now);
    sampi_detector_init(&t->det);
    t->last_late = -1;
    char report[SAMPI_CVAR_STRING_MAX];
    if (c->rank == 0 && !c->parent &&
        sampi_cvar_text(SAMPI_CVAR_REPORT, report, sizeof(report))[0]) {
        /* every rank holds the same durations, so the communicator's rank
         * 0 alone keeps the sums (pmpi_wrap/report.c writes its record; a
         * composed algorithm's stages are not reported);
         * without memory for them the report leaves the arrivals out */
        t->report = malloc(sizeof(*t->report));
        if (t->report && sampi_report_acc_init(t->report, c->size)) {
            free(t->report);
            t->report = NULL;
        }
    }
    t->predicted = -1;
    atomic_store(&t->pv_predicted, -1);
    atomic_store(&t->pv_degraded, -1);
    c->tracker = t;
    return t;
}

int sampi_tracker_wanted(const struct sampi_comm *c, size_t bytes)
{
    if (c->size < 3 || (long long)bytes < sampi_cvar_int(SAMPI_CVAR_TRACKER_MIN_BYTES))
        return 0;
    return mode() != SAMPI_STRAGGLAR_OFF || sampi_cvar_int(SAMPI_CVAR_OPTCC_DETECT);
}

void sampi_tracker_begin(struct sampi_comm *c)
{
    /* An allocation failure on one rank must not make it skip an exchange the
     * others make: on failure this rank takes part with a NULL tracker. */
    struct sampi_tracker *t = tracker_of(c);
    if (t) {
        t->entry_ns = sampi_now_ns();
        t->predicted = sampi_tracker_straggler(c);
    }
}

/* The world a call on c meets, as this tracker knows it (algos.h), for the
 * algorithms' models.  t may be NULL: nothing known but the sizes. */
static void world_of(const struct sampi_comm *c, const struct sampi_tracker *t, double bytes,
                     struct sampi_algo_world *w)
{
    *w = (struct sampi_algo_world){.n = c->size, .bytes = bytes, .straggler = -1};
    if (!t)
        return;
    w->beta = t->beta.ns_per_byte;
    w->last = t->pred.last;
    w->gap_ns = t->pred.gap_ns;
    w->samples = t->pred.count;
}

/* Time per byte: the calls whose time after the last arrival the model of
 * the algorithm that ran explains, with the bytes each moves per rank after
 * it (in units of s). */
static double beta_factor(const struct sampi_comm *c, const struct sampi_tracker *t,
                          enum sampi_algo_id algo, const struct sampi_arrival *a, size_t bytes)
{
    const struct sampi_algo_model *m = sampi_algos[algo].model;
    if (!m || !m->beta_factor)
        return 0;
    struct sampi_algo_world w;
    world_of(c, t, (double)bytes, &w);
    return m->beta_factor(&w, a->gap_ns);
}

/* The probe: every rank sends probe_bytes to its right neighbour while it
 * receives from its left, then the other way round, timing each receive.
 * One direction at a time, each rank's egress and ingress carry one flow, so
 * a link's time is set by the slower of its two ends alone: l times the
 * others' for the four links of a rank slowed l times in both directions.
 * Repeated PROBE_REPS times, keeping each link's fastest: a rank descheduled
 * for a moment on a shared host slows one repetition, a slow link slows them
 * all.  Every rank takes part; a rank that cannot reports no times (the probe
 * is then void everywhere). */
#define PROBE_REPS 3

static int probe_shift(struct sampi_comm *c, struct sampi_tracker *t, size_t bytes, int to,
                       int from, double *out, struct sampi_waiter *w)
{
    /* The receiver starts its clock when it tells the sender to go, and the
     * sender sends only then: a rank that enters the probe late would
     * otherwise find the data already buffered and time nothing.  The two
     * messages have kinds of their own, so neither can match the other, nor
     * an algorithm's data. */
    enum { DATA_IN, GO_IN, GO_OUT, DATA_OUT, NREQ };
    struct sampi_netdev *nd = c->nd;
    uint64_t seq = c->seq++;
    uint64_t data_tag = sampi_netdev_tag_kind(SAMPI_TAG_PROBE_DATA, seq, 0, 0),
             go_tag = sampi_netdev_tag_kind(SAMPI_TAG_PROBE_GO, seq, 0, 0);
    sampi_netdev_req_t reqs[NREQ];
    sampi_netdev_req_t *ptrs[NREQ] = {&reqs[0], &reqs[1], &reqs[2], &reqs[3]};
    char go_out = 1;
    int posted = 0, rc;
    memset(reqs, 0, sizeof(reqs));
    *out = -1;
    /* the go-ahead lands in the probe buffer's spare byte, which outlives
     * this frame: a cancelled receive cannot complete into a dead stack */
    char *go_in = t->probe_buf + 2 * bytes;
    if ((rc = nd->ops->irecv(nd, t->probe_buf + bytes, bytes, from, data_tag, &reqs[DATA_IN])))
        goto fail;
    posted = 1;
    if ((rc = nd->ops->irecv(nd, go_in, 1, to, go_tag, &reqs[GO_IN])))
        goto fail;
    posted = 2;
    int64_t start = sampi_now_ns();
    if ((rc = nd->ops->isend(nd, &go_out, 1, from, go_tag, &reqs[GO_OUT])))
        goto fail;
    posted = 3;
    while (!(reqs[DATA_IN].done && posted == NREQ && reqs[DATA_OUT].done && reqs[GO_OUT].done)) {
        int before = 0, after = 0;
        for (int i = 0; i < posted; i++)
            before += reqs[i].done;
        rc = nd->ops->wait(nd, ptrs, posted, sampi_waiter_slice_end(w));
        if (rc == -ETIMEDOUT) {
            char whom[64];
            snprintf(whom, sizeof(whom), "rank %d or rank %d", from, to);
            if ((rc = sampi_waiter_idle(w, whom)))
                goto fail;
            continue;
        }
        if (rc)
            goto fail;
        for (int i = 0; i < posted; i++)
            after += reqs[i].done;
        if (after > before)
            sampi_waiter_progress(w);
        if (reqs[DATA_IN].done && *out < 0)
            *out = (double)(sampi_now_ns() - start);
        if (reqs[GO_IN].done && posted < NREQ) {
            if ((rc = nd->ops->isend(nd, t->probe_buf, bytes, to, data_tag, &reqs[DATA_OUT])))
                goto fail;
            posted = NREQ;
        }
    }
    for (int i = 0; i < NREQ; i++)
        if (reqs[i].status)
            rc = reqs[i].status;
fail:
    if (rc)
        for (int i = 0; i < posted; i++)
            if (!reqs[i].done)
                nd->ops->cancel(nd, &reqs[i]);
    return rc;
}

static int probe_once(struct sampi_comm *c, struct sampi_tracker *t, size_t bytes, double out[2],
                      struct sampi_waiter *w)
{
    int left = (c->rank - 1 + c->size) % c->size, right = (c->rank + 1) % c->size;
    int rc = probe_shift(c, t, bytes, right, left, &out[0], w);
    return rc ? rc : probe_shift(c, t, bytes, left, right, &out[1], w);
}

static int probe(struct sampi_comm *c, struct sampi_tracker *t, double out[2])
{
    out[0] = out[1] = -1;
    size_t bytes = (size_t)sampi_cvar_int(SAMPI_CVAR_OPTCC_PROBE_BYTES);
    if (!t->probe_buf || t->probe_bytes != bytes) {
        free(t->probe_buf);
        t->probe_buf = calloc(2 * bytes + 1, 1); /* send, receive, go-ahead */
        t->probe_bytes = t->probe_buf ? bytes : 0;
    }
    int rc = sampi_comm_open_netdev(c); /* collective, same answer everywhere */
    if (rc)
        return rc;
    if (!t->probe_buf)
        return -ENOMEM; /* the caller revokes: the others are told */
    struct sampi_waiter w;
    sampi_comm_waiter(c, &w, "a link probe");
    for (int rep = 0; rep < PROBE_REPS && !rc; rep++) {
        double once[2];
        rc = probe_once(c, t, bytes, once, &w);
        for (int i = 0; i < 2 && !rc; i++)
            out[i] = out[i] < 0 || once[i] < out[i] ? once[i] : out[i];
    }
    if (rc)
        out[0] = out[1] = -1;
    return rc;
}

/* Probes move 2 sampi_optcc_probe_bytes per rank, three times over: on a
 * calm network they back off, doubling the gap from sampi_optcc_probe_period
 * up to 64 times it, and come back to it while a rank is suspect or
 * degraded (to confirm, and to see it recover).  The first few tracked calls
 * and calls below sampi_tracker_min_bytes follow the same rule: the gap
 * counts tracked calls, agreed on every rank. */
#define PROBE_BACKOFF_MAX 64

static int want_probe(struct sampi_tracker *t, const struct sampi_comm *c, size_t bytes)
{
    if (!sampi_cvar_int(SAMPI_CVAR_OPTCC_DETECT) || slowdown_given() || c->size < 3 ||
        (long long)bytes < sampi_cvar_int(SAMPI_CVAR_TRACKER_MIN_BYTES))
        return 0;
    uint64_t period = (uint64_t)sampi_cvar_int(SAMPI_CVAR_OPTCC_PROBE_PERIOD);
    period = period ? period : 1;
    if (t->probe_gap == 0 || t->det.candidate >= 0 || t->det.rank >= 0)
        t->probe_gap = period;
    if (t->tracked <= SAMPI_DETECT_CONFIRM || (t->det.candidate >= 0 && t->det.rank < 0))
        return 1;
    if (t->tracked < t->next_probe)
        return 0;
    t->next_probe = t->tracked + t->probe_gap;
    if (t->det.rank < 0 && t->probe_gap < PROBE_BACKOFF_MAX * period)
        t->probe_gap *= 2;
    return 1;
}

static void publish(struct sampi_tracker *t, size_t bytes)
{
    atomic_store_explicit(&t->pv_predicted, t->now.rank, memory_order_relaxed);
    atomic_store_explicit(&t->pv_lateness_ns, (uint64_t)t->now.lateness_ns, memory_order_relaxed);
    atomic_store_explicit(&t->pv_bytes, (uint64_t)bytes, memory_order_relaxed);
    atomic_store_explicit(&t->pv_beta_ps, (uint64_t)(t->beta.ns_per_byte * 1000),
                          memory_order_relaxed);
    atomic_store_explicit(&t->pv_degraded, t->det.rank, memory_order_relaxed);
    atomic_store_explicit(&t->pv_slowdown_milli,
                          t->det.rank >= 0 ? (uint64_t)(t->det.slowdown * 1000) : 0,
                          memory_order_relaxed);
}

/* What the call cost after its last arrival: the shortest stay, which is
 * the last arriver's (-1 when a rank has no measurement). */
static double last_arrival_cost(const double *dur, int n)
{
    double m = -1;
    for (int i = 0; i < n; i++) {
        if (!(dur[i] >= 0))
            return -1;
        m = m < 0 || dur[i] < m ? dur[i] : m;
    }
    return m;
}

/* What the exchanged durations say: the arrival counters, whether the
 * prediction was right, the next prediction and a beta sample. */
static void note_arrivals(struct sampi_comm *c, struct sampi_tracker *t, enum sampi_algo_id algo,
                          size_t bytes)
{
    struct sampi_arrival a;
    if (sampi_arrival_from_durations(t->dur, c->size, (double)SAMPI_LATE_THRESHOLD_NS, &a))
        return;
    /* the arrival counters (pvars) come from the same exchange */
    sampi_stats_note_arrival(&c->stats, c->size, a.last, a.last >= 0 ? (int64_t)a.gap_ns : 0);
    t->last_late = a.last;
    t->last_gap_ns = a.last >= 0 ? a.gap_ns : 0;
    if (t->predicted >= 0) {
        sampi_stat_add(&c->stats.predictions, 1);
        sampi_stat_add(&sampi_process_stats.predictions, 1);
        if (a.last == t->predicted) {
            sampi_stat_add(&c->stats.predictions_right, 1);
            sampi_stat_add(&sampi_process_stats.predictions_right, 1);
        }
    }
    sampi_predictor_note(&t->pred, &a);
    sampi_predictor_update(&t->pred, &t->now); /* read until the next call ends */
    sampi_beta_note(&t->beta, a.last_dur_ns, beta_factor(c, t, algo, &a, bytes), (double)bytes);
    if (c->rank == 0 && sampi_log_enabled(SAMPI_LOG_CALL))
        sampi_log(SAMPI_LOG_CALL,
                  "tracked %s: last rank %d, %.0f us after the second-last; %.0f us after "
                  "it arrived; beta %.3f ns/byte",
                  sampi_algos[algo].name, a.last, a.gap_ns / 1e3, a.last_dur_ns / 1e3,
                  t->beta.ns_per_byte);
}

/* The test hook sampi_debug_slow_link: on a part (a composed algorithm's
 * stage), from its tracked call `after` on, the probe times as if that world
 * rank's links were l times slower (applied to the exchanged times, so
 * alike on every rank). */
static void debug_slow_link(struct sampi_comm *c, const struct sampi_tracker *t, double *left,
                            double *right)
{
    char text[SAMPI_CVAR_STRING_MAX], err[256];
    int world, r = MPI_UNDEFINED;
    double l;
    long after;
    sampi_cvar_text(SAMPI_CVAR_DEBUG_SLOW_LINK, text, sizeof(text));
    if (!c->parent || !text[0] ||
        sampi_debug_slow_link_parse(text, &world, &l, &after, err, sizeof(err)) ||
        t->tracked < (uint64_t)after)
        return;
    MPI_Group wg, cg;
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Comm_group(c->ctl, &cg);
    PMPI_Group_translate_ranks(wg, 1, &world, cg, &r);
    PMPI_Group_free(&wg);
    PMPI_Group_free(&cg);
    if (r != MPI_UNDEFINED)
        sampi_detect_slow_link(left, right, c->size, r, l);
}

/* A link probe and what it says (see probe()): 0 or the exchange's errno. */
static int probe_links(struct sampi_comm *c, struct sampi_tracker *t)
{
    double times[2];
    int rc = probe(c, t, times);
    if (rc)
        return rc; /* the caller revokes: the others are told */
    struct sampi_waiter w;
    sampi_comm_waiter(c, &w, "the link probe's exchange");
    if ((rc = sampi_waiter_allgather(&w, times, 2, MPI_DOUBLE, t->probe_times, c->ctl)))
        return rc;
    /* the allgather interleaves (left, right) per rank; the detector takes
     * them apart */
    double *left = t->probe_times + 2 * c->size, *right = left + c->size;
    for (int i = 0; i < c->size; i++) {
        left[i] = t->probe_times[2 * i];
        right[i] = t->probe_times[2 * i + 1];
    }
    debug_slow_link(c, t, left, right);
    double l = 0, estimate = 0;
    int r = sampi_detect_probe(left, right, c->size, &l, &estimate);
    if (c->rank == 0 && sampi_log_enabled(SAMPI_LOG_CALL))
        for (int i = 0; i < c->size; i++)
            sampi_log(SAMPI_LOG_CALL, "probe: rank %d heard rank %d in %.0f us, rank %d in %.0f us",
                      i, (i - 1 + c->size) % c->size, left[i] / 1e3, (i + 1) % c->size,
                      right[i] / 1e3);
    int changed = sampi_detector_note(&t->det, r, l, estimate);
    if (t->report && t->det.rank >= 0)
        sampi_report_acc_degraded(t->report, t->det.rank, t->det.slowdown);
    if (changed && c->rank == 0)
        sampi_log(SAMPI_LOG_SETUP,
                  t->det.rank >= 0 ? "communicator of size %d: rank %d's link is degraded, l = %.3f"
                                   : "communicator of size %d: no degraded link (%d, %.3f)",
                  c->size, t->det.rank, t->det.slowdown);
    return 0;
}

/* What c's tracker says of the world, as one number: a change of it is a
 * regime change (nobody late 0, a straggler predicted 1, rank R's link
 * degraded 2 + R). */
static long regime_key(const struct sampi_comm *c)
{
    double l;
    int degraded = sampi_tracker_degraded(c, &l);
    return degraded >= 0 ? 2 + degraded : sampi_tracker_straggler(c) >= 0;
}

/* c's regime changed (tracker.h, "Regime changes"). */
static void regime_changed(struct sampi_comm *c)
{
    c->regime_epoch++;
    if (c->parent)
        atomic_fetch_add_explicit(&c->parent->parts_changes, 1, memory_order_relaxed);
}

int sampi_tracker_end(struct sampi_comm *c, enum sampi_algo_id algo, size_t bytes, double *cost_ns)
{
    *cost_ns = -1;
    struct sampi_tracker *t = c->tracker;
    struct sampi_waiter w;
    sampi_comm_waiter(c, &w, "the tracking exchange");
    /* The stay is stamped when every rank has left the algorithm (the
     * exchange below waits for all of them anyway, so the program waits no
     * longer): the shortest stay is then the call's time from the last
     * arrival to its completion on every rank, and the stays differ by the
     * arrival gaps alone.  Stamped when each rank left, an algorithm whose
     * ranks finish apart looked cheaper than it is: rhd at 2 MiB with rank
     * 7's link at l = 2 (8 ranks, testbed) measured 102 ms by its quickest
     * rank against ring's 106, where the last rank finished at 170 (ring
     * 148), and auto kept rhd. */
    const int64_t exchange_start = sampi_now_ns();
    int rc = sampi_waiter_barrier(&w, c->ctl);
    if (rc)
        return rc;
    double mine[3] = {t ? (double)(sampi_now_ns() - t->entry_ns) : -1,
                      (double)atomic_load_explicit(&c->parts_changes, memory_order_relaxed),
                      t ? t->exchange_own_ns : 0};
    /* Without a tracker (out of memory) this rank still takes part, into a
     * per-thread spare buffer, so that the others are not left waiting. */
    static _Thread_local double spare[3 * SPARE_RANKS];
    double *all = t ? t->exch : c->size <= SPARE_RANKS ? spare : NULL;
    if (!all)
        return -ENOMEM;
    rc = sampi_waiter_allgather(&w, mine, 3, MPI_DOUBLE, all, c->ctl);
    if (rc)
        return rc;
    double parts = 0, exchange = 0;
    for (int i = 0; i < c->size; i++) {
        parts += all[3 * i + 1];
        if (t)
            t->dur[i] = all[3 * i];
        const double e = all[3 * i + 2];
        exchange = e > 0 && (exchange == 0 || e < exchange) ? e : exchange;
    }
    if (t) {
        t->exchange_own_ns = (double)(sampi_now_ns() - exchange_start);
        if (exchange > 0)
            t->exchange_ns =
                t->exchange_ns > 0 ? t->exchange_ns + (exchange - t->exchange_ns) / 8 : exchange;
    }
    c->parts_epoch = (uint64_t)parts;
    if (!t)
        return -ENOMEM;
    long key = regime_key(c);
    t->tracked++;
    *cost_ns = last_arrival_cost(t->dur, c->size);
    note_arrivals(c, t, algo, bytes);
    if (t->report)
        sampi_report_acc_note(t->report, t->dur, bytes);
    if (want_probe(t, c, bytes) && (rc = probe_links(c, t)))
        return rc;
    publish(t, bytes);
    if (regime_key(c) != key)
        regime_changed(c);
    return 0;
}

uint64_t sampi_tracker_parts_epoch(const struct sampi_comm *c)
{
    return c->parts_epoch;
}

uint64_t sampi_tracker_regime_epoch(const struct sampi_comm *c)
{
    return c->regime_epoch;
}

int sampi_tracker_straggler(const struct sampi_comm *c)
{
    int m = mode();
    long long fixed = sampi_cvar_int(SAMPI_CVAR_STRAGGLAR_RANK);
    if (m == SAMPI_STRAGGLAR_OFF)
        return -1;
    if (m == SAMPI_STRAGGLAR_FIXED || fixed >= 0)
        return fixed >= 0 && fixed < c->size ? (int)fixed : -1;
    return c->tracker ? c->tracker->now.rank : -1;
}

double sampi_tracker_exchange_ns(const struct sampi_comm *c)
{
    return c->tracker ? c->tracker->exchange_ns : 0;
}

int sampi_tracker_settled(const struct sampi_comm *c, int straggler_regime)
{
    const struct sampi_tracker *t = c->tracker;
    const int late = t ? t->last_late : -1;
    if (straggler_regime ? late < 0 : late >= 0)
        return 0; /* a late rank with no straggler regime, nobody late in one */
    if (!t || t->tracked == 0)
        return 1;
    if (t->last_late != t->now.rank)
        return 0; /* another rank late, or nobody late with one predicted */
    return t->last_late < 0 || t->last_gap_ns >= t->now.lateness_ns / 2;
}

int sampi_tracker_degraded(const struct sampi_comm *c, double *slowdown)
{
    if (!c->tracker || c->tracker->det.rank < 0 || !sampi_cvar_int(SAMPI_CVAR_OPTCC_DETECT))
        return -1;
    *slowdown = c->tracker->det.slowdown;
    return c->tracker->det.rank;
}

void sampi_tracker_hints(struct sampi_comm *c, const struct sampi_coll_ctx *ctx, size_t count,
                         size_t extent, struct sampi_select_hints *h)
{
    struct sampi_algo_world w;
    world_of(c, c->tracker, (double)(count * extent), &w);
    w.straggler = sampi_tracker_straggler(c);
    w.ctx = ctx;
    w.count = count;
    w.extent = extent;
    memset(h, 0, sizeof(*h));
    h->informed = 1;
    for (int id = 0; id < SAMPI_ALGO__COUNT; id++) {
        const struct sampi_algo_model *m = sampi_algos[id].model;
        if (m && m->gain)
            h->gain[id] = m->gain(&w);
    }
}

const struct sampi_report_acc *sampi_tracker_report(const struct sampi_comm *c)
{
    return c->tracker ? c->tracker->report : NULL;
}

void sampi_tracker_free(struct sampi_tracker *t)
{
    if (!t)
        return;
    if (t->report)
        sampi_report_acc_free(t->report);
    free(t->report);
    free(t->dur);
    free(t->exch);
    free(t->probe_times);
    free(t->probe_buf);
    free(t);
}
