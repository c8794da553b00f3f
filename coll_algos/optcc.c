/*
 * optcc.c - `optcc`: OptCC allreduce around one bandwidth-degraded rank
 * ("Don't Let a Few Network Failures Slow the Entire AllReduce", Sec. 4), with the degraded rank z
 * and its slowdown l given by sampi_optcc_slowdown ("rank:l"; one degraded rank for now).
 *
 * What:     the schedule of optcc_schedule.c: k segments, each ring
 *           reduce-scattered among the p-1 healthy ranks, one section per
 *           healthy rank uploaded to z and downloaded from it, then ring
 *           allgathered, four segments staggered so that z's slow link and
 *           the healthy ring are busy at the same time (bubble filling for
 *           l < 2).  Executed in the per-window lockstep of optcc_schedule.h: in each
 *           of the (k+1)(p-1) steps a rank sends one message of up to two
 *           parts to one peer and receives one from one peer.  Each step is
 *           run as two executor rounds on every rank (round 2t: the first
 *           part each way, round 2t+1: the second, empty where a rank has
 *           none), so that round indices, and hence tags, agree everywhere.
 * Accepts:  p >= 3, count >= 4(p-1), any predefined commutative op,
 *           MPI_IN_PLACE, z inside the communicator.  Anything else (and no
 *           sampi_optcc_slowdown) is run as `ring` by the dispatcher and
 *           counted as a fallback (reason 'unsuited').
 * Cost:     (k+1)(p-1) alpha (times two messages for two-part steps) +
 *           F_k beta with F_k = l n (k+1)/k for l >= 2 and
 *           2(p-1) l n / ((p-2) l + 2) (k+l-1)/k for l < 2, against
 *           2(p-1) alpha + l 2(p-1)/p n beta for a ring through z.  k: the
 *           largest multiple of 4 in [4, 32] that keeps sections >= 8 KiB
 *           (our floor on the section size).
 * Stragglers: assumes z's link is l times slower in both directions and
 *           the others equal.  A wrong z or l costs time, never correctness.
 * Exactness: the builder reduces every element along one chain and finishes
 *           it at one place, then only copies it; a received partial is
 *           always the left operand (SAMPI_RECV_REDUCE), as in ring.
 *
 * Example: see the prologue of optcc_schedule.c (p = 3, z = 0, k = 4, l = 2).
 */
#include "algos.h"
#include "executor.h"
#include "optcc_schedule.h"
#include "sampi_internal.h"
#include "schedule.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SECTION_BYTES 8192
#define MAX_K             32

/* Per communicator: the schedule and this rank's rounds, reused while p, z,
 * l, k and n stay. */
struct optcc_cache {
    struct sampi_optcc_schedule sch;
    int built;
    struct sampi_round *rounds; /* 2 per step, this rank's */
    int nrounds;
};

int sampi_optcc_slowdown_parse(const char *text, int *rank, double *l, char *err, size_t errlen)
{
    char *end;
    *rank = -1;
    *l = 1.0;
    if (!text || !*text)
        return 0;
    long r = strtol(text, &end, 10);
    if (end == text || *end != ':' || r < 0 || r > (1L << 24) || text[0] == '-' || text[0] == '+')
        goto fail;
    const char *ls = end + 1;
    if (!*ls || *ls == '-' || *ls == '+' || *ls == ' ')
        goto fail;
    double v = strtod(ls, &end);
    if (end == ls || *end || sampi_optcc_quantise_l(v) < 0)
        goto fail;
    *rank = (int)r;
    *l = v;
    return 0;
fail:
    snprintf(err, errlen,
             "sampi_optcc_slowdown: '%s' is not 'rank:l' (one degraded rank, rank >= 0, l a "
             "decimal between 1 and %g, e.g. '3:2' or '0:1.5')",
             text, SAMPI_OPTCC_MAX_L);
    return -EINVAL;
}

int sampi_optcc_slowdown_validate(const char *text, char *err, size_t errlen)
{
    int rank;
    double l;
    return sampi_optcc_slowdown_parse(text, &rank, &l, err, errlen);
}

/* sampi_optcc_slowdown as parsed: 0 with *z (-1: empty) and *l, -1 when it
 * does not parse.  Parsed again only when the variable changed (its
 * generation): auto asks on every call. */
static int slowdown_setting(int *z, double *l)
{
    static _Thread_local long long generation = -1;
    static _Thread_local int rank, bad;
    static _Thread_local double factor;
    long long now = sampi_cvar_int(SAMPI_CVAR_OPTCC_SLOWDOWN);
    if (now != generation) {
        char buf[SAMPI_CVAR_STRING_MAX], err[256];
        sampi_cvar_text(SAMPI_CVAR_OPTCC_SLOWDOWN, buf, sizeof(buf));
        bad = sampi_optcc_slowdown_parse(buf, &rank, &factor, err, sizeof(err)) != 0;
        generation = now;
    }
    *z = rank;
    *l = factor;
    return bad ? -1 : 0;
}

int sampi_optcc_params(const struct sampi_coll_ctx *ctx, size_t count, size_t extent, int *rank,
                       double *l, int *k)
{
    int z, p = ctx->size;
    double lv;
    if (p < 3 || count < 4 * (size_t)(p - 1))
        return -1;
    /* the variable, when set, wins over detection */
    if (slowdown_setting(&z, &lv))
        return -1;
    if (z < 0 && (z = ctx->degraded) >= 0)
        lv = ctx->slowdown;
    if (z < 0 || z >= p)
        return -1;
    size_t per = (size_t)(p - 1) * MIN_SECTION_BYTES / (extent ? extent : 1);
    size_t kk = per ? count / per : MAX_K;
    kk = kk > MAX_K ? MAX_K : kk < 4 ? 4 : kk / 4 * 4;
    *rank = z;
    *l = lv;
    *k = (int)kk;
    return 0;
}

int sampi_optcc_suited(const struct sampi_coll_args *a)
{
    int z, k;
    double l;
    return sampi_optcc_params(a->ctx, a->count, a->dt.extent, &z, &l, &k) == 0;
}

static int cache_create(const struct sampi_coll_args *a, void **out)
{
    (void)a;
    *out = calloc(1, sizeof(struct optcc_cache));
    return *out ? 0 : -ENOMEM;
}

static void cache_destroy(void *state)
{
    struct optcc_cache *oc = state;
    if (oc->built)
        sampi_optcc_schedule_free(&oc->sch);
    free(oc->rounds);
    free(oc);
}

const struct sampi_algo_state_hooks sampi_optcc_state = {cache_create, cache_destroy};

static void set_part(struct sampi_xfer *x, const struct sampi_optcc_msg *m, int i)
{
    x->peer = i < m->nparts ? m->peer : -1;
    x->offset = i < m->nparts ? m->part[i].offset : 0;
    x->count = i < m->nparts ? m->part[i].count : 0;
}

static int overlaps(const struct sampi_xfer *a, const struct sampi_xfer *b)
{
    return a->peer >= 0 && b->peer >= 0 && a->offset < b->offset + b->count &&
           b->offset < a->offset + a->count;
}

/* Step t -> rounds 2t and 2t+1.  Round 2t+1's send must not read what round
 * 2t received: in the lockstep both parts leave with the step's initial data. */
static int build_rounds(const struct sampi_optcc_schedule *s, int me, struct sampi_round *rounds)
{
    for (int t = 0; t < s->nsteps; t++) {
        struct sampi_optcc_step st;
        sampi_optcc_schedule_step(s, me, t, &st);
        for (int i = 0; i < SAMPI_OPTCC_MAX_PARTS; i++) {
            struct sampi_round *rd = &rounds[2 * t + i];
            set_part(&rd->send, &st.send, i);
            set_part(&rd->recv, &st.recv, i);
            rd->action = i < st.recv.nparts ? st.recv.part[i].op : SAMPI_RECV_COPY;
        }
        if (overlaps(&rounds[2 * t + 1].send, &rounds[2 * t].recv))
            return -EPROTO; /* a builder bug, not a user error */
    }
    return 2 * s->nsteps;
}

static int cached_rounds(const struct sampi_coll_ctx *x, int z, double l, int k, size_t n,
                         struct optcc_cache **out)
{
    struct optcc_cache *oc = x->state;
    int l_q = sampi_optcc_quantise_l(l);
    if (!oc)
        return -ENOMEM; /* the state could not be made */
    if (oc->built && oc->sch.p == x->size && oc->sch.straggler == z && oc->sch.l_q == l_q &&
        oc->sch.k == k && oc->sch.n == n) {
        *out = oc;
        return 0;
    }
    if (oc->built) {
        sampi_optcc_schedule_free(&oc->sch);
        oc->built = 0;
    }
    int rc = sampi_optcc_schedule_build(&oc->sch, x->size, z, l, k, n, 1);
    if (rc)
        return rc;
    oc->built = 1;
    struct sampi_round *r = realloc(oc->rounds, 2 * (size_t)oc->sch.nsteps * sizeof(*r));
    if (!r) {
        sampi_optcc_schedule_free(&oc->sch);
        oc->built = 0;
        return -ENOMEM;
    }
    oc->rounds = r;
    rc = build_rounds(&oc->sch, x->rank, r);
    if (rc < 0) {
        sampi_optcc_schedule_free(&oc->sch);
        oc->built = 0;
        return rc;
    }
    oc->nrounds = rc;
    *out = oc;
    return 0;
}

int sampi_allreduce_optcc(const struct sampi_coll_args *a)
{
    struct optcc_cache *oc = NULL;
    int z, k;
    double l;
    int rc = -ENOTSUP; /* the dispatcher sends such calls to ring */
    if (sampi_optcc_params(a->ctx, a->count, a->dt.extent, &z, &l, &k))
        goto fail;
    rc = cached_rounds(a->ctx, z, l, k, a->count, &oc);
    if (rc)
        goto fail;
    return sampi_execute_rounds(a, oc->rounds, oc->nrounds);
fail:
    /* The others may be waiting for this rank's data: the dispatcher
     * revokes the communicator, which tells them. */
    return rc;
}
