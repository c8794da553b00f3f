/*
 * check_tuning.c - the tuning file (src/auto/tuning.c): its text format, the
 * table's merge rule, the hashes, seeding and collecting selectors, and
 * loading and saving in a temporary directory.  No MPI.
 */
#include "autosel.h"
#include "suites.h"
#include "tuning.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARMS3 ((1u << SAMPI_ALGO_NATIVE) | (1u << SAMPI_ALGO_RING) | (1u << SAMPI_ALGO_RHD))
#define MIB   ((size_t)1 << 20)

/* The example of tuning.h's format description, as a user would copy it. */
static const char example[] =
    "# SAMPI tuning file, format 1\n"
    "layout 9f3a21c07b5e11d2   # the machine/job layout it was learned on\n"
    "# ranks  bytes     regime     algorithm  cost_us   next    next_cost_us  samples\n"
    "4        1048576   none       rhd        812.4     ring    870.2         37\n"
    "4        1048576   straggler  stragglar  905.0     ring    1350.0        12\n"
    "8        65536     none       native     41.5      -       -             3\n";

static struct sampi_tuning_entry entry(int ranks, int bucket, enum sampi_regime regime, int algo,
                                       double cost_us, int next, double next_us, uint64_t samples)
{
    return (struct sampi_tuning_entry){.ranks = ranks,
                                       .bucket = bucket,
                                       .regime = regime,
                                       .algo = algo,
                                       .cost_ns = cost_us * 1e3,
                                       .next = next,
                                       .next_ns = next_us * 1e3,
                                       .samples = samples};
}

/* Equal, costs within the 0.05 us a written table may differ by. */
static void assert_same_entry(const struct sampi_tuning_entry *a,
                              const struct sampi_tuning_entry *b)
{
    ck_assert_int_eq(a->ranks, b->ranks);
    ck_assert_int_eq(a->bucket, b->bucket);
    ck_assert_int_eq(a->regime, b->regime);
    ck_assert_int_eq(a->algo, b->algo);
    ck_assert_double_le(fabs(a->cost_ns - b->cost_ns), 50.0 + 1e-6);
    ck_assert_int_eq(a->next, b->next);
    ck_assert_double_le(fabs(a->next_ns - b->next_ns), 50.0 + 1e-6);
    ck_assert_uint_eq(a->samples, b->samples);
}

static void assert_same_table(const struct sampi_tuning *a, const struct sampi_tuning *b)
{
    ck_assert_uint_eq(a->n, b->n);
    ck_assert_int_eq(a->has_layout, b->has_layout);
    if (a->has_layout)
        ck_assert_uint_eq(a->layout, b->layout);
    for (size_t i = 0; i < a->n; i++)
        assert_same_entry(&a->e[i], &b->e[i]);
}

static int put(struct sampi_tuning *t, struct sampi_tuning_entry e)
{
    return sampi_tuning_put(t, &e);
}

START_TEST(parses_the_documented_example)
{
    struct sampi_tuning t;
    char err[256];
    sampi_tuning_init(&t);
    ck_assert_int_eq(sampi_tuning_parse(example, &t, err, sizeof(err)), 0);
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(t.has_layout, 1);
    ck_assert_uint_eq(t.layout, 0x9f3a21c07b5e11d2ull);
    ck_assert_uint_eq(t.n, 3);
    struct sampi_tuning_entry want[3] = {
        entry(4, 20, SAMPI_REGIME_NONE, SAMPI_ALGO_RHD, 812.4, SAMPI_ALGO_RING, 870.2, 37),
        entry(4, 20, SAMPI_REGIME_STRAGGLER, SAMPI_ALGO_STRAGGLAR, 905.0, SAMPI_ALGO_RING, 1350.0,
              12),
        entry(8, 16, SAMPI_REGIME_NONE, SAMPI_ALGO_NATIVE, 41.5, -1, 0, 3),
    };
    for (int i = 0; i < 3; i++)
        assert_same_entry(&t.e[i], &want[i]);
    /* exact to the 0.1 us written, not just within the round-trip margin */
    ck_assert_double_eq_tol(t.e[0].cost_ns, 812400, 1e-6);
    ck_assert_double_eq_tol(t.e[1].next_ns, 1350000, 1e-6);
    ck_assert_ptr_eq(sampi_tuning_get(&t, 8, 16, SAMPI_REGIME_NONE), &t.e[2]);
    ck_assert_ptr_null(sampi_tuning_get(&t, 8, 16, SAMPI_REGIME_DEGRADED));
    ck_assert_ptr_null(sampi_tuning_get(&t, 4, 19, SAMPI_REGIME_NONE));
    sampi_tuning_free(&t);
    ck_assert_uint_eq(t.n, 0);
    ck_assert_ptr_null(t.e);
}
END_TEST

/* Bad text: -EINVAL, an empty table (even one that held entries), and a
 * message that names the line and what is wrong. */
static const struct {
    const char *text;
    int line;
    const char *says;
} bad[] = {
    {"4 1024 none auto 1.0 - - 1\n", 1, "'auto' is not an algorithm auto may choose"},
    {"4 1024 none optireduce 1.0 - - 1\n", 1, "'optireduce' is not an algorithm"},
    {"4 1024 none Ring 1.0 - - 1\n", 1, "'Ring' is not an algorithm"},
    {"4 1024 none rhd 1.0 ring 2.0\n", 1, "8 fields"},
    {"4 1024 none rhd 1.0 ring 2.0 3 4\n", 1, "8 fields"},
    {"\n\n4 1024\n", 3, "8 fields"},
    {"0 1024 none rhd 1.0 - - 1\n", 1, "ranks '0'"},
    {"2147483648 1024 none rhd 1.0 - - 1\n", 1, "ranks '2147483648'"},
    {"4x 1024 none rhd 1.0 - - 1\n", 1, "ranks '4x'"},
    {"-4 1024 none rhd 1.0 - - 1\n", 1, "'-4' is neither 'layout' nor an entry"},
    {"layuot 12ab\n", 1, "'layuot' is neither 'layout' nor an entry"},
    {"4 0 none rhd 1.0 - - 1\n", 1, "bytes '0'"},
    {"4 140737488355329 none rhd 1.0 - - 1\n", 1, "bytes '140737488355329'"},
    {"4 1k none rhd 1.0 - - 1\n", 1, "bytes '1k'"},
    {"4 +1024 none rhd 1.0 - - 1\n", 1, "bytes '+1024'"},
    {"4 1024 slow rhd 1.0 - - 1\n", 1, "regime 'slow'"},
    {"4 1024 None rhd 1.0 - - 1\n", 1, "regime 'None'"},
    {"4 1024 none rhd -1.0 - - 1\n", 1, "cost_us '-1.0'"},
    {"4 1024 none rhd 1e3 - - 1\n", 1, "cost_us '1e3'"},
    {"4 1024 none rhd 1,5 - - 1\n", 1, "cost_us '1,5'"},
    {"4 1024 none rhd 5. - - 1\n", 1, "cost_us '5.'"},
    {"4 1024 none rhd .5 - - 1\n", 1, "cost_us '.5'"},
    {"4 1024 none rhd nan - - 1\n", 1, "cost_us 'nan'"},
    {"4 1024 none rhd 1000000000000 - - 1\n", 1, "cost_us '1000000000000'"},
    {"4 1024 none rhd 1.0 - 2.0 1\n", 1, "both are '-'"},
    {"4 1024 none rhd 1.0 ring - 1\n", 1, "both are '-'"},
    {"4 1024 none rhd 1.0 rhd 2.0 1\n", 1, "next 'rhd' is the algorithm itself"},
    {"4 1024 none rhd 1.0 auto 2.0 1\n", 1, "next 'auto' is not an algorithm auto may choose"},
    {"4 1024 none rhd 1.0 ring 2.0.0 1\n", 1, "next_cost_us '2.0.0'"},
    {"4 1024 none rhd 1.0 - - -1\n", 1, "samples '-1'"},
    {"4 1024 none rhd 1.0 - - 1.5\n", 1, "samples '1.5'"},
    {"4 1024 none rhd 1.0 - - 18446744073709551616\n", 1, "samples '18446744073709551616'"},
    {"layout xyz\n", 1, "layout 'xyz' is not 1 to 16 hexadecimal digits"},
    {"layout 0x12\n", 1, "layout '0x12'"},
    {"layout 12345678901234567\n", 1, "layout '12345678901234567'"},
    {"layout\n", 1, "'layout' takes one value"},
    {"layout 1 2\n", 1, "'layout' takes one value"},
    {"layout 1\n# x\nlayout 1\n", 3, "a second layout line (the first is line 1)"},
    /* the first bad line is reported, after good ones */
    {"4 1024 none rhd 1.0 - - 1\r\n4 2048 none rhd 1.0 - - 1\r\n\r\n4 4096 none zz 1 - - 1\n", 4,
     "'zz' is not"},
};

START_TEST(rejects_bad_lines_naming_them)
{
    struct sampi_tuning t;
    char err[256], head[32];
    sampi_tuning_init(&t);
    ck_assert_int_eq(sampi_tuning_parse(example, &t, err, sizeof(err)), 0);
    ck_assert_uint_gt(t.n, 0);
    ck_assert_int_eq(sampi_tuning_parse(bad[_i].text, &t, err, sizeof(err)), -EINVAL);
    ck_assert_uint_eq(t.n, 0);
    ck_assert_int_eq(t.has_layout, 0);
    snprintf(head, sizeof(head), "line %d: ", bad[_i].line);
    ck_assert_msg(strncmp(err, head, strlen(head)) == 0, "case %d: '%s' should start with '%s'", _i,
                  err, head);
    ck_assert_msg(strstr(err, bad[_i].says) != NULL, "case %d: '%s' should say '%s'", _i, err,
                  bad[_i].says);
    ck_assert_ptr_null(strchr(err, '\n'));
    sampi_tuning_free(&t);
}
END_TEST

START_TEST(names_the_algorithms_auto_may_choose)
{
    struct sampi_tuning t;
    char err[256];
    sampi_tuning_init(&t);
    ck_assert_int_eq(sampi_tuning_parse("layout 1\n\n# a comment\n4 1048576 none fast 812.4 - - 37",
                                        &t, err, sizeof(err)),
                     -EINVAL);
    /* the list comes from the table: every row auto may choose, in order */
    char want[256] = "line 4: 'fast' is not an algorithm auto may choose (";
    for (int id = 0, first = 1; id < SAMPI_ALGO__COUNT; id++)
        if (sampi_algos[id].caps & SAMPI_CAP_AUTO) {
            strcat(want, first ? "" : ", ");
            strcat(want, sampi_algos[id].name);
            first = 0;
        }
    strcat(want, ")");
    ck_assert_str_eq(err, want);
    ck_assert_ptr_nonnull(strstr(err, "(native, ring, rhd, stragglar, optcc"));
    /* a message fits in a short buffer and never overruns it */
    char tiny[8];
    memset(tiny, 'x', sizeof(tiny));
    ck_assert_int_eq(sampi_tuning_parse("4 1 none fast 1 - - 1", &t, tiny, 5), -EINVAL);
    ck_assert_str_eq(tiny, "line");
    ck_assert_int_eq(tiny[5], 'x');
    ck_assert_int_eq(sampi_tuning_parse("4 1 none fast 1 - - 1", &t, NULL, 0), -EINVAL);
    sampi_tuning_free(&t);
}
END_TEST

START_TEST(ignores_comments_blanks_tabs_and_carriage_returns)
{
    struct sampi_tuning t;
    char err[256];
    sampi_tuning_init(&t);
    ck_assert_int_eq(put(&t, entry(99, 3, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, -1, 0, 1)), 0);
    ck_assert_int_eq(sampi_tuning_parse("", &t, err, sizeof(err)), 0);
    ck_assert_uint_eq(t.n, 0); /* parse replaces, it does not add */
    ck_assert_int_eq(t.has_layout, 0);
    ck_assert_int_eq(
        sampi_tuning_parse("\n  \t\n# only comments\n   # indented\n", &t, err, sizeof(err)), 0);
    ck_assert_uint_eq(t.n, 0);
    const char *text = "\t# hand-written\r\n"
                       "layout\tABCdef01#no blank before the comment\r\n"
                       "\r\n"
                       "  3\t\t1024 degraded\toptcc 0.25 ring 7 0  # what I measured\r\n"
                       "3 1024 none native 0009.50 - - 18446744073709551615";
    ck_assert_int_eq(sampi_tuning_parse(text, &t, err, sizeof(err)), 0);
    ck_assert_int_eq(t.has_layout, 1);
    ck_assert_uint_eq(t.layout, 0xabcdef01);
    ck_assert_uint_eq(t.n, 2);
    struct sampi_tuning_entry a =
        entry(3, 10, SAMPI_REGIME_NONE, SAMPI_ALGO_NATIVE, 9.5, -1, 0, UINT64_MAX);
    struct sampi_tuning_entry b =
        entry(3, 10, SAMPI_REGIME_DEGRADED, SAMPI_ALGO_OPTCC, 0.25, SAMPI_ALGO_RING, 7, 0);
    assert_same_entry(&t.e[0], &a);
    assert_same_entry(&t.e[1], &b);
    ck_assert_double_eq_tol(t.e[1].cost_ns, 250, 1e-6); /* more decimals than written back */
    sampi_tuning_free(&t);
}
END_TEST

START_TEST(bytes_stand_for_their_bucket)
{
    struct sampi_tuning t;
    char err[256], *text;
    sampi_tuning_init(&t);
    ck_assert_int_eq(sampi_tuning_parse("2 1 none ring 1 - - 1\n"
                                        "2 1000000 none ring 1 - - 1\n"
                                        "2 140737488355328 none ring 1 - - 1\n",
                                        &t, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(t.n, 3);
    ck_assert_int_eq(t.e[0].bucket, 0);
    ck_assert_int_eq(t.e[1].bucket, 20);
    ck_assert_int_eq(t.e[2].bucket, SAMPI_AUTOSEL_BUCKETS - 1);
    ck_assert_int_eq(sampi_tuning_format(&t, &text), 0);
    ck_assert_ptr_nonnull(strstr(text, "\n2        1         none"));
    ck_assert_ptr_nonnull(strstr(text, "\n2        1048576   none"));
    ck_assert_ptr_nonnull(strstr(text, "\n2        140737488355328 none"));
    ck_assert_ptr_null(strstr(text, "1000000"));
    free(text);
    /* 40000 and 65536 are one bucket: one key, the later line wins */
    ck_assert_int_eq(sampi_tuning_parse("2 40000 none ring 1 - - 100\n"
                                        "2 65536 none rhd 2 - - 5\n",
                                        &t, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(t.n, 1);
    ck_assert_int_eq(t.e[0].bucket, 16);
    ck_assert_int_eq(t.e[0].algo, SAMPI_ALGO_RHD);
    ck_assert_uint_eq(t.e[0].samples, 5);
    sampi_tuning_free(&t);
}
END_TEST

static uint64_t rng_next(uint64_t *r)
{
    *r = *r * 6364136223846793005ull + 1442695040888963407ull;
    return *r >> 11;
}

/* A table of n random valid entries (some keys drawn twice). */
static void random_table(struct sampi_tuning *t, uint64_t seed, int n)
{
    static const int sizes[] = {1, 2, 3, 4, 7, 8, 16, 1024, 2147483647};
    static const int autos[] = {SAMPI_ALGO_NATIVE, SAMPI_ALGO_RING, SAMPI_ALGO_RHD,
                                SAMPI_ALGO_STRAGGLAR, SAMPI_ALGO_OPTCC};
    uint64_t r = seed;
    for (int i = 0; i < n; i++) {
        struct sampi_tuning_entry e = {0};
        e.ranks = sizes[rng_next(&r) % 9];
        e.bucket = (int)(rng_next(&r) % SAMPI_AUTOSEL_BUCKETS);
        e.regime = (enum sampi_regime)(rng_next(&r) % SAMPI_REGIME__COUNT);
        e.algo = autos[rng_next(&r) % 5];
        /* from a few ns to hours, with all their digits */
        e.cost_ns = (double)(rng_next(&r) % 1000000) * pow(10, (double)(rng_next(&r) % 8)) / 7;
        e.next = rng_next(&r) % 3 == 0 ? -1 : autos[rng_next(&r) % 5];
        if (e.next == e.algo)
            e.next = -1;
        e.next_ns = e.next < 0 ? 0 : e.cost_ns * (1 + (double)(rng_next(&r) % 1000) / 100);
        e.samples = i % 17 == 0 ? UINT64_MAX : rng_next(&r) % 100000;
        ck_assert_int_eq(sampi_tuning_put(t, &e), 0);
    }
}

START_TEST(format_round_trips)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct sampi_tuning t, u;
        char err[256], *text, *again;
        sampi_tuning_init(&t);
        sampi_tuning_init(&u);
        random_table(&t, seed, (int)(seed * 10));
        t.has_layout = seed % 3 != 0;
        t.layout = seed % 2 ? 0x1 : 0xfedcba9876543210ull; /* leading zeros too */
        ck_assert_int_eq(sampi_tuning_format(&t, &text), 0);
        ck_assert_int_eq(strncmp(text, "# SAMPI tuning file, format 1\n", 30), 0);
        ck_assert_int_eq(strstr(text, "\nlayout ") != NULL, t.has_layout);
        ck_assert_msg(sampi_tuning_parse(text, &u, err, sizeof(err)) == 0, "%s", err);
        assert_same_table(&t, &u);
        ck_assert_uint_eq(sampi_tuning_hash(&t), sampi_tuning_hash(&u));
        /* and what is read back is written back the same, byte for byte */
        ck_assert_int_eq(sampi_tuning_format(&u, &again), 0);
        ck_assert_str_eq(text, again);
        /* the lines come in key order */
        int last_ranks = 0, last_regime = -1, lines = 0;
        unsigned long long last_bytes = 0;
        for (const char *p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
            int ranks;
            unsigned long long bytes;
            char regime[16];
            if (*p == '#' || *p == 'l' || *p == '\0')
                continue;
            ck_assert_int_eq(sscanf(p, "%d %llu %15s", &ranks, &bytes, regime), 3);
            int rg = !strcmp(regime, "none") ? 0 : !strcmp(regime, "straggler") ? 1 : 2;
            ck_assert(ranks > last_ranks ||
                      (ranks == last_ranks &&
                       (bytes > last_bytes || (bytes == last_bytes && rg > last_regime))));
            last_ranks = ranks;
            last_bytes = bytes;
            last_regime = rg;
            lines++;
        }
        ck_assert_uint_eq((size_t)lines, t.n);
        free(text);
        free(again);
        sampi_tuning_free(&t);
        sampi_tuning_free(&u);
    }
}
END_TEST

START_TEST(format_refuses_a_broken_table)
{
    struct sampi_tuning t;
    char *text = (char *)"untouched";
    sampi_tuning_init(&t);
    ck_assert_int_eq(put(&t, entry(4, 3, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, -1, 0, 1)), 0);
    ck_assert_int_eq(sampi_tuning_format(&t, &text), 0);
    free(text);
    t.e[0].algo = SAMPI_ALGO_OPTIREDUCE; /* changed behind put's back */
    ck_assert_int_eq(sampi_tuning_format(&t, &text), -EINVAL);
    ck_assert_ptr_null(text);
    sampi_tuning_free(&t);
}
END_TEST

START_TEST(put_keeps_the_better_measured_entry)
{
    struct sampi_tuning t;
    sampi_tuning_init(&t);
    ck_assert_int_eq(put(&t, entry(4, 20, SAMPI_REGIME_NONE, SAMPI_ALGO_RHD, 800, -1, 0, 10)), 0);
    ck_assert_int_eq(put(&t, entry(4, 20, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 700, -1, 0, 5)), 0);
    ck_assert_uint_eq(t.n, 1);
    ck_assert_int_eq(t.e[0].algo, SAMPI_ALGO_RHD); /* fewer samples: kept out */
    ck_assert_int_eq(
        put(&t, entry(4, 20, SAMPI_REGIME_NONE, SAMPI_ALGO_NATIVE, 750, SAMPI_ALGO_RHD, 800, 10)),
        0);
    ck_assert_int_eq(t.e[0].algo, SAMPI_ALGO_NATIVE); /* a tie: the newer */
    ck_assert_int_eq(t.e[0].next, SAMPI_ALGO_RHD);
    ck_assert_int_eq(put(&t, entry(4, 20, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 600, -1, 5, 11)), 0);
    ck_assert_uint_eq(t.n, 1);
    ck_assert_int_eq(t.e[0].algo, SAMPI_ALGO_RING);
    ck_assert_int_eq(t.e[0].next, -1);
    ck_assert_double_eq(t.e[0].next_ns, 0); /* no runner-up: its cost is dropped */
    ck_assert_uint_eq(t.e[0].samples, 11);

    /* other keys, put in reverse order, end up sorted */
    for (int ranks = 9; ranks >= 1; ranks -= 4)
        for (int b = 47; b >= 0; b -= 47)
            for (int r = SAMPI_REGIME__COUNT - 1; r >= 0; r--)
                ck_assert_int_eq(put(&t, entry(ranks, b, r, SAMPI_ALGO_RING, 1, -1, 0, 1)), 0);
    ck_assert_uint_eq(t.n, 1 + 3 * 2 * 3);
    for (size_t i = 1; i < t.n; i++) {
        const struct sampi_tuning_entry *a = &t.e[i - 1], *b = &t.e[i];
        ck_assert(a->ranks < b->ranks ||
                  (a->ranks == b->ranks &&
                   (a->bucket < b->bucket || (a->bucket == b->bucket && a->regime < b->regime))));
    }
    ck_assert_ptr_nonnull(sampi_tuning_get(&t, 4, 20, SAMPI_REGIME_NONE));
    ck_assert_int_eq(sampi_tuning_get(&t, 4, 20, SAMPI_REGIME_NONE)->algo, SAMPI_ALGO_RING);

    /* what put refuses, leaving the table as it was */
    struct sampi_tuning_entry no[] = {
        entry(0, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, -1, 0, 1),
        entry(4, -1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, -1, 0, 1),
        entry(4, SAMPI_AUTOSEL_BUCKETS, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, -1, 0, 1),
        entry(4, 1, SAMPI_REGIME__COUNT, SAMPI_ALGO_RING, 1, -1, 0, 1),
        entry(4, 1, (enum sampi_regime) - 1, SAMPI_ALGO_RING, 1, -1, 0, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_AUTO, 1, -1, 0, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_OPTIREDUCE, 1, -1, 0, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO__COUNT, 1, -1, 0, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, SAMPI_ALGO_RING, 2, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, SAMPI_ALGO_OPTIREDUCE, 2, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, -2, 0, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, NAN, -1, 0, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, INFINITY, -1, 0, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, -1, -1, 0, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, SAMPI_TUNING_COST_MAX_US, -1, 0, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, SAMPI_ALGO_RHD, NAN, 1),
        entry(4, 1, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, SAMPI_ALGO_RHD, -3, 1),
    };
    uint64_t h = sampi_tuning_hash(&t);
    size_t n = t.n;
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        ck_assert_msg(sampi_tuning_put(&t, &no[i]) == -EINVAL, "entry %zu was accepted", i);
    ck_assert_uint_eq(t.n, n);
    ck_assert_uint_eq(sampi_tuning_hash(&t), h);
    sampi_tuning_free(&t);
}
END_TEST

START_TEST(layout_signature)
{
    /* pinned: a change of the hash would silently orphan every user's file */
    ck_assert_uint_eq(sampi_tuning_layout(4, 2, "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz", 8),
                      0xa9b1cb30425e4999ull);
    ck_assert_uint_eq(sampi_tuning_layout(0, 0, NULL, 0), 0x81e8c422342aeb02ull);
    ck_assert_uint_eq(sampi_tuning_layout(0, 0, "", 0), 0x81e8c422342aeb02ull);
    uint64_t base = sampi_tuning_layout(4, 2, "cpu", 8);
    ck_assert_uint_eq(sampi_tuning_layout(4, 2, "cpu", 8), base);
    ck_assert_uint_ne(sampi_tuning_layout(5, 2, "cpu", 8), base);
    ck_assert_uint_ne(sampi_tuning_layout(4, 1, "cpu", 8), base);
    ck_assert_uint_ne(sampi_tuning_layout(4, 2, "cpu", 16), base);
    ck_assert_uint_ne(sampi_tuning_layout(4, 2, "cpu2", 8), base);
    ck_assert_uint_ne(sampi_tuning_layout(2, 4, "cpu", 8), base);
    /* a model name longer than the facts can hold still counts in full */
    char longname[400];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    uint64_t l1 = sampi_tuning_layout(4, 2, longname, 8);
    longname[sizeof(longname) - 2] = 'y';
    ck_assert_uint_ne(sampi_tuning_layout(4, 2, longname, 8), l1);
}
END_TEST

static char *make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *dir = malloc(4096);
    snprintf(dir, 4096, "%s/check_tuning.XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    return dir;
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[4096];
    while (d && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        if (de->d_type == DT_DIR)
            rm_tree(p);
        else
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* What the code under test writes to stderr (sampi_log) goes to a file. */
struct capture {
    int saved;
    char path[4096];
};

static void capture_begin(struct capture *c, const char *dir)
{
    snprintf(c->path, sizeof(c->path), "%s/stderr.txt", dir);
    int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    c->saved = dup(STDERR_FILENO);
    ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
    close(fd);
}

/* The captured text (malloc'd) and how many lines it has. */
static char *capture_end(struct capture *c, int *lines)
{
    dup2(c->saved, STDERR_FILENO);
    close(c->saved);
    char *text = read_all(c->path);
    unlink(c->path);
    *lines = 0;
    for (const char *p = text; *p; p++)
        *lines += *p == '\n';
    return text;
}

/* Entries in dir, to see what an atomic write left behind. */
static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

START_TEST(facts_from_the_environment)
{
    char *dir = make_tmpdir(), cpuinfo[4096];
    struct sampi_tuning_facts f;
    snprintf(cpuinfo, sizeof(cpuinfo), "%s/cpuinfo", dir);
    const char *text = "processor\t: 0\n"
                       "vendor_id\t: GenuineIntel\n"
                       "model\t\t: 85\n"
                       "model name2\t: decoy\n"
                       "model name\t:   Test CPU @ 2.00GHz  \n"
                       "processor\t: 1\n"
                       "model name\t: Other CPU\n";
    write_file(cpuinfo, text, strlen(text));
    setenv("OMPI_COMM_WORLD_SIZE", "6", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3", 1);
    sampi_tuning_facts(&f, cpuinfo);
    ck_assert_int_eq(f.world_size, 6);
    ck_assert_int_eq(f.local_size, 3);
    ck_assert_int_eq(f.cores, (int)sysconf(_SC_NPROCESSORS_ONLN));
    ck_assert_int_gt(f.cores, 0);
    ck_assert_str_eq(f.cpu_model, "Test CPU @ 2.00GHz");

    /* unset or not a number: 0; no model: "" */
    unsetenv("OMPI_COMM_WORLD_SIZE");
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3x", 1);
    write_file(cpuinfo, "processor : 0\nmodel : 1\n", strlen("processor : 0\nmodel : 1\n"));
    sampi_tuning_facts(&f, cpuinfo);
    ck_assert_int_eq(f.world_size, 0);
    ck_assert_int_eq(f.local_size, 0);
    ck_assert_str_eq(f.cpu_model, "");
    unlink(cpuinfo);
    sampi_tuning_facts(&f, cpuinfo);
    ck_assert_str_eq(f.cpu_model, "");

    /* this process's own layout: the same facts, the same signature */
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
    sampi_tuning_facts(&f, NULL);
    ck_assert_int_eq(f.world_size, 4);
    ck_assert_uint_eq(sampi_tuning_layout_here(), sampi_tuning_layout(4, 4, f.cpu_model, f.cores));
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    ck_assert_uint_ne(sampi_tuning_layout_here(), sampi_tuning_layout(4, 4, f.cpu_model, f.cores));
    rm_tree(dir);
    free(dir);
}
END_TEST

/* Drive one cell of s at `bytes` the way the dispatcher does, with a fixed
 * cost per arm (us), for `calls` calls. */
static void drive(struct sampi_autosel *s, size_t bytes, enum sampi_regime regime, uint32_t allowed,
                  const double *cost_us, int calls)
{
    struct sampi_autosel_input in = {
        .bytes = bytes, .regime = regime, .allowed = allowed, .prior = SAMPI_ALGO_NATIVE};
    struct sampi_autosel_decision d;
    for (int i = 0; i < calls; i++) {
        ck_assert_int_eq(sampi_autosel_decide(s, &in, &d), 0);
        if (d.measure)
            sampi_autosel_note(s, &in, d.algo, cost_us[d.algo] * 1e3);
    }
}

START_TEST(collect_then_seed)
{
    struct sampi_autosel s, s2, f;
    struct sampi_tuning t;
    double cost[SAMPI_ALGO__COUNT] = {0};
    cost[SAMPI_ALGO_NATIVE] = 100;
    cost[SAMPI_ALGO_RHD] = 95;
    cost[SAMPI_ALGO_RING] = 300;
    sampi_autosel_init(&s);
    sampi_tuning_init(&t);
    /* autosel.h's worked example: converged on rhd after 12 measured calls */
    drive(&s, MIB, SAMPI_REGIME_NONE, ARMS3, cost, 12);
    /* and a cell still exploring, which is not collected */
    drive(&s, 64 << 10, SAMPI_REGIME_STRAGGLER, ARMS3, cost, 3);
    sampi_tuning_collect(&t, 4, &s);
    ck_assert_uint_eq(t.n, 1);
    struct sampi_tuning_entry want =
        entry(4, 20, SAMPI_REGIME_NONE, SAMPI_ALGO_RHD, 95, SAMPI_ALGO_NATIVE, 100, 12);
    assert_same_entry(&t.e[0], &want);

    /* another communicator of 4: native wins there on fewer samples (10),
     * so the better-measured rhd stays; after more calls it has more */
    cost[SAMPI_ALGO_NATIVE] = 90;
    sampi_autosel_init(&s2);
    drive(&s2, MIB, SAMPI_REGIME_NONE, (1u << SAMPI_ALGO_NATIVE) | (1u << SAMPI_ALGO_RHD), cost,
          10);
    ck_assert_uint_eq(sampi_autosel_cell(&s2, 20, SAMPI_REGIME_NONE)->measured, 10);
    sampi_tuning_collect(&t, 4, &s2);
    ck_assert_int_eq(t.e[0].algo, SAMPI_ALGO_RHD);
    /* one in sampi_autosel_period measured: 4 more samples */
    int per =
        sampi_autosel_period(MIB, sampi_autosel_cell(&s2, 20, SAMPI_REGIME_NONE)->converged_ns, 0);
    drive(&s2, MIB, SAMPI_REGIME_NONE, (1u << SAMPI_ALGO_NATIVE) | (1u << SAMPI_ALGO_RHD), cost,
          4 * per);
    sampi_tuning_collect(&t, 4, &s2);
    ck_assert_uint_eq(t.n, 1);
    ck_assert_int_eq(t.e[0].algo, SAMPI_ALGO_NATIVE);
    ck_assert_uint_eq(t.e[0].samples, 10 + 4);
    ck_assert_int_eq(t.e[0].next, SAMPI_ALGO_RHD);
    /* the same selector under another size is another key */
    sampi_tuning_collect(&t, 8, &s);
    ck_assert_uint_eq(t.n, 2);
    ck_assert_int_eq(sampi_tuning_get(&t, 8, 20, SAMPI_REGIME_NONE)->algo, SAMPI_ALGO_RHD);
    ck_assert_int_eq(put(&t, entry(2, 10, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 5, -1, 0, 3)), 0);
    ck_assert_int_eq(put(&t, entry(4, 30, SAMPI_REGIME_DEGRADED, SAMPI_ALGO_OPTCC, 5e4,
                                   SAMPI_ALGO_RING, 9e4, 3)),
                     0);

    /* seeding takes the entries of its size only, and the cells start
     * converged on them */
    sampi_autosel_init(&f);
    ck_assert_int_eq(sampi_tuning_seed(&t, 4, &f), 2);
    const struct sampi_autosel_cell *c = sampi_autosel_cell(&f, 20, SAMPI_REGIME_NONE);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->state, SAMPI_CELL_CONVERGED);
    ck_assert_int_eq(c->choice, SAMPI_ALGO_NATIVE);
    ck_assert_double_eq_tol(c->converged_ns,
                            sampi_tuning_get(&t, 4, 20, SAMPI_REGIME_NONE)->cost_ns, 1e-6);
    ck_assert_int_eq(sampi_autosel_cell(&f, 30, SAMPI_REGIME_DEGRADED)->choice, SAMPI_ALGO_OPTCC);
    ck_assert_ptr_null(sampi_autosel_cell(&f, 10, SAMPI_REGIME_NONE)); /* ranks 2 */
    ck_assert_ptr_null(sampi_autosel_cell(&f, 20, SAMPI_REGIME_STRAGGLER));
    struct sampi_autosel_input in = {
        .bytes = MIB, .regime = SAMPI_REGIME_NONE, .allowed = ARMS3, .prior = SAMPI_ALGO_RING};
    struct sampi_autosel_decision d;
    ck_assert_int_eq(sampi_autosel_decide(&f, &in, &d), 0);
    ck_assert_int_eq(d.algo, SAMPI_ALGO_NATIVE);
    ck_assert(!d.exploring);
    /* a seeded cell not measured since adds nothing; measured, it does */
    struct sampi_tuning u;
    sampi_tuning_init(&u);
    sampi_tuning_collect(&u, 4, &f);
    ck_assert_uint_eq(u.n, 0);
    /* calls 2..2 periods: every period-th measured */
    drive(&f, MIB, SAMPI_REGIME_NONE, ARMS3, cost,
          2 * sampi_autosel_period(MIB, c->converged_ns, 0) - 1);
    sampi_tuning_collect(&u, 4, &f);
    ck_assert_uint_eq(u.n, 1);
    ck_assert_int_eq(u.e[0].algo, SAMPI_ALGO_NATIVE);
    ck_assert_uint_eq(u.e[0].samples, 2);

    struct sampi_autosel none;
    sampi_autosel_init(&none);
    ck_assert_int_eq(sampi_tuning_seed(&t, 3, &none), 0);
    ck_assert_int_eq(sampi_tuning_seed(&t, 1, &none), 0);
    for (int b = 0; b < SAMPI_AUTOSEL_BUCKETS; b++)
        for (int r = 0; r < SAMPI_REGIME__COUNT; r++)
            ck_assert_ptr_null(sampi_autosel_cell(&none, b, r));
    sampi_autosel_free(&none);
    sampi_autosel_free(&s);
    sampi_autosel_free(&s2);
    sampi_autosel_free(&f);
    sampi_tuning_free(&t);
    sampi_tuning_free(&u);
}
END_TEST

START_TEST(hash_follows_what_is_written)
{
    struct sampi_tuning a, b;
    sampi_tuning_init(&a);
    sampi_tuning_init(&b);
    ck_assert_uint_eq(sampi_tuning_hash(&a), sampi_tuning_hash(&b));
    struct sampi_tuning_entry e1 = entry(4, 20, SAMPI_REGIME_NONE, SAMPI_ALGO_RHD, 812.4,
                                         SAMPI_ALGO_RING, 870.2, 37),
                              e2 =
                                  entry(8, 3, SAMPI_REGIME_DEGRADED, SAMPI_ALGO_OPTCC, 5, -1, 0, 1);
    sampi_tuning_put(&a, &e1);
    sampi_tuning_put(&a, &e2);
    uint64_t empty = sampi_tuning_hash(&b);
    sampi_tuning_put(&b, &e2);
    ck_assert_uint_ne(sampi_tuning_hash(&b), empty);
    sampi_tuning_put(&b, &e1);
    ck_assert_uint_eq(sampi_tuning_hash(&a), sampi_tuning_hash(&b)); /* order does not matter */
    uint64_t h = sampi_tuning_hash(&a);
    b.layout = 42; /* not part of it */
    b.has_layout = 1;
    ck_assert_uint_eq(sampi_tuning_hash(&b), h);
    b.e[0].cost_ns += 10; /* 812.41: written as 812.4 too */
    ck_assert_uint_eq(sampi_tuning_hash(&b), h);
    b.e[0].cost_ns += 100;
    ck_assert_uint_ne(sampi_tuning_hash(&b), h);
    b.e[0] = e1;
    b.e[0].next_ns += 200;
    ck_assert_uint_ne(sampi_tuning_hash(&b), h);
    b.e[0] = e1;
    b.e[0].samples++;
    ck_assert_uint_ne(sampi_tuning_hash(&b), h);
    b.e[0] = e1;
    b.e[0].algo = SAMPI_ALGO_NATIVE;
    ck_assert_uint_ne(sampi_tuning_hash(&b), h);
    b.e[0] = e1;
    b.e[0].next = -1;
    ck_assert_uint_ne(sampi_tuning_hash(&b), h);
    b.e[0] = e1;
    b.e[0].regime = SAMPI_REGIME_STRAGGLER;
    ck_assert_uint_ne(sampi_tuning_hash(&b), h);
    b.e[0] = e1;
    b.e[0].ranks = 5;
    ck_assert_uint_ne(sampi_tuning_hash(&b), h);
    b.e[0] = e1;
    b.e[0].bucket = 21;
    ck_assert_uint_ne(sampi_tuning_hash(&b), h);
    b.e[0] = e1;
    ck_assert_uint_eq(sampi_tuning_hash(&b), h);
    sampi_tuning_free(&a);
    sampi_tuning_free(&b);
}
END_TEST

START_TEST(load_and_save)
{
    char *dir = make_tmpdir(), path[4096], sub[4096], *text, *out;
    struct sampi_tuning t, u;
    struct capture cap;
    int lines;
    const uint64_t L = 0x0123456789abcdefull, other = 0xfedcba9876543210ull;
    snprintf(path, sizeof(path), "%s/sampi.tuning", dir);
    snprintf(sub, sizeof(sub), "%s/logs", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    sampi_tuning_init(&t);
    sampi_tuning_init(&u);

    /* no file yet: fine, silent, empty */
    ck_assert_int_eq(put(&u, entry(2, 2, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, -1, 0, 1)), 0);
    capture_begin(&cap, sub);
    ck_assert_int_eq(sampi_tuning_load(path, L, &u), 0);
    out = capture_end(&cap, &lines);
    ck_assert_int_eq(lines, 0);
    free(out);
    ck_assert_uint_eq(u.n, 0);

    /* saved, then loaded on the same layout: the same table, no leftovers */
    random_table(&t, 7, 50);
    t.has_layout = 1;
    t.layout = L;
    ck_assert_int_eq(sampi_tuning_save(path, &t), 0);
    ck_assert_int_eq(count_files(dir), 2); /* the file and logs/ */
    ck_assert_int_eq(sampi_tuning_format(&t, &text), 0);
    out = read_all(path);
    ck_assert_str_eq(out, text);
    free(out);
    free(text);
    capture_begin(&cap, sub);
    ck_assert_int_eq(sampi_tuning_load(path, L, &u), 0);
    out = capture_end(&cap, &lines);
    ck_assert_int_eq(lines, 0);
    free(out);
    assert_same_table(&t, &u);

    /* saved again over it: replaced */
    struct sampi_tuning small;
    sampi_tuning_init(&small);
    ck_assert_int_eq(put(&small, entry(3, 5, SAMPI_REGIME_NONE, SAMPI_ALGO_RHD, 2, -1, 0, 9)), 0);
    ck_assert_int_eq(sampi_tuning_save(path, &small), 0);
    ck_assert_int_eq(count_files(dir), 2);
    ck_assert_int_eq(sampi_tuning_load(path, other, &u), 0); /* no layout line: any layout */
    assert_same_table(&small, &u);
    sampi_tuning_free(&small);

    /* another layout: ignored, one warning naming the file and both */
    ck_assert_int_eq(sampi_tuning_save(path, &t), 0);
    capture_begin(&cap, sub);
    ck_assert_int_eq(sampi_tuning_load(path, other, &u), -ESTALE);
    out = capture_end(&cap, &lines);
    ck_assert_int_eq(lines, 1);
    ck_assert_ptr_nonnull(strstr(out, path));
    ck_assert_ptr_nonnull(strstr(out, "0123456789abcdef"));
    ck_assert_ptr_nonnull(strstr(out, "fedcba9876543210"));
    free(out);
    ck_assert_uint_eq(u.n, 0);
    ck_assert_int_eq(u.has_layout, 0);

    /* malformed: ignored, one warning naming the file and the line */
    const char *broken = "# SAMPI tuning file, format 1\nlayout 0123456789abcdef\n"
                         "4 1024 none rhd 1.0 ring 2.0 x\n";
    write_file(path, broken, strlen(broken));
    capture_begin(&cap, sub);
    ck_assert_int_eq(sampi_tuning_load(path, L, &u), -EINVAL);
    out = capture_end(&cap, &lines);
    ck_assert_int_eq(lines, 1);
    ck_assert_ptr_nonnull(strstr(out, path));
    ck_assert_ptr_nonnull(strstr(out, "line 3: samples 'x'"));
    free(out);
    ck_assert_uint_eq(u.n, 0);

    /* not text: the part before a NUL byte must not pass for the file */
    write_file(path, "4 1024 none rhd 1.0 - - 1\n\0garbage", 35);
    capture_begin(&cap, sub);
    ck_assert_int_eq(sampi_tuning_load(path, L, &u), -EINVAL);
    out = capture_end(&cap, &lines);
    ck_assert_int_eq(lines, 1);
    ck_assert_ptr_nonnull(strstr(out, path));
    free(out);
    ck_assert_uint_eq(u.n, 0);

    /* unreadable (a directory): one warning, an error, empty */
    ck_assert_int_eq(put(&u, entry(2, 2, SAMPI_REGIME_NONE, SAMPI_ALGO_RING, 1, -1, 0, 1)), 0);
    capture_begin(&cap, sub);
    ck_assert_int_lt(sampi_tuning_load(sub, L, &u), 0);
    out = capture_end(&cap, &lines);
    ck_assert_int_eq(lines, 1);
    ck_assert_ptr_nonnull(strstr(out, sub));
    free(out);
    ck_assert_uint_eq(u.n, 0);

    /* a save that cannot happen: an error, one warning, nothing left behind */
    char nodir[4096 + 32];
    snprintf(nodir, sizeof(nodir), "%s/missing/sampi.tuning", dir);
    capture_begin(&cap, sub);
    ck_assert_int_eq(sampi_tuning_save(nodir, &t), -ENOENT);
    out = capture_end(&cap, &lines);
    ck_assert_int_eq(lines, 1);
    ck_assert_ptr_nonnull(strstr(out, nodir));
    free(out);
    /* the rename fails (a non-empty directory is in the way): the
     * temporary file is removed */
    capture_begin(&cap, sub);
    ck_assert_int_lt(sampi_tuning_save(sub, &t), 0);
    out = capture_end(&cap, &lines);
    ck_assert_int_eq(lines, 1);
    free(out);
    ck_assert_int_eq(count_files(dir), 2);
    ck_assert_int_eq(count_files(sub), 0);

    sampi_tuning_free(&t);
    sampi_tuning_free(&u);
    rm_tree(dir);
    free(dir);
}
END_TEST

Suite *sampi_tuning_suite(void)
{
    return UNIT_SUITE(
        "tuning",
        {.name = "core",
         UNIT_LOOPS({rejects_bad_lines_naming_them, 0, (int)(sizeof(bad) / sizeof(bad[0]))}),
         UNIT_TESTS(parses_the_documented_example, names_the_algorithms_auto_may_choose,
                    ignores_comments_blanks_tabs_and_carriage_returns, bytes_stand_for_their_bucket,
                    format_round_trips, format_refuses_a_broken_table,
                    put_keeps_the_better_measured_entry, layout_signature,
                    facts_from_the_environment, collect_then_seed, hash_follows_what_is_written,
                    load_and_save)});
}
