/*
 * check_own_ranges.c - the ranges of recvbuf that hold a rank's value
 * (coll_algos/own_ranges.h), against a plain array of flags: every sequence
 * of marks and fills over a small vector, exhaustively for short sequences
 * and from a fixed seed for long ones.
 */
#include "own_ranges.h"
#include "suites.h"

#include <stdint.h>
#include <string.h>

enum { N = 8 };

struct model {
    unsigned char held[N];
    unsigned char filled[N]; /* what the last fill reported, in order */
    size_t last_hi;          /* fill parts come in increasing order */
    int disordered;
};

static void record(void *arg, size_t lo, size_t hi)
{
    struct model *m = arg;
    if (lo >= hi || lo < m->last_hi)
        m->disordered = 1;
    m->last_hi = hi;
    for (size_t i = lo; i < hi; i++)
        m->filled[i]++;
}

/* ck_assert once per failure, not per comparison: Check marks every
 * assertion with a write to its parent, and these tests compare millions of
 * answers. */
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg("%s", #cond);                                                             \
    } while (0)

static void check_against(const struct sampi_own_ranges *o, const struct model *m)
{
    for (size_t lo = 0; lo <= N; lo++)
        for (size_t hi = lo; hi <= N; hi++) {
            size_t held = 0;
            for (size_t i = lo; i < hi; i++)
                held += m->held[i];
            enum sampi_own_cover want = held == hi - lo ? SAMPI_OWN_ALL
                                        : held == 0     ? SAMPI_OWN_NONE
                                                        : SAMPI_OWN_PART;
            EXPECT(sampi_own_cover(o, lo, hi) == want);
        }
    /* the list stays sorted, disjoint and merged */
    for (int i = 0; i < o->n; i++) {
        EXPECT(o->lo[i] < o->hi[i]);
        if (i)
            EXPECT(o->hi[i - 1] < o->lo[i]);
    }
}

/* One step, op in [0, 2 * N * N): a mark or a fill of some [lo, hi). */
static void step(struct sampi_own_ranges *o, struct model *m, unsigned op)
{
    size_t lo = (op / 2) % N, hi = (op / 2) / N % (N + 1);
    if (op % 2 == 0) {
        EXPECT(sampi_own_mark(o, lo, hi) == 0);
    } else {
        memset(m->filled, 0, sizeof(m->filled));
        m->last_hi = 0;
        m->disordered = 0;
        EXPECT(sampi_own_fill(o, lo, hi, record, m) == 0);
        EXPECT(!m->disordered);
        for (size_t i = 0; i < N; i++)
            EXPECT(m->filled[i] == (i >= lo && i < hi && !m->held[i]));
    }
    for (size_t i = lo; i < hi; i++)
        m->held[i] = 1;
    check_against(o, m);
}

/* Every pair of steps from an empty list. */
START_TEST(every_pair_of_steps)
{
    enum { OPS = 2 * N * (N + 1) };
    for (unsigned a = 0; a < OPS; a++)
        for (unsigned b = 0; b < OPS; b++) {
            struct sampi_own_ranges o;
            struct model m = {0};
            sampi_own_init(&o, 0);
            step(&o, &m, a);
            step(&o, &m, b);
            sampi_own_free(&o);
        }
}
END_TEST

START_TEST(long_random_sequences)
{
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int run = 0; run < 2000; run++) {
        struct sampi_own_ranges o;
        struct model m = {0};
        sampi_own_init(&o, 0);
        for (int s = 0; s < 12; s++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            step(&o, &m, (unsigned)(x % (2 * N * (N + 1))));
        }
        sampi_own_free(&o);
    }
}
END_TEST

START_TEST(in_place_holds_everything)
{
    struct sampi_own_ranges o;
    struct model m = {0};
    sampi_own_init(&o, 1);
    ck_assert_int_eq(sampi_own_cover(&o, 0, N), SAMPI_OWN_ALL);
    ck_assert_int_eq(sampi_own_fill(&o, 0, N, record, &m), 0);
    for (size_t i = 0; i < N; i++)
        ck_assert_int_eq(m.filled[i], 0);
    sampi_own_free(&o);
}
END_TEST

Suite *sampi_own_ranges_suite(void)
{
    return UNIT_SUITE("own_ranges", {.name = "model",
                                     .timeout = 60,
                                     UNIT_TESTS(every_pair_of_steps, long_random_sequences,
                                                in_place_holds_everything)});
}
