/*
 * stragglar.c - `stragglar`: StragglAR allreduce with a known straggler S
 * ("Efficient AllReduce with Stragglers", Sec. 3.1).
 *
 * What:     the vector is cut into n-1 chunks.  Phase 1: the n-1 ranks other
 *           than S ring-reduce-scatter those chunks among themselves, so
 *           chunk k ends complete over everyone but S at owner[k]; S is not
 *           needed, so this runs while S is still late.  Phase 2: the
 *           matching schedule of stragglar_schedule.c: in round k S and
 *           owner[k] exchange chunk k and both reduce it (the only place S's
 *           data enters), every other transfer copies a complete chunk.
 * Accepts:  n >= 3 ranks, count >= n-1, any predefined commutative op,
 *           MPI_IN_PLACE, a straggler rank from sampi_stragglar_rank.
 *           Anything else is sent to `ring` by the dispatcher and counted as
 *           a fallback (sampi_stragglar_straggler says which calls).
 * Cost:     with R = n + log2(n) - 2 rounds (powers of two; at most 2 more
 *           for other n) and s bytes:
 *           phase 1: (n-2) alpha + (n-2)/(n-1) s beta + (n-2)/(n-1) s gamma,
 *           phase 2: R alpha + R/(n-1) s beta + s/(n-1) gamma.
 *           Measured from S's arrival only phase 2 counts when S is late by
 *           at least phase 1: about s beta for large n against ring's
 *           2(n-1)/n s beta.
 * Stragglers: assumes S is the last to arrive.  Any other arrival order is
 *           still exact, only slower: then phase 1 sits on the critical path
 *           (at n = 3 stragglar never beats ring, which is why `auto` does
 *           not pick it).
 * Exactness: phase 1 reduces each partial chunk along one chain.  In the
 *           exchange of round k both ends compute D OP P, with D = S's data
 *           as the left operand and P = the partial, so the two results are
 *           the same bits even for order-sensitive cases (NaN payloads,
 *           MIN/MAX of NaN): the partner reduces with SAMPI_RECV_REDUCE
 *           (received D on the left), S with SAMPI_RECV_REDUCE_SWAP (its own
 *           D on the left).  Everything after that is a copy.
 *
 * Example, n = 4, S = 3, count 6: chunks c0 = [0,2) c1 = [2,4) c2 = [4,6).
 *   phase 1, 2 rounds, ring 0 -> 1 -> 2 -> 0 over ranks 0 1 2: rank k ends
 *           with c_k reduced over ranks 0..2 (owner[k] = k here).
 *   phase 2, 4 rounds: round 0: 0 <-> 3 exchange c0, both get c0 complete;
 *           round 1: 1 <-> 3 exchange c1 while 0 copies c0 to 2; rounds 2-3
 *           finish the exchanges and spread the remaining chunks by copies.
 *   From S's arrival: 4 rounds of 2 elements, where ring needs 6 of 1.5.
 */
#include "algos.h"
#include "executor.h"
#include "sampi_internal.h"
#include "schedule.h"
#include "stragglar_schedule.h"

#include <errno.h>
#include <stdlib.h>

const char *const sampi_stragglar_mode_names[] = {"predict", "fixed", "off", NULL};

int sampi_stragglar_straggler(const struct sampi_coll_ctx *ctx, size_t count)
{
    int n = ctx->size, s = ctx->straggler;
    if (n < 3 || s < 0 || s >= n || count < (size_t)(n - 1))
        return -1;
    /* the builder solves a matching per round for other n; past this size
     * that costs seconds, and it refuses */
    if (n > SAMPI_STRAGGLAR_MAX_N || ((n & (n - 1)) != 0 && n > SAMPI_STRAGGLAR_MAX_MATCHING_N))
        return -1;
    return s;
}

int sampi_stragglar_suited(const struct sampi_coll_args *a)
{
    return sampi_stragglar_straggler(a->ctx, a->count) >= 0;
}

/* Per communicator: the last schedule built, reused while n and the
 * straggler stay. */
static int schedule_create(const struct sampi_coll_args *a, void **out)
{
    (void)a;
    *out = calloc(1, sizeof(struct sampi_stragglar_schedule));
    return *out ? 0 : -ENOMEM;
}

static void schedule_destroy(void *state)
{
    sampi_stragglar_schedule_free(state);
    free(state);
}

const struct sampi_algo_state_hooks sampi_stragglar_state = {schedule_create, schedule_destroy};

/* The schedule for (n, s), built once per communicator and straggler: a
 * matching per round is too dear to redo on every call. */
static int cached_schedule(const struct sampi_coll_ctx *x, int s,
                           const struct sampi_stragglar_schedule **out)
{
    struct sampi_stragglar_schedule *sch = x->state;
    if (!sch)
        return -ENOMEM; /* the state could not be made */
    if (sch->n == x->size && sch->straggler == s) {
        *out = sch;
        return 0;
    }
    sampi_stragglar_schedule_free(sch);
    int rc = sampi_stragglar_schedule(x->size, s, sch);
    if (rc)
        return rc; /* sch was left empty by the builder: the next call retries */
    *out = sch;
    return 0;
}

static void set_xfer(struct sampi_xfer *x, size_t count, int nchunks, int chunk, int peer)
{
    x->peer = chunk >= 0 ? peer : -1;
    x->offset = x->count = 0;
    if (chunk >= 0)
        sampi_block_range(count, nchunks, chunk, &x->offset, &x->count);
}

int sampi_stragglar_rounds(const struct sampi_stragglar_schedule *sch, int me, size_t count,
                           struct sampi_round *rounds)
{
    const int n = sch->n, s = sch->straggler, m = n - 1;
    int nr = 0, rc = 0;
    int *chunk_of = malloc((size_t)n * sizeof(int)); /* real rank -> chunk it owns */
    if (!chunk_of)
        return -ENOMEM;
    for (int k = 0; k < m; k++)
        chunk_of[sch->owner[k]] = k;

    /* Phase 1: a ring over the non-stragglers in rank order (virtual v skips
     * S).  Ring block b ends complete at v = b-1; labelling block b with the
     * chunk of v = b-1 puts chunk k at owner[k], where the schedule wants it. */
    int v = me < s ? me : me - 1;
#define REAL(x)     ((x) < s ? (x) : (x) + 1)
#define CHUNK_AT(x) chunk_of[REAL(((x) % m + m) % m)]
    for (int t = 0; t < m - 1; t++, nr++) {
        struct sampi_round *rd = &rounds[nr];
        rd->action = SAMPI_RECV_REDUCE;
        if (me == s) {
            set_xfer(&rd->send, count, m, -1, -1);
            set_xfer(&rd->recv, count, m, -1, -1);
            continue;
        }
        set_xfer(&rd->send, count, m, CHUNK_AT(v - t - 1), REAL((v + 1) % m));
        set_xfer(&rd->recv, count, m, CHUNK_AT(v - t - 2), REAL((v - 1 + m) % m));
    }
#undef CHUNK_AT
#undef REAL

    /* Phase 2: the matching schedule. */
    for (int r = 0; r < sch->nrounds; r++, nr++) {
        const struct sampi_stragglar_step *st = sampi_stragglar_step(sch, r, me);
        struct sampi_round *rd = &rounds[nr];
        int idle = st->peer < 0;
        set_xfer(&rd->send, count, m, idle ? -1 : st->send_chunk, st->peer);
        set_xfer(&rd->recv, count, m, idle ? -1 : st->recv_chunk, st->peer);
        rd->action = SAMPI_RECV_COPY;
        if (idle || st->recv_chunk < 0 || st->op != SAMPI_STRAGGLAR_REDUCE)
            continue;
        /* S's data is the left operand at both ends of the exchange. */
        if (me == s) {
            rd->action = SAMPI_RECV_REDUCE_SWAP;
        } else if (st->peer == s) {
            rd->action = SAMPI_RECV_REDUCE;
        } else {
            rc = -EPROTO; /* the builder reduces only with S: a bug, not a user error */
            goto fail;
        }
    }
    rc = nr;
fail:
    free(chunk_of);
    return rc;
}

int sampi_allreduce_stragglar(const struct sampi_coll_args *a)
{
    const struct sampi_coll_ctx *x = a->ctx;
    struct sampi_round *rounds = NULL;
    const struct sampi_stragglar_schedule *sch = NULL;
    int s = sampi_stragglar_straggler(x, a->count);
    int rc = -ENOTSUP; /* the dispatcher sends such calls to ring */
    if (s < 0)
        goto fail;
    rc = cached_schedule(x, s, &sch);
    if (rc)
        goto fail;
    rc = -ENOMEM;
    rounds = malloc((size_t)(x->size - 2 + sch->nrounds) * sizeof(*rounds));
    if (!rounds)
        goto fail;
    int nr = sampi_stragglar_rounds(sch, x->rank, a->count, rounds);
    if (nr < 0) {
        rc = nr;
        goto fail;
    }
    rc = sampi_execute_rounds(a, rounds, nr);
    free(rounds);
    return rc; /* the executor has already recorded its own errors */
fail:
    /* The others may be waiting for this rank's data: the dispatcher
     * revokes the communicator, which tells them. */
    free(rounds);
    return rc;
}
