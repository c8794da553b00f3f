/*
 * check_selective.c - the Selective Reduce policy: BAG and BPAWR on
 * hand-checked cases, the paper's motivating example (Fig. 3) through the
 * whole controller step for all reduce, partial reduce and selective reduce,
 * and properties over random runs (a ready worker is in at most one group,
 * launched groups have >= p members, BAG's groups have >= p except the last,
 * every c-th sync is full), plus the CDF, the weights and the parameters.
 */
#include "selective_policy.h"
#include "selective_cdf.h"
#include "config.h"
#include "suites.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 64

static void items_of(struct sampi_sel_item *it, const double *bw, int m)
{
    for (int i = 0; i < m; i++)
        it[i] = (struct sampi_sel_item){.bw = bw[i], .id = i};
}

/* ---------------------------------------------------------------- BAG */

START_TEST(bag_spec_example)
{
    /* selective.md section 5 / selective_sim.py --selftest. */
    const double bw[] = {20, 19, 18, 10, 9, 8.5, 3, 2, 1};
    struct sampi_sel_item it[9];
    int start[10];
    items_of(it, bw, 9);
    ck_assert_int_eq(sampi_sel_bag(it, 9, 3, 0.3, 0, start), 3);
    ck_assert_int_eq(start[0], 0);
    ck_assert_int_eq(start[1], 3);
    ck_assert_int_eq(start[2], 6);
    ck_assert_int_eq(start[3], 9);
    ck_assert(it[3].bw == 10 && it[5].bw == 8.5 && it[8].bw == 1);
    /* A1, literal pseudo-code: a core of p+1 = 4, then 9 and 8.5 >= 7. */
    items_of(it, bw, 9);
    ck_assert_int_eq(sampi_sel_bag(it, 9, 3, 0.3, 1, start), 2);
    ck_assert_int_eq(start[1], 6);
}
END_TEST

START_TEST(bag_extension_and_ties)
{
    /* core {10, 9}: b* = 6.3; 7 joins, 6.2 opens a group whose core {6.2,
     * 4.4} gives b* = 3.08; 3.0 opens a third. */
    const double bw[] = {6.2, 7, 10, 4.4, 9, 3.0};
    struct sampi_sel_item it[6];
    int start[7];
    items_of(it, bw, 6);
    ck_assert_int_eq(sampi_sel_bag(it, 6, 2, 0.3, 0, start), 3);
    ck_assert_int_eq(start[1], 3); /* 10, 9, 7 */
    ck_assert_int_eq(start[2], 5); /* 6.2, 4.4 */
    ck_assert_int_eq(it[5].id, 5);
    /* Equal bandwidths: the smaller id first (virtual workers, id < 0, lead). */
    struct sampi_sel_item t[3] = {{5.0, 3}, {5.0, -1}, {5.0, 0}};
    ck_assert_int_eq(sampi_sel_bag(t, 3, 2, 0.3, 0, start), 1);
    ck_assert(t[0].id == -1 && t[1].id == 0 && t[2].id == 3);
    ck_assert_int_eq(sampi_sel_bag(t, 0, 2, 0.3, 0, start), 0);
}
END_TEST

START_TEST(bag_properties)
{
    /* Random inputs: a sorted partition; each group but the last has >= p
     * members; every member after the core is within (1 - eta) of the
     * core's slowest; the next group's first member is not. */
    srand(7);
    for (int trial = 0; trial < 2000; trial++) {
        struct sampi_sel_item it[MAXN];
        int start[MAXN + 1], seen[MAXN] = {0};
        int m = 1 + rand() % MAXN, p = 1 + rand() % m;
        double eta = (rand() % 90) / 100.0;
        for (int i = 0; i < m; i++)
            it[i] = (struct sampi_sel_item){.bw = 1 + rand() % 40 / 2.0, .id = i};
        int ng = sampi_sel_bag(it, m, p, eta, 0, start);
        ck_assert_int_ge(ng, 1);
        ck_assert_int_eq(start[0], 0);
        ck_assert_int_eq(start[ng], m);
        for (int i = 0; i < m; i++) {
            ck_assert_int_eq(seen[it[i].id]++, 0);
            if (i)
                ck_assert(it[i - 1].bw >= it[i].bw);
        }
        for (int g = 0; g < ng; g++) {
            int lo = start[g], hi = start[g + 1];
            if (g < ng - 1)
                ck_assert_int_ge(hi - lo, p);
            ck_assert_int_gt(hi - lo, 0);
            int core_end = lo + (hi - lo < p ? hi - lo : p);
            double bstar = it[core_end - 1].bw * (1 - eta);
            for (int i = core_end; i < hi; i++)
                ck_assert(it[i].bw >= bstar);
            if (g < ng - 1 && hi - lo >= p)
                ck_assert(it[hi].bw < bstar);
        }
    }
}
END_TEST

/* --------------------------------------------------------------- BPAWR */

static double prob_fixed(void *ctx, int id, double elapsed, double dt)
{
    (void)elapsed;
    (void)dt;
    return ((const double *)ctx)[id];
}

static const struct sampi_sel_bpawr_args *args(double *probs, int p)
{
    static struct sampi_sel_bpawr_args a;
    a = (struct sampi_sel_bpawr_args){.p = p,
                                      .eta = 0.3,
                                      .theta = 1.0,
                                      .delta_t = 0.01,
                                      .v_gbit = 4.0,
                                      .prob = prob_fixed,
                                      .prob_ctx = probs};
    return &a;
}

START_TEST(bpawr_cases)
{
    /* selective_sim.py --selftest: g = {10, 9, 7.5}, p = 2. */
    const struct sampi_sel_item g[3] = {{10.0, 0}, {9.0, 1}, {7.5, 2}};
    struct sampi_sel_item scratch[8];
    int start[9], delta[3], nd = -1;
    double probs[8] = {0}, tx;
    /* Nothing in training: launch; |g| < p: hold. */
    ck_assert_int_eq(
        sampi_sel_bpawr(args(probs, 2), NULL, 0, g, 3, delta, &nd, scratch, start, &tx),
        SAMPI_SEL_BPAWR_LAUNCH);
    ck_assert_int_eq(nd, 0);
    ck_assert_int_eq(
        sampi_sel_bpawr(args(probs, 4), NULL, 0, g, 3, delta, &nd, scratch, start, &tx),
        SAMPI_SEL_BPAWR_HOLD);
    /* Two fast workers certain to finish: all of g replaced, t_X = 0.66 s. */
    probs[5] = probs[6] = 1.0;
    struct sampi_sel_cand S[2] = {{20.0, 5, 0.45, 0}, {19.0, 6, 0.45, 0}};
    ck_assert_int_eq(sampi_sel_bpawr(args(probs, 2), S, 2, g, 3, delta, &nd, scratch, start, &tx),
                     SAMPI_SEL_BPAWR_WAIT_REPLACE);
    ck_assert_int_eq(nd, 3);
    ck_assert(fabs(tx - (8.0 / 7.5 - 8.0 / 19.5)) < 1e-12);
    ck_assert(S[0].claimed && S[1].claimed);
    /* Claimed candidates count once: the next group sees nobody. */
    ck_assert_int_eq(sampi_sel_bpawr(args(probs, 2), S, 2, g, 3, delta, &nd, scratch, start, &tx),
                     SAMPI_SEL_BPAWR_LAUNCH);
    /* They just started (probability 0): launch now. */
    probs[5] = probs[6] = 0.0;
    S[0].claimed = S[1].claimed = 0;
    ck_assert_int_eq(sampi_sel_bpawr(args(probs, 2), S, 2, g, 3, delta, &nd, scratch, start, &tx),
                     SAMPI_SEL_BPAWR_LAUNCH);
    /* A slower computing worker (b <= min g) is never waited for nor claimed. */
    probs[5] = 1.0;
    struct sampi_sel_cand slow[1] = {{7.0, 5, 0.45, 0}};
    ck_assert_int_eq(
        sampi_sel_bpawr(args(probs, 2), slow, 1, g, 3, delta, &nd, scratch, start, &tx),
        SAMPI_SEL_BPAWR_LAUNCH);
    ck_assert_int_eq(slow[0].claimed, 0);
    /* 0.5 + 0.4: floor(0.9) = 0 expected workers, launch (A6). */
    probs[5] = 0.5;
    probs[6] = 0.4;
    S[0].claimed = S[1].claimed = 0;
    ck_assert_int_eq(sampi_sel_bpawr(args(probs, 2), S, 2, g, 3, delta, &nd, scratch, start, &tx),
                     SAMPI_SEL_BPAWR_LAUNCH);
    /* One expected worker replaces only the slowest (7.5): core {19.6, 10},
     * b* = 7, 9 joins, 7.5 joins too -> nothing replaced, launch. */
    probs[5] = 0.6;
    probs[6] = 0.4;
    S[0].claimed = S[1].claimed = 0;
    ck_assert_int_eq(sampi_sel_bpawr(args(probs, 2), S, 2, g, 3, delta, &nd, scratch, start, &tx),
                     SAMPI_SEL_BPAWR_LAUNCH);
    ck_assert(tx == 0.0);
}
END_TEST

START_TEST(bpawr_theta)
{
    /* g = {10, 2}: one certain 12 Gbps worker saves 8/2 - 8/10 = 3.2 s; it
     * is worth waiting when 3.2 > theta * dt. */
    const struct sampi_sel_item g[2] = {{10.0, 0}, {2.0, 1}};
    struct sampi_sel_item scratch[4];
    int start[5], delta[2], nd;
    double probs[4] = {0, 0, 1.0, 0}, tx;
    struct sampi_sel_cand S[1] = {{12.0, 2, 0.1, 0}};
    struct sampi_sel_bpawr_args a = *args(probs, 2);
    a.delta_t = 1.0;
    a.theta = 3.0;
    ck_assert_int_eq(sampi_sel_bpawr(&a, S, 1, g, 2, delta, &nd, scratch, start, &tx),
                     SAMPI_SEL_BPAWR_WAIT_REPLACE);
    ck_assert_int_eq(nd, 1);
    ck_assert_int_eq(delta[0], 1);
    S[0].claimed = 0;
    a.theta = 4.0;
    ck_assert_int_eq(sampi_sel_bpawr(&a, S, 1, g, 2, delta, &nd, scratch, start, &tx),
                     SAMPI_SEL_BPAWR_LAUNCH);
    ck_assert_int_eq(nd, 0);
    ck_assert(fabs(tx - 3.2) < 1e-12);
}
END_TEST

/* ------------------------------------------- the paper's Fig. 3 example */

struct launched {
    double at, ct;
    int m;
    int members[5];
};

/* Five workers, v = 5 units (Gbit here), alpha = 0, p = 2, bandwidths
 * (1, 5, 1, 5, 1), ready at 1, 2, 3, 3 and 13 s; the controller knows each
 * worker's compute time (per-worker CDFs), as the example assumes.  Syncs
 * are long (>= 2 s), and nobody becomes ready twice before 13 s. */
static int fig3(enum sampi_sel_scheme scheme, double eta, struct launched *out)
{
    const double bw[5] = {1, 5, 1, 5, 1}, ready[5] = {1, 2, 3, 3, 13};
    struct sampi_sel_params prm;
    struct sampi_sel_policy pol;
    struct sampi_sel_group grp;
    int nl = 0;
    sampi_sel_params_default(&prm);
    prm.scheme = scheme;
    prm.p_count = 2;
    prm.eta = eta;
    prm.theta = 1.0;
    prm.delta_t = 1.0;
    prm.alpha = 0.0;
    prm.model_bytes = 5e9 / 8; /* v = 5 Gbit: 2v/b = 10/b s */
    prm.cdf_mode = SAMPI_SEL_CDF_PER_WORKER;
    prm.cdf_min_samples = 1;
    ck_assert_int_eq(sampi_sel_policy_init(&pol, &prm, 5), 0);
    ck_assert_int_eq(sampi_sel_group_init(&grp, 5), 0);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(sampi_sel_policy_set_bandwidth(&pol, i, bw[i]), 0);
        ck_assert_int_eq(sampi_sel_policy_add_samples(&pol, i, &ready[i], 1), 0);
    }
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(sampi_sel_policy_report(&pol, i, ready[i], 1, ready[i], 0.0), 0);
        enum sampi_sel_action a;
        while ((a = sampi_sel_policy_decide(&pol, ready[i], &grp)) == SAMPI_SEL_LAUNCH) {
            struct launched *l = &out[nl++];
            l->at = ready[i];
            l->ct = grp.est_time;
            l->m = grp.m;
            memcpy(l->members, grp.members, sizeof(int) * (size_t)grp.m);
            double wsum = 0;
            for (int j = 0; j < grp.m; j++)
                wsum += grp.weights[j];
            ck_assert(fabs(wsum - 1.0) < 1e-12);
        }
        /* The next worker is ready before any wait deadline here. */
        if (a == SAMPI_SEL_WAIT)
            ck_assert(grp.wait_until >= ready[i]);
    }
    sampi_sel_group_free(&grp);
    sampi_sel_policy_free(&pol);
    return nl;
}

START_TEST(fig3_allreduce)
{
    struct launched l[5];
    ck_assert_int_eq(fig3(SAMPI_SEL_SCHEME_ALLREDUCE, 0.3, l), 1);
    ck_assert(l[0].at == 13.0 && l[0].m == 5 && l[0].ct == 10.0); /* (b): CT 10, scale 5 */
}
END_TEST

START_TEST(fig3_partial)
{
    struct launched l[5];
    /* (c): {w1, w2} at 2 s and {w3, w4} at 3 s, CT 10 each, scale 2. */
    ck_assert_int_eq(fig3(SAMPI_SEL_SCHEME_PARTIAL, 0.3, l), 2);
    ck_assert(l[0].at == 2.0 && l[0].m == 2 && l[0].members[0] == 0 && l[0].members[1] == 1);
    ck_assert(l[1].at == 3.0 && l[1].m == 2 && l[1].members[0] == 2 && l[1].members[1] == 3);
    ck_assert(l[0].ct == 10.0 && l[1].ct == 10.0);
}
END_TEST

START_TEST(fig3_bandwidth_aware)
{
    struct launched l[5];
    /* (e): at 2 s BPAWR expects w4 (5 Gbps) within dt and waits instead of
     * launching {w1, w2}; at 3 s BAG splits {w2, w4} (CT 2) and {w1, w3}
     * (CT 10): average 6, scale 2. */
    ck_assert_int_eq(fig3(SAMPI_SEL_SCHEME_SELECTIVE, 0.3, l), 2);
    ck_assert(l[0].at == 3.0 && l[0].m == 2 && l[0].members[0] == 1 && l[0].members[1] == 3);
    ck_assert(l[1].at == 3.0 && l[1].m == 2 && l[1].members[0] == 0 && l[1].members[1] == 2);
    ck_assert(l[0].ct == 2.0 && l[1].ct == 10.0);
    ck_assert((l[0].ct + l[1].ct) / 2 == 6.0);
}
END_TEST

START_TEST(fig3_progress_aware)
{
    /* (d): once the controller has waited for w3 and w4, a loose grouping
     * (eta 0.9 keeps 1 Gbps beside 5) makes one group of 4: CT 10, scale 4.
     * BAG alone on the four ready workers at 3 s: */
    const double bw[4] = {1, 5, 1, 5};
    struct sampi_sel_item it[4];
    int start[5];
    items_of(it, bw, 4);
    ck_assert_int_eq(sampi_sel_bag(it, 4, 2, 0.9, 0, start), 1);
    ck_assert_int_eq(start[1], 4);
    /* and with the paper's eta = 0.3 the bandwidth-aware split of (e): */
    items_of(it, bw, 4);
    ck_assert_int_eq(sampi_sel_bag(it, 4, 2, 0.3, 0, start), 2);
    ck_assert(it[0].id == 1 && it[1].id == 3 && it[2].id == 0 && it[3].id == 2);
    /* BPAWR does not wait merely to grow a group: with eta 0.9 the 5 Gbps
     * worker expected at 3 s would not replace anyone, so selective reduce
     * launches {w1, w2} at 2 s and then {w3, w4} at 3 s. */
    struct launched l[5];
    ck_assert_int_eq(fig3(SAMPI_SEL_SCHEME_SELECTIVE, 0.9, l), 2);
    ck_assert(l[0].at == 2.0 && l[0].m == 2 && l[1].at == 3.0 && l[1].m == 2);
}
END_TEST

/* ------------------------------------------------ the controller step */

START_TEST(decide_protocol)
{
    struct sampi_sel_params prm;
    struct sampi_sel_policy pol;
    struct sampi_sel_group grp;
    sampi_sel_params_default(&prm);
    prm.delta_t = 0.5;
    ck_assert_int_eq(sampi_sel_policy_init(&pol, &prm, 10), 0);
    ck_assert_int_eq(pol.p, 3);
    ck_assert_int_eq(sampi_sel_group_init(&grp, 10), 0);
    ck_assert_int_eq(sampi_sel_policy_report(&pol, 10, 1.0, 1, 1.0, 1.0), -EINVAL);
    ck_assert_int_eq(sampi_sel_policy_sync_done(&pol, 0, 1.0), -EALREADY);
    /* Workers 0..2 at 1 Gbps ready at 1 s; 3..9 at 10 Gbps computing for
     * 1 s, every sample 1.2 s: F(1 + 0.5) = 1, seven expected.  The slow
     * group... */
    double samples[4] = {1.2, 1.2, 1.2, 1.2};
    ck_assert_int_eq(sampi_sel_policy_add_samples(&pol, -1, samples, 4), 0);
    for (int i = 0; i < 10; i++)
        sampi_sel_policy_set_bandwidth(&pol, i, i < 3 ? 1.0 : 10.0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(sampi_sel_policy_report(&pol, i, 1.0, 1, -1.0, 0.0), 0);
    ck_assert_int_eq(sampi_sel_policy_report(&pol, 2, 1.0, 1, -1.0, 0.0), -EALREADY);
    /* ... waits: seven 10 Gbps workers are expected within dt. */
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.0, &grp), SAMPI_SEL_WAIT);
    ck_assert(grp.wait_until == 1.5);
    long ev = pol.stats.evaluations;
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.2, &grp), SAMPI_SEL_WAIT);
    ck_assert_int_eq(pol.stats.evaluations, ev); /* nothing new: no evaluation */
    /* They report: BAG puts the seven fast ones in one group, the slow
     * three in another, and nobody faster is computing any more: both launch,
     * fastest first, each worker once. */
    for (int i = 3; i < 10; i++)
        ck_assert_int_eq(sampi_sel_policy_report(&pol, i, 1.3, 1, -1.0, 0.0), 0);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.3, &grp), SAMPI_SEL_LAUNCH);
    ck_assert_int_eq(grp.m, 7);
    ck_assert_int_eq(grp.id, 0);
    ck_assert_int_eq(grp.kind, SAMPI_SEL_PARTIAL);
    for (int j = 0; j < 7; j++)
        ck_assert_int_eq(grp.members[j], 3 + j);
    ck_assert(grp.min_bw == 10.0);
    ck_assert(fabs(grp.est_time - (2 * 7 * 1e-3 + 0.8)) < 1e-12);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.3, &grp), SAMPI_SEL_LAUNCH);
    ck_assert_int_eq(grp.m, 3);
    ck_assert_int_eq(grp.id, 1);
    ck_assert(grp.members[0] == 0 && grp.members[1] == 1 && grp.members[2] == 2);
    ck_assert(grp.min_bw == 1.0);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.3, &grp), SAMPI_SEL_IDLE);
    ck_assert_int_eq(sampi_sel_policy_queued(&pol), 0);
    ck_assert_int_eq(pol.stats.waits, 1);
    ck_assert_int_eq(sampi_sel_policy_report(&pol, 3, 1.4, 2, -1.0, 0.0), -EALREADY);
    ck_assert_int_eq(sampi_sel_policy_sync_done(&pol, 3, 2.0), 0);
    ck_assert_int_eq(sampi_sel_policy_sync_done(&pol, 3, 2.0), -EALREADY);
    sampi_sel_group_free(&grp);
    sampi_sel_policy_free(&pol);
}
END_TEST

/* Random closed-loop run: workers compute, report, sync for T(g), repeat. */
static long random_run(enum sampi_sel_scheme scheme, int n, int c, unsigned seed)
{
    struct sampi_sel_params prm;
    struct sampi_sel_policy pol;
    struct sampi_sel_group grp;
    double next_ready[MAXN], bw[MAXN], deadline = INFINITY;
    int state[MAXN]; /* 0 computing, 1 ready, 2 syncing */
    double sync_end[MAXN];
    long iters[MAXN] = {0}, expect_id = 0;
    srand(seed);
    sampi_sel_params_default(&prm);
    prm.scheme = scheme;
    prm.c = c;
    prm.delta_t = 0.05;
    prm.model_bytes = 1e8;
    ck_assert_int_eq(sampi_sel_policy_init(&pol, &prm, n), 0);
    ck_assert_int_eq(sampi_sel_group_init(&grp, n), 0);
    for (int i = 0; i < n; i++) {
        bw[i] = 1 + rand() % 20;
        sampi_sel_policy_set_bandwidth(&pol, i, bw[i]);
        next_ready[i] = 0.1 + (rand() % 1000) / 1000.0;
        state[i] = 0;
    }
    int fulls = 0, launches = 0;
    for (int step = 0; step < 4000; step++) {
        /* Next event: a worker ready, a sync ending, or the wait deadline. */
        double t = deadline;
        int who = -1, kind = 2;
        for (int i = 0; i < n; i++) {
            if (state[i] == 0 && next_ready[i] < t)
                t = next_ready[i], who = i, kind = 0;
            if (state[i] == 2 && sync_end[i] < t)
                t = sync_end[i], who = i, kind = 1;
        }
        ck_assert(isfinite(t));
        if (kind == 0) {
            state[who] = 1;
            iters[who]++;
            ck_assert_int_eq(sampi_sel_policy_report(&pol, who, t, iters[who],
                                                     0.2 + (rand() % 100) / 100.0, 0.0),
                             0);
        } else if (kind == 1) {
            state[who] = 0;
            ck_assert_int_eq(sampi_sel_policy_sync_done(&pol, who, t), 0);
            next_ready[who] = t + 0.2 + (rand() % 1000) / 1000.0;
            continue;
        }
        enum sampi_sel_action a;
        deadline = INFINITY;
        while ((a = sampi_sel_policy_decide(&pol, t, &grp)) == SAMPI_SEL_LAUNCH) {
            double bmin = INFINITY;
            ck_assert_int_eq(grp.id, expect_id++);
            for (int j = 0; j < grp.m; j++) {
                int w = grp.members[j];
                /* ready, and in no other group: it leaves "ready" now */
                ck_assert_int_eq(state[w], 1);
                state[w] = 2;
                bmin = fmin(bmin, bw[w]);
                ck_assert_int_eq(grp.iters[j], iters[w]);
            }
            if (grp.kind == SAMPI_SEL_FULL) {
                ck_assert_int_eq(grp.m, n);
                fulls++;
            } else {
                ck_assert_int_ge(grp.m, pol.p);
            }
            if (c > 0)
                ck_assert_int_eq(grp.kind == SAMPI_SEL_FULL, grp.id % c == 0);
            if (scheme == SAMPI_SEL_SCHEME_PARTIAL)
                ck_assert_int_eq(grp.m, pol.p);
            for (int j = 0; j < grp.m; j++)
                sync_end[grp.members[j]] = t + grp.est_time;
            ck_assert(grp.min_bw == bmin);
            launches++;
        }
        if (a == SAMPI_SEL_WAIT) {
            ck_assert(grp.wait_until > t);
            deadline = grp.wait_until;
        }
        int q = 0;
        for (int i = 0; i < n; i++)
            q += state[i] == 1;
        ck_assert_int_eq(q, sampi_sel_policy_queued(&pol));
    }
    ck_assert_int_gt(launches, 10);
    if (c > 0)
        ck_assert_int_ge(fulls, launches / c);
    ck_assert_int_eq(pol.stats.launches, launches);
    long waits = pol.stats.waits;
    sampi_sel_group_free(&grp);
    sampi_sel_policy_free(&pol);
    return waits;
}

START_TEST(random_selective)
{
    long waits = 0;
    for (unsigned s = 1; s <= 6; s++)
        waits += random_run(SAMPI_SEL_SCHEME_SELECTIVE, 8 + (int)s * 7, 0, s);
    ck_assert_int_gt(waits, 0); /* the runs did exercise BPAWR's waiting */
}
END_TEST

START_TEST(random_full_sync)
{
    for (unsigned s = 1; s <= 4; s++)
        random_run(SAMPI_SEL_SCHEME_SELECTIVE, 10 + (int)s * 5, 3 + (int)s, s);
}
END_TEST

START_TEST(random_baselines)
{
    random_run(SAMPI_SEL_SCHEME_PARTIAL, 20, 0, 11);
    random_run(SAMPI_SEL_SCHEME_ALLREDUCE, 12, 0, 12);
}
END_TEST

/* ------------------------------------------ retiring, the model size */

/* Report every worker in ws[0..k) ready at `now`, 1 Gbps, no CDF sample. */
static void ready_all(struct sampi_sel_policy *pol, const int *ws, int k, double now)
{
    for (int i = 0; i < k; i++)
        ck_assert_int_eq(sampi_sel_policy_report(pol, ws[i], now, 1, -1.0, 1.0), 0);
}

START_TEST(retire_basics)
{
    struct sampi_sel_params prm;
    struct sampi_sel_policy pol;
    struct sampi_sel_group grp;
    sampi_sel_params_default(&prm);
    prm.c = 2; /* syncs 0, 2, 4, ... are full */
    prm.p_count = 2;
    ck_assert_int_eq(sampi_sel_policy_init(&pol, &prm, 4), 0);
    ck_assert_int_eq(sampi_sel_group_init(&grp, 4), 0);
    ck_assert_int_eq(sampi_sel_policy_active(&pol), 4);
    ck_assert_int_eq(sampi_sel_policy_retire(&pol, 4), -EINVAL);
    ck_assert_int_eq(sampi_sel_policy_retire(&pol, -1), -EINVAL);
    /* Worker 3 leaves while computing: the first full sync covers 0..2. */
    ck_assert_int_eq(sampi_sel_policy_retire(&pol, 3), 0);
    ck_assert_int_eq(sampi_sel_policy_retire(&pol, 3), -EALREADY);
    ck_assert_int_eq(sampi_sel_policy_active(&pol), 3);
    ck_assert_int_eq(sampi_sel_policy_report(&pol, 3, 1.0, 1, -1.0, 1.0), -ESRCH);
    ck_assert_int_eq(sampi_sel_policy_sync_done(&pol, 3, 1.0), -ESRCH);
    const int first[3] = {2, 0, 1};
    ready_all(&pol, first, 2, 1.0);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.0, &grp), SAMPI_SEL_IDLE);
    ready_all(&pol, first + 2, 1, 1.5);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.5, &grp), SAMPI_SEL_LAUNCH);
    ck_assert_int_eq(grp.kind, SAMPI_SEL_FULL);
    ck_assert_int_eq(grp.m, 3);
    for (int j = 0; j < 3; j++)
        ck_assert_int_eq(grp.members[j], j);
    ck_assert(fabs(grp.weights[0] + grp.weights[1] + grp.weights[2] - 1.0) < 1e-12);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.5, &grp), SAMPI_SEL_IDLE);
    ck_assert_int_eq(pol.stats.full_syncs, 1);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(sampi_sel_policy_sync_done(&pol, i, 2.0), 0);
    /* Sync 1 is partial: 0 and 1 ready make a group of p = 2. */
    ready_all(&pol, first + 1, 2, 3.0);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 3.0, &grp), SAMPI_SEL_LAUNCH);
    ck_assert_int_eq(grp.kind, SAMPI_SEL_PARTIAL);
    ck_assert(grp.m == 2 && grp.members[0] == 0 && grp.members[1] == 1);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 3.0, &grp), SAMPI_SEL_IDLE);
    /* Sync 2 is full.  Worker 2 is ready, 0 and 1 syncing: retiring the
     * syncing ones leaves 2 as everyone, and the full sync is its alone. */
    ready_all(&pol, first, 1, 3.5);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 3.5, &grp), SAMPI_SEL_IDLE);
    ck_assert_int_eq(sampi_sel_policy_retire(&pol, 0), 0);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 3.6, &grp), SAMPI_SEL_IDLE);
    ck_assert_int_eq(sampi_sel_policy_sync_done(&pol, 0, 3.6), -ESRCH);
    ck_assert_int_eq(sampi_sel_policy_retire(&pol, 1), 0);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 3.7, &grp), SAMPI_SEL_LAUNCH);
    ck_assert(grp.kind == SAMPI_SEL_FULL && grp.m == 1 && grp.members[0] == 2);
    ck_assert(grp.weights[0] == 1.0);
    /* The last one leaves while syncing; nothing is left to decide. */
    ck_assert_int_eq(sampi_sel_policy_retire(&pol, 2), 0);
    ck_assert_int_eq(sampi_sel_policy_active(&pol), 0);
    ck_assert_int_eq(sampi_sel_policy_queued(&pol), 0);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 4.0, &grp), SAMPI_SEL_IDLE);
    sampi_sel_group_free(&grp);
    sampi_sel_policy_free(&pol);
}
END_TEST

/* A queued worker that retires leaves the queue; fewer than p remaining are
 * grouped once all of them are ready, under every scheme. */
START_TEST(retire_below_p)
{
    static const enum sampi_sel_scheme schemes[] = {
        SAMPI_SEL_SCHEME_SELECTIVE, SAMPI_SEL_SCHEME_PARTIAL, SAMPI_SEL_SCHEME_ALLREDUCE};
    for (size_t s = 0; s < sizeof(schemes) / sizeof(schemes[0]); s++) {
        for (int strict = 0; strict <= 1; strict++) {
            struct sampi_sel_params prm;
            struct sampi_sel_policy pol;
            struct sampi_sel_group grp;
            sampi_sel_params_default(&prm);
            prm.scheme = schemes[s];
            prm.p_count = 4;
            prm.strict_trigger = strict;
            ck_assert_int_eq(sampi_sel_policy_init(&pol, &prm, 6), 0);
            ck_assert_int_eq(sampi_sel_group_init(&grp, 6), 0);
            const int ws[3] = {1, 4, 5};
            ready_all(&pol, ws, 3, 1.0);
            ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.0, &grp), SAMPI_SEL_IDLE);
            ck_assert_int_eq(sampi_sel_policy_retire(&pol, 4), 0); /* queued */
            ck_assert_int_eq(sampi_sel_policy_queued(&pol), 2);
            ck_assert_int_eq(sampi_sel_policy_report(&pol, 4, 1.1, 2, -1.0, 1.0), -ESRCH);
            ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.1, &grp), SAMPI_SEL_IDLE);
            for (int w = 0; w < 4; w++)
                if (w != 1)
                    ck_assert_int_eq(sampi_sel_policy_retire(&pol, w), 0);
            /* 1 and 5 are all that is left, both ready: one group of two */
            ck_assert_int_eq(sampi_sel_policy_active(&pol), 2);
            ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.2, &grp), SAMPI_SEL_LAUNCH);
            ck_assert(grp.m == 2 && grp.members[0] == 1 && grp.members[1] == 5);
            ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.2, &grp), SAMPI_SEL_IDLE);
            ck_assert_int_eq(sampi_sel_policy_queued(&pol), 0);
            sampi_sel_group_free(&grp);
            sampi_sel_policy_free(&pol);
        }
    }
}
END_TEST

/* Closed loop in which every worker stops after its own number of rounds,
 * some while computing, some right after reporting ready: no group holds a
 * retired worker, full syncs hold exactly the remaining ones, and everyone
 * gets to leave (nobody waits for a group that cannot form). */
static void retire_run(enum sampi_sel_scheme scheme, int n, int c, unsigned seed)
{
    struct sampi_sel_params prm;
    struct sampi_sel_policy pol;
    struct sampi_sel_group grp;
    double next[MAXN], deadline = INFINITY;
    int state[MAXN]; /* 0 computing, 1 ready, 2 syncing, 3 retired */
    long iters[MAXN] = {0}, rounds[MAXN];
    int active = n, launches = 0;
    srand(seed);
    sampi_sel_params_default(&prm);
    prm.scheme = scheme;
    prm.c = c;
    prm.delta_t = 0.05;
    ck_assert_int_eq(sampi_sel_policy_init(&pol, &prm, n), 0);
    ck_assert_int_eq(sampi_sel_policy_set_model_bytes(&pol, 1e8), 0);
    ck_assert_int_eq(sampi_sel_group_init(&grp, n), 0);
    for (int i = 0; i < n; i++) {
        sampi_sel_policy_set_bandwidth(&pol, i, 1 + rand() % 20);
        next[i] = 0.1 + (rand() % 1000) / 1000.0;
        rounds[i] = 2 + rand() % 25;
        state[i] = 0;
    }
    for (int step = 0; step < 20000 && active > 0; step++) {
        double t = deadline;
        int who = -1;
        for (int i = 0; i < n; i++)
            if ((state[i] == 0 || state[i] == 2) && next[i] < t)
                t = next[i], who = i;
        ck_assert_msg(isfinite(t), "stuck with %d workers left", active);
        if (who >= 0 && state[who] == 2) {
            ck_assert_int_eq(sampi_sel_policy_sync_done(&pol, who, t), 0);
            state[who] = 0;
            next[who] = t + 0.2 + (rand() % 1000) / 1000.0;
            if (iters[who] >= rounds[who]) {
                ck_assert_int_eq(sampi_sel_policy_retire(&pol, who), 0);
                state[who] = 3;
                active--;
            }
        } else if (who >= 0) {
            iters[who]++;
            ck_assert_int_eq(
                sampi_sel_policy_report(&pol, who, t, iters[who], 0.2 + (rand() % 100) / 100.0, 0),
                0);
            state[who] = 1;
            /* odd workers stop right after their last report */
            if ((who & 1) && iters[who] >= rounds[who]) {
                ck_assert_int_eq(sampi_sel_policy_retire(&pol, who), 0);
                state[who] = 3;
                active--;
            }
        }
        ck_assert_int_eq(sampi_sel_policy_active(&pol), active);
        enum sampi_sel_action a;
        deadline = INFINITY;
        while ((a = sampi_sel_policy_decide(&pol, t, &grp)) == SAMPI_SEL_LAUNCH) {
            int p_now = pol.p < active ? pol.p : active;
            for (int j = 0; j < grp.m; j++) {
                int w = grp.members[j];
                ck_assert_int_eq(state[w], 1);
                state[w] = 2;
                next[w] = t + grp.est_time;
            }
            if (grp.kind == SAMPI_SEL_FULL)
                ck_assert_int_eq(grp.m, active);
            else
                ck_assert_int_ge(grp.m, p_now);
            launches++;
        }
        if (a == SAMPI_SEL_WAIT)
            deadline = grp.wait_until;
        int q = 0;
        for (int i = 0; i < n; i++)
            q += state[i] == 1;
        ck_assert_int_eq(q, sampi_sel_policy_queued(&pol));
    }
    ck_assert_int_eq(active, 0);
    ck_assert_int_gt(launches, 5);
    sampi_sel_group_free(&grp);
    sampi_sel_policy_free(&pol);
}

START_TEST(retire_random)
{
    for (unsigned s = 1; s <= 4; s++) {
        retire_run(SAMPI_SEL_SCHEME_SELECTIVE, 6 + (int)s * 5, 0, s);
        retire_run(SAMPI_SEL_SCHEME_SELECTIVE, 6 + (int)s * 5, 2 + (int)s, s + 10);
    }
    retire_run(SAMPI_SEL_SCHEME_PARTIAL, 13, 0, 21);
    retire_run(SAMPI_SEL_SCHEME_ALLREDUCE, 9, 0, 22);
}
END_TEST

START_TEST(model_bytes)
{
    struct sampi_sel_params prm;
    struct sampi_sel_policy pol;
    struct sampi_sel_group grp;
    sampi_sel_params_default(&prm);
    prm.scheme = SAMPI_SEL_SCHEME_PARTIAL;
    prm.p_count = 2;
    prm.alpha = 0.0;
    ck_assert_int_eq(sampi_sel_policy_init(&pol, &prm, 2), 0);
    ck_assert_int_eq(sampi_sel_group_init(&grp, 2), 0);
    ck_assert_int_eq(sampi_sel_policy_set_model_bytes(&pol, 0.0), -EINVAL);
    ck_assert_int_eq(sampi_sel_policy_set_model_bytes(&pol, -5.0), -EINVAL);
    ck_assert_int_eq(sampi_sel_policy_set_model_bytes(&pol, NAN), -EINVAL);
    ck_assert_int_eq(sampi_sel_policy_set_model_bytes(&pol, INFINITY), -EINVAL);
    ck_assert(pol.prm.model_bytes == prm.model_bytes); /* unchanged */
    /* 125 MB over 2 Gbps: T = 2 * 1 Gbit / 2 Gbps = 1 s */
    ck_assert_int_eq(sampi_sel_policy_set_model_bytes(&pol, 125e6), 0);
    const int ws[2] = {0, 1};
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(sampi_sel_policy_report(&pol, ws[i], 1.0, 1, -1.0, 2.0), 0);
    ck_assert_int_eq(sampi_sel_policy_decide(&pol, 1.0, &grp), SAMPI_SEL_LAUNCH);
    ck_assert(fabs(grp.est_time - 1.0) < 1e-12);
    sampi_sel_group_free(&grp);
    sampi_sel_policy_free(&pol);
}
END_TEST

/* ------------------------------------------- CDF, weights, parameters */

START_TEST(cdf_window)
{
    struct sampi_sel_cdf f;
    const double xs[4] = {0.9, 0.4, 0.3, 0.4};
    sampi_sel_cdf_init(&f, 4);
    ck_assert(sampi_sel_cdf_eval(&f, 1.0) == 0.0);
    ck_assert_int_eq(sampi_sel_cdf_add_many(&f, xs, 4), 0);
    ck_assert(sampi_sel_cdf_eval(&f, 0.35) == 0.25);
    ck_assert(sampi_sel_cdf_eval(&f, 0.4) == 0.75);
    ck_assert(sampi_sel_cdf_eval(&f, 0.1) == 0.0);
    ck_assert(sampi_sel_cdf_eval(&f, 1.0) == 1.0);
    /* Full window: 0.9 (the oldest) leaves, then 0.4. */
    ck_assert_int_eq(sampi_sel_cdf_add(&f, 0.1), 0);
    ck_assert(sampi_sel_cdf_eval(&f, 0.5) == 1.0);
    ck_assert_int_eq(sampi_sel_cdf_add(&f, 0.2), 0);
    ck_assert(sampi_sel_cdf_eval(&f, 0.25) == 0.5);
    ck_assert_int_eq((int)f.n, 4);
    sampi_sel_cdf_free(&f);
    /* Unbounded growth past the first allocation. */
    sampi_sel_cdf_init(&f, 0);
    for (int i = 999; i >= 0; i--)
        ck_assert_int_eq(sampi_sel_cdf_add(&f, i / 1000.0), 0);
    ck_assert(sampi_sel_cdf_eval(&f, 0.4995) == 0.5);
    sampi_sel_cdf_free(&f);
}
END_TEST

START_TEST(weights)
{
    const long it[3] = {10, 9, 7};
    double w[3];
    sampi_sel_weights(SAMPI_SEL_WEIGHT_STALENESS, it, 3, w);
    /* 1, 1/2, 1/4 normalised by 7/4 */
    ck_assert(fabs(w[0] - 4.0 / 7) < 1e-12 && fabs(w[2] - 1.0 / 7) < 1e-12);
    sampi_sel_weights(SAMPI_SEL_WEIGHT_PROGRESS, it, 3, w);
    ck_assert(fabs(w[1] - 9.0 / 26) < 1e-12);
    sampi_sel_weights(SAMPI_SEL_WEIGHT_UNIFORM, it, 3, w);
    ck_assert(w[0] == 1.0 / 3 && w[2] == 1.0 / 3);
    const long zero[2] = {0, 0};
    sampi_sel_weights(SAMPI_SEL_WEIGHT_PROGRESS, zero, 2, w);
    ck_assert(w[0] == 0.5 && w[1] == 0.5);
}
END_TEST

START_TEST(params)
{
    struct sampi_sel_params prm;
    struct sampi_sel_policy pol;
    char err[256];
    sampi_sel_params_default(&prm);
    ck_assert(prm.p_frac == 0.3 && prm.eta == 0.3 && prm.theta == 1.0 && prm.c == 0);
    for (int n = 40; n <= 200; n += 40)
        ck_assert_int_eq(sampi_sel_params_p(&prm, n), 3 * n / 10);
    ck_assert_int_eq(sampi_sel_params_p(&prm, 1), 1);
    prm.p_count = 50;
    ck_assert_int_eq(sampi_sel_params_p(&prm, 40), 40);
    prm.eta = 1.0;
    ck_assert_int_eq(sampi_sel_policy_init(&pol, &prm, 4), -EINVAL);
    sampi_sel_params_default(&prm);
    ck_assert_int_eq(sampi_sel_policy_init(&pol, &prm, 0), -EINVAL);

    sampi_config_load();
    ck_assert_int_eq(sampi_sel_params_from_cvars(&prm), 0);
    ck_assert(prm.p_frac == 0.3 && prm.p_count == 0 && prm.delta_t == 0.01);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SELECTIVE_P, "5", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SELECTIVE_ETA, "0.5", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SELECTIVE_C, "20", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SELECTIVE_SCHEME, "partial", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SELECTIVE_PROB, "conditional", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_sel_params_from_cvars(&prm), 0);
    ck_assert(prm.p_count == 5 && prm.eta == 0.5 && prm.c == 20);
    ck_assert_int_eq(prm.scheme, SAMPI_SEL_SCHEME_PARTIAL);
    ck_assert_int_eq(prm.prob, SAMPI_SEL_PROB_CONDITIONAL);
    /* A bad number leaves prm untouched. */
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SELECTIVE_THETA, "lots", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_sel_params_from_cvars(&prm), -EINVAL);
    ck_assert(prm.theta == 1.0);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SELECTIVE_THETA, "2", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SELECTIVE_DELTA_T, "0", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_sel_params_from_cvars(&prm), -EINVAL);
}
END_TEST

Suite *sampi_selective_suite(void)
{
    return UNIT_SUITE(
        "selective",
        {.name = "policy",
         .timeout = 60,
         UNIT_TESTS(bag_spec_example, bag_extension_and_ties, bag_properties, bpawr_cases,
                    bpawr_theta, fig3_allreduce, fig3_partial, fig3_bandwidth_aware,
                    fig3_progress_aware, decide_protocol, random_selective, random_full_sync,
                    random_baselines, retire_basics, retire_below_p, retire_random, model_bytes,
                    cdf_window, weights, params)});
}
