/*
 * check_lane.c - the lanes (src/core/lane.c): which calls may take one, and
 * what closes it.  A communicator's state is a struct here: a lane reads only
 * c->quiet and advances c->calls.
 */
#include "comm.h"
#include "config.h"
#include "lane.h"
#include "suites.h"

#include <stdint.h>

/* Handles the lane only compares: any distinct addresses do. */
static int handles[4];
#define COMM  ((MPI_Comm)(void *)&handles[0])
#define TYPE  ((MPI_Datatype)(void *)&handles[1])
#define OP    ((MPI_Op)(void *)&handles[2])
#define OTHER ((void *)&handles[3])

static const struct sampi_lane_key key = {COMM, TYPE, OP, 2, 0};

START_TEST(takes_exactly_n_calls)
{
    struct sampi_comm c = {.calls = 7, .quiet = 1};
    uint64_t counter = 100;
    sampi_lane_open(&key, &c, &counter, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_eq(sampi_lane_take(&key), &c);
    ck_assert_ptr_null(sampi_lane_take(&key));
    ck_assert_uint_eq(c.calls, 10);
    ck_assert_uint_eq(counter, 103);
}
END_TEST

START_TEST(every_part_of_the_key_counts)
{
    struct sampi_comm c = {.quiet = 1};
    const struct sampi_lane_key other[] = {
        {(MPI_Comm)OTHER, TYPE, OP, 2, 0},
        {COMM, (MPI_Datatype)OTHER, OP, 2, 0},
        {COMM, TYPE, (MPI_Op)OTHER, 2, 0},
        {COMM, TYPE, OP, 3, 0},
        {COMM, TYPE, OP, 2, 1},
    };
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        sampi_lane_open(&key, &c, NULL, 5);
        ck_assert_ptr_null(sampi_lane_take(&other[i]));
        /* a call that differs goes the full path; the lane stays for the
         * next one that repeats the key */
        ck_assert_ptr_eq(sampi_lane_take(&key), &c);
    }
}
END_TEST

START_TEST(two_calls_alternating_keep_their_lanes)
{
    struct sampi_comm c = {.quiet = 1}, d = {.quiet = 1};
    uint64_t cell8 = 0, cell16 = 0;
    const struct sampi_lane_key k16 = {COMM, TYPE, OP, 4, 0},
                                kd = {(MPI_Comm)OTHER, TYPE, OP, 2, 0};
    sampi_lane_open(&key, &c, &cell8, 10);
    sampi_lane_open(&k16, &c, &cell16, 10);
    sampi_lane_open(&kd, &d, NULL, 10);
    for (int i = 0; i < 10; i++) {
        ck_assert_ptr_eq(sampi_lane_take(&key), &c);
        ck_assert_ptr_eq(sampi_lane_take(&k16), &c);
        ck_assert_ptr_eq(sampi_lane_take(&kd), &d);
    }
    ck_assert_uint_eq(cell8, 10);
    ck_assert_uint_eq(cell16, 10);
    ck_assert_uint_eq(c.calls, 20);
    ck_assert_uint_eq(d.calls, 10);
}
END_TEST

START_TEST(eight_calls_in_a_cycle_keep_their_lanes)
{
    /* a step's reductions of 1..8 elements, again and again */
    struct sampi_comm c = {.quiet = 1};
    struct sampi_lane_key k[8];
    for (int i = 0; i < 8; i++) {
        k[i] = (struct sampi_lane_key){COMM, TYPE, OP, i + 1, 0};
        sampi_lane_open(&k[i], &c, NULL, 100);
    }
    for (int round = 0; round < 100; round++)
        for (int i = 0; i < 8; i++)
            ck_assert_ptr_eq(sampi_lane_take(&k[i]), &c);
    for (int i = 0; i < 8; i++)
        ck_assert_ptr_null(sampi_lane_take(&k[i])); /* each used up */
    ck_assert_uint_eq(c.calls, 800);
}
END_TEST

START_TEST(closed_by_writes_frees_and_other_calls)
{
    struct sampi_comm c = {.quiet = 1};
    uint64_t cell = 0;
    char err[256];
    sampi_lane_open(&key, &c, NULL, UINT64_MAX);
    ck_assert_ptr_eq(sampi_lane_take(&key), &c);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SEGMENT_BYTES, "65536", err, sizeof(err)), 0);
    ck_assert_ptr_null(sampi_lane_take(&key));
    ck_assert_ptr_null(sampi_lane_take(&key)); /* closed, not skipped once */

    sampi_lane_open(&key, &c, NULL, UINT64_MAX);
    sampi_lane_close_all();
    ck_assert_ptr_null(sampi_lane_take(&key));

    /* a call of SAMPI's on c since: a peer may have given up */
    sampi_lane_open(&key, &c, NULL, UINT64_MAX);
    c.quiet = 0;
    ck_assert_ptr_null(sampi_lane_take(&key));
    c.quiet = 1;
    ck_assert_ptr_null(sampi_lane_take(&key));

    /* another call advanced the cell (another size in it, another thread) */
    sampi_lane_open(&key, &c, &cell, UINT64_MAX);
    ck_assert_ptr_eq(sampi_lane_take(&key), &c);
    cell++;
    ck_assert_ptr_null(sampi_lane_take(&key));

    /* a failed write changes nothing */
    sampi_lane_open(&key, &c, NULL, UINT64_MAX);
    ck_assert_int_ne(sampi_cvar_set(SAMPI_CVAR_SEGMENT_BYTES, "lots", err, sizeof(err)), 0);
    ck_assert_ptr_eq(sampi_lane_take(&key), &c);
}
END_TEST

Suite *sampi_lane_suite(void)
{
    return UNIT_SUITE("lane", {.name = "core",
                               UNIT_TESTS(takes_exactly_n_calls, every_part_of_the_key_counts,
                                          two_calls_alternating_keep_their_lanes,
                                          eight_calls_in_a_cycle_keep_their_lanes,
                                          closed_by_writes_frees_and_other_calls)});
}
