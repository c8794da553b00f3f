/*
 * check_tracking.c - straggler prediction, degraded-link detection and the
 * `auto` rules that use them, on synthetic timings (no MPI, no clocks).
 */
#include "config.h"
#include "detect.h"
#include "optcc_model.h"
#include "predict.h"
#include "select.h"
#include "stragglar_model.h"
#include "suites.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Durations of one call on n ranks where rank `late` arrived `gap` ns after
 * everyone else, the call taking `after` ns from its arrival. */
static void durations(double *d, int n, int late, double gap, double after)
{
    for (int i = 0; i < n; i++)
        d[i] = after + (i == late ? 0 : gap);
}

START_TEST(arrival_order_from_durations)
{
    double d[5] = {900, 300, 950, 1000, 980};
    struct sampi_arrival a;
    ck_assert_int_eq(sampi_arrival_from_durations(d, 5, 100, &a), 0);
    ck_assert_int_eq(a.last, 1); /* shortest stay: arrived last */
    ck_assert(fabs(a.gap_ns - 600) < 1e-9);
    ck_assert(fabs(a.last_dur_ns - 300) < 1e-9);
    /* a gap below the noise floor names nobody */
    ck_assert_int_eq(sampi_arrival_from_durations(d, 5, 700, &a), 0);
    ck_assert_int_eq(a.last, -1);
    /* a rank without a measurement voids the observation */
    d[2] = -1;
    ck_assert_int_eq(sampi_arrival_from_durations(d, 5, 100, &a), -1);
    d[2] = NAN;
    ck_assert_int_eq(sampi_arrival_from_durations(d, 5, 100, &a), -1);
}
END_TEST

START_TEST(persistent_straggler_is_predicted)
{
    struct sampi_predictor p;
    struct sampi_prediction pr;
    struct sampi_arrival a;
    double d[8];
    sampi_predictor_init(&p, 8, 16);
    /* three observations are too few to predict */
    for (int i = 0; i < 3; i++) {
        durations(d, 8, 5, 20e6 + i * 1e6, 50e6);
        sampi_arrival_from_durations(d, 8, 50e3, &a);
        sampi_predictor_note(&p, &a);
    }
    sampi_predictor_predict(&p, &pr);
    ck_assert_int_eq(pr.rank, -1);
    durations(d, 8, 5, 23e6, 50e6);
    sampi_arrival_from_durations(d, 8, 50e3, &a);
    sampi_predictor_note(&p, &a);
    sampi_predictor_predict(&p, &pr);
    ck_assert_int_eq(pr.rank, 5);
    ck_assert_int_eq(pr.votes, 4);
    /* the median of 20, 21, 22, 23 ms */
    ck_assert(fabs(pr.lateness_ns - 21.5e6) < 1);
}
END_TEST

START_TEST(no_majority_no_prediction)
{
    struct sampi_predictor p;
    struct sampi_prediction pr;
    struct sampi_arrival a;
    double d[4];
    sampi_predictor_init(&p, 4, 16);
    /* rotating lateness: nobody is last more than half of the time */
    for (int i = 0; i < 16; i++) {
        durations(d, 4, i % 3, 5e6, 1e6);
        sampi_arrival_from_durations(d, 4, 50e3, &a);
        sampi_predictor_note(&p, &a);
    }
    sampi_predictor_predict(&p, &pr);
    ck_assert_int_eq(pr.rank, -1);
    /* nobody late at all */
    sampi_predictor_init(&p, 4, 16);
    for (int i = 0; i < 16; i++) {
        durations(d, 4, 0, 10e3, 1e6);
        sampi_arrival_from_durations(d, 4, 50e3, &a);
        sampi_predictor_note(&p, &a);
    }
    sampi_predictor_predict(&p, &pr);
    ck_assert_int_eq(pr.rank, -1);
}
END_TEST

START_TEST(prediction_follows_a_new_straggler)
{
    struct sampi_predictor p;
    struct sampi_prediction pr;
    struct sampi_arrival a;
    double d[6];
    sampi_predictor_init(&p, 6, 8);
    for (int i = 0; i < 8; i++) {
        durations(d, 6, 1, 5e6, 1e6);
        sampi_arrival_from_durations(d, 6, 50e3, &a);
        sampi_predictor_note(&p, &a);
    }
    for (int i = 0; i < 5; i++) {
        durations(d, 6, 4, 5e6, 1e6);
        sampi_arrival_from_durations(d, 6, 50e3, &a);
        sampi_predictor_note(&p, &a);
    }
    sampi_predictor_predict(&p, &pr);
    ck_assert_int_eq(pr.rank, 4); /* 5 of the last 8 */
}
END_TEST

START_TEST(critical_delay_matches_the_model)
{
    /* n = 8: rounds 9 = n + log2 n - 2; (6/7 + 9/7 - 14/8) s beta */
    double s = 64.0 * 1048576, beta = 1.0;
    double crit = sampi_stragglar_critical_delay_ns(8, 9, s, beta);
    ck_assert(fabs(crit - (6.0 / 7 + 9.0 / 7 - 1.75) * s) < 1);
    /* at the critical delay both finish together */
    ck_assert(fabs(sampi_stragglar_predicted_ns(8, 9, s, beta, crit) -
                   sampi_ring_predicted_ns(8, s, beta, crit)) < 1);
    /* n = 3: the matching phase alone (3 rounds of s/2) outlasts a ring */
    ck_assert(sampi_stragglar_critical_delay_ns(3, 3, s, beta) < 0);
    /* 4 ranks, 4 rounds: 2/3 + 4/3 - 3/2 */
    ck_assert(fabs(sampi_stragglar_critical_delay_ns(4, 4, s, beta) - 0.5 * s) < 1);
}
END_TEST

START_TEST(beta_estimate)
{
    struct sampi_beta b = {0};
    sampi_beta_note(&b, 1.75e6, 1.75, 1e6); /* 1 ns/byte */
    ck_assert(fabs(b.ns_per_byte - 1.0) < 1e-12);
    sampi_beta_note(&b, 3.5e6, 1.75, 1e6); /* one slow call moves it a quarter */
    ck_assert(fabs(b.ns_per_byte - 1.25) < 1e-12);
    sampi_beta_note(&b, 1e6, 0, 1e6); /* no factor: ignored */
    ck_assert_int_eq(b.samples, 2);
}
END_TEST

/* Probe times for n ranks where rank z's link is l times slower both ways,
 * with some multiplicative noise. */
static void probe_times(double *left, double *right, int n, int z, double l, double noise,
                        unsigned *seed)
{
    for (int i = 0; i < n; i++) {
        int from_l = (i - 1 + n) % n, from_r = (i + 1) % n;
        double nl = 1 + noise * (rand_r(seed) / (double)RAND_MAX - 0.5);
        double nr = 1 + noise * (rand_r(seed) / (double)RAND_MAX - 0.5);
        left[i] = (i == z || from_l == z ? l : 1.0) * nl;
        right[i] = (i == z || from_r == z ? l : 1.0) * nr;
    }
}

START_TEST(probe_finds_the_degraded_rank)
{
    unsigned seed = 7;
    double left[16], right[16], l, est;
    for (int n = 3; n <= 16; n++)
        for (int z = 0; z < n; z++)
            for (double lv = 1.5; lv <= 4; lv += 0.5) {
                probe_times(left, right, n, z, lv, 0.1, &seed);
                ck_assert_int_eq(sampi_detect_probe(left, right, n, &l, &est), z);
                ck_assert_msg(fabs(l - lv) / lv < 0.15, "n=%d z=%d l=%g score %g", n, z, lv, l);
                ck_assert_msg(fabs(est - lv) / lv < 0.15 && est >= l, "n=%d z=%d l=%g est %g", n, z,
                              lv, est);
            }
    /* a uniform network: nobody stands out */
    probe_times(left, right, 8, -1, 1, 0.1, &seed);
    ck_assert_int_ge(sampi_detect_probe(left, right, 8, &l, &est), 0);
    ck_assert(l < SAMPI_DETECT_THRESHOLD);
    /* a missing time voids the probe */
    left[3] = -1;
    ck_assert_int_eq(sampi_detect_probe(left, right, 8, &l, &est), -1);
    ck_assert_int_eq(sampi_detect_probe(left, right, 2, &l, &est), -1);
}
END_TEST

/* With noisy times the score (the quickest of the rank's four links) reads
 * l low, the estimate (their median) does not: 500 probes of 8 ranks, rank 7
 * at l = 2, every time off by up to 25% either way. */
START_TEST(estimate_is_not_biased_low)
{
    unsigned seed = 5;
    double left[8], right[8], l, est, scores = 0, estimates = 0;
    for (int i = 0; i < 500; i++) {
        probe_times(left, right, 8, 7, 2.0, 0.5, &seed);
        ck_assert_int_eq(sampi_detect_probe(left, right, 8, &l, &est), 7);
        scores += l;
        estimates += est;
    }
    scores /= 500;
    estimates /= 500;
    ck_assert_msg(scores < 1.8, "mean score %g", scores);
    ck_assert_msg(fabs(estimates - 2.0) < 0.1, "mean estimate %g", estimates);
}
END_TEST

/* The test hook's slowed probe times (sampi_debug_slow_link) are what the
 * detector finds as rank z's degraded link, and its text is checked. */
START_TEST(slowed_link_is_found)
{
    unsigned seed = 11;
    double left[16], right[16], l, est;
    for (int n = 3; n <= 16; n++)
        for (int z = 0; z < n; z++) {
            probe_times(left, right, n, -1, 1, 0.05, &seed);
            sampi_detect_slow_link(left, right, n, z, 3);
            ck_assert_int_eq(sampi_detect_probe(left, right, n, &l, &est), z);
            ck_assert_msg(fabs(l - 3) / 3 < 0.15, "n=%d z=%d est %g", n, z, l);
        }
    int rank;
    long after;
    char err[256];
    ck_assert_int_eq(sampi_debug_slow_link_parse("5:4:20", &rank, &l, &after, err, sizeof(err)), 0);
    ck_assert(rank == 5 && l == 4 && after == 20);
    const char *bad[] = {"5:4", "5:1:20", "-1:4:2", "5:4:20x", "x", "5:4:-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(sampi_debug_slow_link_validate(bad[i], err, sizeof(err)), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "sampi_debug_slow_link"));
    }
    ck_assert_int_eq(sampi_debug_slow_link_validate("", err, sizeof(err)), 0);
}
END_TEST

START_TEST(detector_confirms_and_releases)
{
    struct sampi_detector d;
    sampi_detector_init(&d);
    /* two probes are not enough, a third confirms */
    ck_assert_int_eq(sampi_detector_note(&d, 2, 2.0, 2.0), 0);
    ck_assert_int_eq(sampi_detector_note(&d, 2, 2.1, 2.1), 0);
    ck_assert_int_eq(d.rank, -1);
    ck_assert_int_eq(sampi_detector_note(&d, 2, 1.9, 1.9), 1);
    ck_assert_int_eq(d.rank, 2);
    ck_assert(fabs(d.slowdown - 2.0) < 1.0 / 64); /* the median, quantised */
    /* one calm probe keeps it, a second releases it */
    sampi_detector_note(&d, 5, 1.02, 1.02);
    ck_assert_int_eq(d.rank, 2);
    ck_assert_int_eq(sampi_detector_note(&d, 5, 1.03, 1.03), 1);
    ck_assert_int_eq(d.rank, -1);
    /* an interrupted streak starts over */
    sampi_detector_note(&d, 1, 3.0, 3.0);
    sampi_detector_note(&d, 1, 3.0, 3.0);
    sampi_detector_note(&d, 4, 3.0, 3.0);
    sampi_detector_note(&d, 4, 3.0, 3.0);
    ck_assert_int_eq(d.rank, -1);
    sampi_detector_note(&d, 4, 3.0, 3.0);
    ck_assert_int_eq(d.rank, 4);
    /* invalid probes change nothing */
    ck_assert_int_eq(sampi_detector_note(&d, -1, 0, 0), 0);
    ck_assert_int_eq(d.rank, 4);
}
END_TEST

START_TEST(noisy_uniform_network_is_never_flagged)
{
    unsigned seed = 11;
    double left[8], right[8], l, est;
    struct sampi_detector d;
    sampi_detector_init(&d);
    for (int i = 0; i < 1000; i++) {
        probe_times(left, right, 8, -1, 1, 0.3, &seed);
        int r = sampi_detect_probe(left, right, 8, &l, &est);
        sampi_detector_note(&d, r, l, est);
        ck_assert_int_eq(d.rank, -1);
    }
}
END_TEST

START_TEST(optcc_model_and_bound)
{
    /* the spec's figures at p = 8, l = 2: bound 1.143, model 1.179 (k = 32) */
    ck_assert(fabs(sampi_optcc_lower_bound_ratio(8, 2) - 8.0 / 7) < 1e-9);
    ck_assert(fabs(sampi_optcc_model_ratio(8, 2, 32) - 2 * 33.0 / 32 / 1.75) < 1e-9);
    ck_assert(fabs(sampi_optcc_model_ratio(8, 2, 32) - 1.179) < 1e-3);
    /* below 2 the bubble-filled pipeline stays close to T0 */
    ck_assert(sampi_optcc_model_ratio(8, 1.33, 32) < 1.1);
    ck_assert(sampi_optcc_model_ratio(8, 1.33, 32) >= sampi_optcc_lower_bound_ratio(8, 1.33));
}
END_TEST

static void setup(void)
{
    sampi_config_load();
}

static struct sampi_select_hints no_hints(void)
{
    struct sampi_select_hints h = {0};
    h.informed = 1;
    return h;
}

/* StragglAR's expected gain over the predictor's window. */
static double window_gain(const struct sampi_predictor *p, int s, int rounds, double bytes,
                          double beta)
{
    return sampi_stragglar_expected_gain(p->n, p->last, p->gap_ns, p->count, s, rounds, bytes,
                                         beta);
}

/* The world of n ranks, s predicted, beta 1 ns/byte, over p's window. */
static struct sampi_algo_world window_world(const struct sampi_predictor *p, int n, int s,
                                            double bytes)
{
    return (struct sampi_algo_world){.n = n,
                                     .bytes = bytes,
                                     .beta = 1.0,
                                     .straggler = s,
                                     .last = p->last,
                                     .gap_ns = p->gap_ns,
                                     .samples = p->count};
}

/* What the table's models say for a world (algos.def): the hints auto
 * would get. */
static struct sampi_select_hints hints_of(const struct sampi_algo_world *w)
{
    struct sampi_select_hints h = no_hints();
    for (int id = 0; id < SAMPI_ALGO__COUNT; id++)
        if (sampi_algos[id].model && sampi_algos[id].model->gain)
            h.gain[id] = sampi_algos[id].model->gain(w);
    return h;
}

/* A window where s was last by `late` ns in `hits` of `count` calls. */
static void fill(struct sampi_predictor *p, int n, int s, int hits, int count, double late)
{
    struct sampi_arrival a;
    sampi_predictor_init(p, n, count);
    for (int i = 0; i < count; i++) {
        a.last = i < hits ? s : -1;
        a.gap_ns = i < hits ? late : 0;
        a.last_dur_ns = 1;
        sampi_predictor_note(p, &a);
    }
}

START_TEST(expected_gain_weighs_the_misses)
{
    struct sampi_predictor p;
    double s = 64.0 * 1048576;
    double crit = sampi_stragglar_critical_delay_ns(8, 9, s, 1.0);
    /* always late by a lot: the model's full gain, 1 - (9/7) / (14/8) */
    fill(&p, 8, 3, 16, 16, 10 * s);
    ck_assert(fabs(window_gain(&p, 3, 9, s, 1.0) - (1 - (9.0 / 7) / 1.75)) < 1e-9);
    /* always late by exactly the critical delay: no gain */
    fill(&p, 8, 3, 16, 16, crit);
    ck_assert(fabs(window_gain(&p, 3, 9, s, 1.0)) < 1e-9);
    /* late in half the calls: on 8 ranks a hit saves 0.46 s beta and a miss
     * costs 0.39, so it still pays; in a quarter of them it does not */
    fill(&p, 8, 3, 8, 16, 10 * s);
    ck_assert(window_gain(&p, 3, 9, s, 1.0) > 0);
    fill(&p, 8, 3, 4, 16, 10 * s);
    ck_assert(window_gain(&p, 3, 9, s, 1.0) < 0);
    /* another rank's lateness is a miss for this one */
    ck_assert(window_gain(&p, 4, 9, s, 1.0) < 0);
}
END_TEST

START_TEST(prediction_has_hysteresis)
{
    struct sampi_predictor p;
    struct sampi_prediction now = {.rank = -1};
    struct sampi_arrival late = {.last = 2, .gap_ns = 1e6, .last_dur_ns = 1},
                         none = {.last = -1, .gap_ns = 0, .last_dur_ns = 1};
    sampi_predictor_init(&p, 4, 8);
    /* late in every call: predicted */
    for (int i = 0; i < 8; i++) {
        sampi_predictor_note(&p, &late);
        sampi_predictor_update(&p, &now);
    }
    ck_assert_int_eq(now.rank, 2);
    /* then late in every other call: 4 of 8, no majority, still predicted */
    for (int i = 0; i < 8; i++) {
        sampi_predictor_note(&p, i % 2 ? &late : &none);
        sampi_predictor_update(&p, &now);
        ck_assert_int_eq(now.rank, 2);
    }
    /* a fresh predictor without the history does not predict it */
    struct sampi_prediction fresh;
    sampi_predictor_predict(&p, &fresh);
    ck_assert_int_eq(fresh.rank, -1);
    /* late in 2 of 8 (a quarter): dropped */
    for (int i = 0; i < 8; i++) {
        sampi_predictor_note(&p, i % 4 == 3 ? &late : &none);
        sampi_predictor_update(&p, &now);
    }
    ck_assert_int_eq(now.rank, -1);
    /* another rank with the majority takes over at once */
    now.rank = 2;
    struct sampi_arrival other = {.last = 1, .gap_ns = 1e6, .last_dur_ns = 1};
    for (int i = 0; i < 8; i++)
        sampi_predictor_note(&p, i < 5 ? &other : &late);
    sampi_predictor_update(&p, &now);
    ck_assert_int_eq(now.rank, 1);
}
END_TEST

START_TEST(auto_uses_stragglar_when_it_pays)
{
    size_t s = 64u << 20;
    struct sampi_select_hints h = no_hints();
    h.gain[SAMPI_ALGO_STRAGGLAR] = 0.2;
    ck_assert_int_eq(sampi_select_auto_hinted(s, 8, &h), SAMPI_ALGO_STRAGGLAR);
    h.gain[SAMPI_ALGO_STRAGGLAR] = SAMPI_ALGO_GAIN_MARGIN / 2;
    ck_assert_int_eq(sampi_select_auto_hinted(s, 8, &h), sampi_select_auto(s, 8));
    /* the larger gain wins */
    h.gain[SAMPI_ALGO_STRAGGLAR] = 0.2;
    h.gain[SAMPI_ALGO_OPTCC] = 0.3;
    ck_assert_int_eq(sampi_select_auto_hinted(s, 8, &h), SAMPI_ALGO_OPTCC);
    /* through the model: a straggler always late by a lot on 8 ranks */
    struct sampi_predictor p;
    fill(&p, 8, 3, 16, 16, 10.0 * (double)s);
    struct sampi_algo_world w = window_world(&p, 8, 3, (double)s);
    h = hints_of(&w);
    ck_assert(h.gain[SAMPI_ALGO_STRAGGLAR] > 0.2);
    ck_assert_int_eq(sampi_select_auto_hinted(s, 8, &h), SAMPI_ALGO_STRAGGLAR);
    /* no straggler predicted, or beta unknown: no gain */
    w.straggler = -1;
    ck_assert(hints_of(&w).gain[SAMPI_ALGO_STRAGGLAR] == 0);
    w.straggler = 3;
    w.beta = 0;
    ck_assert(hints_of(&w).gain[SAMPI_ALGO_STRAGGLAR] == 0);
}
END_TEST

START_TEST(auto_never_picks_stragglar_on_three_ranks)
{
    struct sampi_predictor p;
    for (double late = 0; late < 1e12; late = late * 10 + 1)
        for (size_t s = 1u << 20; s <= (1u << 30); s <<= 2) {
            fill(&p, 3, 1, 16, 16, late);
            ck_assert(window_gain(&p, 1, 3, (double)s, 1.0) < 0);
            struct sampi_algo_world w = window_world(&p, 3, 1, (double)s);
            struct sampi_select_hints h = hints_of(&w);
            ck_assert_int_ne(sampi_select_auto_hinted(s, 3, &h), SAMPI_ALGO_STRAGGLAR);
        }
    ck_assert(sampi_select_hopeless(SAMPI_ALGO_STRAGGLAR, 1u << 20, 3));
    ck_assert(!sampi_select_hopeless(SAMPI_ALGO_STRAGGLAR, 1u << 20, 4));
}
END_TEST

START_TEST(auto_uses_optcc_when_the_model_pays)
{
    size_t s = 64u << 20;
    /* rank 2 degraded by 2 (detected): the model's 1.179 rings against a
     * ring's 2 */
    struct sampi_coll_ctx ctx = {
        .rank = 0, .size = 8, .straggler = -1, .degraded = 2, .slowdown = 2};
    struct sampi_algo_world w = {
        .n = 8, .bytes = (double)s, .straggler = -1, .ctx = &ctx, .count = s / 8, .extent = 8};
    struct sampi_select_hints h = hints_of(&w);
    ck_assert(fabs(h.gain[SAMPI_ALGO_OPTCC] - (1 - sampi_optcc_model_ratio(8, 2, 32) / 2)) < 1e-9);
    ck_assert_int_eq(sampi_select_auto_hinted(s, 8, &h), SAMPI_ALGO_OPTCC);
    /* barely degraded: optcc's (k+l-1)/k overhead is not worth it */
    ctx.slowdown = 1.02;
    h = hints_of(&w);
    ck_assert_int_ne(sampi_select_auto_hinted(s, 8, &h), SAMPI_ALGO_OPTCC);
    /* cannot run this call (too few elements), or no degraded rank */
    ctx.slowdown = 2;
    w.count = 8;
    ck_assert(hints_of(&w).gain[SAMPI_ALGO_OPTCC] == 0);
    w.count = s / 8;
    ctx.degraded = -1;
    ck_assert(hints_of(&w).gain[SAMPI_ALGO_OPTCC] == 0);
    /* a forced setting wins over the hints */
    ctx.degraded = 2;
    h = hints_of(&w);
    ck_assert_int_eq(sampi_select(SAMPI_ALGO_RING, s, 8, &h), SAMPI_ALGO_RING);
}
END_TEST

Suite *sampi_tracking_suite(void)
{
    return UNIT_SUITE(
        "tracking",
        {.name = "core",
         .setup = setup,
         UNIT_TESTS(arrival_order_from_durations, persistent_straggler_is_predicted,
                    no_majority_no_prediction, prediction_follows_a_new_straggler,
                    critical_delay_matches_the_model, beta_estimate, probe_finds_the_degraded_rank,
                    estimate_is_not_biased_low, slowed_link_is_found,
                    detector_confirms_and_releases, noisy_uniform_network_is_never_flagged,
                    optcc_model_and_bound, expected_gain_weighs_the_misses,
                    prediction_has_hysteresis, auto_uses_stragglar_when_it_pays,
                    auto_never_picks_stragglar_on_three_ranks,
                    auto_uses_optcc_when_the_model_pays)});
}
