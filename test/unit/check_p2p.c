/*
 * check_p2p.c - the plan of SAMPI's own allreduce (src/base/p2p_allreduce.h),
 * simulated symbolically for every p from 1 to 130: the ranks' steps pair up
 * (a send meets a receive of the same stage, and a reducing pair agrees on
 * who is low), an ordered pair of ranks carries at most one message, every
 * rank ends with every rank's value exactly once, and every rank ends with
 * the same expression (the same bits, whatever the op's quirks).
 */
#include "p2p_allreduce.h"
#include "suites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 130
#define EXPR 8192

struct rank_state {
    struct sampi_p2p_step steps[SAMPI_P2P_MAX_STEPS];
    int n, at;
    char expr[EXPR];
    int count[MAXP]; /* how many times each rank's value is in expr */
};

static struct rank_state st[MAXP];
static unsigned char pair_used[MAXP][MAXP];

/* rank r's step of `stage`, or NULL */
static struct sampi_p2p_step *step_at(int r, int stage)
{
    struct rank_state *s = &st[r];
    return s->at < s->n && s->steps[s->at].stage == stage ? &s->steps[s->at] : NULL;
}

static void simulate(int p)
{
    memset(pair_used, 0, sizeof(pair_used));
    for (int r = 0; r < p; r++) {
        st[r].n = sampi_p2p_plan(p, r, st[r].steps);
        ck_assert_int_ge(st[r].n, 0);
        ck_assert_int_le(st[r].n, SAMPI_P2P_MAX_STEPS);
        st[r].at = 0;
        snprintf(st[r].expr, EXPR, "%d", r);
        memset(st[r].count, 0, sizeof(st[r].count));
        st[r].count[r] = 1;
    }
    ck_assert_int_eq(sampi_p2p_plan(p, p, st[0].steps), -22);
    static char next[MAXP][EXPR];
    static int next_count[MAXP][MAXP];
    for (int stage = 0; stage <= SAMPI_P2P_STAGE_OUT; stage++) {
        /* every message of the stage carries its sender's value before it */
        for (int r = 0; r < p; r++) {
            memcpy(next[r], st[r].expr, EXPR);
            memcpy(next_count[r], st[r].count, sizeof(next_count[r]));
        }
        for (int r = 0; r < p; r++) {
            struct sampi_p2p_step *s = step_at(r, stage);
            if (!s)
                continue;
            ck_assert(s->peer >= 0 && s->peer < p && s->peer != r);
            struct sampi_p2p_step *t = step_at(s->peer, stage);
            ck_assert_msg(t && t->peer == r, "p=%d stage %d: %d's peer %d has no step with it", p,
                          stage, r, s->peer);
            ck_assert_int_eq(s->send, t->recv != SAMPI_P2P_RECV_NONE);
            ck_assert_int_eq(t->send, s->recv != SAMPI_P2P_RECV_NONE);
            if (s->send) {
                ck_assert_msg(!pair_used[r][s->peer], "p=%d: two messages %d -> %d", p, r, s->peer);
                pair_used[r][s->peer] = 1;
            }
            if (s->recv == SAMPI_P2P_RECV_REDUCE) {
                ck_assert_int_eq(s->mine_low, r < s->peer);
                if (t->recv == SAMPI_P2P_RECV_REDUCE)
                    ck_assert_int_ne(s->mine_low, t->mine_low);
                const struct rank_state *hi = r < s->peer ? &st[s->peer] : &st[r],
                                        *lo = r < s->peer ? &st[r] : &st[s->peer];
                int len = snprintf(next[r], EXPR, "(%s.%s)", hi->expr, lo->expr);
                ck_assert_int_lt(len, EXPR);
                for (int q = 0; q < p; q++)
                    next_count[r][q] = st[r].count[q] + st[s->peer].count[q];
            } else if (s->recv == SAMPI_P2P_RECV_COPY) {
                memcpy(next[r], st[s->peer].expr, EXPR);
                memcpy(next_count[r], st[s->peer].count, sizeof(next_count[r]));
            }
        }
        for (int r = 0; r < p; r++) {
            if (step_at(r, stage))
                st[r].at++;
            memcpy(st[r].expr, next[r], EXPR);
            memcpy(st[r].count, next_count[r], sizeof(st[r].count));
        }
    }
    for (int r = 0; r < p; r++) {
        ck_assert_msg(st[r].at == st[r].n, "p=%d: rank %d has steps left", p, r);
        for (int q = 0; q < p; q++)
            ck_assert_msg(st[r].count[q] == 1, "p=%d: rank %d holds rank %d's value %d times", p, r,
                          q, st[r].count[q]);
        ck_assert_str_eq(st[r].expr, st[0].expr);
    }
}

START_TEST(every_p)
{
    simulate(_i);
}
END_TEST

START_TEST(steps_and_tags)
{
    struct sampi_p2p_step steps[SAMPI_P2P_MAX_STEPS];
    /* 6 ranks: the worked example of p2p_allreduce.c */
    ck_assert_int_eq(sampi_p2p_plan(6, 0, steps), 2);
    ck_assert_int_eq(sampi_p2p_plan(6, 1, steps), 4);
    ck_assert_int_eq(steps[1].peer, 3);
    ck_assert_int_eq(steps[2].peer, 4);
    ck_assert_int_eq(sampi_p2p_plan(6, 5, steps), 2);
    ck_assert_int_eq(sampi_p2p_plan(1, 0, steps), 0);
    /* a power of two: log2 p steps, no fold */
    ck_assert_int_eq(sampi_p2p_plan(8, 3, steps), 3);
    /* the tags: low bits 3, sub-kind above, sequence modulo 512 */
    ck_assert_int_eq(SAMPI_P2P_TAG(SAMPI_P2P_SUB_CHECK, 0), 11);
    ck_assert_int_eq(SAMPI_P2P_TAG(SAMPI_P2P_SUB_CHECK, 512), 11);
    ck_assert_int_eq(SAMPI_P2P_TAG(SAMPI_P2P_SUB_CHECK, 1), 43);
    ck_assert_int_le(SAMPI_P2P_TAG(7, 511), 32767);
}
END_TEST

Suite *sampi_p2p_suite(void)
{
    return UNIT_SUITE("p2p_allreduce", {.name = "plan",
                                        .timeout = 60,
                                        UNIT_LOOPS({every_p, 1, MAXP + 1}),
                                        UNIT_TESTS(steps_and_tags)});
}
