/*
 * check_progress_mode.c - the progress mode (src/base/progress_mode.h):
 * auto's decision over every combination of a process's facts, and the
 * agreement's outcome.
 */
#include "progress_mode.h"
#include "suites.h"

#include <stdio.h>
#include <string.h>

/* The rule, written out once more in its plainest form: a thread only
 * where a PU is left over for it. */
static enum sampi_progress_mode expected(int binding, int node, int ranks)
{
    if (binding <= 0)
        return SAMPI_PROGRESS_CALLS;
    if (binding < node) /* bound */
        return binding >= 2 ? SAMPI_PROGRESS_THREAD : SAMPI_PROGRESS_CALLS;
    if (binding == 1)
        return SAMPI_PROGRESS_CALLS;
    return ranks > 0 && node > ranks ? SAMPI_PROGRESS_THREAD : SAMPI_PROGRESS_CALLS;
}

START_TEST(decide_every_combination)
{
    char why[300], facts[64];
    for (int binding = -1; binding <= 70; binding++)
        for (int node = 0; node <= 70; node++)
            for (int ranks = -1; ranks <= 70; ranks++) {
                if (binding > node && node > 0)
                    continue; /* a binding is a part of the node */
                struct sampi_progress_facts f = {binding, node, ranks};
                why[0] = '\0';
                enum sampi_progress_mode m = sampi_progress_mode_decide(&f, why, sizeof(why));
                ck_assert_msg(m == expected(binding, node, ranks),
                              "binding %d, node %d, ranks %d: mode %d (%s)", binding, node, ranks,
                              m, why);
                /* the reason names the facts it was decided from */
                snprintf(facts, sizeof(facts), "%d PUs on the node, %d in the binding", node,
                         binding);
                ck_assert_msg(strstr(why, facts), "'%s' lacks '%s'", why, facts);
                if (m == SAMPI_PROGRESS_CALLS && binding > 0)
                    ck_assert_ptr_nonnull(strstr(why, "no free PU"));
            }
}
END_TEST

/* The layouts sampi(7) names. */
START_TEST(decide_named_layouts)
{
    char why[300];
    /* 8 ranks bound to 2 cores each on a 16-core node */
    struct sampi_progress_facts pe2 = {2, 16, 8};
    ck_assert_int_eq(sampi_progress_mode_decide(&pe2, why, sizeof(why)), SAMPI_PROGRESS_THREAD);
    /* one rank per core */
    struct sampi_progress_facts core = {1, 16, 16};
    ck_assert_int_eq(sampi_progress_mode_decide(&core, why, sizeof(why)), SAMPI_PROGRESS_CALLS);
    /* 2 ranks unbound on 2 PUs, and 1 */
    struct sampi_progress_facts two = {2, 2, 2}, one = {2, 2, 1};
    ck_assert_int_eq(sampi_progress_mode_decide(&two, why, sizeof(why)), SAMPI_PROGRESS_CALLS);
    ck_assert_int_eq(sampi_progress_mode_decide(&one, why, sizeof(why)), SAMPI_PROGRESS_THREAD);
    /* a short buffer is cut, never overrun */
    char small[8];
    sampi_progress_mode_decide(&pe2, small, sizeof(small));
    ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
}
END_TEST

/* Thread only where this process wants it and every rank agreed. */
START_TEST(agreement_decides)
{
    char buf[700];
    sampi_progress_mode_resolve(SAMPI_PROGRESS_THREAD, 0, "auto: a test");
    ck_assert_int_eq(sampi_progress_mode_now(), SAMPI_PROGRESS_CALLS);
    ck_assert_ptr_nonnull(strstr(sampi_progress_mode_describe(buf, sizeof(buf)), "not every rank"));
    sampi_progress_mode_resolve(SAMPI_PROGRESS_CALLS, 1, "auto: a test");
    ck_assert_int_eq(sampi_progress_mode_now(), SAMPI_PROGRESS_CALLS);
    sampi_progress_mode_resolve(SAMPI_PROGRESS_THREAD, 1, "auto: a test");
    ck_assert_int_eq(sampi_progress_mode_now(), SAMPI_PROGRESS_THREAD);
    sampi_progress_mode_placed("pinned to PU 3 (a test)");
    ck_assert_ptr_nonnull(strstr(sampi_progress_mode_describe(buf, sizeof(buf)), "PU 3"));
    sampi_progress_mode_resolve(SAMPI_PROGRESS_CALLS, 0, "set by sampi_progress");
    ck_assert_ptr_null(strstr(sampi_progress_mode_describe(buf, sizeof(buf)), "PU 3"));
}
END_TEST

Suite *sampi_progress_mode_suite(void)
{
    return UNIT_SUITE(
        "progress_mode",
        {.name = "decide", UNIT_TESTS(decide_every_combination, decide_named_layouts)},
        {.name = "mode", UNIT_TESTS(agreement_decides)});
}
