/*
 * check_config.c - the control-variable registry: parsing, errors that name
 * the variable and the accepted values, environment loading and precedence.
 */
#include "algos.h"
#include "config.h"
#include "debug_delay.h"
#include "err.h"
#include "netdev.h"
#include "pin.h"
#include "suites.h"

#include <errno.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static char err[600];

static long long parse_ok(enum sampi_cvar_id id, const char *text)
{
    long long v = -12345;
    int rc = sampi_cvar_parse(id, text, &v, err, sizeof(err));
    ck_assert_msg(rc == 0, "'%s' rejected: %s", text, err);
    return v;
}

static void parse_bad(enum sampi_cvar_id id, const char *text, const char *must_mention)
{
    long long v = 0;
    err[0] = '\0';
    ck_assert_int_eq(sampi_cvar_parse(id, text, &v, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, sampi_cvar_descs[id].name), "error does not name the variable: %s",
                  err);
    if (must_mention)
        ck_assert_msg(strstr(err, must_mention), "error '%s' does not mention '%s'", err,
                      must_mention);
}

START_TEST(every_default_parses)
{
    for (int id = 0; id < SAMPI_CVAR__COUNT; id++)
        parse_ok(id, sampi_cvar_descs[id].default_text);
}
END_TEST

START_TEST(sizes_take_suffixes)
{
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_RHD_MAX_BYTES, "4096"), 4096);
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_RHD_MAX_BYTES, "1k"), 1024);
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_RHD_MAX_BYTES, "2M"), 2 << 20);
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_RHD_MAX_BYTES, "3g"), 3LL << 30);
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_RHD_MAX_BYTES, "4KiB"), 4096);
    parse_bad(SAMPI_CVAR_RHD_MAX_BYTES, "12x", "byte count");
    parse_bad(SAMPI_CVAR_RHD_MAX_BYTES, "-1", NULL);
    parse_bad(SAMPI_CVAR_RHD_MAX_BYTES, "", NULL);
    parse_bad(SAMPI_CVAR_RHD_MAX_BYTES, "99999999999999999999", NULL);
    parse_bad(SAMPI_CVAR_SEGMENT_BYTES, "100", "1024"); /* below the minimum */
}
END_TEST

START_TEST(integers_are_range_checked)
{
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_VERBOSE, "3"), 3);
    parse_bad(SAMPI_CVAR_VERBOSE, "4", "[0, 3]");
    parse_bad(SAMPI_CVAR_VERBOSE, "1.5", NULL);
    parse_bad(SAMPI_CVAR_TIMEOUT_MS, "-5", NULL);
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_TIMEOUT_MS, "0"), 0);
}
END_TEST

START_TEST(booleans)
{
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_CHECK_ARGS, "yes"), 1);
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_CHECK_ARGS, "OFF"), 0);
    parse_bad(SAMPI_CVAR_CHECK_ARGS, "maybe", "true");
}
END_TEST

START_TEST(enums_list_accepted_values)
{
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_ALGORITHM, "ring"), SAMPI_ALGO_RING);
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_ALGORITHM, "RHD"), SAMPI_ALGO_RHD);
    parse_bad(SAMPI_CVAR_ALGORITHM, "tree", "auto, native, ring, rhd");
    parse_bad(SAMPI_CVAR_NETDEV, "verbs", "mpi");
    parse_bad(SAMPI_CVAR_FALLBACK, "loud", "silent, warn, error");
    /* an item's number, as MPI_T writes it: sampi_busy_poll=1 (once a
     * boolean) still means poll */
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_BUSY_POLL, "1"), 1);
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_BUSY_POLL, "0"), 0);
    ck_assert_int_eq(parse_ok(SAMPI_CVAR_BUSY_POLL, "yield"), 2);
    parse_bad(SAMPI_CVAR_BUSY_POLL, "4", "auto, poll, yield, block");
    parse_bad(SAMPI_CVAR_BUSY_POLL, "-1", "auto, poll, yield, block");
    parse_bad(SAMPI_CVAR_BUSY_POLL, "1x", "auto, poll, yield, block");
}
END_TEST

START_TEST(enum_items_match_their_tables)
{
    for (int a = 0; a < SAMPI_ALGO__COUNT; a++) {
        ck_assert_str_eq(sampi_algo_names[a], sampi_algos[a].name);
        ck_assert_int_eq(sampi_algos[a].id, a);
        ck_assert_ptr_eq(sampi_algo_find(sampi_algos[a].name), &sampi_algos[a]);
    }
    ck_assert_ptr_null(sampi_algo_names[SAMPI_ALGO__COUNT]);
    ck_assert_ptr_null(sampi_algo_find("nope"));
    /* every netdev item but auto is a row of the netdev table (built in or a
     * module), and back; mpi is built in */
    int items = 0;
    for (int i = 1; sampi_netdev_names[i]; i++, items++) {
        int found = 0;
        for (int r = 0; sampi_netdev_table[r].name; r++)
            found += strcmp(sampi_netdev_table[r].name, sampi_netdev_names[i]) == 0;
        ck_assert_msg(found == 1, "netdev '%s' is in the table %d times", sampi_netdev_names[i],
                      found);
    }
    int backends = 0;
    for (int r = 0; sampi_netdev_table[r].name; r++, backends++) {
        ck_assert_int_ge(sampi_cvar_enum_index(SAMPI_CVAR_NETDEV, sampi_netdev_table[r].name), 1);
        ck_assert((sampi_netdev_table[r].builtin != NULL) !=
                  (sampi_netdev_table[r].module != NULL));
    }
    ck_assert_int_eq(items, backends);
    ck_assert_ptr_eq(sampi_netdev_load("mpi", NULL, 0), &sampi_netdev_mpi_ops);
}
END_TEST

START_TEST(environment_then_writes)
{
    setenv("SAMPI_ALGORITHM", "rhd", 1);
    setenv("SAMPI_SEGMENT_BYTES", "64k", 1);
    setenv("SAMPI_VERBOSE", "banana", 1); /* rejected: warning, default kept */
    setenv("SAMPI_PIN", "3-1", 1);        /* rejected */
    ck_assert_int_eq(sampi_config_load(), 2);
    ck_assert_int_eq(sampi_cvar_int(SAMPI_CVAR_ALGORITHM), SAMPI_ALGO_RHD);
    ck_assert_int_eq(sampi_cvar_int(SAMPI_CVAR_SEGMENT_BYTES), 65536);
    ck_assert_int_eq(sampi_cvar_int(SAMPI_CVAR_VERBOSE), 0);
    char buf[SAMPI_CVAR_STRING_MAX];
    ck_assert_str_eq(sampi_cvar_text(SAMPI_CVAR_PIN, buf, sizeof(buf)), "auto");
    /* a later write (the MPI_T path) wins over the environment */
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_ALGORITHM, "ring", err, sizeof(err)), 0);
    ck_assert_int_eq(sampi_cvar_int(SAMPI_CVAR_ALGORITHM), SAMPI_ALGO_RING);
    /* a bad write changes nothing */
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_ALGORITHM, "bogus", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(sampi_cvar_int(SAMPI_CVAR_ALGORITHM), SAMPI_ALGO_RING);
    ck_assert_str_eq(sampi_cvar_text(SAMPI_CVAR_ALGORITHM, buf, sizeof(buf)), "ring");
    unsetenv("SAMPI_ALGORITHM");
    unsetenv("SAMPI_SEGMENT_BYTES");
    unsetenv("SAMPI_VERBOSE");
    unsetenv("SAMPI_PIN");
}
END_TEST

START_TEST(env_names)
{
    char buf[64];
    ck_assert_str_eq(sampi_cvar_env_name(SAMPI_CVAR_NATIVE_MAX_BYTES, buf, sizeof(buf)),
                     "SAMPI_NATIVE_MAX_BYTES");
}
END_TEST

START_TEST(pattern_hash_tracks_pattern_only)
{
    sampi_config_load();
    uint32_t h0 = sampi_config_pattern_hash();
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_VERBOSE, "2", err, sizeof(err)), 0);
    ck_assert_uint_eq(sampi_config_pattern_hash(), h0);
    char was[64];
    sampi_cvar_text(SAMPI_CVAR_SEGMENT_BYTES, was, sizeof(was));
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SEGMENT_BYTES, "128k", err, sizeof(err)), 0);
    uint32_t h1 = sampi_config_pattern_hash();
    ck_assert_uint_ne(h1, h0);
    ck_assert_uint_eq(sampi_config_pattern_hash(), h1); /* kept, asked again */
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_SEGMENT_BYTES, was, err, sizeof(err)), 0);
    ck_assert_uint_eq(sampi_config_pattern_hash(), h0); /* a write computes it again */
}
END_TEST

START_TEST(pin_lists)
{
    hwloc_bitmap_t m = hwloc_bitmap_alloc();
    ck_assert_int_eq(sampi_pin_parse_list("0,2-3", m, err, sizeof(err)), 0);
    ck_assert_int_eq(hwloc_bitmap_weight(m), 3);
    ck_assert(hwloc_bitmap_isset(m, 0) && hwloc_bitmap_isset(m, 2) && hwloc_bitmap_isset(m, 3));
    /* beyond a 64-bit mask: nodes have 128-384 PUs */
    ck_assert_int_eq(sampi_pin_parse_list("63,200-383", m, err, sizeof(err)), 0);
    ck_assert_int_eq(hwloc_bitmap_weight(m), 185);
    ck_assert_int_eq(hwloc_bitmap_last(m), 383);
    const char *bad[] = {"", "a", "1-", "3-1", "65536", "1,,2", "1;2", "-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(sampi_pin_parse_list(bad[i], m, err, sizeof(err)) == -EINVAL, "'%s' accepted",
                      bad[i]);
    ck_assert_ptr_nonnull(strstr(err, "sampi_pin"));
    hwloc_bitmap_free(m);
}
END_TEST

START_TEST(debug_delay_entries)
{
    double ms, jitter;
    ck_assert_int_eq(sampi_debug_delay_parse("", 3, &ms, &jitter, err, sizeof(err)), 0);
    ck_assert(ms == 0 && jitter == 0);
    ck_assert_int_eq(sampi_debug_delay_parse("3:20", 3, &ms, &jitter, err, sizeof(err)), 0);
    ck_assert(ms == 20 && jitter == 0);
    ck_assert_int_eq(sampi_debug_delay_parse("3:20", 2, &ms, &jitter, err, sizeof(err)), 0);
    ck_assert(ms == 0);
    ck_assert_int_eq(sampi_debug_delay_parse("1:5:2.5,6:20", 1, &ms, &jitter, err, sizeof(err)), 0);
    ck_assert(ms == 5 && jitter == 2.5);
    ck_assert_int_eq(sampi_debug_delay_parse("*:1,6:20", 6, &ms, &jitter, err, sizeof(err)), 0);
    ck_assert(ms == 20); /* the last entry naming a rank wins */
    ck_assert_int_eq(sampi_debug_delay_parse("*:1,6:20", 4, &ms, &jitter, err, sizeof(err)), 0);
    ck_assert(ms == 1);
    const char *bad[] = {"3", "3:", "x:1", "-1:5", "3:-2", "3:5:", "3:5;4:1", "3:9999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(sampi_debug_delay_parse(bad[i], 3, &ms, &jitter, err, sizeof(err)) == -EINVAL,
                      "'%s' accepted", bad[i]);
        ck_assert_ptr_nonnull(strstr(err, "sampi_debug_delay"));
    }
    /* the registry refuses a bad value and keeps the old one */
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_DEBUG_DELAY, "2:1", err, sizeof(err)), 0);
    long long generation = sampi_cvar_int(SAMPI_CVAR_DEBUG_DELAY);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_DEBUG_DELAY, "2:", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(sampi_cvar_int(SAMPI_CVAR_DEBUG_DELAY), generation);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_DEBUG_DELAY, "", err, sizeof(err)), 0);
    ck_assert_int_ne(sampi_cvar_int(SAMPI_CVAR_DEBUG_DELAY), generation); /* a new generation */
}
END_TEST

START_TEST(optcc_slowdown_entries)
{
    int rank;
    double l;
    ck_assert_int_eq(sampi_optcc_slowdown_parse("", &rank, &l, err, sizeof(err)), 0);
    ck_assert_int_eq(rank, -1);
    ck_assert_int_eq(sampi_optcc_slowdown_parse("3:2", &rank, &l, err, sizeof(err)), 0);
    ck_assert(rank == 3 && l == 2.0);
    ck_assert_int_eq(sampi_optcc_slowdown_parse("0:1.5", &rank, &l, err, sizeof(err)), 0);
    ck_assert(rank == 0 && l == 1.5);
    const char *bad[] = {"3",    "3:",   ":2",      "x:2",   "-1:2", "3:0.5",
                         "3:-2", "3:2x", "3:2,4:2", "3:1e9", "3: 2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(sampi_optcc_slowdown_parse(bad[i], &rank, &l, err, sizeof(err)) == -EINVAL,
                      "'%s' accepted", bad[i]);
        ck_assert_ptr_nonnull(strstr(err, "rank:l"));
        parse_bad(SAMPI_CVAR_OPTCC_SLOWDOWN, bad[i], "rank:l");
    }
    parse_ok(SAMPI_CVAR_OPTCC_SLOWDOWN, "7:1.33");
    /* part of the agreement hash */
    sampi_config_load();
    uint32_t h0 = sampi_config_pattern_hash();
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_OPTCC_SLOWDOWN, "1:2", err, sizeof(err)), 0);
    ck_assert_uint_ne(sampi_config_pattern_hash(), h0);
    ck_assert_int_eq(sampi_cvar_set(SAMPI_CVAR_OPTCC_SLOWDOWN, "", err, sizeof(err)), 0);
}
END_TEST

/* The three kinds of error the library returns keep apart, and each prints
 * as itself: SAMPI's causes from their table (never an errno's text), an
 * errno as strerror, Open MPI's class as its class. */
START_TEST(errors_print_their_own_cause)
{
    ck_assert_str_eq(sampi_strerror(-SAMPI_EMISMATCH_OP), "the ranks passed different ops");
    ck_assert_str_eq(sampi_strerror(-SAMPI_EMISMATCH_COUNT), "the ranks passed different counts");
    for (int e = SAMPI_ERR_BASE; e < SAMPI_ERR_END; e++) {
        ck_assert_ptr_nonnull(sampi_strerror(-e));
        ck_assert_str_ne(sampi_strerror(-e), "unknown SAMPI error");
        ck_assert_int_eq(sampi_err_mpi_class(-e), -1);
    }
    ck_assert_str_eq(sampi_strerror(-ENOMEM), strerror(ENOMEM));
    ck_assert_str_eq(sampi_strerror(-EBADMSG), strerror(EBADMSG));
    ck_assert_int_eq(sampi_err_mpi_class(-ENOMEM), -1);
    ck_assert_int_eq(sampi_err_mpi_class(sampi_err_from_mpi(MPI_ERR_TRUNCATE)), MPI_ERR_TRUNCATE);
    ck_assert_int_eq(sampi_err_mpi_class(sampi_err_from_mpi(MPI_SUCCESS)), MPI_SUCCESS);
    ck_assert_ptr_nonnull(
        strstr(sampi_strerror(sampi_err_from_mpi(MPI_ERR_TRUNCATE)), "MPI error class"));
    ck_assert(sampi_errno_is_mismatch(-SAMPI_EMISMATCH_PATTERN));
    ck_assert(!sampi_errno_is_mismatch(-SAMPI_EREVOKED));
    ck_assert(!sampi_errno_is_mismatch(-ERANGE));
}
END_TEST

Suite *sampi_config_suite(void)
{
    return UNIT_SUITE(
        "config",
        {.name = "registry",
         UNIT_TESTS(every_default_parses, sizes_take_suffixes, integers_are_range_checked, booleans,
                    enums_list_accepted_values, enum_items_match_their_tables,
                    environment_then_writes, env_names, pattern_hash_tracks_pattern_only, pin_lists,
                    debug_delay_entries, optcc_slowdown_entries)},
        {.name = "errors", UNIT_TESTS(errors_print_their_own_cause)});
}
