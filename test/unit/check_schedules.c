/*
 * check_schedules.c - ring and rhd schedules for every p = 2..64 and the
 * counts that exercise empty, short and uneven blocks, through the symbolic
 * simulator.
 */
#include "hier_plan.h"
#include "schedule.h"
#include "suites.h"
#include "symsim.h"

#include <errno.h>

static const size_t extra_counts[] = {0, 1, 2, 3, 1000, 4099};

static void check_all_counts(symsim_builder build, int (*rounds_of)(int), int p,
                             int bandwidth_optimal)
{
    size_t counts[sizeof(extra_counts) / sizeof(extra_counts[0]) + 4] = {
        (size_t)p - 1, (size_t)p, (size_t)p + 1, 3 * (size_t)p + 2};
    size_t n = 4;
    for (size_t i = 0; i < sizeof(extra_counts) / sizeof(extra_counts[0]); i++)
        counts[n++] = extra_counts[i];
    for (size_t i = 0; i < n; i++) {
        struct symsim_result res;
        symsim_run(build, rounds_of(p), p, counts[i], &res);
        ck_assert_msg(res.ok, "p=%d count=%zu: %s", p, counts[i], res.error);
        ck_assert_int_eq(res.nrounds, rounds_of(p));
        if (bandwidth_optimal) {
            /* 2(p-1) blocks of at most ceil(count/p) elements */
            size_t block = (counts[i] + (size_t)p - 1) / (size_t)p;
            ck_assert_uint_le(res.max_sent_elems, 2 * (size_t)(p - 1) * block);
        }
    }
}

START_TEST(ring_all_sizes)
{
    check_all_counts(sampi_ring_schedule, sampi_ring_rounds, _i, 1);
}
END_TEST

START_TEST(rhd_all_sizes)
{
    check_all_counts(sampi_rhd_schedule, sampi_rhd_rounds, _i, 0);
}
END_TEST

START_TEST(rhd_power_of_two_volume)
{
    /* without the fold, recursive halving moves (p-1)/p of the vector each way */
    for (int p = 2; p <= 64; p *= 2) {
        struct symsim_result res;
        size_t count = 64 * 1024;
        symsim_run(sampi_rhd_schedule, sampi_rhd_rounds(p), p, count, &res);
        ck_assert_msg(res.ok, "p=%d: %s", p, res.error);
        ck_assert_uint_eq(res.max_sent_elems, 2 * count / (size_t)p * (size_t)(p - 1));
    }
}
END_TEST

START_TEST(round_counts)
{
    ck_assert_int_eq(sampi_ring_rounds(2), 2);
    ck_assert_int_eq(sampi_ring_rounds(7), 12);
    ck_assert_int_eq(sampi_rhd_rounds(2), 4); /* empty fold + 1 + 1 + empty unfold */
    ck_assert_int_eq(sampi_rhd_rounds(7), 6); /* fold + 2 + 2 + unfold */
    ck_assert_int_eq(sampi_rhd_rounds(64), 14);
}
END_TEST

START_TEST(builders_reject_bad_input)
{
    struct sampi_round r[200];
    ck_assert_int_eq(sampi_ring_schedule(1, 0, 10, r, 200), -EINVAL);
    ck_assert_int_eq(sampi_ring_schedule(4, 4, 10, r, 200), -EINVAL);
    ck_assert_int_eq(sampi_ring_schedule(4, -1, 10, r, 200), -EINVAL);
    ck_assert_int_eq(sampi_ring_schedule(4, 0, 10, r, 5), -ENOSPC);
    ck_assert_int_eq(sampi_rhd_schedule(1, 0, 10, r, 200), -EINVAL);
    ck_assert_int_eq(sampi_rhd_schedule(5, 0, 10, r, 3), -ENOSPC);
}
END_TEST

START_TEST(block_ranges_tile_the_vector)
{
    for (int nb = 1; nb <= 17; nb++)
        for (size_t count = 0; count <= 40; count++) {
            size_t next = 0;
            for (int b = 0; b < nb; b++) {
                size_t off, len;
                sampi_block_range(count, nb, b, &off, &len);
                ck_assert_uint_eq(off, next);
                ck_assert_uint_le(len, count / (size_t)nb + 1);
                next = off + len;
            }
            ck_assert_uint_eq(next, count);
        }
}
END_TEST

/* hier's three stages as one flat schedule (hier_plan.h), every p = 2..64
 * and every k dividing it: exact, each element computed at one place, and a
 * rank's traffic within 2(k-1) node blocks plus 2(H-1) blocks of its shard. */
static int hier_k; /* symsim's builders take (p, rank, count): k rides here */
static int hier_builder(int p, int rank, size_t count, struct sampi_round *rounds, int max_rounds)
{
    return sampi_hier_flat_schedule(p, hier_k, rank, count, rounds, max_rounds);
}

/* One layout of h nodes of k ranks at `count`: exact, one place per element,
 * a rank's traffic within the bound above. */
static void check_hier_layout(int h, int k, size_t count)
{
    const int p = h * k;
    struct symsim_result res;
    hier_k = k;
    symsim_run(hier_builder, sampi_hier_flat_rounds(p, k), p, count, &res);
    ck_assert_msg(res.ok, "%d nodes x %d, count=%zu: %s", h, k, count, res.error);
    size_t node_block = (count + (size_t)k - 1) / (size_t)k;
    size_t shard_block = (node_block + (size_t)h - 1) / (size_t)h;
    ck_assert_uint_le(res.max_sent_elems,
                      2 * (size_t)(k - 1) * node_block + 2 * (size_t)(h - 1) * shard_block);
}

START_TEST(hier_all_layouts)
{
    const int p = _i;
    for (int k = 1; k <= p; k++) {
        if (p % k)
            continue;
        const size_t counts[] = {0, 1, 2, (size_t)p - 1, (size_t)p, 3 * (size_t)p + 2, 1000};
        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
            check_hier_layout(p / k, k, counts[i]);
    }
}
END_TEST

START_TEST(hier_large_layouts)
{
    static const int layouts[][2] = {{64, 8}, {32, 16}, {2, 256}, {128, 2}, {16, 32}, {3, 128}};
    for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
        const int h = layouts[l][0], k = layouts[l][1];
        const size_t counts[] = {1, (size_t)(h * k) - 1, 2 * (size_t)(h * k) + 3};
        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
            check_hier_layout(h, k, counts[i]);
    }
}
END_TEST

START_TEST(hier_shards_tile_the_vector)
{
    /* the k shards are the k blocks, one per local rank */
    for (int k = 1; k <= 9; k++)
        for (size_t count = 0; count <= 30; count++) {
            size_t total = 0;
            for (int j = 0; j < k; j++) {
                size_t off, len, boff, blen;
                sampi_hier_shard(count, k, j, &off, &len);
                sampi_block_range(count, k, (j + 1) % k, &boff, &blen);
                ck_assert_uint_eq(off, boff);
                ck_assert_uint_eq(len, blen);
                total += len;
            }
            ck_assert_uint_eq(total, count);
        }
    struct sampi_round r[64];
    ck_assert_int_eq(sampi_hier_node_rounds(1, 0, 10, SAMPI_HIER_REDUCE_SCATTER, r, 0), 0);
    ck_assert_int_eq(sampi_hier_node_rounds(4, 4, 10, SAMPI_HIER_ALLGATHER, r, 64), -EINVAL);
    ck_assert_int_eq(sampi_hier_node_rounds(4, 0, 10, SAMPI_HIER_ALLGATHER, r, 2), -ENOSPC);
    ck_assert_int_eq(sampi_hier_flat_schedule(6, 4, 0, 10, r, 64), -EINVAL);
    ck_assert_int_eq(sampi_hier_flat_schedule(8, 2, 0, 10, r, 5), -ENOSPC);
    ck_assert_int_eq(sampi_hier_flat_rounds(8, 2), 2 + 6);
}
END_TEST

Suite *sampi_schedules_suite(void)
{
    return UNIT_SUITE(
        "schedules",
        {.name = "symbolic",
         .timeout = 120,
         UNIT_LOOPS({ring_all_sizes, 2, 65}, {rhd_all_sizes, 2, 65}, {hier_all_layouts, 2, 65}),
         UNIT_TESTS(rhd_power_of_two_volume, round_counts, builders_reject_bad_input,
                    block_ranges_tile_the_vector, hier_shards_tile_the_vector,
                    hier_large_layouts)});
}
