/*
 * check_report.c - the end-of-run report's pure half (src/auto/report.h):
 * the lateness histogram's quantiles, the late-rank rule, the sums from
 * synthetic durations, the windows' merging, packing, JSON escaping and the
 * JSON of a small record (parsed back here by hand: the keys are there).
 */
#include "report.h"
#include "suites.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

START_TEST(quantiles_come_from_the_histogram)
{
    uint32_t h[SAMPI_REPORT_HIST] = {0};
    ck_assert(sampi_report_hist_quantile(h, 0, 0.5) == 0); /* empty */
    /* 99 values of 30 ms and one of 200 ms */
    for (int i = 0; i < 99; i++)
        h[sampi_report_hist_bucket(30e6)]++;
    h[sampi_report_hist_bucket(200e6)]++;
    double med = sampi_report_hist_quantile(h, 200e6, 0.5);
    ck_assert_msg(fabs(med - 30e6) <= 0.045 * 30e6, "median %g", med);
    double p99 = sampi_report_hist_quantile(h, 200e6, 0.99);
    ck_assert_msg(fabs(p99 - 30e6) <= 0.045 * 30e6, "p99 %g", p99);
    ck_assert(sampi_report_hist_quantile(h, 200e6, 1.0) <= 200e6);
    ck_assert(sampi_report_hist_quantile(h, 200e6, 1.0) >= 190e6);
    /* never above the largest value seen */
    ck_assert(sampi_report_hist_quantile(h, 31e6, 1.0) == 31e6);
    /* the buckets' ends */
    ck_assert_int_eq(sampi_report_hist_bucket(0), 0);
    ck_assert_int_eq(sampi_report_hist_bucket(-5), 0);
    ck_assert_int_eq(sampi_report_hist_bucket(1e15), SAMPI_REPORT_HIST - 1);
    for (double v = 2e5; v < 1e11; v *= 1.37)
        ck_assert(fabs(sampi_report_hist_value(sampi_report_hist_bucket(v)) - v) <= 0.045 * v);
}
END_TEST

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* the median without sorting, against a sort, with ties and sizes 1..40 */
START_TEST(median_matches_a_sort)
{
    double v[40], w[40];
    unsigned seed = 12345;
    for (int round = 0; round < 400; round++) {
        int n = 1 + round % 40;
        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245 + 12345;
            v[i] = w[i] = (double)((seed >> 16) % (round % 3 ? 1000 : 4)); /* ties often */
        }
        qsort(w, (size_t)n, sizeof(double), cmp_double);
        double want = n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
        ck_assert_msg(sampi_report_median(v, n) == want, "n=%d round %d", n, round);
    }
}
END_TEST

START_TEST(late_rank_threshold)
{
    /* last in 5% of the calls, and in 3 of them at least */
    ck_assert(sampi_report_is_late(5, 0, 100, 0, 0));
    ck_assert(!sampi_report_is_late(4, 0, 100, 0, 0));
    ck_assert(!sampi_report_is_late(2, 0, 10, 0, 0));
    ck_assert(sampi_report_is_late(3, 0, 10, 0, 0));
    /* or late after the median rank in a quarter of them */
    ck_assert(sampi_report_is_late(0, 25, 100, 0, 0));
    ck_assert(!sampi_report_is_late(0, 24, 100, 0, 0));
    ck_assert(!sampi_report_is_late(0, 2, 4, 0, 0));
    ck_assert(!sampi_report_is_late(0, 0, 0, 0, 0));
    /* the second route, beside a straggler: as late as it, or half, listed;
     * 2 ms beside 50 ms not (the last route never looks at lateness) */
    ck_assert(sampi_report_is_late(0, 30, 100, 30e6, 30e6));
    ck_assert(sampi_report_is_late(0, 30, 100, 25e6, 50e6));
    ck_assert(!sampi_report_is_late(0, 30, 100, 2e6, 50e6));
    ck_assert(sampi_report_is_late(5, 0, 100, 2e6, 50e6));
}
END_TEST

/* n durations where rank `late` arrived gap ns after the others */
static void durations(double *d, int n, int late, double gap)
{
    for (int i = 0; i < n; i++)
        d[i] = 5e6 + (i == late ? 0 : gap);
}

/* acc on 4 ranks after `calls` calls of 1 MiB where rank `late` was 30 ms late */
static void late_calls(struct sampi_report_acc *acc, int late, int calls)
{
    double d[4];
    ck_assert_int_eq(sampi_report_acc_init(acc, 4), 0);
    for (int c = 0; c < calls; c++) {
        durations(d, 4, late, 30e6);
        sampi_report_acc_note(acc, d, 1 << 20);
    }
}

START_TEST(sums_from_durations)
{
    struct sampi_report_acc acc;
    double d[4];
    late_calls(&acc, 3, 10);
    /* a call where nobody is late: noted, nobody last */
    durations(d, 4, -1, 0);
    sampi_report_acc_note(&acc, d, 1 << 20);
    /* a void call (a rank without a measurement): not noted */
    d[2] = -1;
    sampi_report_acc_note(&acc, d, 1 << 20);
    ck_assert_uint_eq(acc.tot.tracked, 11);
    ck_assert_uint_eq(acc.tot.with_last, 10);
    ck_assert_uint_eq(acc.rank[3].last_calls, 10);
    ck_assert_uint_eq(acc.rank[3].late_calls, 10);
    ck_assert_uint_eq(acc.rank[0].last_calls + acc.rank[0].late_calls, 0);
    /* three ranks waited 30 ms in each of 10 calls */
    ck_assert(fabs(acc.tot.lost_ns - 3 * 30e6 * 10) < 1);
    ck_assert(fabs(acc.rank[3].caused_ns - 3 * 30e6 * 10) < 1);
    ck_assert(fabs(acc.rank[0].waited_ns - 30e6 * 10) < 1);
    ck_assert(fabs(acc.rank[3].late_max_ns - 30e6) < 1);
    ck_assert_uint_eq(acc.tot.bucket_calls[20], 11);
    sampi_report_acc_free(&acc);
}
END_TEST

START_TEST(windows_merge_pairwise)
{
    struct sampi_report_acc acc;
    double d[3];
    ck_assert_int_eq(sampi_report_acc_init(&acc, 3), 0);
    int calls = 3 * SAMPI_REPORT_WINDOWS + 5;
    for (int c = 0; c < calls; c++) {
        durations(d, 3, 1, 2e6);
        sampi_report_acc_note(&acc, d, 4096);
    }
    uint64_t sum = 0;
    double late = 0;
    for (int w = 0; w < SAMPI_REPORT_WINDOWS; w++) {
        sum += acc.tot.window_calls[w];
        late += acc.rank[1].window_ns[w];
    }
    ck_assert_uint_eq(sum, (uint64_t)calls);
    ck_assert_uint_eq(acc.tot.span, 4);
    ck_assert(fabs(late - calls * 2e6) < 1);
    sampi_report_acc_free(&acc);
}
END_TEST

static const char *escaped(const char *s, struct sampi_report_buf *b)
{
    sampi_report_buf_free(b);
    sampi_report_json_string(b, s);
    return b->p;
}

START_TEST(json_escaping)
{
    struct sampi_report_buf b = {0};
    ck_assert_str_eq(escaped("plain", &b), "\"plain\"");
    ck_assert_str_eq(escaped("a\"b\\c", &b), "\"a\\\"b\\\\c\"");
    ck_assert_str_eq(escaped("l1\nl2\t\r", &b), "\"l1\\nl2\\t\\r\"");
    ck_assert_str_eq(escaped("\x01\x1f\x7f", &b), "\"\\u0001\\u001f\\u007f\"");
    ck_assert_str_eq(escaped("h\xc3\xa9", &b), "\"h\xc3\xa9\""); /* UTF-8 as it is */
    sampi_report_buf_free(&b);
}
END_TEST

START_TEST(record_packs_and_formats)
{
    struct sampi_report_acc acc;
    late_calls(&acc, 2, 20);
    sampi_report_acc_degraded(&acc, 1, 2.5);
    sampi_report_acc_degraded(&acc, 1, 3.0);
    int world[4] = {4, 5, 6, 7};
    struct sampi_report_comm rec, back;
    memset(&rec, 0, sizeof(rec));
    rec.h.label = 7;
    rec.h.size = 4;
    rec.h.degraded = -1;
    rec.h.calls[SAMPI_ALGO_RING] = 30;
    rec.h.ncells = 1;
    rec.h.cell[0] = (struct sampi_report_cell){.bucket = 20,
                                               .regime = SAMPI_REGIME_STRAGGLER,
                                               .calls = 30,
                                               .choice = SAMPI_ALGO_RING,
                                               .choice_ns = 8e6,
                                               .native_samples = 3,
                                               .native_ns = 10e6};
    rec.h.tot = acc.tot;
    rec.rank = acc.rank;
    rec.world_rank = world;
    size_t need = sampi_report_pack(&rec, NULL);
    ck_assert_uint_eq(need % 8, 0);
    char *buf = malloc(2 * need);
    ck_assert_uint_eq(sampi_report_pack(&rec, buf), need);
    ck_assert_uint_eq(sampi_report_unpack(buf, need - 1, &back), 0); /* short */
    ck_assert_uint_eq(sampi_report_unpack(buf, 2 * need, &back), need);
    ck_assert_uint_eq(back.rank[2].last_calls, 20);
    ck_assert_int_eq(back.world_rank[3], 7);
    const char *host[8] = {"a", "a", "a", "a", "b\"x", "b\"x", "c", "c"};
    const char *names[1] = {"report"}, *values[1] = {"/tmp/r"};
    struct sampi_report_run run = {.ranks = 8,
                                   .host = host,
                                   .mpi_version = "Open MPI v4.1",
                                   .var_names = names,
                                   .var_values = values,
                                   .nvars = 1};
    struct sampi_report_buf j = {0}, t = {0};
    sampi_report_format_json(&j, &run, &back, 1);
    sampi_report_format_text(&t, &run, &back, 1);
    ck_assert(!j.failed && !t.failed);
    /* rank 2 is world rank 6, on host c; the saving is (10 - 8) ms x 30 */
    ck_assert_ptr_nonnull(strstr(j.p, "\"late_ranks\": [{\"rank\": 2, \"world_rank\": 6, "
                                      "\"node\": \"c\", \"last_calls\": 20, \"late_calls\": 20"));
    ck_assert_ptr_nonnull(strstr(j.p, "\"estimate_ms\": 60.000000"));
    ck_assert_ptr_nonnull(strstr(j.p, "\"hosts\": [\"a\", \"b\\\"x\", \"c\"]"));
    ck_assert_ptr_nonnull(strstr(j.p, "\"late_nodes\": []")); /* rank 3 is on c too */
    /* seen degraded at two probes, gone by the end */
    ck_assert_ptr_nonnull(strstr(j.p, "\"degraded_links\": [{\"rank\": 1, \"world_rank\": 5, "
                                      "\"slowdown\": 3.000, \"probes\": 2, \"at_end\": false}]"));
    ck_assert_ptr_nonnull(strstr(t.p, "of 30 calls, 20 tracked"));
    ck_assert_ptr_nonnull(strstr(t.p, "rank 2 (world rank 6, c): late in 20 of 20 tracked calls"));
    sampi_report_buf_free(&j);
    sampi_report_buf_free(&t);
    free(buf);
    sampi_report_acc_free(&acc);
}
END_TEST

/* The per-rank counters the pvars read: calls last, and their gaps summed */
START_TEST(peer_late_sums)
{
    struct sampi_stats s;
    memset(&s, 0, sizeof(s));
    sampi_stats_note_arrival(&s, 4, 2, 30000);
    sampi_stats_note_arrival(&s, 4, 2, 50000);
    sampi_stats_note_arrival(&s, 4, 1, 7000);
    sampi_stats_note_arrival(&s, 4, -1, 0);
    _Atomic uint64_t *p = sampi_stats_peer_late(&s, 4, 0);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(sampi_stat_get(&p[2]), 2);
    ck_assert_uint_eq(sampi_stat_get(&p[4 + 2]), 80000);
    ck_assert_uint_eq(sampi_stat_get(&p[4 + 1]), 7000);
    ck_assert_uint_eq(sampi_stat_get(&p[4 + 0]), 0);
    ck_assert_uint_eq(sampi_stat_get(&s.arrival_samples), 4);
    ck_assert_uint_eq(sampi_stat_get(&s.arrival_skew_max_ns), 50000);
    sampi_stats_release(&s);
}
END_TEST

Suite *sampi_report_suite(void)
{
    return UNIT_SUITE("report",
                      {.name = "core",
                       UNIT_TESTS(quantiles_come_from_the_histogram, median_matches_a_sort,
                                  late_rank_threshold, sums_from_durations, windows_merge_pairwise,
                                  json_escaping, record_packs_and_formats, peer_late_sums)});
}
