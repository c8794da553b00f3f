/*
 * suites.h - the Check suites of the unit test program (none calls MPI), and
 * the one way they are built: a table of test cases per suite (unit_suite).
 */
#ifndef SAMPI_TEST_SUITES_H
#define SAMPI_TEST_SUITES_H

#include <check.h>

/* A loop test: Check runs it once for each _i in [start, end). */
struct unit_loop {
    const TTest *test;
    int start, end;
};

/* One Check test case: its loop tests, then its tests, in order (each list
 * ends with a NULL test); a timeout in seconds (at least 300 s: check_main.c); an
 * optional checked fixture, run around each test in its own process. */
struct unit_tcase {
    const char *name;
    double timeout;
    SFun setup, teardown;
    const struct unit_loop *loops;
    const TTest *const *tests;
};

/* The suite NAME of the test cases in TCASES, up to one with a NULL name. */
Suite *unit_suite(const char *name, const struct unit_tcase *tcases);

/* UNIT_SUITE("name", {.name = "case", UNIT_TESTS(a, b)}, ...): the tables as
 * compound literals, so that a suite function is one return statement. */
#define UNIT_SUITE(suite_name, ...)                                                                \
    unit_suite((suite_name), (const struct unit_tcase[]){__VA_ARGS__, {.name = NULL}})
#define UNIT_TESTS(...)                                                                            \
    .tests = (const TTest *const[])                                                                \
    {                                                                                              \
        __VA_ARGS__, NULL                                                                          \
    }
#define UNIT_LOOPS(...)                                                                            \
    .loops = (const struct unit_loop[])                                                            \
    {                                                                                              \
        __VA_ARGS__,                                                                               \
        {                                                                                          \
            .test = NULL                                                                           \
        }                                                                                          \
    }

Suite *sampi_kernels_suite(void);
Suite *sampi_schedules_suite(void);
Suite *sampi_config_suite(void);
Suite *sampi_select_suite(void);
Suite *sampi_mpit_suite(void);
Suite *sampi_optcc_suite(void);
Suite *sampi_stragglar_suite(void);
Suite *sampi_tracking_suite(void);
Suite *sampi_report_suite(void);
Suite *sampi_selective_proto_suite(void);
Suite *sampi_selective_suite(void);
Suite *sampi_optireduce_suite(void);
Suite *sampi_dgram_suite(void);
Suite *sampi_module_suite(void);
Suite *sampi_lane_suite(void);
Suite *sampi_optireduce_repair_suite(void);
Suite *sampi_autosel_suite(void);
Suite *sampi_tuning_suite(void);
Suite *sampi_wait_mode_suite(void);
Suite *sampi_progress_mode_suite(void);
Suite *sampi_own_ranges_suite(void);
Suite *sampi_p2p_suite(void);
Suite *sampi_executor_suite(void);

#endif
