/*
 * check_select.c - the selection table, without a network.
 */
#include "algos.h"
#include "config.h"
#include "select.h"
#include "suites.h"

static char err[600];

static void setup(void)
{
    sampi_config_load();
}

START_TEST(defaults)
{
    long long native_max = sampi_cvar_int(SAMPI_CVAR_NATIVE_MAX_BYTES);
    long long rhd_max = sampi_cvar_int(SAMPI_CVAR_RHD_MAX_BYTES);
    long long top = native_max > rhd_max ? native_max : rhd_max;
    ck_assert_int_eq(sampi_select_auto(1, 4), SAMPI_ALGO_NATIVE);
    ck_assert_int_eq(sampi_select_auto((size_t)native_max, 4), SAMPI_ALGO_NATIVE);
    ck_assert_int_eq(sampi_select_auto((size_t)top + 1, 7), SAMPI_ALGO_RING);
    ck_assert_int_eq(sampi_select_auto((size_t)1 << 40, 2), SAMPI_ALGO_RING);
}
END_TEST

START_TEST(rhd_between_the_thresholds)
{
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_NATIVE_MAX_BYTES, "8k", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_RHD_MAX_BYTES, "1m", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_select_auto(8192, 4), SAMPI_ALGO_NATIVE);
    ck_assert_int_eq(sampi_select_auto(8193, 4), SAMPI_ALGO_RHD);
    ck_assert_int_eq(sampi_select_auto(1 << 20, 7), SAMPI_ALGO_RHD);
    ck_assert_int_eq(sampi_select_auto((1 << 20) + 1, 7), SAMPI_ALGO_RING);
}
END_TEST

START_TEST(thresholds_follow_variables)
{
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_NATIVE_MAX_BYTES, "0", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_select_auto(1, 4), SAMPI_ALGO_RHD);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_RHD_MAX_BYTES, "0", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_select_auto(1, 4), SAMPI_ALGO_RING);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_NATIVE_MAX_BYTES, "1g", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_select_auto((size_t)1 << 30, 4), SAMPI_ALGO_NATIVE);
}
END_TEST

START_TEST(forced_setting_wins)
{
    for (int a = SAMPI_ALGO_AUTO + 1; a < SAMPI_ALGO__COUNT; a++)
        ck_assert_int_eq(sampi_select(a, 1, 4, NULL), a);
    ck_assert_int_eq(sampi_select(SAMPI_ALGO_AUTO, 1, 4, NULL), sampi_select_auto(1, 4));
    ck_assert_int_ne(sampi_select(SAMPI_ALGO_AUTO, 1 << 30, 4, NULL), SAMPI_ALGO_AUTO);
}
END_TEST

START_TEST(table_is_well_formed)
{
    /* the last rule has no size limit, so every call gets an algorithm, and
     * auto only ever picks exact algorithms marked for it */
    ck_assert_int_eq(sampi_auto_rules[sampi_auto_rule_count - 1].max_bytes, SAMPI_CVAR__COUNT);
    for (int i = 0; i < sampi_auto_rule_count; i++) {
        const struct sampi_algo *a = &sampi_algos[sampi_auto_rules[i].algo];
        ck_assert_msg(a->caps & SAMPI_CAP_AUTO, "%s in the auto table", a->name);
        ck_assert_msg(a->caps & SAMPI_CAP_EXACT, "%s is not exact", a->name);
        ck_assert_ptr_nonnull(a->run);
        if (sampi_auto_rules[i].max_bytes != SAMPI_CVAR__COUNT)
            ck_assert_int_eq(sampi_cvar_descs[sampi_auto_rules[i].max_bytes].type,
                             SAMPI_CVAR_TYPE_SIZE);
    }
    ck_assert_ptr_null(sampi_algos[SAMPI_ALGO_AUTO].run);
}
END_TEST

Suite *sampi_select_suite(void)
{
    return UNIT_SUITE("select",
                      {.name = "table",
                       .setup = setup,
                       UNIT_TESTS(defaults, rhd_between_the_thresholds, thresholds_follow_variables,
                                  forced_setting_wins, table_is_well_formed)});
}
