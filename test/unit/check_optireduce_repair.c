/*
 * check_optireduce_repair.c - the pure part of optireduce's stage-2 repair
 * (coll_algos/optireduce_repair.c): request runs built from the packet
 * bitmap, checked against a brute-force expansion for every n in 2..9, every
 * rank, several packet sizes, shard lengths (short last packets, empty
 * shards) and random bitmaps (fixed seed), with and without a per-round
 * budget; and the owner's validation, which must refuse anything that is not
 * a sorted, disjoint, maximal list of runs inside its shard.
 */
#include "optireduce_repair.h"
#include "suites.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64*: reproducible on every libc */
static uint64_t rnd(uint64_t *st)
{
    uint64_t x = *st;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *st = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

#define MAXN   9
#define MAXPKT 64

/* One rank's view: shard lengths, the bit layout and the bitmap. */
struct view {
    int n, me;
    uint32_t per_pkt;
    size_t len[MAXN], base[MAXN + 1];
    uint8_t seen[MAXN * MAXPKT / 8 + 8];
    uint8_t miss[MAXN][MAXPKT]; /* the brute-force truth: 1 = missing */
};

/* Lay the bits out like optireduce.c (own shard: no bits) or, with `gaps`,
 * with spare bits between owners and bits for the own shard too (which must
 * be ignored).  loss_pm: chance per mille that a packet is missing. */
static void make_view(struct view *v, int n, int me, uint32_t per_pkt, int gaps, int loss_pm,
                      uint64_t *st)
{
    memset(v, 0, sizeof *v);
    v->n = n;
    v->me = me;
    v->per_pkt = per_pkt;
    size_t bits = 0;
    for (int s = 0; s < n; s++) {
        /* lengths: empty, exact multiples, a short tail; up to 40 packets so
         * that whole bitmap bytes (the scan's fast path) occur */
        size_t maxlen = (size_t)per_pkt * 40;
        switch (rnd(st) % 4) {
        case 0:
            v->len[s] = 0;
            break;
        case 1:
            v->len[s] = (size_t)per_pkt * (1 + rnd(st) % 40);
            break;
        default:
            v->len[s] = rnd(st) % (maxlen + 1);
        }
        v->base[s] = bits;
        size_t np = (size_t)sampi_opti_repair_npkts(v->len[s], per_pkt);
        bits += s == me && !gaps ? 0 : np;
        bits += gaps ? rnd(st) % 11 : 0;
    }
    v->base[n] = bits;
    memset(v->seen, 0, sizeof v->seen);
    /* spare bits random, meaningful bits from the truth */
    for (size_t b = 0; gaps && b < bits; b++)
        if (rnd(st) & 1)
            v->seen[b / 8] |= (uint8_t)(1u << (b % 8));
    for (int s = 0; s < n; s++) {
        size_t np = (size_t)sampi_opti_repair_npkts(v->len[s], per_pkt);
        for (size_t k = 0; k < np && !(s == me && !gaps); k++) {
            size_t b = v->base[s] + k;
            int lost = (int)(rnd(st) % 1000) < loss_pm;
            v->miss[s][k] = s != me && lost;
            if (lost)
                v->seen[b / 8] &= (uint8_t) ~(1u << (b % 8));
            else
                v->seen[b / 8] |= (uint8_t)(1u << (b % 8));
        }
    }
}

static struct sampi_opti_repair_map map_of(const struct view *v)
{
    struct sampi_opti_repair_map m = {v->n, v->me, v->len, v->per_pkt, v->seen, v->base};
    return m;
}

static size_t pkt_floats(const struct view *v, int s, size_t k)
{
    size_t off = k * v->per_pkt;
    return v->len[s] - off < v->per_pkt ? v->len[s] - off : v->per_pkt;
}

/* Build every round at `budget` and compare with the truth. */
static void check_rounds(const struct view *v, size_t budget, const char *what)
{
    struct sampi_opti_repair_map m = map_of(v);
    size_t nruns[MAXN], nfloats[MAXN], pr[MAXN], pf[MAXN];
    struct sampi_opti_run out[MAXN * MAXPKT];
    uint8_t got[MAXN][MAXPKT];
    memset(got, 0, sizeof got);
    struct sampi_opti_repair_plan plan;
    ck_assert_int_eq(sampi_opti_repair_plan(&m, budget, pr, pf, &plan), 0);
    struct sampi_opti_repair_cursor cur = {0, 0};
    uint64_t rounds = 0, floats = 0;
    size_t max_rr = 0, max_rf = 0, max_or = 0, max_of = 0;
    for (int guard = 0; guard < MAXN * MAXPKT + 2; guard++) {
        ck_assert_int_eq(sampi_opti_repair_round(&m, &cur, budget, nruns, nfloats, out,
                                                 sizeof out / sizeof out[0]),
                         0);
        size_t at = 0, rf = 0, rr = 0;
        for (int s = 0; s < v->n; s++) {
            if (s == v->me)
                ck_assert_msg(nruns[s] == 0 && nfloats[s] == 0, "%s: own shard requested", what);
            struct sampi_opti_span sp[MAXPKT];
            size_t nf = 99;
            /* what the owner will accept, and the floats it will send */
            ck_assert_msg(
                sampi_opti_repair_serve(out + at, nruns[s], v->len[s], v->per_pkt, sp, &nf) == 0,
                "%s: owner %d refuses a built request", what, s);
            ck_assert_uint_eq(nf, nfloats[s]);
            size_t sum = 0;
            for (size_t r = 0; r < nruns[s]; r++) {
                struct sampi_opti_run run = out[at + r];
                if (r)
                    ck_assert_msg(run.first > out[at + r - 1].first + out[at + r - 1].count,
                                  "%s: runs not maximal", what);
                size_t f0 = 0;
                for (uint32_t k = run.first; k < run.first + run.count; k++) {
                    ck_assert_msg(v->miss[s][k], "%s: owner %d packet %u asked, not missing", what,
                                  s, k);
                    ck_assert_msg(!got[s][k], "%s: packet asked twice", what);
                    got[s][k] = 1;
                    f0 += pkt_floats(v, s, k);
                }
                ck_assert_uint_eq(sp[r].off, (size_t)run.first * v->per_pkt);
                ck_assert_uint_eq(sp[r].len, f0);
                ck_assert(sp[r].off + sp[r].len <= v->len[s]);
                sum += f0;
            }
            ck_assert_uint_eq(sum, nfloats[s]);
            at += nruns[s];
            rr += nruns[s];
            rf += nfloats[s];
            max_or = nruns[s] > max_or ? nruns[s] : max_or;
            max_of = nfloats[s] > max_of ? nfloats[s] : max_of;
        }
        ck_assert_msg(rf <= budget, "%s: round over budget", what);
        if (rf) {
            rounds++;
            floats += rf;
            max_rr = rr > max_rr ? rr : max_rr;
            max_rf = rf > max_rf ? rf : max_rf;
        }
        if (cur.owner == v->n)
            break;
        ck_assert_msg(rf > 0, "%s: a round that is not the last took nothing", what);
        /* greedy: the round stopped at a missing packet that does not fit */
        ck_assert_msg(cur.owner != v->me && v->miss[cur.owner][cur.pkt], "%s: cursor", what);
        ck_assert_msg(pkt_floats(v, cur.owner, cur.pkt) > budget - rf, "%s: round not full", what);
    }
    ck_assert_int_eq(cur.owner, v->n);
    uint64_t packets = 0, truth_floats = 0;
    for (int s = 0; s < v->n; s++)
        for (size_t k = 0; k < sampi_opti_repair_npkts(v->len[s], v->per_pkt); k++) {
            ck_assert_msg(got[s][k] == v->miss[s][k], "%s: owner %d packet %zu %s", what, s, k,
                          got[s][k] ? "asked, not missing" : "missing, never asked");
            packets += v->miss[s][k];
            truth_floats += v->miss[s][k] ? pkt_floats(v, s, k) : 0;
        }
    ck_assert_uint_eq(floats, truth_floats);
    ck_assert_uint_eq(plan.rounds, rounds);
    ck_assert_uint_eq(plan.floats, truth_floats);
    ck_assert_uint_eq(plan.packets, packets);
    ck_assert_uint_eq(plan.round_runs, max_rr);
    ck_assert_uint_eq(plan.round_floats, max_rf);
    ck_assert_uint_eq(plan.owner_runs, max_or);
    ck_assert_uint_eq(plan.owner_floats, max_of);
    /* an unbounded budget takes everything in at most one round */
    if (budget == SIZE_MAX)
        ck_assert_uint_le(rounds, 1);
}

START_TEST(requests_match_brute_force)
{
    static const uint32_t pkts[] = {1, 2, 3, 7, 16};
    static const int loss[] = {0, 20, 300, 700, 1000};
    uint64_t st = UINT64_C(0x5eed0f0e7ed0c0de);
    long cases = 0;
    for (int n = 2; n <= MAXN; n++)
        for (int me = 0; me < n; me++)
            for (size_t p = 0; p < sizeof pkts / sizeof pkts[0]; p++)
                for (size_t l = 0; l < sizeof loss / sizeof loss[0]; l++)
                    for (int rep = 0; rep < 3; rep++) {
                        struct view v;
                        make_view(&v, n, me, pkts[p], rep == 2, loss[l], &st);
                        const size_t budgets[] = {SIZE_MAX, pkts[p], 3 * (size_t)pkts[p] + 1,
                                                  (size_t)pkts[p] + rnd(&st) % 40};
                        for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
                            char what[96];
                            snprintf(what, sizeof what,
                                     "n=%d me=%d per_pkt=%u loss=%d rep=%d b=%zu", n, me, pkts[p],
                                     loss[l], rep, budgets[b]);
                            check_rounds(&v, budgets[b], what);
                            cases++;
                        }
                    }
    ck_assert_int_gt(cases, 10000);
}
END_TEST

/* The prologue's example: rank 2 of 3, per_pkt 2, shards of 5, 5, 4. */
START_TEST(worked_example)
{
    size_t len[3] = {5, 5, 4}, base[4] = {0, 3, 6, 6};
    uint8_t seen = 0x3a; /* bits 1, 3, 4, 5: packet 1 of shard 0, all of shard 1 */
    struct sampi_opti_repair_map m = {3, 2, len, 2, &seen, base};
    size_t nruns[3], nfloats[3];
    struct sampi_opti_run out[4];
    struct sampi_opti_repair_cursor cur = {0, 0};
    ck_assert_int_eq(sampi_opti_repair_round(&m, &cur, SIZE_MAX, nruns, nfloats, out, 4), 0);
    ck_assert_uint_eq(nruns[0], 2);
    ck_assert_uint_eq(nruns[1], 0);
    ck_assert_uint_eq(nfloats[0], 3);
    ck_assert_uint_eq(out[0].first, 0);
    ck_assert_uint_eq(out[0].count, 1);
    ck_assert_uint_eq(out[1].first, 2);
    ck_assert_uint_eq(out[1].count, 1);
    struct sampi_opti_span sp[2];
    size_t nf;
    ck_assert_int_eq(sampi_opti_repair_serve(out, 2, 5, 2, sp, &nf), 0);
    ck_assert_uint_eq(nf, 3);
    ck_assert_uint_eq(sp[1].off, 4);
    ck_assert_uint_eq(sp[1].len, 1);
    /* too little room for the runs */
    cur = (struct sampi_opti_repair_cursor){0, 0};
    ck_assert_int_eq(sampi_opti_repair_round(&m, &cur, SIZE_MAX, nruns, nfloats, out, 1), -ENOBUFS);
}
END_TEST

START_TEST(serve_rejects)
{
    /* a shard of 10 floats at 3 per packet: packets 0..3, the last of 1 */
    struct {
        struct sampi_opti_run r[3];
        size_t nr;
        int ok;
        size_t nf;
    } cases[] = {
        {{{0, 4}}, 1, 1, 10},
        {{{3, 1}}, 1, 1, 1},
        {{{0, 1}, {2, 2}}, 2, 1, 7},
        {{{0, 0}}, 1, 0, 0},                 /* empty run */
        {{{4, 1}}, 1, 0, 0},                 /* past the shard */
        {{{2, 3}}, 1, 0, 0},                 /* runs over the end */
        {{{UINT32_MAX, 2}}, 1, 0, 0},        /* wraps around */
        {{{1, UINT32_MAX}}, 1, 0, 0},        /* wraps around */
        {{{0, 2}, {1, 1}}, 2, 0, 0},         /* overlap */
        {{{2, 1}, {0, 1}}, 2, 0, 0},         /* unsorted */
        {{{0, 1}, {1, 1}}, 2, 0, 0},         /* adjacent: not maximal */
        {{{1, 1}, {1, 1}}, 2, 0, 0},         /* twice */
        {{{0, 1}, {2, 1}, {2, 1}}, 3, 0, 0}, /* twice, later */
        {{{0, 1}, {2, 1}, {3, 9}}, 3, 0, 0}, /* the last one bad */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t nf = 123;
        int rc = sampi_opti_repair_serve(cases[i].r, cases[i].nr, 10, 3, NULL, &nf);
        ck_assert_msg(cases[i].ok ? rc == 0 : rc == -EINVAL, "case %zu: rc %d", i, rc);
        ck_assert_uint_eq(nf, cases[i].nf);
    }
    size_t nf;
    struct sampi_opti_run r = {0, 1};
    ck_assert_int_eq(sampi_opti_repair_serve(NULL, 0, 10, 3, NULL, &nf), 0);
    ck_assert_uint_eq(nf, 0);
    ck_assert_int_eq(sampi_opti_repair_serve(NULL, 1, 10, 3, NULL, &nf), -EINVAL);
    ck_assert_int_eq(sampi_opti_repair_serve(&r, 1, 10, 0, NULL, &nf), -EINVAL);
    ck_assert_int_eq(sampi_opti_repair_serve(&r, 1, 0, 3, NULL, &nf), -EINVAL); /* empty shard */
    ck_assert_int_eq(sampi_opti_repair_serve(&r, 1, 10, 3, NULL, NULL), -EINVAL);
}
END_TEST

/* Garbage: whatever random runs arrive, the owner either refuses them or
 * every span it would send lies inside the shard, sorted and disjoint. */
START_TEST(serve_garbage)
{
    uint64_t st = 42;
    long accepted = 0;
    for (int it = 0; it < 200000; it++) {
        struct sampi_opti_run r[4];
        size_t nr = rnd(&st) % 5, len = rnd(&st) % 50;
        uint32_t per_pkt = 1 + (uint32_t)(rnd(&st) % 8);
        for (size_t i = 0; i < nr; i++) {
            uint64_t x = rnd(&st);
            /* mostly small numbers, sometimes huge ones */
            r[i].first = x & 1 ? (uint32_t)(x >> 32) : (uint32_t)((x >> 8) % 9);
            r[i].count = x & 2 ? (uint32_t)(x >> 40) : (uint32_t)((x >> 16) % 4);
        }
        struct sampi_opti_span sp[4];
        size_t nf = 0;
        if (sampi_opti_repair_serve(r, nr, len, per_pkt, sp, &nf))
            continue;
        accepted++;
        size_t end = 0, sum = 0;
        for (size_t i = 0; i < nr; i++) {
            ck_assert(sp[i].len > 0);
            ck_assert(i == 0 || sp[i].off > end);
            ck_assert(sp[i].off + sp[i].len <= len);
            end = sp[i].off + sp[i].len;
            sum += sp[i].len;
        }
        ck_assert_uint_eq(sum, nf);
    }
    ck_assert_int_gt(accepted, 1000);
}
END_TEST

START_TEST(map_rejects)
{
    size_t len[3] = {10, 10, 10}, base[4] = {0, 10, 10, 20};
    uint8_t seen[3] = {0};
    struct sampi_opti_repair_map ok = {3, 1, len, 1, seen, base}, m;
    ck_assert_int_eq(sampi_opti_repair_map_check(&ok), 0);
    m = ok;
    m.me = 3;
    ck_assert_int_eq(sampi_opti_repair_map_check(&m), -EINVAL);
    m = ok;
    m.me = -1;
    ck_assert_int_eq(sampi_opti_repair_map_check(&m), -EINVAL);
    m = ok;
    m.n = 0;
    ck_assert_int_eq(sampi_opti_repair_map_check(&m), -EINVAL);
    m = ok;
    m.per_pkt = 0;
    ck_assert_int_eq(sampi_opti_repair_map_check(&m), -EINVAL);
    m = ok;
    m.seen = NULL;
    ck_assert_int_eq(sampi_opti_repair_map_check(&m), -EINVAL);
    ck_assert_int_eq(sampi_opti_repair_map_check(NULL), -EINVAL);
    /* owner 2's 10 packets would run past the 19 bits there are */
    size_t short_base[4] = {0, 10, 10, 19};
    m = ok;
    m.seen_base = short_base;
    ck_assert_int_eq(sampi_opti_repair_map_check(&m), -EINVAL);
    /* a start beyond the end */
    size_t far_base[4] = {0, 10, 30, 20};
    m = ok;
    m.seen_base = far_base;
    ck_assert_int_eq(sampi_opti_repair_map_check(&m), -EINVAL);
    /* the own shard may have no bits at all */
    len[1] = 1000;
    ck_assert_int_eq(sampi_opti_repair_map_check(&ok), 0);
    /* more packets than a uint32 run can name */
    if (sizeof(size_t) > 4) {
        len[0] = (size_t)UINT32_MAX + 2;
        ck_assert_int_eq(sampi_opti_repair_map_check(&ok), -E2BIG);
        len[0] = 10;
    }
    /* a budget below one packet could never make progress */
    size_t nruns[3], nfloats[3];
    struct sampi_opti_repair_cursor cur = {0, 0};
    m = ok;
    m.per_pkt = 4;
    ck_assert_int_eq(sampi_opti_repair_round(&m, &cur, 3, nruns, nfloats, NULL, 0), -EINVAL);
    cur.owner = 4;
    ck_assert_int_eq(sampi_opti_repair_round(&ok, &cur, 10, nruns, nfloats, NULL, 0), -EINVAL);
}
END_TEST

Suite *sampi_optireduce_repair_suite(void)
{
    return UNIT_SUITE("optireduce_repair", {.name = "repair",
                                            .timeout = 120,
                                            UNIT_TESTS(requests_match_brute_force, worked_example,
                                                       serve_rejects, serve_garbage, map_rejects)});
}
