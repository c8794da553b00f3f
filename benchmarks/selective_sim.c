/*
 * selective_sim.c - discrete-event simulator of Selective Reduce (Luo et al.)
 * in the paper's setup, driving the same C policy code as sampi-controller
 * (coll_algos/selective_policy.h).  The setup is the paper's
 * (Sec. IV-A); this program follows the reference simulator (where present,
 * docs/design.md) choice for choice, down to its
 * random streams (Python's Mersenne Twister, seeded the same way), so both
 * print the same figures for the same inputs.
 *
 * Model: n workers; worker i has a fixed bandwidth b_i = round(20u, 3) Gbps,
 * u ~ U[lambda, 1]; each round it computes for a time drawn from a trace
 * ('cnn': N(0.40, 0.015) s floored at 0.2 s, x U[1.2, 2] with probability 3%;
 * 'transformer': 0.15 s + LogNormal(median 0.25 s, sigma 0.6)); a sync of
 * group g is a ring all-reduce of T(g) = 2|g|alpha + 2v/min_g b (v = 500 MB,
 * alpha = 1 ms); groups never interfere (contention only at the edge, one
 * group per worker); members compute again as soon as their sync ends.
 * Decisions use bandwidth estimates (optionally off by b e x, x ~ U[-1, 1]),
 * sync times the true bandwidths.  Metrics count what completes within the
 * horizon (100 s); the median over trials is printed, and the time of every
 * controller decision (report + decide calls) is measured on this host.
 */
#include "selective_policy.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ----------------------------------------------------- Python's random */

/* MT19937 as CPython's _random seeds and reads it, so that a stream here
 * equals random.Random(seed) there: seed() with a non-negative int,
 * random(), gauss() (with its cached second value) and uniform(). */
#define MT_N 624
#define MT_M 397

struct pyrand {
    uint32_t mt[MT_N];
    int index;
    int has_gauss;
    double gauss_next;
};

static void mt_init_genrand(struct pyrand *r, uint32_t s)
{
    r->mt[0] = s;
    for (int i = 1; i < MT_N; i++)
        r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
    r->index = MT_N;
}

static void pyrand_seed(struct pyrand *r, uint64_t seed)
{
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    int len = key[1] ? 2 : 1;
    mt_init_genrand(r, 19650218u);
    int i = 1, j = 0;
    for (int k = MT_N > len ? MT_N : len; k; k--) {
        r->mt[i] =
            (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
        i++;
        j++;
        if (i >= MT_N) {
            r->mt[0] = r->mt[MT_N - 1];
            i = 1;
        }
        if (j >= len)
            j = 0;
    }
    for (int k = MT_N - 1; k; k--) {
        r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
        i++;
        if (i >= MT_N) {
            r->mt[0] = r->mt[MT_N - 1];
            i = 1;
        }
    }
    r->mt[0] = 0x80000000u;
    r->index = MT_N;
    r->has_gauss = 0;
}

static uint32_t mt_next(struct pyrand *r)
{
    static const uint32_t mag01[2] = {0u, 0x9908b0dfu};
    if (r->index >= MT_N) {
        int kk;
        uint32_t y;
        for (kk = 0; kk < MT_N - MT_M; kk++) {
            y = (r->mt[kk] & 0x80000000u) | (r->mt[kk + 1] & 0x7fffffffu);
            r->mt[kk] = r->mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1u];
        }
        for (; kk < MT_N - 1; kk++) {
            y = (r->mt[kk] & 0x80000000u) | (r->mt[kk + 1] & 0x7fffffffu);
            r->mt[kk] = r->mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1u];
        }
        y = (r->mt[MT_N - 1] & 0x80000000u) | (r->mt[0] & 0x7fffffffu);
        r->mt[MT_N - 1] = r->mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1u];
        r->index = 0;
    }
    uint32_t y = r->mt[r->index++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

static double py_random(struct pyrand *r)
{
    uint32_t a = mt_next(r) >> 5, b = mt_next(r) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

static double py_uniform(struct pyrand *r, double a, double b)
{
    return a + (b - a) * py_random(r);
}

static double py_gauss(struct pyrand *r, double mu, double sigma)
{
    double z;
    if (r->has_gauss) {
        z = r->gauss_next;
        r->has_gauss = 0;
    } else {
        double x2pi = py_random(r) * 2.0 * M_PI;
        double g2rad = sqrt(-2.0 * log(1.0 - py_random(r)));
        z = cos(x2pi) * g2rad;
        r->gauss_next = sin(x2pi) * g2rad;
        r->has_gauss = 1;
    }
    return mu + z * sigma;
}

/* Python's round(x, 3): the exact binary value rounded half-even. */
static double round3(double x)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%.3f", x);
    return strtod(buf, NULL);
}

/* ------------------------------------------------------------- traces */

static double draw_cnn(struct pyrand *r)
{
    double t = py_gauss(r, 0.40, 0.015);
    t = fmax(t, 0.40 * 0.5);
    if (py_random(r) < 0.03)
        t *= py_uniform(r, 1.2, 2.0);
    return t;
}

static double draw_transformer(struct pyrand *r)
{
    return 0.15 + exp(py_gauss(r, log(0.25), 0.6));
}

static const struct {
    const char *name;
    double (*draw)(struct pyrand *r);
} traces[] = {{"cnn", draw_cnn}, {"transformer", draw_transformer}};

/* ------------------------------------------------------------- config */

struct cfg {
    int n, trace, trials, cold, cdf_per_worker, json, robustness;
    unsigned seed;
    double horizon, lam, alpha_ms, model_mb, bw_err;
    int cdf_samples;
    const char *schemes;
    struct sampi_sel_params prm;
};

/* ------------------------------------------------------------- events */

enum { EV_COMPUTE, EV_SYNC, EV_TIMEOUT };

struct event {
    double t;
    long seq;
    int type, worker;
    double d;   /* compute time, or the sync's duration */
    int *group; /* EV_SYNC: members (group[-1] is the count, see push_sync) */
};

struct heap {
    struct event *a;
    size_t n, cap;
    long seq;
};

static int ev_less(const struct event *x, const struct event *y)
{
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static int heap_push(struct heap *h, struct event e)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 1024;
        struct event *a = realloc(h->a, cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        h->a = a;
        h->cap = cap;
    }
    e.seq = ++h->seq;
    size_t i = h->n++;
    while (i > 0 && ev_less(&e, &h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = e;
    return 0;
}

static struct event heap_pop(struct heap *h)
{
    struct event top = h->a[0], last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && ev_less(&h->a[c + 1], &h->a[c]))
            c++;
        if (!ev_less(&h->a[c], &last))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n)
        h->a[i] = last;
    return top;
}

/* ---------------------------------------------------------- one trial */

struct result {
    double sync_time, scale, syncs, iters, wait, wasted_ms, spread, evals;
};

struct timing {
    double *us;
    size_t n, cap;
};

static int timing_add(struct timing *t, double us)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        double *a = realloc(t->us, cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        t->us = a;
        t->cap = cap;
    }
    t->us[t->n++] = us;
    return 0;
}

/* Decision timing.  clock_gettime costs microseconds in some sandboxes (a
 * system call), more than a decision; on x86-64 the invariant TSC, read in
 * ~10 ns and calibrated once against CLOCK_MONOTONIC, is used instead. */
static double clock_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static double ticks_per_us;

static void timer_calibrate(void)
{
    double t0 = clock_mono_us();
    unsigned long long c0 = __rdtsc();
    while (clock_mono_us() - t0 < 20000.0)
        ;
    ticks_per_us = (double)(__rdtsc() - c0) / (clock_mono_us() - t0);
}

static double timer_us(void)
{
    return (double)__rdtsc() / ticks_per_us;
}
#else
static void timer_calibrate(void)
{
}

static double timer_us(void)
{
    return clock_mono_us();
}
#endif

/* Decision timings: all decisions, and those with >= p ready (BAG and
 * BPAWR ran). */
enum { T_ALL, T_GROUPING, T_COUNT };

struct sim {
    const struct cfg *cfg;
    int n;
    double v_gbit, alpha;
    double *bw, *bw_est;
    struct pyrand *wrng;
    long *iters;
    struct heap heap;
    struct sampi_sel_policy pol;
    struct sampi_sel_group grp;
    double last_deadline;
    double sum_t, sum_m;
    long syncs, total_iters;
    struct timing *timing; /* [T_COUNT] */
    double spent;          /* us in policy calls, this decision so far */
};

/* Policy calls only are timed, not the simulator's own bookkeeping. */
#define TIMED(s, call)                                                                             \
    do {                                                                                           \
        double t_ = timer_us();                                                                    \
        call;                                                                                      \
        (s)->spent += timer_us() - t_;                                                             \
    } while (0)

static int start_compute(struct sim *s, int i, double now)
{
    double d = traces[s->cfg->trace].draw(&s->wrng[i]);
    return heap_push(&s->heap,
                     (struct event){.t = now + d, .type = EV_COMPUTE, .worker = i, .d = d});
}

/* Ask the policy until it has nothing to launch; a WAIT arms a timeout. */
static int decide(struct sim *s, double now)
{
    int rc = 0;
    enum sampi_sel_action a;
    for (;;) {
        TIMED(s, a = sampi_sel_policy_decide(&s->pol, now, &s->grp));
        if (a != SAMPI_SEL_LAUNCH)
            break;
        double bmin = INFINITY;
        int *g = malloc((size_t)(s->grp.m + 1) * sizeof(int));
        if (!g) {
            rc = -ENOMEM;
            goto fail;
        }
        g[0] = s->grp.m;
        for (int i = 0; i < s->grp.m; i++) {
            g[i + 1] = s->grp.members[i];
            bmin = fmin(bmin, s->bw[s->grp.members[i]]);
        }
        double T = 2.0 * s->grp.m * s->alpha + 2.0 * s->v_gbit / bmin;
        rc = heap_push(&s->heap, (struct event){.t = now + T, .type = EV_SYNC, .d = T, .group = g});
        if (rc) {
            free(g);
            goto fail;
        }
    }
    if (a == SAMPI_SEL_WAIT && s->grp.wait_until != s->last_deadline) {
        s->last_deadline = s->grp.wait_until;
        rc = heap_push(&s->heap, (struct event){.t = s->grp.wait_until, .type = EV_TIMEOUT});
    }
fail:
    return rc;
}

/* One controller decision, timed: the READY report (on a compute event) and
 * the decide calls after it. */
static int decision(struct sim *s, double now, const struct event *e, int cold)
{
    int rc = 0;
    s->spent = 0.0;
    if (e->type == EV_COMPUTE)
        TIMED(s, rc = sampi_sel_policy_report(&s->pol, e->worker, now, s->iters[e->worker],
                                              cold ? e->d : -1.0, 0.0));
    int grouping = sampi_sel_policy_queued(&s->pol) >= s->pol.p;
    if (!rc)
        rc = decide(s, now);
    if (!rc)
        rc = timing_add(&s->timing[T_ALL], s->spent);
    if (!rc && grouping)
        rc = timing_add(&s->timing[T_GROUPING], s->spent);
    return rc;
}

static int run_trial(const struct cfg *cfg, const struct sampi_sel_params *prm, double bw_err,
                     int cold, int trial, struct result *res, struct timing *timing)
{
    struct sim s = {.cfg = cfg, .n = cfg->n, .timing = timing, .last_deadline = NAN};
    int n = cfg->n, rc = 0;
    uint64_t base = (uint64_t)cfg->seed * 1000003u + (uint64_t)trial * 7919u + (uint64_t)n;
    struct pyrand r;
    double *warm = NULL;
    s.v_gbit = cfg->model_mb * 8.0 / 1000.0;
    s.alpha = cfg->alpha_ms / 1000.0;
    s.bw = calloc((size_t)n, sizeof(double));
    s.bw_est = calloc((size_t)n, sizeof(double));
    s.iters = calloc((size_t)n, sizeof(long));
    s.wrng = calloc((size_t)n, sizeof(*s.wrng));
    if (!s.bw || !s.bw_est || !s.iters || !s.wrng) {
        rc = -ENOMEM;
        goto fail;
    }
    rc = sampi_sel_policy_init(&s.pol, prm, n);
    if (rc)
        goto fail;
    rc = sampi_sel_group_init(&s.grp, n);
    if (rc)
        goto fail;
    pyrand_seed(&r, base);
    for (int i = 0; i < n; i++)
        s.bw[i] = fmax(round3(20.0 * py_uniform(&r, cfg->lam, 1.0)), 0.001);
    pyrand_seed(&r, base + 17);
    for (int i = 0; i < n; i++) {
        s.bw_est[i] = s.bw[i];
        if (bw_err > 0)
            s.bw_est[i] = fmax(0.001, s.bw[i] + s.bw[i] * bw_err * py_uniform(&r, -1.0, 1.0));
        sampi_sel_policy_set_bandwidth(&s.pol, i, s.bw_est[i]);
    }
    for (int i = 0; i < n; i++)
        pyrand_seed(&s.wrng[i], base * 131u + 1u + (uint64_t)i);
    if (!cold) {
        /* Warm start: the distribution is known in advance (a large sample). */
        warm = malloc((size_t)cfg->cdf_samples * sizeof(double));
        if (!warm) {
            rc = -ENOMEM;
            goto fail;
        }
        pyrand_seed(&r, base + 99);
        for (int i = 0; i < cfg->cdf_samples; i++)
            warm[i] = traces[cfg->trace].draw(&r);
        rc = sampi_sel_policy_add_samples(&s.pol, -1, warm, (size_t)cfg->cdf_samples);
        if (rc)
            goto fail;
    }
    for (int i = 0; i < n && !rc; i++)
        rc = start_compute(&s, i, 0.0);
    while (!rc && s.heap.n) {
        struct event e = heap_pop(&s.heap);
        if (e.t > cfg->horizon) {
            free(e.group);
            break;
        }
        double now = e.t;
        switch (e.type) {
        case EV_COMPUTE:
            s.iters[e.worker]++;
            s.total_iters++;
            rc = decision(&s, now, &e, cold);
            break;
        case EV_SYNC:
            s.sum_t += e.d;
            s.sum_m += e.group[0];
            s.syncs++;
            for (int i = 1; i <= e.group[0] && !rc; i++) {
                rc = sampi_sel_policy_sync_done(&s.pol, e.group[i], now);
                if (!rc)
                    rc = start_compute(&s, e.group[i], now);
            }
            free(e.group);
            break;
        default:
            rc = decision(&s, now, &e, cold);
        }
    }
    if (rc)
        goto fail;
    long lo = s.iters[0], hi = s.iters[0];
    for (int i = 1; i < n; i++) {
        lo = s.iters[i] < lo ? s.iters[i] : lo;
        hi = s.iters[i] > hi ? s.iters[i] : hi;
    }
    const struct sampi_sel_stats *st = &s.pol.stats;
    *res = (struct result){
        .sync_time = s.syncs ? s.sum_t / s.syncs : NAN,
        .scale = s.syncs ? s.sum_m / s.syncs : NAN,
        .syncs = (double)s.syncs,
        .iters = (double)s.total_iters,
        .wait = st->wait_count ? st->wait_sum / st->wait_count : 0.0,
        .wasted_ms = 1000.0 * st->wasted_sum / n,
        .spread = (double)(hi - lo),
        .evals = (double)st->evaluations,
    };
fail:
    for (size_t i = 0; i < s.heap.n; i++)
        free(s.heap.a[i].group);
    free(s.heap.a);
    free(warm);
    sampi_sel_group_free(&s.grp);
    if (s.pol.priv)
        sampi_sel_policy_free(&s.pol);
    free(s.bw);
    free(s.bw_est);
    free(s.iters);
    free(s.wrng);
    return rc;
}

/* ----------------------------------------------------------- reporting */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* statistics.median: the mean of the middle two for an even count. */
static double median(double *v, int k)
{
    qsort(v, (size_t)k, sizeof(double), cmp_double);
    return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

static double quantile(double *v, size_t k, double q)
{
    if (!k)
        return 0.0;
    qsort(v, k, sizeof(double), cmp_double);
    size_t i = (size_t)ceil(q * (double)k);
    return v[i ? i - 1 : 0];
}

struct point {
    const char *label;
    struct result med;
    double minv[8], maxv[8];
    double p50[T_COUNT], p99[T_COUNT], wall_max;
    size_t count[T_COUNT];
};

#define NFIELDS 8

static int run_point(const struct cfg *cfg, enum sampi_sel_scheme scheme, double bw_err, int cold,
                     const char *label, struct point *pt)
{
    struct timing timing[T_COUNT] = {{0}};
    int rc = 0, k = cfg->trials;
    double *vals = calloc((size_t)(NFIELDS * k), sizeof(double));
    struct sampi_sel_params prm = cfg->prm;
    prm.scheme = scheme;
    if (!vals) {
        rc = -ENOMEM;
        goto fail;
    }
    for (int t = 0; t < k && !rc; t++) {
        struct result r = {0};
        rc = run_trial(cfg, &prm, bw_err, cold, t, &r, timing);
        double f[NFIELDS] = {r.sync_time, r.scale,     r.syncs,  r.iters,
                             r.wait,      r.wasted_ms, r.spread, r.evals};
        for (int j = 0; j < NFIELDS; j++)
            vals[j * k + t] = f[j];
    }
    if (rc)
        goto fail;
    double m[NFIELDS];
    for (int j = 0; j < NFIELDS; j++) {
        m[j] = median(vals + j * k, k);
        pt->minv[j] = vals[j * k];
        pt->maxv[j] = vals[j * k + k - 1];
    }
    pt->label = label;
    pt->med = (struct result){m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]};
    for (int j = 0; j < T_COUNT; j++) {
        pt->count[j] = timing[j].n;
        pt->p50[j] = quantile(timing[j].us, timing[j].n, 0.50);
        pt->p99[j] = quantile(timing[j].us, timing[j].n, 0.99);
    }
    pt->wall_max = timing[T_ALL].n ? timing[T_ALL].us[timing[T_ALL].n - 1] : 0.0;
fail:
    free(vals);
    for (int j = 0; j < T_COUNT; j++)
        free(timing[j].us);
    return rc;
}

static void print_point(const struct cfg *cfg, const struct point *pt, double bw_err, int cold)
{
    const struct result *r = &pt->med;
    if (cfg->json) {
        printf("{\"scheme\":\"%s\",\"n\":%d,\"trace\":\"%s\",\"p\":%d,\"avg_sync_time_s\":%.6f,"
               "\"avg_sync_scale\":%.4f,\"total_syncs\":%.1f,\"total_iterations\":%.1f,"
               "\"avg_wait_s\":%.6f,\"wasted_ms_per_worker\":%.3f,\"iteration_spread\":%.1f,"
               "\"decision_us_p50\":%.3f,\"decision_us_p99\":%.3f,\"decision_us_max\":%.3f,"
               "\"decisions\":%zu,\"grouping_decision_us_p50\":%.3f,"
               "\"grouping_decision_us_p99\":%.3f,\"grouping_decisions\":%zu,\"bw_err\":%g,\"cdf\":"
               "\"%s\",\"trials\":%d,"
               "\"seed\":%u,\"horizon_s\":%g,\"eta\":%g,\"theta\":%g,\"delta_t_s\":%g,\"c\":%d,"
               "\"lambda\":%g,\"alpha_ms\":%g,\"model_mb\":%g,\"sync_time_min\":%.6f,"
               "\"sync_time_max\":%.6f,\"scale_min\":%.4f,\"scale_max\":%.4f}\n",
               pt->label, cfg->n, traces[cfg->trace].name, sampi_sel_params_p(&cfg->prm, cfg->n),
               r->sync_time, r->scale, r->syncs, r->iters, r->wait, r->wasted_ms, r->spread,
               pt->p50[T_ALL], pt->p99[T_ALL], pt->wall_max, pt->count[T_ALL], pt->p50[T_GROUPING],
               pt->p99[T_GROUPING], pt->count[T_GROUPING], bw_err, cold ? "cold" : "warm",
               cfg->trials, cfg->seed, cfg->horizon, cfg->prm.eta, cfg->prm.theta, cfg->prm.delta_t,
               cfg->prm.c, cfg->lam, cfg->alpha_ms, cfg->model_mb, pt->minv[0], pt->maxv[0],
               pt->minv[1], pt->maxv[1]);
    } else {
        printf("%-20s %9.3f %8.2f %7.1f %8.1f %8.3f %7.1f %6.1f %8.2f %8.2f %8.2f %8.1f\n",
               pt->label, r->sync_time, r->scale, r->syncs, r->iters, r->wait, r->wasted_ms,
               r->spread, pt->p50[T_ALL], pt->p99[T_ALL], pt->p99[T_GROUPING], pt->wall_max);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: selective-sim --n N --trace cnn|transformer [--seed S] [--json]\n"
               "  [--trials T=10] [--horizon S=100] [--schemes allreduce,partial,selective]\n"
               "  [--no-robustness] [--p P=0.3 (fraction < 1, or count)] [--eta 0.3] [--theta 1]\n"
               "  [--dt 0.01] [--c 0] [--lam 0.05] [--alpha-ms 1] [--model-mb 500] [--cold]\n"
               "  [--bw-err E] [--cond] [--literal-bag] [--strict-trigger] [--cdf-per-worker]\n"
               "  [--cdf-samples 20000] [--cdf-window W=0 (every sample)]\n"
               "Simulates all-reduce, partial reduce and selective reduce in the paper's setup\n"
               "(median over trials); robustness rows: selective with bandwidth estimation error\n"
               "0.1 and 0.3, and with an unknown (learned online) compute-time distribution.\n");
}

static int parse_args(int argc, char **argv, struct cfg *c)
{
    *c = (struct cfg){.n = 0,
                      .trace = -1,
                      .trials = 10,
                      .seed = 1,
                      .horizon = 100.0,
                      .lam = 0.05,
                      .alpha_ms = 1.0,
                      .model_mb = 500.0,
                      .cdf_samples = 20000,
                      .robustness = 1,
                      .schemes = "allreduce,partial,selective"};
    sampi_sel_params_default(&c->prm);
    c->prm.cdf_window = 0; /* selective_sim.py keeps every sample */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1;
        if (!strcmp(a, "--json"))
            c->json = 1, used = 0;
        else if (!strcmp(a, "--cold"))
            c->cold = 1, used = 0;
        else if (!strcmp(a, "--no-robustness"))
            c->robustness = 0, used = 0;
        else if (!strcmp(a, "--cond"))
            c->prm.prob = SAMPI_SEL_PROB_CONDITIONAL, used = 0;
        else if (!strcmp(a, "--literal-bag"))
            c->prm.literal_bag = 1, used = 0;
        else if (!strcmp(a, "--strict-trigger"))
            c->prm.strict_trigger = 1, used = 0;
        else if (!strcmp(a, "--cdf-per-worker"))
            c->prm.cdf_mode = SAMPI_SEL_CDF_PER_WORKER, used = 0;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!v) {
            fprintf(stderr, "selective-sim: %s needs a value\n", a);
            return -EINVAL;
        } else if (!strcmp(a, "--n"))
            c->n = atoi(v);
        else if (!strcmp(a, "--trace")) {
            for (size_t t = 0; t < sizeof(traces) / sizeof(traces[0]); t++)
                if (!strcmp(v, traces[t].name))
                    c->trace = (int)t;
        } else if (!strcmp(a, "--seed"))
            c->seed = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--trials"))
            c->trials = atoi(v);
        else if (!strcmp(a, "--horizon"))
            c->horizon = atof(v);
        else if (!strcmp(a, "--schemes"))
            c->schemes = v;
        else if (!strcmp(a, "--p")) {
            double p = atof(v);
            c->prm.p_count = p >= 1.0 ? (int)lround(p) : 0;
            c->prm.p_frac = p < 1.0 ? p : c->prm.p_frac;
        } else if (!strcmp(a, "--eta"))
            c->prm.eta = atof(v);
        else if (!strcmp(a, "--theta"))
            c->prm.theta = atof(v);
        else if (!strcmp(a, "--dt"))
            c->prm.delta_t = atof(v);
        else if (!strcmp(a, "--c"))
            c->prm.c = atoi(v);
        else if (!strcmp(a, "--lam"))
            c->lam = atof(v);
        else if (!strcmp(a, "--alpha-ms"))
            c->alpha_ms = atof(v);
        else if (!strcmp(a, "--model-mb"))
            c->model_mb = atof(v);
        else if (!strcmp(a, "--bw-err"))
            c->bw_err = atof(v);
        else if (!strcmp(a, "--cdf-samples"))
            c->cdf_samples = atoi(v);
        else if (!strcmp(a, "--cdf-window"))
            c->prm.cdf_window = atoi(v);
        else {
            fprintf(stderr, "selective-sim: unknown option %s\n", a);
            return -EINVAL;
        }
        i += used;
    }
    if (c->n < 1 || c->trace < 0 || c->trials < 1 || !(c->horizon > 0) || c->cdf_samples < 1 ||
        !(c->model_mb > 0) || c->lam < 0 || c->lam > 1 || c->prm.cdf_window < 0) {
        usage(stderr);
        return -EINVAL;
    }
    c->prm.model_bytes = c->model_mb * 1e6;
    c->prm.alpha = c->alpha_ms / 1000.0;
    return 0;
}

int main(int argc, char **argv)
{
    struct cfg cfg;
    static const struct {
        const char *name;
        enum sampi_sel_scheme scheme;
    } schemes[] = {{"allreduce", SAMPI_SEL_SCHEME_ALLREDUCE},
                   {"partial", SAMPI_SEL_SCHEME_PARTIAL},
                   {"selective", SAMPI_SEL_SCHEME_SELECTIVE}};
    static const struct {
        const char *label;
        double bw_err;
        int cold;
    } robust[] = {{"selective-bwerr0.1", 0.1, 0},
                  {"selective-bwerr0.3", 0.3, 0},
                  {"selective-cold", -1.0, 1}};
    struct point pts[3], pt;
    int have[3] = {0, 0, 0};
    if (parse_args(argc, argv, &cfg))
        return 2;
    timer_calibrate();
    if (!cfg.json) {
        printf("# selective-reduce simulator (C policy): n=%d trace=%s horizon=%gs trials=%d "
               "seed=%u p=%d eta=%g theta=%g dt=%gs c=%d lambda=%g alpha=%gms v=%gMB%s%s\n",
               cfg.n, traces[cfg.trace].name, cfg.horizon, cfg.trials, cfg.seed,
               sampi_sel_params_p(&cfg.prm, cfg.n), cfg.prm.eta, cfg.prm.theta, cfg.prm.delta_t,
               cfg.prm.c, cfg.lam, cfg.alpha_ms, cfg.model_mb, cfg.cold ? " cold" : "",
               cfg.bw_err > 0 ? " bw_err" : "");
        printf("# medians over trials; syncT = ring all-reduce duration (s), without the wait; "
               "wasted in ms per worker.\n# Decision = the policy calls for one event (a report "
               "and the decide calls after it), wall time in us\n# on this host over all trials: "
               "dec = all decisions, grp = those with >= p ready (BAG and BPAWR ran).\n");
        printf("%-20s %9s %8s %7s %8s %8s %7s %6s %8s %8s %8s %8s\n", "scheme", "syncT(s)", "scale",
               "syncs", "iters", "wait(s)", "wasted", "spread", "dec_p50", "dec_p99", "grp_p99",
               "dec_max");
    }
    for (size_t i = 0; i < 3; i++) {
        if (!strstr(cfg.schemes, schemes[i].name))
            continue;
        if (run_point(&cfg, schemes[i].scheme, cfg.bw_err, cfg.cold, schemes[i].name, &pts[i])) {
            fprintf(stderr, "selective-sim: a parameter is out of range, or out of memory\n");
            return 1;
        }
        have[i] = 1;
        print_point(&cfg, &pts[i], cfg.bw_err, cfg.cold);
        fflush(stdout);
    }
    for (size_t i = 0; cfg.robustness && have[2] && i < 3; i++) {
        double e = robust[i].bw_err >= 0 ? robust[i].bw_err : cfg.bw_err;
        if (run_point(&cfg, SAMPI_SEL_SCHEME_SELECTIVE, e, robust[i].cold, robust[i].label, &pt)) {
            fprintf(stderr, "selective-sim: a parameter is out of range, or out of memory\n");
            return 1;
        }
        print_point(&cfg, &pt, e, robust[i].cold);
        fflush(stdout);
    }
    if (!cfg.json && have[1] && have[2]) {
        printf("# selective vs partial: sync time %.2fx lower, scale %.2fx larger, iterations "
               "%.2fx, syncs %.2fx (paper: sync time up to 2.55x lower, scale up to 1.25x "
               "larger)\n",
               pts[1].med.sync_time / pts[2].med.sync_time, pts[2].med.scale / pts[1].med.scale,
               pts[2].med.iters / pts[1].med.iters, pts[2].med.syncs / pts[1].med.syncs);
    }
    return 0;
}
