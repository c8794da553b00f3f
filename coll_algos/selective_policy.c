/*
 * selective_policy.c - the Selective Reduce controller step (Alg. 3 of Luo
 * et al., "Progress and Bandwidth Aware Partial Model Synchronization With
 * Selective Reduce", Sec. III-E) and the two baselines, as
 * a state machine driven by the caller's reports and clock.
 *
 * Workers are computing (in S), ready (in the FIFO queue Q) or syncing.  One
 * evaluation, run after each change:
 *   selective: every c-th sync is FULL (all n, once all are ready); otherwise,
 *     with |Q| >= p, BAG splits Q into groups, fastest first, and BPAWR
 *     decides per group: launch now, hold (|g| < p), or wait dt for faster
 *     workers, pushing the slow ones it would replace into the next group.
 *   partial:   while |Q| >= p, launch the p longest-waiting workers.
 *   allreduce: launch all n once all are ready.
 * Cost per evaluation O(n log n) (BAG's sort, BPAWR's per group), the CDF
 * lookups O(log N) each.  A launch is a ring all-reduce of the group,
 * 2|g|alpha + 2v/min_g b (Eq. 2), run by the caller.
 *
 * Example (p = 2, eta = 0.3, v = 5 units, alpha = 0, the paper's Fig. 3):
 * b = {1, 5, 1, 5, *}, ready at 1, 2, 3, 3 s.  Partial reduce launches
 * {w1, w2} at 2 s and {w3, w4} at 3 s (10 s each); selective reduce, told
 * at 2 s that w3/w4 are about to finish, waits, then at 3 s launches
 * {w2, w4} (2 s) and {w1, w3} (10 s): mean 6 s.
 */
#include "selective_policy.h"
#include "selective_cdf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum wstate { W_COMPUTING, W_READY, W_SYNCING, W_RETIRED };

struct sampi_sel_priv {
    unsigned char *state;
    double *cstart, *ready_at, *bw, *wait_mark;
    long *iter;
    int *queue; /* ready workers in arrival order */
    int qlen;
    /* Every worker in BAG's order of the current estimates, rebuilt only
     * when an estimate changes, so that an evaluation sorts nothing. */
    struct sampi_sel_item *order;
    int order_dirty;
    double unknown_bw;
    unsigned char *mark;
    struct sampi_sel_cdf shared;
    struct sampi_sel_cdf *own; /* per worker, or NULL */
    /* scratch for one evaluation */
    struct sampi_sel_item *items, *scratch;
    int *start, *start2, *delta;
    struct sampi_sel_cand *cands;
    /* groups launched by the last evaluation, handed out one per decide() */
    int *pend_members, *pend_off;
    long *pend_id;
    unsigned char *pend_kind;
    int npend, pend_next;
    int active; /* workers not retired */
    int dirty, armed;
    double wait_until;
};

static void *array(size_t count, size_t size, int *bad)
{
    void *p = calloc(count ? count : 1, size);
    if (!p)
        *bad = 1;
    return p;
}

int sampi_sel_group_init(struct sampi_sel_group *g, int n)
{
    int bad = 0;
    memset(g, 0, sizeof(*g));
    if (n < 1)
        return -EINVAL;
    g->members = array((size_t)n, sizeof(int), &bad);
    g->iters = array((size_t)n, sizeof(long), &bad);
    g->weights = array((size_t)n, sizeof(double), &bad);
    g->capacity = n;
    if (bad) {
        sampi_sel_group_free(g);
        return -ENOMEM;
    }
    return 0;
}

void sampi_sel_group_free(struct sampi_sel_group *g)
{
    free(g->members);
    free(g->iters);
    free(g->weights);
    memset(g, 0, sizeof(*g));
}

void sampi_sel_weights(enum sampi_sel_weighting how, const long *iters, int m, double *weights)
{
    long top = 0;
    double sum = 0.0;
    for (int i = 0; i < m; i++)
        top = iters[i] > top ? iters[i] : top;
    for (int i = 0; i < m; i++) {
        switch (how) {
        case SAMPI_SEL_WEIGHT_STALENESS:
            weights[i] = 1.0 / (1.0 + (double)(top - iters[i]));
            break;
        case SAMPI_SEL_WEIGHT_PROGRESS:
            weights[i] = iters[i] > 0 ? (double)iters[i] : 0.0;
            break;
        default:
            weights[i] = 1.0;
        }
        sum += weights[i];
    }
    /* All-zero progress (nobody has trained yet): a plain mean. */
    for (int i = 0; i < m; i++)
        weights[i] = sum > 0.0 ? weights[i] / sum : 1.0 / m;
}

static void priv_free(struct sampi_sel_priv *q, int n)
{
    if (!q)
        return;
    free(q->state);
    free(q->cstart);
    free(q->ready_at);
    free(q->bw);
    free(q->wait_mark);
    free(q->iter);
    free(q->queue);
    free(q->order);
    free(q->mark);
    sampi_sel_cdf_free(&q->shared);
    for (int i = 0; q->own && i < n; i++)
        sampi_sel_cdf_free(&q->own[i]);
    free(q->own);
    free(q->items);
    free(q->scratch);
    free(q->start);
    free(q->start2);
    free(q->delta);
    free(q->cands);
    free(q->pend_members);
    free(q->pend_off);
    free(q->pend_id);
    free(q->pend_kind);
    free(q);
}

void sampi_sel_policy_free(struct sampi_sel_policy *pol)
{
    priv_free(pol->priv, pol->n);
    pol->priv = NULL;
}

static int params_valid(const struct sampi_sel_params *prm)
{
    return prm->scheme >= SAMPI_SEL_SCHEME_SELECTIVE && prm->scheme <= SAMPI_SEL_SCHEME_ALLREDUCE &&
           (prm->p_count > 0 || (prm->p_frac > 0.0 && prm->p_frac <= 1.0)) && prm->eta >= 0.0 &&
           prm->eta < 1.0 && prm->theta >= 0.0 && prm->delta_t > 0.0 && prm->c >= 0 &&
           prm->model_bytes > 0.0 && prm->alpha >= 0.0 && prm->cdf_window >= 0 &&
           prm->cdf_min_samples >= 1;
}

int sampi_sel_policy_init(struct sampi_sel_policy *pol, const struct sampi_sel_params *prm, int n)
{
    int rc = 0, bad = 0;
    memset(pol, 0, sizeof(*pol));
    if (n < 1 || !params_valid(prm)) {
        rc = -EINVAL;
        goto fail;
    }
    pol->prm = *prm;
    pol->n = n;
    pol->p = sampi_sel_params_p(prm, n);
    struct sampi_sel_priv *q = array(1, sizeof(*q), &bad);
    if (bad) {
        rc = -ENOMEM;
        goto fail;
    }
    pol->priv = q;
    size_t un = (size_t)n;
    q->state = array(un, 1, &bad);
    q->cstart = array(un, sizeof(double), &bad);
    q->ready_at = array(un, sizeof(double), &bad);
    q->bw = array(un, sizeof(double), &bad);
    q->wait_mark = array(un, sizeof(double), &bad);
    q->iter = array(un, sizeof(long), &bad);
    q->queue = array(un, sizeof(int), &bad);
    q->order = array(un, sizeof(*q->order), &bad);
    q->mark = array(un, 1, &bad);
    q->order_dirty = 1;
    q->items = array(un, sizeof(*q->items), &bad);
    q->scratch = array(2 * un, sizeof(*q->scratch), &bad);
    q->start = array(un + 1, sizeof(int), &bad);
    q->start2 = array(2 * un + 1, sizeof(int), &bad);
    q->delta = array(un, sizeof(int), &bad);
    q->cands = array(un, sizeof(*q->cands), &bad);
    q->pend_members = array(un, sizeof(int), &bad);
    q->pend_off = array(un + 1, sizeof(int), &bad);
    q->pend_id = array(un, sizeof(long), &bad);
    q->pend_kind = array(un, 1, &bad);
    sampi_sel_cdf_init(&q->shared, (size_t)prm->cdf_window);
    if (prm->cdf_mode == SAMPI_SEL_CDF_PER_WORKER) {
        q->own = array(un, sizeof(*q->own), &bad);
        for (int i = 0; q->own && i < n; i++)
            sampi_sel_cdf_init(&q->own[i], (size_t)prm->cdf_window);
    }
    if (bad) {
        rc = -ENOMEM;
        goto fail;
    }
    for (int i = 0; i < n; i++)
        q->wait_mark[i] = NAN;
    q->active = n;
    return 0;
fail:
    sampi_sel_policy_free(pol);
    return rc;
}

void sampi_sel_policy_set_epoch(struct sampi_sel_policy *pol, double now)
{
    for (int i = 0; i < pol->n; i++)
        if (pol->priv->state[i] == W_COMPUTING)
            pol->priv->cstart[i] = now;
}

int sampi_sel_policy_add_samples(struct sampi_sel_policy *pol, int worker, const double *t,
                                 size_t count)
{
    struct sampi_sel_priv *q = pol->priv;
    if (worker >= pol->n || (worker >= 0 && !q->own))
        return -EINVAL;
    return sampi_sel_cdf_add_many(worker < 0 ? &q->shared : &q->own[worker], t, count);
}

int sampi_sel_policy_set_bandwidth(struct sampi_sel_policy *pol, int worker, double bandwidth)
{
    if (worker < 0 || worker >= pol->n || !(bandwidth > 0.0) || !isfinite(bandwidth))
        return -EINVAL;
    if (pol->priv->bw[worker] != bandwidth)
        pol->priv->order_dirty = 1;
    pol->priv->bw[worker] = bandwidth;
    return 0;
}

int sampi_sel_policy_report(struct sampi_sel_policy *pol, int worker, double now, long iteration,
                            double compute_time, double bandwidth)
{
    struct sampi_sel_priv *q = pol->priv;
    int rc = 0;
    if (worker < 0 || worker >= pol->n) {
        rc = -EINVAL;
        goto fail;
    }
    if (q->state[worker] != W_COMPUTING) {
        rc = q->state[worker] == W_RETIRED ? -ESRCH : -EALREADY;
        goto fail;
    }
    if (bandwidth > 0.0 && isfinite(bandwidth) && q->bw[worker] != bandwidth) {
        q->bw[worker] = bandwidth;
        q->order_dirty = 1;
    }
    if (compute_time >= 0.0 && isfinite(compute_time)) {
        rc = sampi_sel_cdf_add(&q->shared, compute_time);
        if (!rc && q->own)
            rc = sampi_sel_cdf_add(&q->own[worker], compute_time);
        if (rc)
            goto fail;
    }
    q->state[worker] = W_READY;
    q->ready_at[worker] = now;
    q->iter[worker] = iteration;
    q->queue[q->qlen++] = worker;
    pol->stats.reports++;
    /* An arrival cancels a pending wait: the next decide() re-evaluates. */
    q->dirty = 1;
    q->armed = 0;
fail:
    return rc;
}

int sampi_sel_policy_sync_done(struct sampi_sel_policy *pol, int worker, double now)
{
    struct sampi_sel_priv *q = pol->priv;
    if (worker < 0 || worker >= pol->n)
        return -EINVAL;
    if (q->state[worker] != W_SYNCING)
        return q->state[worker] == W_RETIRED ? -ESRCH : -EALREADY;
    q->state[worker] = W_COMPUTING;
    q->cstart[worker] = now;
    return 0;
}

/* Drop w from the ready queue, keeping the others' arrival order. */
static void dequeue(struct sampi_sel_priv *q, int w)
{
    int out = 0;
    for (int i = 0; i < q->qlen; i++)
        if (q->queue[i] != w)
            q->queue[out++] = q->queue[i];
    q->qlen = out;
}

int sampi_sel_policy_retire(struct sampi_sel_policy *pol, int worker)
{
    struct sampi_sel_priv *q = pol->priv;
    if (worker < 0 || worker >= pol->n)
        return -EINVAL;
    if (q->state[worker] == W_RETIRED)
        return -EALREADY;
    if (q->state[worker] == W_READY)
        dequeue(q, worker);
    q->state[worker] = W_RETIRED;
    q->wait_mark[worker] = NAN;
    q->active--;
    /* Its estimate no longer stands for "the slowest known worker". */
    q->order_dirty = 1;
    /* Fewer workers to wait for: a full sync or a group of the remaining
     * ones may be due now. */
    q->dirty = 1;
    q->armed = 0;
    return 0;
}

int sampi_sel_policy_active(const struct sampi_sel_policy *pol)
{
    return pol->priv->active;
}

int sampi_sel_policy_set_model_bytes(struct sampi_sel_policy *pol, double bytes)
{
    if (!(bytes > 0.0) || !isfinite(bytes))
        return -EINVAL;
    pol->prm.model_bytes = bytes;
    return 0;
}

/* The group-size threshold now: p, or every remaining worker when fewer than
 * p remain (a group of p could never form again). */
static int p_now(const struct sampi_sel_policy *pol)
{
    int a = pol->priv->active;
    return pol->p < a ? pol->p : (a > 0 ? a : 1);
}

int sampi_sel_policy_queued(const struct sampi_sel_policy *pol)
{
    return pol->priv->qlen;
}

/* Bandwidth estimate used for decisions: unknown = the slowest known. */
static double est(const struct sampi_sel_policy *pol, int w)
{
    double b = pol->priv->bw[w];
    return b > 0.0 ? b : pol->priv->unknown_bw;
}

static void refresh_order(struct sampi_sel_policy *pol)
{
    struct sampi_sel_priv *q = pol->priv;
    double lo = INFINITY;
    if (!q->order_dirty)
        return;
    for (int i = 0; i < pol->n; i++)
        if (q->bw[i] > 0.0 && q->state[i] != W_RETIRED)
            lo = fmin(lo, q->bw[i]);
    q->unknown_bw = isfinite(lo) ? lo : 1.0;
    for (int i = 0; i < pol->n; i++)
        q->order[i] = (struct sampi_sel_item){.bw = est(pol, i), .id = i};
    sampi_sel_sort_items(q->order, pol->n);
    q->order_dirty = 0;
}

/* Commit a launch: state, queue, statistics, and the pending list. */
static void launch(struct sampi_sel_policy *pol, double now, const int *members, int m,
                   enum sampi_sel_kind kind)
{
    struct sampi_sel_priv *q = pol->priv;
    int base = q->pend_off[q->npend];
    double newest = -INFINITY;
    for (int i = 0; i < m; i++)
        newest = fmax(newest, q->ready_at[members[i]]);
    for (int i = 0; i < m; i++) {
        int w = members[i];
        q->state[w] = W_SYNCING;
        q->pend_members[base + i] = w;
        pol->stats.wait_sum += now - q->ready_at[w];
        pol->stats.wait_count++;
        /* A BPAWR wait was wasted when nobody who became ready after it
         * began is in the group that finally launched. */
        if (!isnan(q->wait_mark[w])) {
            if (newest <= q->wait_mark[w])
                pol->stats.wasted_sum += now - q->wait_mark[w];
            q->wait_mark[w] = NAN;
        }
    }
    int out = 0;
    for (int i = 0; i < q->qlen; i++)
        if (q->state[q->queue[i]] == W_READY)
            q->queue[out++] = q->queue[i];
    q->qlen = out;
    /* Ascending ids (the ring order) by marking: O(n), no sort. */
    for (int i = 0; i < m; i++)
        q->mark[q->pend_members[base + i]] = 1;
    for (int w = 0, j = base; w < pol->n; w++)
        if (q->mark[w]) {
            q->pend_members[j++] = w;
            q->mark[w] = 0;
        }
    q->pend_kind[q->npend] = (unsigned char)kind;
    q->pend_id[q->npend] = pol->k++;
    q->pend_off[++q->npend] = base + m;
    pol->stats.launches++;
    if (kind == SAMPI_SEL_FULL)
        pol->stats.full_syncs++;
}

static double prob_ready(void *ctx, int id, double elapsed, double dt)
{
    struct sampi_sel_policy *pol = ctx;
    struct sampi_sel_priv *q = pol->priv;
    const struct sampi_sel_cdf *f = &q->shared;
    if (q->own && q->own[id].n >= (size_t)pol->prm.cdf_min_samples)
        f = &q->own[id];
    double later = sampi_sel_cdf_eval(f, elapsed + dt);
    if (pol->prm.prob == SAMPI_SEL_PROB_PAPER)
        return later;
    double ft = sampi_sel_cdf_eval(f, elapsed);
    return ft >= 1.0 - 1e-12 ? 1.0 : (later - ft) / (1.0 - ft);
}

/* Alg. 3, one pass; returns whether some group waits or holds. */
static int evaluate_selective(struct sampi_sel_policy *pol, double now)
{
    struct sampi_sel_priv *q = pol->priv;
    const struct sampi_sel_params *prm = &pol->prm;
    int n = pol->n, p = p_now(pol), waiting = 0;
    if (prm->c > 0 && pol->k % prm->c == 0) {
        if (q->qlen == q->active && q->active > 0)
            launch(pol, now, q->queue, q->qlen, SAMPI_SEL_FULL);
        return 0; /* a full turn launches nothing partial (A8) */
    }
    /* The strict trigger (A9) waits for one more than p, unless nobody else
     * is left to come. */
    if (q->qlen < p || (prm->strict_trigger && q->qlen == p && p < q->active))
        return 0;
    refresh_order(pol);
    int ns = 0, nq = 0;
    for (int i = 0; i < n; i++)
        if (q->state[i] == W_COMPUTING)
            q->cands[ns++] =
                (struct sampi_sel_cand){.bw = est(pol, i), .id = i, .elapsed = now - q->cstart[i]};
    for (int i = 0; i < n; i++)
        if (q->state[q->order[i].id] == W_READY)
            q->items[nq++] = q->order[i];
    int ng = sampi_sel_bag_sorted(q->items, nq, p, prm->eta, prm->literal_bag, q->start);
    struct sampi_sel_bpawr_args a = {.p = p,
                                     .eta = prm->eta,
                                     .theta = prm->theta,
                                     .delta_t = prm->delta_t,
                                     .v_gbit = prm->model_bytes * 8.0 / 1e9,
                                     .literal_bag = prm->literal_bag,
                                     .prob = prob_ready,
                                     .prob_ctx = pol};
    for (int gi = 0; gi < ng; gi++) {
        int lo = q->start[gi], m = q->start[gi + 1] - lo, nd = 0;
        enum sampi_sel_bpawr_result r = sampi_sel_bpawr(&a, q->cands, ns, q->items + lo, m,
                                                        q->delta, &nd, q->scratch, q->start2, NULL);
        /* g_delta is the slowest suffix of this bandwidth-sorted slice, so
         * moving it to the next group is moving the boundary. */
        if (nd > 0 && gi < ng - 1) {
            q->start[gi + 1] -= nd;
            m -= nd;
        }
        if (r == SAMPI_SEL_BPAWR_LAUNCH) {
            int *ids = q->delta; /* free again: reuse for the member ids */
            for (int i = 0; i < m; i++)
                ids[i] = q->items[lo + i].id;
            launch(pol, now, ids, m, SAMPI_SEL_PARTIAL);
            if (prm->c > 0 && pol->k % prm->c == 0)
                break; /* the next sync is the full one (A8) */
        } else {
            waiting = 1;
            if (r == SAMPI_SEL_BPAWR_WAIT_REPLACE) {
                pol->stats.waits++;
                for (int i = 0; i < m; i++)
                    if (isnan(q->wait_mark[q->items[lo + i].id]))
                        q->wait_mark[q->items[lo + i].id] = now;
            }
        }
    }
    return waiting;
}

static void evaluate(struct sampi_sel_policy *pol, double now)
{
    struct sampi_sel_priv *q = pol->priv;
    int waiting = 0;
    q->npend = q->pend_next = 0;
    q->pend_off[0] = 0;
    q->dirty = 0;
    q->armed = 0;
    pol->stats.evaluations++;
    switch (pol->prm.scheme) {
    case SAMPI_SEL_SCHEME_SELECTIVE:
        waiting = evaluate_selective(pol, now);
        break;
    case SAMPI_SEL_SCHEME_PARTIAL:
        while (q->qlen > 0 && q->qlen >= p_now(pol))
            launch(pol, now, q->queue, p_now(pol), SAMPI_SEL_PARTIAL);
        break;
    case SAMPI_SEL_SCHEME_ALLREDUCE:
        if (q->qlen == q->active && q->active > 0)
            launch(pol, now, q->queue, q->qlen, SAMPI_SEL_FULL);
        break;
    }
    if (waiting && q->qlen >= p_now(pol)) {
        q->armed = 1;
        q->wait_until = now + pol->prm.delta_t;
    }
}

static void fill_group(struct sampi_sel_policy *pol, int j, struct sampi_sel_group *out)
{
    struct sampi_sel_priv *q = pol->priv;
    refresh_order(pol);
    int lo = q->pend_off[j];
    out->id = q->pend_id[j];
    out->kind = (enum sampi_sel_kind)q->pend_kind[j];
    out->m = q->pend_off[j + 1] - lo;
    out->min_bw = INFINITY;
    for (int i = 0; i < out->m; i++) {
        int w = q->pend_members[lo + i];
        out->members[i] = w;
        out->iters[i] = q->iter[w];
        out->min_bw = fmin(out->min_bw, est(pol, w));
    }
    sampi_sel_weights(pol->prm.weighting, out->iters, out->m, out->weights);
    out->est_time =
        2.0 * out->m * pol->prm.alpha + 2.0 * pol->prm.model_bytes * 8.0 / 1e9 / out->min_bw;
}

enum sampi_sel_action sampi_sel_policy_decide(struct sampi_sel_policy *pol, double now,
                                              struct sampi_sel_group *out)
{
    struct sampi_sel_priv *q = pol->priv;
    if (q->pend_next >= q->npend && (q->dirty || (q->armed && now >= q->wait_until)))
        evaluate(pol, now);
    if (q->pend_next < q->npend) {
        fill_group(pol, q->pend_next++, out);
        return SAMPI_SEL_LAUNCH;
    }
    if (q->armed) {
        out->wait_until = q->wait_until;
        return SAMPI_SEL_WAIT;
    }
    return SAMPI_SEL_IDLE;
}
