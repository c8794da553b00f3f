/*
 * symsim.c - the symbolic schedule simulator (see symsim.h).
 */
#include "symsim.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS (SYMSIM_MAX_P / 64)

struct elem {
    uint64_t ranks[WORDS]; /* whose inputs the value contains, a bit per rank */
    uint32_t origin;       /* where it was last computed: 1 + rank * 65536 + round, or 0 (input) */
};

static int shares_a_rank(const struct elem *a, const struct elem *b)
{
    for (int w = 0; w < WORDS; w++)
        if (a->ranks[w] & b->ranks[w])
            return 1;
    return 0;
}

/* How many ranks' inputs e holds. */
static int ranks_in(const struct elem *e)
{
    int n = 0;
    for (int w = 0; w < WORDS; w++)
        n += __builtin_popcountll(e->ranks[w]);
    return n;
}

static void fail(struct symsim_result *res, const char *fmt, ...)
{
    if (!res->ok)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->error, sizeof(res->error), fmt, ap);
    va_end(ap);
    res->ok = 0;
}

static int overlaps(const struct sampi_xfer *a, const struct sampi_xfer *b)
{
    return a->offset < b->offset + b->count && b->offset < a->offset + a->count;
}

void symsim_run(symsim_builder build, int max_rounds, int p, size_t count,
                struct symsim_result *res)
{
    memset(res, 0, sizeof(*res));
    res->ok = 1;
    if (p < 1 || p > SYMSIM_MAX_P) {
        fail(res, "p = %d is outside 1..%d", p, SYMSIM_MAX_P);
        return;
    }
    struct sampi_round *rounds = calloc((size_t)p * (size_t)max_rounds, sizeof(*rounds));
    struct elem *vec = calloc((size_t)p * (count ? count : 1), sizeof(*vec));
    struct elem *msg = calloc((size_t)p * (count ? count : 1), sizeof(*msg));
    size_t *sent = calloc((size_t)p, sizeof(*sent));
    int n = -1;
    if (!rounds || !vec || !msg || !sent) {
        fail(res, "out of memory");
        goto out;
    }
    for (int r = 0; r < p; r++) {
        int nr = build(p, r, count, rounds + (size_t)r * max_rounds, max_rounds);
        if (nr < 0) {
            fail(res, "builder failed for rank %d: %d", r, nr);
            goto out;
        }
        if (n >= 0 && nr != n) {
            fail(res, "rank %d has %d rounds, rank 0 has %d", r, nr, n);
            goto out;
        }
        n = nr;
        for (size_t i = 0; i < count; i++)
            vec[(size_t)r * count + i].ranks[r / 64] = 1ULL << (r % 64); /* calloc'd */
    }
    res->nrounds = n;
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fail(res, __VA_ARGS__);                                                                    \
        goto out;                                                                                  \
    } while (0)
#define RD(r, k) (&rounds[(size_t)(r)*max_rounds + (k)])
    for (int k = 0; k < n && res->ok; k++) {
        /* pairing and ranges */
        for (int r = 0; r < p; r++) {
            const struct sampi_round *rd = RD(r, k);
            if (rd->send.peer >= 0) {
                if (rd->send.peer >= p || rd->send.peer == r)
                    FAIL("round %d rank %d sends to %d", k, r, rd->send.peer);
                if (rd->send.offset + rd->send.count > count || rd->send.count == 0)
                    FAIL("round %d rank %d sends a bad range", k, r);
                const struct sampi_round *pr = RD(rd->send.peer, k);
                if (pr->recv.peer != r || pr->recv.count != rd->send.count)
                    FAIL("round %d: send %d->%d (%zu) unmatched", k, r, rd->send.peer,
                         rd->send.count);
                sent[r] += rd->send.count;
            }
            if (rd->recv.peer >= 0) {
                if (rd->recv.peer >= p || rd->recv.offset + rd->recv.count > count)
                    FAIL("round %d rank %d receives a bad range", k, r);
                if (RD(rd->recv.peer, k)->send.peer != r)
                    FAIL("round %d: receive %d<-%d unmatched", k, r, rd->recv.peer);
                /* a copy lands in the vector as it arrives; a reduction waits in
                 * scratch until the send of its range has completed (executor.c) */
                if (rd->action == SAMPI_RECV_COPY && rd->send.peer >= 0 &&
                    overlaps(&rd->send, &rd->recv))
                    FAIL("round %d rank %d copies over what it sends", k, r);
            }
        }
        /* all sends read the vectors as they were before the round */
        for (int r = 0; r < p; r++) {
            const struct sampi_round *rd = RD(r, k);
            if (rd->send.peer >= 0)
                memcpy(&msg[(size_t)r * count], &vec[(size_t)r * count + rd->send.offset],
                       rd->send.count * sizeof(*msg));
        }
        for (int r = 0; r < p; r++) {
            const struct sampi_round *rd = RD(r, k);
            if (rd->recv.peer < 0)
                continue;
            const struct elem *in = &msg[(size_t)rd->recv.peer * count];
            struct elem *dst = &vec[(size_t)r * count + rd->recv.offset];
            /* Two ranks that swap a range and reduce it at both ends, one
             * with REDUCE (received OP own) and the other with REDUCE_SWAP
             * (own OP received), apply the operands in the same order: the
             * same bits at both, as if computed at one place. */
            const struct sampi_round *pr = RD(rd->recv.peer, k);
            int twin = rd->action != SAMPI_RECV_COPY && pr->recv.peer == r &&
                       pr->action != SAMPI_RECV_COPY && pr->action != rd->action &&
                       pr->recv.offset == rd->recv.offset && pr->recv.count == rd->recv.count;
            int at = twin && rd->recv.peer < r ? rd->recv.peer : r;
            for (size_t i = 0; i < rd->recv.count; i++) {
                if (rd->action == SAMPI_RECV_COPY) {
                    dst[i] = in[i];
                    continue;
                }
                if (shares_a_rank(&dst[i], &in[i]))
                    FAIL("round %d rank %d reduces rank inputs twice at element %zu", k, r,
                         rd->recv.offset + i);
                for (int w = 0; w < WORDS; w++)
                    dst[i].ranks[w] |= in[i].ranks[w];
                dst[i].origin = 1u + (uint32_t)at * 65536u + (uint32_t)k;
            }
        }
    }
    for (size_t i = 0; i < count && res->ok; i++)
        for (int r = 0; r < p; r++) {
            const struct elem *e = &vec[(size_t)r * count + i];
            if (ranks_in(e) != p) /* each bit only once: no rank is counted twice */
                FAIL("rank %d element %zu holds the inputs of %d ranks, not all %d", r, i,
                     ranks_in(e), p);
            if (e->origin != vec[i].origin)
                FAIL("element %zu computed at different places on ranks 0 and %d", i, r);
        }
    for (int r = 0; r < p; r++)
        res->max_sent_elems = sent[r] > res->max_sent_elems ? sent[r] : res->max_sent_elems;
out:
#undef RD
#undef FAIL
    free(rounds);
    free(vec);
    free(msg);
    free(sent);
}
