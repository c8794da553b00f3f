/*
 * suites.h - the Check suites of the unit test program (none calls MPI).
 */
#ifndef SAMPI_TEST_SUITES_H
#define SAMPI_TEST_SUITES_H

#include <check.h>

Suite *sampi_kernels_suite(void);
Suite *sampi_schedules_suite(void);
Suite *sampi_config_suite(void);
Suite *sampi_select_suite(void);
Suite *sampi_mpit_suite(void);
Suite *sampi_optcc_suite(void);
Suite *sampi_stragglar_suite(void);
Suite *sampi_tracking_suite(void);
Suite *sampi_selective_proto_suite(void);
Suite *sampi_selective_suite(void);
Suite *sampi_optireduce_suite(void);
Suite *sampi_dgram_suite(void);
Suite *sampi_module_suite(void);
Suite *sampi_optireduce_repair_suite(void);
Suite *sampi_autosel_suite(void);
Suite *sampi_tuning_suite(void);

#endif
