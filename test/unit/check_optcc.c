/*
 * check_optcc.c - the OptCC schedule builder (coll_algos/optcc_schedule.c)
 * through a symbolic simulator of its own, since its steps carry several
 * parts with their own ops, which the round form of symsim.c cannot express.
 *
 * For p = 3..8, l in {1, 1.33, 1.5, 2, 3}, k in {4, 8, 12}, every rank as the
 * degraded one and counts that divide evenly and do not, the simulator runs
 * all ranks' step lists in lockstep (spec section 11.2 semantics: a transfer
 * carries what the sender holds at the start of the step) and checks that
 * sends and receives pair up, that no rank overwrites what it is sending,
 * that no reduction counts a rank twice, that copies carry final values only,
 * that each element is completed by exactly one reduction, and at the end
 * that every rank holds every element reduced over all p ranks.  It also
 * measures the degraded rank's link and the step-model time, which are
 * compared with the closed forms of spec sections 4.5 and 4.6.
 */
#include "optcc_schedule.h"
#include "suites.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*step_fn)(const struct sampi_optcc_schedule *s, int rank, int step,
                        struct sampi_optcc_step *out);

struct sim_result {
    int ok;
    char error[256];
    size_t z_out, z_in; /* elements on the degraded rank's link */
    size_t total;       /* elements moved by all messages */
    int nonempty_steps;
    double t_step; /* sum over steps of the slowest message, l per element on z's link */
};

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(res->error, sizeof(res->error), __VA_ARGS__);                                     \
        goto out;                                                                                  \
    } while (0)

static int same_msg(const struct sampi_optcc_msg *a, const struct sampi_optcc_msg *b)
{
    if (a->nparts != b->nparts)
        return 0;
    for (int i = 0; i < a->nparts; i++)
        if (a->part[i].offset != b->part[i].offset || a->part[i].count != b->part[i].count ||
            a->part[i].op != b->part[i].op)
            return 0;
    return 1;
}

static int in_msg(const struct sampi_optcc_msg *m, size_t e)
{
    for (int i = 0; i < m->nparts; i++)
        if (e >= m->part[i].offset && e - m->part[i].offset < m->part[i].count)
            return 1;
    return 0;
}

static void simulate(const struct sampi_optcc_schedule *s, step_fn fn, struct sim_result *res)
{
    int p = s->p;
    size_t n = s->n;
    uint64_t full = p == 64 ? ~(uint64_t)0 : ((uint64_t)1 << p) - 1;
    uint64_t *acc = malloc((size_t)p * n * sizeof(*acc));
    uint64_t *payload = malloc((size_t)p * n * sizeof(*payload));
    int *completed = calloc(n, sizeof(*completed));
    struct sampi_optcc_step *st = malloc((size_t)p * sizeof(*st));
    memset(res, 0, sizeof(*res));
    if (!acc || !payload || !completed || !st)
        FAIL("out of memory");
    for (int r = 0; r < p; r++)
        for (size_t e = 0; e < n; e++)
            acc[(size_t)r * n + e] = (uint64_t)1 << r;
    for (int step = 0; step < s->nsteps; step++) {
        double slowest = 0;
        for (int r = 0; r < p; r++)
            fn(s, r, step, &st[r]);
        for (int r = 0; r < p; r++) {
            const struct sampi_optcc_msg *m = &st[r].send;
            if (m->peer < 0) {
                if (m->nparts)
                    FAIL("step %d: rank %d has parts but no peer", step, r);
                continue;
            }
            if (m->peer == r || m->peer >= p || m->nparts < 1)
                FAIL("step %d: rank %d sends to %d with %d parts", step, r, m->peer, m->nparts);
            if (st[m->peer].recv.peer != r || !same_msg(m, &st[m->peer].recv))
                FAIL("step %d: send %d->%d does not match the receiver's list", step, r, m->peer);
            size_t elems = 0;
            for (int i = 0; i < m->nparts; i++) {
                const struct sampi_optcc_part *a = &m->part[i];
                if (!a->count || a->offset >= n || a->count > n - a->offset)
                    FAIL("step %d: %d->%d part [%zu,+%zu) outside [0,%zu)", step, r, m->peer,
                         a->offset, a->count, n);
                for (int j = 0; j < i; j++) {
                    const struct sampi_optcc_part *b = &m->part[j];
                    if (a->offset < b->offset + b->count && b->offset < a->offset + a->count)
                        FAIL("step %d: %d->%d parts overlap", step, r, m->peer);
                }
                /* snapshot: the payload is what r holds at the start of the step */
                memcpy(payload + (size_t)r * n + a->offset, acc + (size_t)r * n + a->offset,
                       a->count * sizeof(*acc));
                elems += a->count;
            }
            int slow = r == s->straggler || m->peer == s->straggler;
            double cost = (double)elems * (slow ? s->l : 1.0);
            slowest = cost > slowest ? cost : slowest;
            res->total += elems;
            if (r == s->straggler)
                res->z_out += elems;
            if (m->peer == s->straggler)
                res->z_in += elems;
        }
        for (int r = 0; r < p; r++) {
            const struct sampi_optcc_msg *m = &st[r].recv;
            if (m->peer >= 0 && st[m->peer].send.peer != r)
                FAIL("step %d: rank %d expects a message from %d that is not sent", step, r,
                     m->peer);
        }
        if (slowest > 0) {
            res->nonempty_steps++;
            res->t_step += slowest;
        }
        for (int r = 0; r < p; r++) {
            const struct sampi_optcc_msg *m = &st[r].recv;
            if (m->peer < 0)
                continue;
            for (int i = 0; i < m->nparts; i++) {
                const struct sampi_optcc_part *a = &m->part[i];
                for (size_t e = a->offset; e < a->offset + a->count; e++) {
                    uint64_t in = payload[(size_t)m->peer * n + e], *mine = &acc[(size_t)r * n + e];
                    if (a->op == SAMPI_RECV_COPY) {
                        if (in != full)
                            FAIL("step %d: %d->%d copies element %zu before it is final (%#llx)",
                                 step, m->peer, r, e, (unsigned long long)in);
                        /* the executor receives copies in place while sending */
                        if (*mine != full && in_msg(&st[r].send, e))
                            FAIL("step %d: rank %d receives a copy of element %zu over its send",
                                 step, r, e);
                        *mine = full;
                    } else {
                        if (in & *mine)
                            FAIL("step %d: %d->%d reduces element %zu twice (%#llx into %#llx)",
                                 step, m->peer, r, e, (unsigned long long)in,
                                 (unsigned long long)*mine);
                        *mine |= in;
                        if (*mine == full)
                            completed[e]++;
                    }
                }
            }
        }
    }
    for (size_t e = 0; e < n; e++) {
        for (int r = 0; r < p; r++)
            if (acc[(size_t)r * n + e] != full)
                FAIL("rank %d ends with element %zu incomplete (%#llx)", r, e,
                     (unsigned long long)acc[(size_t)r * n + e]);
        if (completed[e] != 1)
            FAIL("element %zu completed by %d reductions, not one", e, completed[e]);
    }
    res->ok = 1;
out:
    free(acc);
    free(payload);
    free(completed);
    free(st);
}

static const double ls[] = {1.0, 1.33, 1.5, 2.0, 3.0};
static const int ks[] = {4, 8, 12};

static size_t bubble_total(const struct sampi_optcc_schedule *s)
{
    size_t m = 0;
    for (int i = 0; i < s->k; i++)
        m += s->bub_cnt[i];
    return m;
}

/* F_k of spec 4.5 / 4.6 (paper, App C) in elements of healthy-link time. */
static double model_time(int p, double l, int k, double n, int bubble)
{
    if (l >= 2)
        return l * n * (k + 1) / k;
    if (!bubble)
        return 2 * n * (k + 1) / k;
    return 2 * (p - 1) * l * n / ((p - 2) * l + 2) * (k + l - 1) / k;
}

static void check_one(int p, int z, double l, int k, size_t n, int bubble)
{
    struct sampi_optcc_schedule s;
    struct sim_result res;
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, p, z, l, k, n, bubble), 0);
    simulate(&s, sampi_optcc_schedule_step, &res);
    ck_assert_msg(res.ok, "p=%d z=%d l=%g k=%d n=%zu bubble=%d: %s", p, z, s.l, k, n, bubble,
                  res.error);
    ck_assert_int_eq(s.nsteps, (k + 1) * (p - 1));
    ck_assert_int_eq(s.bubble, bubble && s.l < 2);

    /* traffic: every section crosses z's link once each way, every bubble
     * chunk comes in from p-1 ranks and goes out to p-1 ranks */
    size_t m = bubble_total(&s);
    ck_assert_uint_eq(res.z_out, n + (size_t)(p - 2) * m);
    ck_assert_uint_eq(res.z_in, n + (size_t)(p - 2) * m);
    ck_assert_uint_eq(res.total, 2 * (size_t)(p - 1) * n);
    if (!s.bubble) {
        ck_assert_uint_eq(m, 0);
    } else {
        /* spec 4.6: M = n (2-l) / ((p-2) l + 2), rounded per segment, so that
         * l * (z's traffic) = 2(p-1) l n / ((p-2) l + 2), the Theorem 6 term */
        double want = (double)n * (2 - s.l) / ((p - 2) * s.l + 2);
        ck_assert_msg(fabs((double)m - want) <= k / 2.0 + 1e-9,
                      "p=%d l=%g k=%d n=%zu: bubble total %zu, formula %g", p, s.l, k, n, m, want);
    }
    /* never faster than the Theorem 6 lower bound */
    double lb = fmax(2 * s.l * (p - 1) / (s.l * (p - 2) + 2), s.l) * (double)n;
    ck_assert_msg(res.t_step >= lb * (1 - 1e-12), "T=%g below the bound %g", res.t_step, lb);
    if (n >= 3 * (size_t)k * (size_t)(p - 1))
        ck_assert_int_eq(res.nonempty_steps, (k + 1) * (p - 1));
    /* with whole sizes (n = 2k(p-1)p) and l in {1, 2, 3} the step model
     * reproduces the paper's time exactly; without bubble filling the head
     * and tail bodies are lighter, so the static-grid time is only a bound */
    if (n == 2 * (size_t)k * (size_t)(p - 1) * (size_t)p) {
        double f = model_time(p, s.l, k, (double)n, s.bubble);
        if (!s.bubble && s.l < 2)
            ck_assert_msg(res.t_step <= f * (1 + 1e-12), "p=%d l=%g k=%d: T=%g above %g", p, s.l, k,
                          res.t_step, f);
        else if (s.l == 1 || s.l == 2 || s.l == 3)
            ck_assert_msg(fabs(res.t_step - f) <= 1e-9 * f, "p=%d l=%g k=%d: T=%g, F_k=%g", p, s.l,
                          k, res.t_step, f);
    }
    sampi_optcc_schedule_free(&s);
}

START_TEST(all_ranks_all_sizes)
{
    int p = _i;
    for (size_t li = 0; li < sizeof(ls) / sizeof(ls[0]); li++) {
        for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++) {
            int k = ks[ki];
            size_t kh = (size_t)k * (size_t)(p - 1);
            const size_t ns[] = {2 * kh * (size_t)p, 3 * kh + 7, kh - 1, 5, 1};
            for (int z = 0; z < p; z++)
                for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
                    check_one(p, z, ls[li], k, ns[ni], 1);
        }
    }
}
END_TEST

START_TEST(without_bubble_filling)
{
    int p = _i;
    const double lw[] = {1.0, 1.33, 1.5};
    for (size_t li = 0; li < sizeof(lw) / sizeof(lw[0]); li++)
        for (int z = 0; z < p; z += p - 1)
            for (int k = 4; k <= 8; k += 4) {
                size_t kh = (size_t)k * (size_t)(p - 1);
                check_one(p, z, lw[li], k, 2 * kh * (size_t)p, 0);
                check_one(p, z, lw[li], k, 3 * kh + 7, 0);
            }
}
END_TEST

/* A wider p and k than the main grid, on a few points. */
START_TEST(larger_p_and_k)
{
    check_one(16, 5, 1.14, 32, 100003, 1);
    check_one(13, 12, 2.5, 16, 4099, 1);
    check_one(11, 0, 1.8, 64, 7 * 64 * 10, 1);
}
END_TEST

START_TEST(quantised_l)
{
    ck_assert_int_eq(sampi_optcc_quantise_l(1.0), 64);
    ck_assert_int_eq(sampi_optcc_quantise_l(1.33), 85);
    ck_assert_int_eq(sampi_optcc_quantise_l(1.33 + 1e-9), 85);
    ck_assert_int_eq(sampi_optcc_quantise_l(2.0), 128);
    ck_assert_int_eq(sampi_optcc_quantise_l(0.99), -EINVAL);
    ck_assert_int_eq(sampi_optcc_quantise_l(NAN), -EINVAL);
    ck_assert_int_eq(sampi_optcc_quantise_l(INFINITY), -EINVAL);
    struct sampi_optcc_schedule s;
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 5, 1, 1.33, 8, 1000, 1), 0);
    ck_assert(s.l == 85.0 / 64);
    ck_assert_int_eq(s.l_q, 85);
    sampi_optcc_schedule_free(&s);
    /* just below 2 still fills bubbles, a value that rounds to 2 does not */
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 5, 1, 1.99, 8, 1000, 1), 0);
    ck_assert_int_eq(s.bubble, 1);
    sampi_optcc_schedule_free(&s);
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 5, 1, 1.999, 8, 1000, 1), 0);
    ck_assert_int_eq(s.bubble, 0);
    sampi_optcc_schedule_free(&s);
}
END_TEST

START_TEST(rejects_bad_input)
{
    struct sampi_optcc_schedule s;
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 2, 0, 2, 4, 100, 1), -EINVAL);
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 4, 4, 2, 4, 100, 1), -EINVAL);
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 4, -1, 2, 4, 100, 1), -EINVAL);
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 4, 0, 0.5, 4, 100, 1), -EINVAL);
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 4, 0, 2, 6, 100, 1), -EINVAL);
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 4, 0, 2, 0, 100, 1), -EINVAL);
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 4, 0, 2, 4, 0, 1), -EINVAL);
}
END_TEST

/* Segments are contiguous and in order, sections first and differing by at
 * most one element, the bubble chunk last: together they tile [0, n). */
START_TEST(layout_tiles_the_vector)
{
    const size_t ns[] = {1, 5, 97, 1000, 4099};
    for (int p = 3; p <= 8; p++)
        for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
            struct sampi_optcc_schedule s;
            ck_assert_int_eq(sampi_optcc_schedule_build(&s, p, 0, 1.5, 8, ns[ni], 1), 0);
            size_t pos = 0;
            for (int sg = 0; sg < s.k; sg++) {
                size_t lo = s.sec_cnt[(size_t)sg * (size_t)(p - 1)], hi = lo;
                for (int c = 0; c < p - 1; c++) {
                    size_t i = (size_t)sg * (size_t)(p - 1) + (size_t)c;
                    ck_assert_uint_eq(s.sec_off[i], pos);
                    pos += s.sec_cnt[i];
                    lo = s.sec_cnt[i] < lo ? s.sec_cnt[i] : lo;
                    hi = s.sec_cnt[i] > hi ? s.sec_cnt[i] : hi;
                }
                ck_assert_uint_le(hi - lo, 1);
                ck_assert_uint_eq(s.bub_off[sg], pos);
                pos += s.bub_cnt[sg];
            }
            ck_assert_uint_eq(pos, ns[ni]);
            sampi_optcc_schedule_free(&s);
        }
}
END_TEST

/* The simulator must see the mistakes it is there to catch.  A corrupted
 * schedule alters both sides of one transfer alike, so pairing still holds. */
static int corrupt_step, corrupt_kind;

static void corrupt_msg(struct sampi_optcc_msg *m)
{
    if (!m->nparts)
        return;
    if (corrupt_kind == 0) /* a final value reduced again */
        m->part[0].op = SAMPI_RECV_REDUCE;
    else if (corrupt_kind == 1) /* a partial copied as if final */
        m->part[0].op = SAMPI_RECV_COPY;
    else /* a part lost */
        m->part[0] = m->part[--m->nparts];
    if (!m->nparts)
        m->peer = -1;
}

static void corrupted_step(const struct sampi_optcc_schedule *s, int rank, int step,
                           struct sampi_optcc_step *out)
{
    sampi_optcc_schedule_step(s, rank, step, out);
    if (step != corrupt_step)
        return;
    /* the transfer from the lowest healthy rank that sends in this step */
    int src = s->straggler == 0 ? 1 : 0, dst;
    struct sampi_optcc_step tmp;
    sampi_optcc_schedule_step(s, src, step, &tmp);
    dst = tmp.send.peer;
    if (rank == src)
        corrupt_msg(&out->send);
    if (rank == dst)
        corrupt_msg(&out->recv);
}

START_TEST(simulator_catches_errors)
{
    struct sampi_optcc_schedule s;
    struct sim_result res;
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 5, 2, 1.5, 8, 1000, 1), 0);
    /* the last body only copies; body 0 only reduces */
    const int cases[][2] = {{s.nsteps - 1, 0}, {0, 1}, {0, 2}, {s.nsteps - 1, 2}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        corrupt_step = cases[i][0];
        corrupt_kind = cases[i][1];
        simulate(&s, corrupted_step, &res);
        ck_assert_msg(!res.ok, "corruption %zu not detected", i);
    }
    sampi_optcc_schedule_free(&s);
}
END_TEST

/* The dump of the prologue's example, p = 3, z = 0, l = 2, k = 4, n = 8. */
START_TEST(dump_format)
{
    struct sampi_optcc_schedule s;
    char *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 3, 0, 2, 4, 8, 1), 0);
    FILE *f = open_memstream(&buf, &len);
    ck_assert(f != NULL);
    ck_assert_int_eq(sampi_optcc_schedule_dump(&s, f), 0);
    fclose(f);
    const char *head = "optcc p=3 straggler=0 l=2 k=4 n=8\n"
                       "0 0 2 3 1 reduce\n"
                       "0 2 1 1 1 reduce\n"
                       "1 0 1 2 1 reduce\n"
                       "1 1 2 0 1 reduce\n"
                       "2 0 2 7 1 reduce\n"
                       "2 1 0 1 1 reduce\n"
                       "2 2 1 3 1 reduce\n"
                       "2 2 1 5 1 reduce\n";
    ck_assert_msg(strncmp(buf, head, strlen(head)) == 0, "dump starts:\n%.300s", buf);
    ck_assert_msg(strstr(buf, "\n9 2 0 6 1 copy\n") != NULL, "last upload missing");
    size_t lines = 0;
    for (char *c = buf; *c; c++)
        lines += *c == '\n';
    ck_assert_uint_eq(lines, 1 + 2 * 2 * 8); /* header + each element 2(p-1) times */
    free(buf);
    sampi_optcc_schedule_free(&s);

    /* bubble=0 tells the checker that filling was turned off */
    ck_assert_int_eq(sampi_optcc_schedule_build(&s, 4, 3, 1.5, 4, 100, 0), 0);
    f = open_memstream(&buf, &len);
    ck_assert_int_eq(sampi_optcc_schedule_dump(&s, f), 0);
    fclose(f);
    const char *hdr = "optcc p=4 straggler=3 l=1.5 k=4 n=100 bubble=0\n";
    ck_assert_msg(strncmp(buf, hdr, strlen(hdr)) == 0, "%.60s", buf);
    free(buf);
    sampi_optcc_schedule_free(&s);
}
END_TEST

Suite *sampi_optcc_suite(void)
{
    return UNIT_SUITE("optcc",
                      {.name = "symbolic",
                       .timeout = 120,
                       UNIT_LOOPS({all_ranks_all_sizes, 3, 9}, {without_bubble_filling, 3, 9}),
                       UNIT_TESTS(larger_p_and_k, quantised_l, rejects_bad_input,
                                  layout_tiles_the_vector, simulator_catches_errors, dump_format)});
}
