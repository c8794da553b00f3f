/*
 * selective_policy.h - Selective Reduce controller policy (BAG, BPAWR, the
 * SelectiveReduce decision step: Luo et al., "Progress and Bandwidth Aware
 * Partial Model Synchronization With Selective Reduce", Sec. III-C to III-E)
 * and the partial-reduce / all-reduce baselines, as a pure library: no MPI,
 * no I/O, no clocks.  Time is seconds as a double supplied by the caller, on
 * any clock that only moves forward; bandwidths are Gbps.
 *
 * How a controller drives it
 * --------------------------
 *   struct sampi_sel_params prm;
 *   sampi_sel_params_default(&prm);          // paper defaults (p = 0.3n, ...)
 *   sampi_sel_params_from_cvars(&prm);       // optional: SAMPI_SELECTIVE_* / MPI_T
 *   struct sampi_sel_policy pol;
 *   sampi_sel_policy_init(&pol, &prm, n);    // n workers 0..n-1, all computing
 *   sampi_sel_policy_set_epoch(&pol, now);   // they started computing at `now`
 *   struct sampi_sel_group grp;
 *   sampi_sel_group_init(&grp, n);
 *   loop:
 *     on READY from worker w:   sampi_sel_policy_report(&pol, w, now, iter, t_compute, bw);
 *     on DONE from worker w:    sampi_sel_policy_sync_done(&pol, w, now);
 *     on STOP from worker w:    sampi_sel_policy_retire(&pol, w);
 *     when the model size is known or changes: sampi_sel_policy_set_model_bytes(&pol, v);
 *     then, and whenever `now` reaches the deadline of the last WAIT:
 *       while ((a = sampi_sel_policy_decide(&pol, now, &grp)) == SAMPI_SEL_LAUNCH)
 *           send GROUP {grp.id, grp.kind, grp.m, grp.members, grp.weights} to each member;
 *       if (a == SAMPI_SEL_WAIT) sleep/receive until grp.wait_until at most;
 *       if (a == SAMPI_SEL_IDLE) block until the next READY/DONE;
 *   sampi_sel_group_free(&grp); sampi_sel_policy_free(&pol);
 *
 * decide() evaluates Alg. 3 once per change (a report, or the WAIT deadline
 * passing): the one pass may launch several groups, which decide() hands out
 * one per call (LAUNCH) before it answers WAIT or IDLE.  Calling it again
 * with nothing new is cheap and repeats the last WAIT/IDLE answer.  A
 * launched worker is "syncing" until sync_done(); it is then computing again,
 * and its elapsed compute time (BPAWR's t_i) counts from that `now`.
 *
 * Bandwidth: `bw` > 0 in report() (or set_bandwidth()) replaces the worker's
 * estimate; `bw` <= 0 keeps the previous one.  A worker never given one is
 * treated as the slowest known worker (1 Gbps when none is known), so an
 * unmeasured worker never drags a fast group down.
 *
 * Where the paper can be read two ways, the reading is an option in
 * sampi_sel_params; the defaults are: BAG core of p (A1), b* reset on a new group (A2),
 * LAUNCH <=> |g| >= p and t_X <= theta*dt (A4), p_i = F(t_i + dt) (A5), floor
 * (A6), probability-weighted mean bandwidth (A7), k counts full syncs and the
 * group loop stops at a full turn (A8), trigger |Q| >= p (A9), staleness-damped
 * weights (A16).
 */
#ifndef SAMPI_SELECTIVE_POLICY_H
#define SAMPI_SELECTIVE_POLICY_H

#include <stddef.h>

/* Which controller runs: the paper's three schemes. */
enum sampi_sel_scheme {
    SAMPI_SEL_SCHEME_SELECTIVE = 0, /* BAG + BPAWR (Alg. 3) */
    SAMPI_SEL_SCHEME_PARTIAL,       /* FIFO: as soon as p are ready, pop p and launch */
    SAMPI_SEL_SCHEME_ALLREDUCE      /* BSP: all n, every round */
};

/* Completion-time distribution used by BPAWR (Eq. 4). */
enum sampi_sel_cdf_mode {
    SAMPI_SEL_CDF_SHARED = 0, /* one empirical CDF over every worker's rounds */
    SAMPI_SEL_CDF_PER_WORKER  /* one per worker; shared until it has cdf_min_samples */
};

/* Probability that an in-training worker is ready within dt (A5). */
enum sampi_sel_prob_mode {
    SAMPI_SEL_PROB_PAPER = 0,  /* F(t_i + dt), as Alg. 2 uses it */
    SAMPI_SEL_PROB_CONDITIONAL /* (F(t+dt) - F(t)) / (1 - F(t)) */
};

/* Weights of the weighted all-reduce (A16); s_i = max_j it_j - it_i. */
enum sampi_sel_weighting {
    SAMPI_SEL_WEIGHT_STALENESS = 0, /* w_i ~ 1/(1+s_i) (DynSGD-like) */
    SAMPI_SEL_WEIGHT_PROGRESS,      /* w_i ~ it_i */
    SAMPI_SEL_WEIGHT_UNIFORM        /* w_i = 1/|g| */
};

struct sampi_sel_params {
    enum sampi_sel_scheme scheme;
    double p_frac;      /* p = max(1, round(p_frac * n)) unless p_count > 0; paper 0.3 */
    int p_count;        /* > 0: p itself */
    double eta;         /* BAG relaxation; paper 0.3 */
    double theta;       /* BPAWR waiting threshold factor; paper 1 */
    double delta_t;     /* waiting slot (s); not in the paper; 0.01 is ours */
    int c;              /* full synchronisation every c syncs; 0 = never (default) */
    double model_bytes; /* v in t_X = 2v/b - 2v/b': the allreduce's bytes; paper 500 MB */
    double alpha;       /* one-way latency (s) for the T(g) estimate; paper 1e-3 */
    enum sampi_sel_cdf_mode cdf_mode;
    int cdf_window;      /* keep the last cdf_window samples per CDF; 0 = unbounded */
    int cdf_min_samples; /* per-worker CDF used once it has this many samples */
    enum sampi_sel_prob_mode prob;
    int literal_bag;    /* A1: core of p+1 ('len(g) <= p') instead of p */
    int strict_trigger; /* A9: evaluate only when |Q| > p instead of >= p */
    enum sampi_sel_weighting weighting;
};

/* Fills the defaults: the paper's, and ours where it gives none. */
void sampi_sel_params_default(struct sampi_sel_params *prm);

/* Overrides prm from the sampi_selective_* control variables (environment
 * SAMPI_SELECTIVE_*, MPI_T).  Returns 0, or -EINVAL when one does not parse
 * (prm is then unchanged). */
int sampi_sel_params_from_cvars(struct sampi_sel_params *prm);

/* p for n workers under prm (>= 1, <= n). */
int sampi_sel_params_p(const struct sampi_sel_params *prm, int n);

/* ------------------------------------------------------------------ groups */

enum sampi_sel_kind { SAMPI_SEL_PARTIAL = 0, SAMPI_SEL_FULL = 1 };

/* One group to launch; arrays of capacity n, owned by the caller through
 * sampi_sel_group_init/free. */
struct sampi_sel_group {
    long id;                  /* sync sequence number k (0, 1, 2, ...) */
    enum sampi_sel_kind kind; /* FULL: every worker not retired, the c-round full sync */
    int m;                    /* members */
    int *members;             /* ascending worker ids (the ring order) */
    long *iters;              /* each member's reported iteration count */
    double *weights;          /* per member, sum 1 (params.weighting) */
    double min_bw;            /* slowest member's estimate (Gbps) */
    double est_time;          /* T(g) = 2 m alpha + 2 v / min_bw (s), from estimates */
    double wait_until;        /* SAMPI_SEL_WAIT: re-evaluate at this time at the latest */
    int capacity;
};

int sampi_sel_group_init(struct sampi_sel_group *g, int n);
void sampi_sel_group_free(struct sampi_sel_group *g);

/* Reduction weights for m members with iteration counts iters[] (sum 1). */
void sampi_sel_weights(enum sampi_sel_weighting how, const long *iters, int m, double *weights);

/* --------------------------------------------------------- the controller */

enum sampi_sel_action {
    SAMPI_SEL_IDLE = 0, /* nothing to do until the next report */
    SAMPI_SEL_LAUNCH,   /* launch *out now; call decide() again */
    SAMPI_SEL_WAIT      /* BPAWR waits: call decide() again by out->wait_until */
};

/* Counters the policy keeps (the simulator prints them; the controller may
 * export them). */
struct sampi_sel_stats {
    long evaluations;  /* Alg. 3 passes */
    long launches;     /* groups handed out */
    long full_syncs;   /* of which FULL */
    long waits;        /* BPAWR WAIT_AND_REPLACE answers */
    long reports;      /* READY reports */
    double wait_sum;   /* sum over launched members of (launch - ready) (s) */
    long wait_count;   /* members counted in wait_sum */
    double wasted_sum; /* BPAWR waits that gained no later-ready member (s, summed) */
};

struct sampi_sel_priv; /* queues, CDFs, scratch: private to selective_policy.c */

/* Opaque in spirit: read only `stats` and `p` directly. */
struct sampi_sel_policy {
    struct sampi_sel_params prm;
    int n, p;
    long k; /* syncs launched (Alg. 3's k) */
    struct sampi_sel_stats stats;
    struct sampi_sel_priv *priv;
};

/* Returns 0, -EINVAL (n < 1 or a parameter out of range) or -ENOMEM. */
int sampi_sel_policy_init(struct sampi_sel_policy *pol, const struct sampi_sel_params *prm, int n);
void sampi_sel_policy_free(struct sampi_sel_policy *pol);

/* Every worker (re)starts computing at `now` (default: time 0 at init). */
void sampi_sel_policy_set_epoch(struct sampi_sel_policy *pol, double now);

/* Warm start: add compute-time samples to the shared CDF (worker < 0) or to
 * one worker's. Returns 0 or -EINVAL / -ENOMEM. */
int sampi_sel_policy_add_samples(struct sampi_sel_policy *pol, int worker, const double *t,
                                 size_t count);

/* Worker became ready at `now` after a round of `compute_time` seconds that
 * brought it to `iteration`; bandwidth in Gbps (<= 0: keep the estimate).
 * compute_time < 0 adds no CDF sample.  Returns 0, -EINVAL (bad worker),
 * -EALREADY (the worker is already ready or syncing) or -ESRCH (retired). */
int sampi_sel_policy_report(struct sampi_sel_policy *pol, int worker, double now, long iteration,
                            double compute_time, double bandwidth);

/* Update one worker's bandwidth estimate (Gbps > 0). */
int sampi_sel_policy_set_bandwidth(struct sampi_sel_policy *pol, int worker, double bandwidth);

/* The worker's sync finished at `now`; it computes again.  Returns 0,
 * -EINVAL, -EALREADY (it was not syncing) or -ESRCH (retired). */
int sampi_sel_policy_sync_done(struct sampi_sel_policy *pol, int worker, double now);

/* One decision step at time `now` (see the top of this file). */
enum sampi_sel_action sampi_sel_policy_decide(struct sampi_sel_policy *pol, double now,
                                              struct sampi_sel_group *out);

/* Number of ready (queued) workers. */
int sampi_sel_policy_queued(const struct sampi_sel_policy *pol);

/* The worker has finished training and leaves for good, from whatever state:
 * it is dropped from the ready queue, never grouped again, and later full
 * synchronisations (and the allreduce scheme's rounds) cover only the
 * remaining workers.  When fewer than p remain, the remaining ones are
 * grouped once they are all ready (the threshold becomes their number), so
 * that the last workers are never left waiting for a group that cannot form.
 * report() and sync_done() for it answer -ESRCH afterwards.  Returns 0,
 * -EINVAL (bad worker) or -EALREADY (already retired). */
int sampi_sel_policy_retire(struct sampi_sel_policy *pol, int worker);

/* Workers not retired. */
int sampi_sel_policy_active(const struct sampi_sel_policy *pol);

/* The size v (bytes) of the all-reduce, used by BPAWR's t_X and by est_time
 * from the next decision on.  Returns 0 or -EINVAL (not finite and > 0). */
int sampi_sel_policy_set_model_bytes(struct sampi_sel_policy *pol, double bytes);

/* ------------------------------------------------ pure building blocks */

/* A worker (id >= 0) or a BPAWR virtual worker (id < 0) with a bandwidth. */
struct sampi_sel_item {
    double bw;
    int id;
};

/* BAG (Alg. 1): sorts items[0..m) in place by bandwidth non-increasing (ties:
 * smaller id first) and writes group boundaries: group j is
 * items[start[j] .. start[j+1]); start needs room for m + 1 entries.  Returns
 * the number of groups (0 when m == 0).  literal: A1's core of p+1. */
int sampi_sel_bag(struct sampi_sel_item *items, int m, int p, double eta, int literal, int *start);

/* Sorts items[0..m) in BAG's order (bandwidth non-increasing, then id). */
void sampi_sel_sort_items(struct sampi_sel_item *items, int m);

/* The same on items already in that order (no sort): O(m). */
int sampi_sel_bag_sorted(const struct sampi_sel_item *items, int m, int p, double eta, int literal,
                         int *start);

/* A worker still computing, as BPAWR sees it. */
struct sampi_sel_cand {
    double bw;
    int id;
    double elapsed; /* t_i: time since its current round started */
    int claimed;    /* set by bpawr when predicted for a group (S \ C) */
};

/* Probability that candidate `id` finishes within `elapsed + dt`. */
typedef double (*sampi_sel_prob_fn)(void *ctx, int id, double elapsed, double dt);

enum sampi_sel_bpawr_result {
    SAMPI_SEL_BPAWR_HOLD = 0,    /* |g| < p: wait for more ready workers */
    SAMPI_SEL_BPAWR_LAUNCH,      /* launch g now */
    SAMPI_SEL_BPAWR_WAIT_REPLACE /* wait dt: faster workers are expected to replace g_delta */
};

struct sampi_sel_bpawr_args {
    int p;
    double eta, theta, delta_t;
    double v_gbit; /* model size in Gbit: 2v/b seconds with b in Gbps */
    int literal_bag;
    sampi_sel_prob_fn prob;
    void *prob_ctx;
};

/* BPAWR (Alg. 2) for ready group g[0..m) against candidates training[0..ns),
 * the workers still training (the paper's S; unclaimed ones only; those
 * with bw > min(g) get claimed).  g is not
 * modified.  On WAIT_REPLACE, the ids of g's workers that the predicted ones
 * would replace are written to delta[] (room for m) and counted in *ndelta.
 * scratch needs room for m + ns items and start for m + ns + 1 ints.  *tx
 * (may be NULL) receives the time saved by the replacement. */
enum sampi_sel_bpawr_result sampi_sel_bpawr(const struct sampi_sel_bpawr_args *args,
                                            struct sampi_sel_cand *training, int ns,
                                            const struct sampi_sel_item *g, int m, int *delta,
                                            int *ndelta, struct sampi_sel_item *scratch, int *start,
                                            double *tx);

#endif
