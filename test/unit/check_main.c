/*
 * check_main.c - runs every unit suite; exit status is the number of failures
 * (capped), so automake reports the program as one test.
 */
#include "suites.h"

#include <stdlib.h>

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
        sampi_selective_proto_suite,
        sampi_selective_suite,
        sampi_optireduce_suite,
        sampi_dgram_suite,
        sampi_module_suite,
        sampi_optireduce_repair_suite,
        sampi_autosel_suite,
        sampi_tuning_suite,
    };
    SRunner *sr = srunner_create(suites[0]());
    for (size_t i = 1; i < sizeof(suites) / sizeof(suites[0]); i++)
        srunner_add_suite(sr, suites[i]());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
