/*
 * check_wait_mode.c - the wait mode (src/base/wait_mode.h): auto's decision
 * over every combination of the node's facts, the mode a setting forces,
 * and that only the block mode ever sleeps; and the waiter's silence clock,
 * which does not count time the process itself did not run.
 */
#include "config.h"
#include "suites.h"
#include "clock.h"
#include "wait.h"
#include "wait_mode.h"

#include <errno.h>

#include <stdio.h>
#include <string.h>

/* The rule, written out once more in its plainest form. */
static enum sampi_wait_mode expected(int ranks, int cpus, int ompi)
{
    if (ranks <= 0 || cpus <= 0)
        return SAMPI_WAIT_YIELD;
    if (ranks > cpus)
        return SAMPI_WAIT_YIELD;
    return ompi == 1 ? SAMPI_WAIT_YIELD : SAMPI_WAIT_POLL;
}

START_TEST(decide_every_combination)
{
    char why[256], count[32];
    for (int ranks = -1; ranks <= 130; ranks++)
        for (int cpus = -1; cpus <= 130; cpus++)
            for (int ompi = -1; ompi <= 1; ompi++) {
                struct sampi_node_facts f = {ranks, cpus, ompi, ompi ? "a test" : NULL};
                why[0] = '\0';
                enum sampi_wait_mode m = sampi_wait_mode_decide(&f, why, sizeof(why));
                ck_assert_msg(m == expected(ranks, cpus, ompi),
                              "%d ranks, %d cpus, ompi %d: mode %d (%s)", ranks, cpus, ompi, m,
                              why);
                /* the reason names the facts it was decided from */
                snprintf(count, sizeof(count), "%d local rank", ranks);
                ck_assert_msg(strstr(why, count), "'%s' lacks '%s'", why, count);
                if (f.source)
                    ck_assert_ptr_nonnull(strstr(why, f.source));
                if (m == SAMPI_WAIT_YIELD && ranks > 0 && cpus > 0 && ranks > cpus)
                    ck_assert_ptr_nonnull(strstr(why, "oversubscribed"));
                if (m == SAMPI_WAIT_YIELD && ranks > 0 && ranks <= cpus)
                    ck_assert_ptr_nonnull(strstr(why, "mpi_yield_when_idle"));
            }
}
END_TEST

START_TEST(decide_fits_a_short_buffer)
{
    char why[8] = "xxxxxxx";
    struct sampi_node_facts f = {16, 16, 0, "the node's ranks and their bindings"};
    ck_assert_int_eq(sampi_wait_mode_decide(&f, why, sizeof(why)), SAMPI_WAIT_POLL);
    ck_assert_uint_eq(strlen(why), sizeof(why) - 1);
}
END_TEST

static void set_mode(const char *text)
{
    char err[256];
    ck_assert_msg(sampi_cvar_set(SAMPI_CVAR_BUSY_POLL, text, err, sizeof(err)) == 0, "%s", err);
}

START_TEST(setting_forces_the_mode)
{
    struct sampi_node_facts poll_node = {2, 2, 0, NULL}, shared = {8, 2, 1, NULL};
    char text[512];
    set_mode("auto");
    /* never resolved: yield, the safe answer for a helper process */
    ck_assert_int_eq(sampi_wait_mode_now(), SAMPI_WAIT_YIELD);
    sampi_wait_mode_resolve(&poll_node);
    ck_assert(sampi_wait_mode_resolved());
    ck_assert_int_eq(sampi_wait_mode_now(), SAMPI_WAIT_POLL);
    ck_assert_str_eq(sampi_wait_mode_describe(text, sizeof(text)),
                     "poll (auto: 2 local ranks on 2 CPUs)");
    sampi_wait_mode_resolve(&shared);
    ck_assert_int_eq(sampi_wait_mode_now(), SAMPI_WAIT_YIELD);
    for (int m = SAMPI_WAIT_POLL; m < SAMPI_WAIT__COUNT; m++) {
        set_mode(sampi_wait_mode_names[m]);
        ck_assert_int_eq(sampi_wait_mode_now(), m);
        sampi_wait_mode_describe(text, sizeof(text));
        ck_assert_msg(strncmp(text, sampi_wait_mode_names[m], strlen(sampi_wait_mode_names[m])) ==
                              0 &&
                          strstr(text, "set by sampi_busy_poll; auto would yield: oversubscribed"),
                      "%s", text);
    }
    set_mode("auto");
}
END_TEST

/* Idle turns in mode `name` from a fresh count: how many slept. */
static uint64_t sleeps_in(const char *name, unsigned turns)
{
    set_mode(name);
    uint64_t before = sampi_wait_sleeps();
    unsigned spins = 0;
    for (unsigned i = 0; i < turns; i++)
        sampi_wait_pause(&spins);
    ck_assert_uint_eq(spins, turns);
    set_mode("auto");
    return sampi_wait_sleeps() - before;
}

START_TEST(only_block_sleeps)
{
    ck_assert_uint_eq(sleeps_in("poll", 100000), 0);
    ck_assert_uint_eq(sleeps_in("yield", 1000), 0);
    /* block: 64 yields, then every turn sleeps (1 us, 2 us, ... 32 us) */
    ck_assert_uint_eq(sleeps_in("block", 64), 0);
    ck_assert_uint_eq(sleeps_in("block", 70), 6);
}
END_TEST

/* A waiter whose peers have been silent for 20 s, with a 2 s stall warning
 * and a 2 s limit; `last_look_ago_ms`: when this rank last looked. */
static struct sampi_waiter silent_20s(int64_t last_look_ago_ms)
{
    char err[256];
    ck_assert(sampi_cvar_set(SAMPI_CVAR_STALL_WARN_MS, "2000", err, sizeof(err)) == 0);
    ck_assert(sampi_cvar_set(SAMPI_CVAR_TIMEOUT_MS, "2000", err, sizeof(err)) == 0);
    struct sampi_waiter w;
    sampi_waiter_init(&w, "a test's wait", NULL, NULL, NULL);
    int64_t now = sampi_now_ns();
    w.progress_ns = now - 20000 * 1000000LL;
    w.next_warn_ns = w.progress_ns + w.warn_ns;
    w.looked_ns = now - last_look_ago_ms * 1000000LL;
    return w;
}

static void waiter_defaults(void)
{
    char err[256];
    ck_assert(sampi_cvar_set(SAMPI_CVAR_STALL_WARN_MS, "120000", err, sizeof(err)) == 0);
    ck_assert(sampi_cvar_set(SAMPI_CVAR_TIMEOUT_MS, "0", err, sizeof(err)) == 0);
}

/* Stopped for 20 s (the last look was 20 s ago): not the peers' silence, no
 * warning, no limit; the time is kept as this rank's absence. */
START_TEST(absence_is_not_silence)
{
    struct sampi_waiter w = silent_20s(20000);
    ck_assert_int_eq(sampi_waiter_idle(&w, NULL), 0);
    ck_assert_int_eq(w.warnings, 0);
    ck_assert(w.absent_ns >= 19000 * 1000000LL);
    waiter_defaults();
}
END_TEST

/* Looking all along (the last look 50 ms ago) while the peers were silent
 * for 20 s: the warning and the limit. */
START_TEST(silence_while_running_counts)
{
    struct sampi_waiter w = silent_20s(50);
    ck_assert_int_eq(sampi_waiter_idle(&w, NULL), -ETIMEDOUT);
    ck_assert_int_eq(w.warnings, 1);
    ck_assert(w.absent_ns == 0);
    waiter_defaults();
}
END_TEST

Suite *sampi_wait_mode_suite(void)
{
    return UNIT_SUITE(
        "wait_mode",
        {.name = "decide", UNIT_TESTS(decide_every_combination, decide_fits_a_short_buffer)},
        {.name = "mode", UNIT_TESTS(setting_forces_the_mode, only_block_sleeps)},
        {.name = "waiter", UNIT_TESTS(absence_is_not_silence, silence_while_running_counts)});
}
