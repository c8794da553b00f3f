/*
 * check_lane.c - the lane (src/core/lane.c): which calls may take it, and
 * what closes it.  A communicator's state is a zeroed struct here: the lane
 * reads only its count of calls.
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
    struct sampi_comm c = {.calls = 7};
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
    struct sampi_comm c = {0};
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

START_TEST(closed_by_writes_frees_and_other_calls)
{
    struct sampi_comm c = {0};
    char err[256];
    sampi_lane_open(&key, &c, NULL, UINT64_MAX);
    ck_assert_ptr_eq(sampi_lane_take(&key), &c);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SEGMENT_BYTES, "65536", err, sizeof(err)), 0);
    ck_assert_ptr_null(sampi_lane_take(&key));
    ck_assert_ptr_null(sampi_lane_take(&key)); /* closed, not skipped once */

    sampi_lane_open(&key, &c, NULL, UINT64_MAX);
    sampi_lane_close_all();
    ck_assert_ptr_null(sampi_lane_take(&key));

    sampi_lane_open(&key, &c, NULL, UINT64_MAX);
    c.calls++; /* a call on c that did not take the lane (another thread's) */
    ck_assert_ptr_null(sampi_lane_take(&key));

    sampi_lane_open(&key, &c, NULL, UINT64_MAX);
    sampi_lane_close();
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
                                          closed_by_writes_frees_and_other_calls)});
}
