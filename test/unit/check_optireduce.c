/*
 * check_optireduce.c - optireduce's pure parts: the datagram header parser
 * (netdev/opti_hdr.c), the Hadamard transform and its layout
 * (coll_algos/hadamard.c), the Transpose AllReduce round plan
 * (coll_algos/optireduce_plan.c), the timeout policy
 * (coll_algos/optireduce_timeout.c) and the fault-injection decorator
 * (netdev/dgram_fault.c) over an in-test loopback transport.
 */
#include "dgram_fault.h"
#include "hadamard.h"
#include "netdev.h"
#include "opti_hdr.h"
#include "optireduce_plan.h"
#include "optireduce_timeout.h"
#include "suites.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ header */

static const uint32_t flows[4] = {1000, 1000, 1000, 1000};

static struct sampi_opti_expect expect(void)
{
    struct sampi_opti_expect e = {.job_key = 0xabcd1234,
                                  .comm_id = 7,
                                  .seq = 42,
                                  .gather = 0,
                                  .size = 4,
                                  .self = 1,
                                  .per_pkt = 256,
                                  .flow_nelem = flows};
    return e;
}

static struct sampi_opti_hdr good_hdr(void)
{
    struct sampi_opti_hdr h = {.flags = SAMPI_OPTI_F_LAST_PCTL,
                               .job_key = 0xabcd1234,
                               .comm_id = 7,
                               .seq = 42,
                               .src = 2,
                               .nelem = 256,
                               .elem_off = 512,
                               .flow_nelem = 1000,
                               .t_est_100us = 33,
                               .incast_want = 3,
                               .loss_pm = 255};
    return h;
}

/* pack h plus nelem floats; returns the datagram length */
static size_t build(const struct sampi_opti_hdr *h, uint8_t *buf)
{
    sampi_opti_hdr_pack(h, buf);
    memset(buf + SAMPI_OPTI_HDR_BYTES, 0x3f, 4u * h->nelem);
    return SAMPI_OPTI_HDR_BYTES + 4u * h->nelem;
}

START_TEST(hdr_round_trip)
{
    uint8_t buf[2048];
    struct sampi_opti_hdr h = good_hdr(), got;
    struct sampi_opti_expect e = expect();
    size_t len = build(&h, buf);
    ck_assert_int_eq(buf[0], 0x52); /* little-endian magic 0x4F52 */
    ck_assert_int_eq(buf[1], 0x4F);
    ck_assert_int_eq(sampi_opti_hdr_accept(buf, len, &e, &got), SAMPI_OPTI_OK);
    ck_assert_uint_eq(got.job_key, h.job_key);
    ck_assert_uint_eq(got.comm_id, h.comm_id);
    ck_assert_uint_eq(got.seq, h.seq);
    ck_assert_uint_eq(got.src, h.src);
    ck_assert_uint_eq(got.nelem, h.nelem);
    ck_assert_uint_eq(got.elem_off, h.elem_off);
    ck_assert_uint_eq(got.flow_nelem, h.flow_nelem);
    ck_assert_uint_eq(got.t_est_100us, h.t_est_100us);
    ck_assert_uint_eq(got.incast_want, h.incast_want);
    ck_assert_uint_eq(got.flags, h.flags);
    /* the flow's last, short packet */
    h.elem_off = 768;
    h.nelem = 232;
    len = build(&h, buf);
    ck_assert_int_eq(sampi_opti_hdr_accept(buf, len, &e, &got), SAMPI_OPTI_OK);
}
END_TEST

START_TEST(hdr_rejects)
{
    uint8_t buf[2048];
    struct sampi_opti_hdr h, got;
    struct sampi_opti_expect e = expect();
    size_t len;
    /* truncated: every length short of a whole header, and a cut payload */
    h = good_hdr();
    len = build(&h, buf);
    for (size_t l = 0; l < SAMPI_OPTI_HDR_BYTES; l++)
        ck_assert_int_eq(sampi_opti_hdr_parse(buf, l, &got), SAMPI_OPTI_TRUNCATED);
    ck_assert_int_eq(sampi_opti_hdr_parse(buf, len - 1, &got), SAMPI_OPTI_TRUNCATED);
    ck_assert_int_eq(sampi_opti_hdr_parse(NULL, 100, &got), SAMPI_OPTI_TRUNCATED);
    /* oversized */
    ck_assert_int_eq(sampi_opti_hdr_parse(buf, len + 4, &got), SAMPI_OPTI_OVERSIZED);
    /* magic, version, reserved flags */
    buf[0] ^= 1;
    ck_assert_int_eq(sampi_opti_hdr_parse(buf, len, &got), SAMPI_OPTI_BAD_MAGIC);
    buf[0] ^= 1;
    buf[2] = 2;
    ck_assert_int_eq(sampi_opti_hdr_parse(buf, len, &got), SAMPI_OPTI_BAD_VERSION);
    buf[2] = 1;
    buf[3] = 0x10;
    ck_assert_int_eq(sampi_opti_hdr_parse(buf, len, &got), SAMPI_OPTI_BAD_FLAGS);
    /* field by field: one change to a good header, the verdict it must get */
    static const struct {
        const char *what;
        enum { KEY, COMM, SEQ, ESEQ, FLAGS, SRC, FLOW, OFF, NELEM } field;
        uint32_t value, value2;
        enum sampi_opti_verdict want;
    } cases[] = {
        {"wrong key", KEY, 0xabcd1235, 0, SAMPI_OPTI_WRONG_KEY},
        {"wrong communicator", COMM, 8, 0, SAMPI_OPTI_WRONG_COMM},
        {"stale sequence", SEQ, 41, 0, SAMPI_OPTI_STALE},
        {"future sequence", SEQ, 43, 0, SAMPI_OPTI_FUTURE},
        {"stale across the wrap", ESEQ, UINT32_MAX, 1, SAMPI_OPTI_STALE},
        {"other stage", FLAGS, SAMPI_OPTI_F_GATHER, 0, SAMPI_OPTI_WRONG_STAGE},
        {"source is self", SRC, 1, 0, SAMPI_OPTI_BAD_SRC},
        {"source beyond size", SRC, 4, 0, SAMPI_OPTI_BAD_SRC},
        {"flow length", FLOW, 1001, 0, SAMPI_OPTI_BAD_FLOW},
        {"past the flow", OFF, 900, 101, SAMPI_OPTI_OUT_OF_RANGE},
        {"offset overflow", OFF, UINT32_MAX - 10, 20, SAMPI_OPTI_OUT_OF_RANGE},
        {"off the grid", OFF, 100, 256, SAMPI_OPTI_OUT_OF_RANGE},
        {"short packet", NELEM, 10, 0, SAMPI_OPTI_OUT_OF_RANGE},
        {"empty packet", NELEM, 0, 0, SAMPI_OPTI_OUT_OF_RANGE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        h = good_hdr();
        e = expect();
        switch (cases[i].field) {
        case KEY:
            h.job_key = cases[i].value;
            break;
        case COMM:
            h.comm_id = cases[i].value;
            break;
        case SEQ:
            h.seq = cases[i].value;
            break;
        case ESEQ:
            h.seq = cases[i].value, e.seq = cases[i].value2;
            break;
        case FLAGS:
            h.flags |= (uint8_t)cases[i].value;
            break;
        case SRC:
            h.src = (uint16_t)cases[i].value;
            break;
        case FLOW:
            h.flow_nelem = cases[i].value;
            break;
        case OFF:
            h.elem_off = cases[i].value, h.nelem = (uint16_t)cases[i].value2;
            break;
        case NELEM:
            h.nelem = (uint16_t)cases[i].value;
            break;
        }
        len = build(&h, buf);
        ck_assert_msg(sampi_opti_hdr_accept(buf, len, &e, &got) == cases[i].want, "%s: got %s",
                      cases[i].what,
                      sampi_opti_verdict_names[sampi_opti_hdr_accept(buf, len, &e, &got)]);
    }
    for (int v = 0; v < SAMPI_OPTI_VERDICT__COUNT; v++)
        ck_assert_ptr_nonnull(sampi_opti_verdict_names[v]);
}
END_TEST

/* ------------------------------------------------------------ Hadamard */

START_TEST(fwht_matches_matrix)
{
    for (size_t len = 1; len <= 64; len *= 2) {
        float v[64], w[64];
        for (size_t i = 0; i < len; i++)
            v[i] = w[i] = (float)((i * 7) % 5) - 2.0f;
        sampi_fwht(v, len);
        for (size_t r = 0; r < len; r++) {
            float s = 0;
            for (size_t c = 0; c < len; c++)
                s += (__builtin_popcountll(r & c) % 2 ? -1.0f : 1.0f) * w[c];
            ck_assert_float_eq_tol(v[r], s, 1e-4f);
        }
    }
}
END_TEST

static double err_l2(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

START_TEST(ht_round_trip)
{
    static const size_t counts[] = {0, 1, 5, 1000, 4096, 4097, 65536 * 2 + 3, 300007};
    static const int ns[] = {1, 2, 3, 4, 7};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
        for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
            for (int en = 0; en < 2; en++) {
                size_t n = counts[ci];
                struct sampi_ht_layout L;
                ck_assert_int_eq(sampi_ht_layout_init(&L, n, ns[ni], en, 65536, 1024), 0);
                ck_assert_int_eq(L.enabled, en && n >= 1024u * ns[ni]);
                /* shards tile W exactly */
                size_t sum = 0;
                for (int j = 0; j < ns[ni]; j++) {
                    ck_assert_uint_eq(sampi_ht_shard_off(&L, j), sum);
                    sum += sampi_ht_shard_len(&L, j);
                }
                ck_assert_uint_eq(sum, L.total);
                ck_assert_uint_ge(L.total, n);
                float *x = malloc((n + 1) * 4), *y = malloc((n + 1) * 4);
                float *w = malloc((L.total + 1) * 4), *tmp = malloc((L.bmax + 1) * 4);
                for (size_t i = 0; i < n; i++)
                    x[i] = sinf((float)i * 0.37f) * 3;
                uint64_t seed = sampi_ht_seed(1, 2, 3, (uint32_t)ci);
                sampi_ht_encode(&L, x, w, seed, tmp);
                sampi_ht_decode(&L, w, y, seed, 1.0f, tmp);
                ck_assert_msg(err_l2(y, x, n) < 1e-6, "count %zu n %d ht %d: error %g", n, ns[ni],
                              en, err_l2(y, x, n));
                /* the average scale folds into decode */
                sampi_ht_decode(&L, w, y, seed, 0.25f, tmp);
                for (size_t i = 0; i < n; i++)
                    ck_assert_float_eq_tol(y[i], x[i] * 0.25f, 1e-5f);
                free(x);
                free(y);
                free(w);
                free(tmp);
            }
}
END_TEST

START_TEST(ht_linear_and_spreads_loss)
{
    const size_t n = 3 * 65536 + 777;
    const int shards = 4;
    struct sampi_ht_layout L;
    sampi_ht_layout_init(&L, n, shards, 1, 65536, 1024);
    float *a = malloc(n * 4), *b = malloc(n * 4), *s = malloc(n * 4), *y = malloc(n * 4);
    float *wa = malloc(L.total * 4), *wb = malloc(L.total * 4), *ws = malloc(L.total * 4);
    float *tmp = malloc(L.bmax * 4);
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)(i % 13) - 6;
        b[i] = (float)(i % 7) * 0.5f;
        s[i] = a[i] + b[i];
    }
    uint64_t seed = sampi_ht_seed(99, 1, 1, 5);
    sampi_ht_encode(&L, a, wa, seed, tmp);
    sampi_ht_encode(&L, b, wb, seed, tmp);
    sampi_ht_encode(&L, s, ws, seed, tmp);
    for (size_t i = 0; i < L.total; i++)
        ck_assert_float_eq_tol(wa[i] + wb[i], ws[i], 1e-3f);
    /* signs depend on the seed: another call's signs differ somewhere */
    int differ = 0;
    for (size_t g = 0; g < 256; g++)
        differ |= sampi_ht_sign(seed, g) != sampi_ht_sign(seed + 1, g);
    ck_assert(differ);
    /* losing a whole shard removes ~1/n of every block's energy, spread over
     * all coordinates: the error is about sqrt(1/n), not zeroed coordinates */
    memset(ws + sampi_ht_shard_off(&L, 2), 0, sampi_ht_shard_len(&L, 2) * 4);
    sampi_ht_decode(&L, ws, y, seed, 1.0f, tmp);
    double e = err_l2(y, s, n);
    ck_assert_msg(e > 0.3 && e < 0.7, "error %g after losing 1 of 4 shards", e);
    size_t zeros = 0;
    for (size_t i = 0; i < n; i++)
        zeros += s[i] != 0 && y[i] == 0;
    ck_assert_uint_lt(zeros, n / 100);
    free(a), free(b), free(s), free(y), free(wa), free(wb), free(ws), free(tmp);
}
END_TEST

/* ------------------------------------------------------------ plan */

START_TEST(tar_plan)
{
    for (int n = 2; n <= 9; n++)
        for (int I = 1; I <= n - 1; I++) {
            int R = sampi_tar_rounds(n, I);
            ck_assert_int_eq(R, (n - 1 + I - 1) / I);
            int sent[9][9] = {{0}};
            for (int k = 0; k < R; k++) {
                int incoming[9] = {0};
                for (int r = 0; r < n; r++) {
                    int d[16];
                    int m = sampi_tar_round_dests(n, r, I, k, d);
                    ck_assert_int_le(m, I);
                    for (int i = 0; i < m; i++) {
                        ck_assert_int_ne(d[i], r);
                        ck_assert_int_eq(sent[r][d[i]], 0);
                        sent[r][d[i]] = 1;
                        incoming[d[i]]++;
                    }
                }
                for (int x = 0; x < n; x++)
                    ck_assert_int_le(incoming[x], I);
            }
            for (int r = 0; r < n; r++)
                for (int d = 0; d < n; d++)
                    ck_assert_int_eq(sent[r][d], r != d);
            int d[16];
            ck_assert_int_eq(sampi_tar_round_dests(n, 0, I, R, d), 0);
        }
    ck_assert_uint_eq(sampi_tar_npkts(0, 256), 0);
    ck_assert_uint_eq(sampi_tar_npkts(256, 256), 1);
    ck_assert_uint_eq(sampi_tar_npkts(257, 256), 2);
    ck_assert_uint_eq(sampi_tar_tail_pkts(10, 1), 1);
    ck_assert_uint_eq(sampi_tar_tail_pkts(3, 1), 1);
    ck_assert_uint_eq(sampi_tar_tail_pkts(32, 1), 2);
    ck_assert_uint_eq(sampi_tar_tail_pkts(64, 1), 4);
    ck_assert_uint_eq(sampi_tar_tail_pkts(400, 1), 4);
    ck_assert_uint_eq(sampi_tar_tail_pkts(500, 1), 5);
    ck_assert_uint_eq(sampi_tar_tail_pkts(1000, 1), 10);
    ck_assert_uint_eq(sampi_tar_tail_pkts(1001, 1), 11);
    ck_assert_uint_eq(sampi_tar_pkt_flags(9, 10, 1), SAMPI_OPTI_F_LAST_PCTL | SAMPI_OPTI_F_FIN);
    ck_assert_uint_eq(sampi_tar_pkt_flags(8, 10, 2), SAMPI_OPTI_F_LAST_PCTL);
    ck_assert_uint_eq(sampi_tar_pkt_flags(7, 10, 2), 0);
}
END_TEST

/* ------------------------------------------------------------ timeouts */

START_TEST(timeout_policy)
{
    struct sampi_opti_stage_clock s = {.deadline_ns = 1000,
                                       .last_rx_ns = 100,
                                       .early_gap_ns = 50,
                                       .received = 5,
                                       .expected = 10,
                                       .tails_seen = 1,
                                       .senders = 2};
    ck_assert_int_eq(sampi_opti_stage_check(&s, 200), SAMPI_OPTI_END_NONE);
    ck_assert_int_eq(sampi_opti_stage_wake(&s), 1000);
    s.tails_seen = 2;
    ck_assert_int_eq(sampi_opti_stage_check(&s, 149), SAMPI_OPTI_END_NONE);
    ck_assert_int_eq(sampi_opti_stage_check(&s, 150), SAMPI_OPTI_END_EARLY);
    ck_assert_int_eq(sampi_opti_stage_wake(&s), 150);
    s.early_gap_ns = 0;
    ck_assert_int_eq(sampi_opti_stage_check(&s, 999), SAMPI_OPTI_END_NONE);
    ck_assert_int_eq(sampi_opti_stage_check(&s, 1000), SAMPI_OPTI_END_HARD);
    s.received = 10;
    ck_assert_int_eq(sampi_opti_stage_check(&s, 5000), SAMPI_OPTI_END_COMPLETE);

    ck_assert_double_eq_tol(sampi_opti_extrapolate(10, 0.5, 100), 20, 1e-12);
    ck_assert_double_eq_tol(sampi_opti_extrapolate(10, 0.05, 100), 100, 1e-12);
    ck_assert_double_eq_tol(sampi_opti_extrapolate(10, 0, 100), 100, 1e-12);
    ck_assert_double_eq_tol(sampi_opti_ewma(0, 8, 0.125), 8, 1e-12);
    ck_assert_double_eq_tol(sampi_opti_ewma(8, 16, 0.125), 9, 1e-12);
    double v[] = {5, 1, 9, 3};
    ck_assert_double_eq_tol(sampi_opti_agreed(v, 4, 100), 4, 1e-12);
    double w[] = {50, 10, 90};
    ck_assert_double_eq_tol(sampi_opti_agreed(w, 3, 40), 40, 1e-12);
    double p[20];
    for (int i = 0; i < 20; i++)
        p[i] = 20 - i;
    ck_assert_double_eq_tol(sampi_opti_pctl(p, 20, 95), 19, 1e-12);
    ck_assert_double_eq_tol(sampi_opti_pctl(p, 20, 100), 20, 1e-12);

    ck_assert_int_eq(sampi_opti_incast_next(7, 8, 1, 0, 0.001), 3);
    ck_assert_int_eq(sampi_opti_incast_next(1, 8, 1, 0, 0.001), 1);
    ck_assert_int_eq(sampi_opti_incast_next(4, 8, 0, 0.01, 0.001), 2);
    ck_assert_int_eq(sampi_opti_incast_next(4, 8, 0, 0, 0.001), 5);
    ck_assert_int_eq(sampi_opti_incast_next(7, 8, 0, 0, 0.001), 7);
    ck_assert_int_eq(sampi_opti_incast_next(4, 8, 0, 0.0005, 0.001), 4);
}
END_TEST

/* ------------------------------------------------------------ fault decorator */

/* A loopback mock: one queue, send appends, recv pops (or times out). */
#define MOCK_MAX 4096
struct mock {
    struct sampi_dgram base;
    size_t len[MOCK_MAX];
    uint8_t data[MOCK_MAX][64];
    int head, tail, closed;
    int busy, refused; /* -EAGAIN `busy` times before each datagram is taken */
};

static int mock_send(struct sampi_dgram *dg, int peer, const void *buf, size_t len)
{
    struct mock *m = (struct mock *)dg;
    (void)peer;
    if (m->tail == MOCK_MAX || m->refused < m->busy) {
        m->refused++;
        return -EAGAIN;
    }
    m->refused = 0;
    memcpy(m->data[m->tail], buf, len);
    m->len[m->tail++] = len;
    return 0;
}

static ssize_t mock_recv(struct sampi_dgram *dg, void *buf, size_t cap, int *peer,
                         int64_t deadline_ns)
{
    struct mock *m = (struct mock *)dg;
    (void)deadline_ns;
    if (m->head == m->tail)
        return -ETIMEDOUT; /* nothing more will come */
    memcpy(buf, m->data[m->head], m->len[m->head] < cap ? m->len[m->head] : cap);
    *peer = 0;
    return (ssize_t)m->len[m->head++];
}

static void mock_close(struct sampi_dgram *dg)
{
    ((struct mock *)dg)->closed = 1;
}

static const struct sampi_dgram_ops mock_ops = {
    .name = "mock", .send = mock_send, .recv = mock_recv, .close = mock_close};

static struct mock mock;

static void mock_reset(void)
{
    memset(&mock, 0, sizeof(mock));
    mock.base.ops = &mock_ops;
    mock.base.size = 2;
    mock.base.mtu = 64;
}

START_TEST(fault_parse)
{
    struct sampi_fault_cfg c;
    char err[512];
    ck_assert_int_eq(sampi_fault_parse("", &c, err, sizeof(err)), 0);
    ck_assert(!sampi_fault_active(&c));
    ck_assert_int_eq(
        sampi_fault_parse("drop=0.25,late=0.5,delay=2ms,seed=9,max=1s", &c, err, sizeof(err)), 0);
    ck_assert(sampi_fault_active(&c));
    ck_assert_double_eq(c.drop, 0.25);
    ck_assert_double_eq(c.late, 0.5);
    ck_assert_int_eq(c.delay_ns, 2000000);
    ck_assert_int_eq(c.max_ns, 1000000000);
    ck_assert_uint_eq(c.seed, 9);
    ck_assert_int_eq(sampi_fault_parse("delay=15", &c, err, sizeof(err)), 0);
    ck_assert_int_eq(c.delay_ns, 15000);
    static const char *bad[] = {"drop=2",  "drop=-0.1", "late=x",   "delay=5parsecs",
                                "bogus=1", "drop",      "pareto=0", "pareto=-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(sampi_fault_parse(bad[i], &c, err, sizeof(err)), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "sampi_optireduce_fault"));
    }
    /* heavy tail: Lomax quantiles */
    sampi_fault_parse("late=1,delay=1ms,pareto=2,max=1s", &c, err, sizeof(err));
    ck_assert_int_eq(sampi_fault_delay_ns(&c, 1.0), 0);
    ck_assert_int_eq(sampi_fault_delay_ns(&c, 0.25), 1000000);
    ck_assert_int_eq(sampi_fault_delay_ns(&c, 1e-30), 1000000000);
}
END_TEST

/* A sender held back by a full queue retries the same datagram: the drop
 * is decided once per datagram, not once per attempt. */
START_TEST(fault_drop_once_per_datagram)
{
    struct sampi_fault_cfg c;
    char err[256];
    ck_assert_int_eq(sampi_fault_parse("drop=0.1,seed=4", &c, err, sizeof(err)), 0);
    mock_reset();
    mock.busy = 5;
    struct sampi_dgram *f;
    ck_assert_int_eq(sampi_dgram_fault_wrap(&mock.base, &c, &f), 0);
    uint8_t buf[64] = {7};
    const int sends = 3000;
    int attempts = 0;
    for (int i = 0; i < sends; i++) {
        int rc;
        while ((rc = f->ops->send(f, 1, buf, 40)) == -EAGAIN)
            attempts++;
        ck_assert_int_eq(rc, 0);
    }
    struct sampi_fault_counts k;
    ck_assert_int_eq(sampi_dgram_fault_counts(f, &k), 0);
    ck_assert_uint_eq(k.dropped + (uint64_t)mock.tail, (uint64_t)sends);
    ck_assert_int_gt(attempts, 4 * mock.tail); /* the queue did push back */
    /* 10% of 3000 is 300 (sd 16); one draw per attempt would drop ~47% */
    ck_assert_uint_ge(k.dropped, 220);
    ck_assert_uint_le(k.dropped, 380);
    f->ops->close(f);
}
END_TEST

static int run_drops(uint64_t seed, double p, int sends, uint64_t *dropped)
{
    struct sampi_fault_cfg c;
    char err[256], text[64];
    snprintf(text, sizeof(text), "drop=%g,seed=%llu", p, (unsigned long long)seed);
    sampi_fault_parse(text, &c, err, sizeof(err));
    mock_reset();
    struct sampi_dgram *f;
    ck_assert_int_eq(sampi_dgram_fault_wrap(&mock.base, &c, &f), 0);
    uint8_t buf[64] = {1, 2, 3};
    for (int i = 0; i < sends; i++)
        ck_assert_int_eq(f->ops->send(f, 1, buf, 40), 0);
    struct sampi_fault_counts k;
    ck_assert_int_eq(sampi_dgram_fault_counts(f, &k), 0);
    ck_assert_uint_eq(k.sent, (uint64_t)sends);
    ck_assert_uint_eq(k.dropped_bytes, 40 * k.dropped);
    ck_assert_uint_eq(k.dropped + (uint64_t)mock.tail, (uint64_t)sends);
    *dropped = k.dropped;
    int got = 0, peer;
    while (f->ops->recv(f, buf, sizeof(buf), &peer, 0) == 40)
        got++;
    f->ops->close(f);
    ck_assert(mock.closed);
    return got;
}

START_TEST(fault_drops_reproducible)
{
    uint64_t d1, d2, d3;
    int got = run_drops(7, 0.1, 4000, &d1);
    ck_assert_int_eq((uint64_t)got + d1, 4000);
    ck_assert_msg(d1 > 300 && d1 < 500, "dropped %llu of 4000 at p = 0.1", (unsigned long long)d1);
    run_drops(7, 0.1, 4000, &d2);
    ck_assert_uint_eq(d1, d2); /* same seed, same drops */
    run_drops(8, 0.1, 4000, &d3);
    ck_assert_uint_ne(d1, d3);
    run_drops(7, 0, 1000, &d3);
    ck_assert_uint_eq(d3, 0);
}
END_TEST

START_TEST(fault_delays)
{
    struct sampi_fault_cfg c;
    char err[256];
    sampi_fault_parse("late=1,delay=20ms,seed=3", &c, err, sizeof(err));
    mock_reset();
    struct sampi_dgram *f;
    ck_assert_int_eq(sampi_dgram_fault_wrap(&mock.base, &c, &f), 0);
    uint8_t buf[64] = {9};
    ck_assert_int_eq(f->ops->send(f, 1, buf, 33), 0);
    int peer;
    int64_t t0 = sampi_now_ns();
    /* a poll holds it back and reports nothing yet */
    ck_assert_int_eq(f->ops->recv(f, buf, sizeof(buf), &peer, 0), -ETIMEDOUT);
    /* a deadline before its release: still nothing */
    ck_assert_int_eq(f->ops->recv(f, buf, sizeof(buf), &peer, sampi_now_ns() + 1000000),
                     -ETIMEDOUT);
    /* a later deadline: delivered once due, not before */
    memset(buf, 0, sizeof(buf));
    ck_assert_int_eq(f->ops->recv(f, buf, sizeof(buf), &peer, t0 + 2000000000LL), 33);
    ck_assert_int_ge(sampi_now_ns() - t0, 20000000);
    ck_assert_int_eq(buf[0], 9);
    struct sampi_fault_counts k;
    sampi_dgram_fault_counts(f, &k);
    ck_assert_uint_eq(k.delayed, 1);
    /* bypassed: straight through */
    sampi_dgram_fault_bypass(f, 1);
    f->ops->send(f, 1, buf, 34);
    ck_assert_int_eq(f->ops->recv(f, buf, sizeof(buf), &peer, 0), 34);
    f->ops->close(f);
    ck_assert_int_eq(sampi_dgram_fault_counts(&mock.base, &k), -EINVAL);
}
END_TEST

Suite *sampi_optireduce_suite(void)
{
    return UNIT_SUITE(
        "optireduce",
        {.name = "pure",
         .timeout = 60,
         UNIT_TESTS(hdr_round_trip, hdr_rejects, fwht_matches_matrix, ht_round_trip,
                    ht_linear_and_spreads_loss, tar_plan, timeout_policy, fault_parse,
                    fault_drop_once_per_datagram, fault_drops_reproducible, fault_delays)});
}
