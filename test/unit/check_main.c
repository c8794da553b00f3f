/*
 * check_main.c - builds the unit suites from their tables (unit_suite) and
 * runs them all; the exit status says whether any test failed, so automake
 * reports the program as one test.
 */
#include "suites.h"

#include <stdlib.h>

/* Check's own default is 4 s a test case, and a verdict must not depend on
 * how busy the machine is: with both cores loaded beside CI's run, autosel's
 * 200,000 decisions of repeats_are_decided_alike took longer than 4 s and
 * failed.  Every case gets at least this, far above any stall (the cases
 * that set 60 or 120 s did so to lift Check's 4 s for work that takes
 * seconds on an idle machine). */
enum { UNIT_DEFAULT_TIMEOUT_S = 300 };

Suite *unit_suite(const char *name, const struct unit_tcase *tcases)
{
    Suite *s = suite_create(name);
    for (const struct unit_tcase *c = tcases; c->name; c++) {
        TCase *tc = tcase_create(c->name);
        tcase_set_timeout(tc, c->timeout > UNIT_DEFAULT_TIMEOUT_S ? c->timeout
                                                                  : UNIT_DEFAULT_TIMEOUT_S);
        if (c->setup || c->teardown)
            tcase_add_checked_fixture(tc, c->setup, c->teardown);
        for (const struct unit_loop *l = c->loops; l && l->test; l++)
            tcase_add_loop_test(tc, l->test, l->start, l->end);
        for (const TTest *const *t = c->tests; t && *t; t++)
            tcase_add_test(tc, *t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    Suite *(*const suites[])(void) = {
        sampi_kernels_suite,
        sampi_schedules_suite,
        sampi_config_suite,
        sampi_select_suite,
        sampi_mpit_suite,
        sampi_optcc_suite,
        sampi_stragglar_suite,
        sampi_tracking_suite,
        sampi_report_suite,
        sampi_selective_proto_suite,
        sampi_selective_suite,
        sampi_optireduce_suite,
        sampi_dgram_suite,
        sampi_module_suite,
        sampi_optireduce_repair_suite,
        sampi_autosel_suite,
        sampi_tuning_suite,
        sampi_wait_mode_suite,
        sampi_progress_mode_suite,
        sampi_own_ranges_suite,
        sampi_p2p_suite,
        sampi_lane_suite,
        sampi_executor_suite,
    };
    SRunner *sr = srunner_create(suites[0]());
    for (size_t i = 1; i < sizeof(suites) / sizeof(suites[0]); i++)
        srunner_add_suite(sr, suites[i]());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
