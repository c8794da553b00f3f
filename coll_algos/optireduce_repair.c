/*
 * optireduce_repair.c - exact repair of optireduce's stage-2 losses (the
 * consistency mode `repair`, SAMPI's own, over MPI).
 *
 * What:     After stage 2 every rank knows which packets of each owner's
 *           shard it missed.  It sends each owner the list of its missing
 *           packets as maximal runs {first packet, count}; the owner checks
 *           every run against its shard and sends those floats back; the
 *           rank writes them where they belong.  Afterwards every rank holds
 *           the owners' bits everywhere, so the ranks agree exactly, and
 *           only what was lost has moved.  optireduce's consistency mode
 *           `refetch` runs it after every call.
 * Steps:    (nonblocking collectives on SAMPI's private communicator, each
 *           waited for through the caller's waiter)
 *           1. allreduce (MAX) of {rounds needed, error, most runs and
 *              most floats asked of one owner in one round}: every rank takes
 *              the same branch, and a loss-free call ends here.
 *           per round (one unless a rank misses > INT_MAX / (2 (p-1)) floats):
 *           2. alltoall of {request ints, floats expected, error} per
 *              pair (the error of sizing the owner's buffers after step 1
 *              travels here, so all ranks still agree before data moves);
 *           3. alltoallv of the requests to the owners;
 *           4. alltoallv of a status float plus the data back.
 * Cost:     loss-free: one allreduce of 4 words, about 2 log2(p) alpha.
 *           With m_i floats and r_i runs missed by rank i (r_i <= m_i):
 *           allreduce + alltoall + 2 alltoallv, about 2 log2(p) alpha +
 *           3 (p-1) alpha plus beta times 8 r_i bytes out and 4 m_i bytes in
 *           at rank i, and 4 sum_i m_i(s) bytes out at owner s (m_i(s): what
 *           rank i missed of shard s).  An allgatherv of the shards would move
 *           (p-1)/p of the whole vector to every rank instead.  Local work: two scans of
 *           the bitmap (one bit per packet, whole received bytes skipped).
 * Agreement: shard_off, shard_len and per_pkt are the same on every rank;
 *           the number of rounds and every error before the data exchange
 *           are agreed through steps 1 and 2.  An owner refusing a malformed
 *           request (only a bug can build one) marks its answer with a
 *           non-zero status float: that requester returns -EINVAL and keeps
 *           its old floats, the others are unaffected.
 *
 * Example, p = 3, per_pkt 2, shards of 5, 5, 4 floats (3, 3 and 2 packets).
 *   Rank 2 missed packets 0 and 2 of shard 0 and nothing of shard 1: it asks
 *   rank 0 for runs {0,1} {2,1} (floats [0,2) and [4,5)), rank 1 for nothing.
 *   Rank 0 missed packet 1 of shard 2: run {1,1} to rank 2 (floats [2,4)).
 *   Step 1 gives rounds 1 everywhere; rank 0 sends 1 + 3 floats to rank 2
 *   (status 0, then the 3 floats), rank 2 sends 1 + 2 floats to rank 0.
 */
#include "optireduce_repair.h"
#include "wait.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

uint64_t sampi_opti_repair_npkts(size_t len, uint32_t per_pkt)
{
    return per_pkt ? ((uint64_t)len + per_pkt - 1) / per_pkt : 0;
}

int sampi_opti_repair_map_check(const struct sampi_opti_repair_map *m)
{
    if (!m || m->n < 1 || m->me < 0 || m->me >= m->n || m->per_pkt == 0 || !m->shard_len ||
        !m->seen_base)
        return -EINVAL;
    size_t bits = m->seen_base[m->n];
    if (bits && !m->seen)
        return -EINVAL;
    for (int s = 0; s < m->n; s++) {
        if (s == m->me)
            continue;
        uint64_t np = sampi_opti_repair_npkts(m->shard_len[s], m->per_pkt);
        if (np > UINT32_MAX)
            return -E2BIG;
        if (m->seen_base[s] > bits || np > bits - m->seen_base[s])
            return -EINVAL;
    }
    return 0;
}

static int bit_set(const uint8_t *map, size_t b)
{
    return (map[b / 8] >> (b % 8)) & 1;
}

int sampi_opti_repair_round(const struct sampi_opti_repair_map *m,
                            struct sampi_opti_repair_cursor *cur, size_t budget, size_t *nruns,
                            size_t *nfloats, struct sampi_opti_run *out, size_t cap)
{
    int rc = sampi_opti_repair_map_check(m);
    if (rc)
        return rc;
    if (!cur || !nruns || !nfloats || budget < m->per_pkt || cur->owner < 0 || cur->owner > m->n)
        return -EINVAL;
    for (int s = 0; s < m->n; s++)
        nruns[s] = nfloats[s] = 0;
    const uint32_t pp = m->per_pkt;
    size_t used = 0, nout = 0;
    int s = cur->owner;
    uint64_t k = cur->pkt;
    for (; s < m->n; s++, k = 0) {
        if (s == m->me)
            continue;
        size_t len = m->shard_len[s], base = m->seen_base[s];
        uint64_t np = sampi_opti_repair_npkts(len, pp), last_end = UINT64_MAX;
        for (; k < np; k++) {
            size_t b = base + (size_t)k;
            /* a whole byte received: the common case at low loss */
            if (b % 8 == 0 && k + 8 <= np && m->seen[b / 8] == 0xff) {
                k += 7;
                continue;
            }
            if (bit_set(m->seen, b))
                continue;
            size_t pf = k + 1 < np ? pp : len - (size_t)k * pp;
            if (pf > budget - used)
                goto full;
            used += pf;
            nfloats[s] += pf;
            if (last_end == k) {
                if (out)
                    out[nout - 1].count++;
            } else {
                if (out) {
                    if (nout == cap)
                        return -ENOBUFS;
                    out[nout] = (struct sampi_opti_run){(uint32_t)k, 1};
                }
                nout++;
                nruns[s]++;
            }
            last_end = k + 1;
        }
    }
    cur->owner = m->n;
    cur->pkt = 0;
    return 0;
full:
    cur->owner = s;
    cur->pkt = (uint32_t)k;
    return 0;
}

int sampi_opti_repair_plan(const struct sampi_opti_repair_map *m, size_t budget, size_t *nruns,
                           size_t *nfloats, struct sampi_opti_repair_plan *p)
{
    if (!p)
        return -EINVAL;
    memset(p, 0, sizeof *p);
    struct sampi_opti_repair_cursor cur = {0, 0};
    do {
        int rc = sampi_opti_repair_round(m, &cur, budget, nruns, nfloats, NULL, 0);
        if (rc)
            return rc;
        size_t runs = 0, floats = 0;
        for (int s = 0; s < m->n; s++) {
            runs += nruns[s];
            floats += nfloats[s];
            p->owner_runs = nruns[s] > p->owner_runs ? nruns[s] : p->owner_runs;
            p->owner_floats = nfloats[s] > p->owner_floats ? nfloats[s] : p->owner_floats;
        }
        if (!floats)
            break;
        p->rounds++;
        p->floats += floats;
        p->round_runs = runs > p->round_runs ? runs : p->round_runs;
        p->round_floats = floats > p->round_floats ? floats : p->round_floats;
    } while (cur.owner < m->n);
    for (int s = 0; s < m->n; s++) {
        uint64_t np = s == m->me ? 0 : sampi_opti_repair_npkts(m->shard_len[s], m->per_pkt);
        for (uint64_t k = 0; k < np; k++)
            p->packets += !bit_set(m->seen, m->seen_base[s] + (size_t)k);
    }
    return 0;
}

int sampi_opti_repair_serve(const struct sampi_opti_run *runs, size_t nruns, size_t len,
                            uint32_t per_pkt, struct sampi_opti_span *spans, size_t *nfloats)
{
    if (!nfloats)
        return -EINVAL;
    *nfloats = 0;
    if (!per_pkt || (nruns && !runs))
        return -EINVAL;
    uint64_t np = sampi_opti_repair_npkts(len, per_pkt), next = 0;
    size_t total = 0;
    for (size_t i = 0; i < nruns; i++) {
        uint64_t f = runs[i].first, c = runs[i].count;
        if (c == 0 || f < next || f >= np || c > np - f)
            return -EINVAL;
        uint64_t off = f * per_pkt, end = (f + c) * per_pkt;
        end = end < len ? end : len;
        if (spans)
            spans[i] = (struct sampi_opti_span){(size_t)off, (size_t)(end - off)};
        total += (size_t)(end - off);
        next = f + c + 1; /* maximal runs are never adjacent */
    }
    *nfloats = total;
    return 0;
}

/* ------------------------------------------------------------ the collective */

/* The per-round budget (floats per requester) that keeps every int count and
 * displacement of the round within INT_MAX: an owner sends at most
 * (p-1) (budget + 1) floats and receives at most 2 (p-1) budget ints. */
static size_t default_budget(int n)
{
    return n > 1 ? (size_t)INT_MAX / (2 * (size_t)(n - 1)) : (size_t)INT_MAX / 2;
}

/* Buffers of one call; freed together. */
struct bufs {
    size_t *nruns, *nfloats;
    int *cnt, *rcnt;              /* alltoall: 3 ints per peer */
    int *sc, *sd, *rc, *rd;       /* alltoallv counts and displacements */
    struct sampi_opti_run *mine;  /* this round's requests */
    float *in;                    /* this round's answers: status + floats */
    struct sampi_opti_run *req;   /* requests received (owner side) */
    float *outd;                  /* answers to send (owner side) */
    struct sampi_opti_span *span; /* one request's spans */
};

static void free_bufs(struct bufs *b)
{
    void *all[] = {b->nruns, b->nfloats, b->cnt, b->rcnt, b->sc,   b->sd,  b->rc,
                   b->rd,    b->mine,    b->in,  b->req,  b->outd, b->span};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

/* Prefix sums of n counts into displacements (all sums fit in int by the
 * budget). */
static void displ(int n, const int *cnt, int *dis)
{
    int d = 0;
    for (int i = 0; i < n; i++) {
        dis[i] = d;
        d += cnt[i];
    }
}

/* Owner side of one round: check each requester's runs and pack the answer
 * (status float, then the floats) into b->outd; b->sc/b->sd are the send
 * counts of step 4.  A refused request gets status 1 and zeros. */
static void answer(int n, int me, const float *shard, size_t len, uint32_t per_pkt, struct bufs *b)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        int nints = b->rcnt[3 * i], expect = b->rcnt[3 * i + 1];
        b->sc[i] = 0;
        if (i == me || nints == 0)
            continue;
        size_t nf = 0;
        /* rd counts uint32 words: two per run */
        int ok = !sampi_opti_repair_serve(b->req + b->rd[i] / 2, (size_t)nints / 2, len, per_pkt,
                                          b->span, &nf) &&
                 nf == (size_t)expect;
        float *dst = b->outd + at;
        dst[0] = ok ? 0.0f : 1.0f;
        if (ok)
            for (size_t r = 0, o = 1; r < (size_t)nints / 2; o += b->span[r].len, r++)
                memcpy(dst + o, shard + b->span[r].off, b->span[r].len * sizeof(float));
        else
            memset(dst + 1, 0, (size_t)expect * sizeof(float));
        b->sc[i] = 1 + expect;
        at += 1 + (size_t)expect;
    }
    displ(n, b->sc, b->sd);
}

/* Requester side of one round: write the owners' floats into w. */
static int unpack(int n, const struct sampi_opti_repair_map *m, float *w, const size_t *shard_off,
                  struct bufs *b, uint64_t *repaired)
{
    int rc = 0;
    const struct sampi_opti_run *run = b->mine;
    for (int s = 0; s < n; s++) {
        if (!b->nruns[s])
            continue;
        const float *src = b->in + b->rd[s];
        size_t nf = 0;
        if (src[0] != 0.0f ||
            sampi_opti_repair_serve(run, b->nruns[s], m->shard_len[s], m->per_pkt, b->span, &nf) ||
            nf != b->nfloats[s]) {
            rc = -EINVAL;
        } else {
            for (size_t r = 0, o = 1; r < b->nruns[s]; o += b->span[r].len, r++)
                memcpy(w + shard_off[s] + b->span[r].off, src + o, b->span[r].len * sizeof(float));
            *repaired += nf;
        }
        run += b->nruns[s];
    }
    return rc;
}

int sampi_opti_repair_budget(MPI_Comm comm, struct sampi_waiter *wt, float *w,
                             const size_t *shard_off, const size_t *shard_len, uint32_t per_pkt,
                             const uint8_t *seen, const size_t *seen_base, size_t round_floats,
                             uint64_t *floats_repaired)
{
    int n = 0, me = 0, rc = 0, err = 0;
    int pending = 0; /* a wait failed: its request still owns the buffers */
    MPI_Request req;
    struct bufs b = {0};
    uint64_t dummy;
    floats_repaired = floats_repaired ? floats_repaired : &dummy;
    *floats_repaired = 0;
    if (PMPI_Comm_size(comm, &n) != MPI_SUCCESS || PMPI_Comm_rank(comm, &me) != MPI_SUCCESS)
        return -EIO;
    struct sampi_opti_repair_map m = {n, me, shard_len, per_pkt, seen, seen_base};
    size_t budget = default_budget(n);
    if (round_floats && round_floats < budget)
        budget = round_floats;
    struct sampi_opti_repair_plan p = {0};
    size_t un = (size_t)n;
    b.nruns = calloc(un, sizeof(size_t));
    b.nfloats = calloc(un, sizeof(size_t));
    b.cnt = calloc(3 * un, sizeof(int));
    b.rcnt = calloc(3 * un, sizeof(int));
    b.sc = calloc(un, sizeof(int));
    b.sd = calloc(un, sizeof(int));
    b.rc = calloc(un, sizeof(int));
    b.rd = calloc(un, sizeof(int));
    /* NULL shard arrays: the caller's allocation of them failed, and it
     * still takes part so that its peers learn it */
    if (!b.nruns || !b.nfloats || !b.cnt || !b.rcnt || !b.sc || !b.sd || !b.rc || !b.rd ||
        !shard_off || !shard_len)
        err = -ENOMEM;
    else if (!w)
        err = -EINVAL;
    else if (budget < per_pkt)
        err = -E2BIG; /* a packet must fit in a round */
    else
        err = sampi_opti_repair_plan(&m, budget, b.nruns, b.nfloats, &p);
    if (!err) {
        b.mine = malloc((p.round_runs + 1) * sizeof(*b.mine));
        b.in = malloc((p.round_floats + un) * sizeof(float));
        if (!b.mine || !b.in)
            err = -ENOMEM;
    }

    /* 1: one agreed branch; a loss-free call ends here */
    uint64_t mine[4] = {err ? 0 : p.rounds, (uint64_t)-err, p.owner_runs, p.owner_floats}, v[4];
    if ((rc = sampi_waiter_allreduce(wt, mine, v, 4, MPI_UINT64_T, MPI_MAX, comm)))
        goto fail;
    if (v[1]) {
        rc = -(int)v[1];
        goto fail;
    }
    const uint64_t rounds = v[0];
    const size_t owner_runs = (size_t)v[2], owner_floats = (size_t)v[3];
    if (!rounds)
        goto fail;
    /* the owner's buffers, sized by the largest request any rank makes; a
     * failure here travels with step 2 (flag: a positive errno) */
    b.req = malloc((un - 1) * (owner_runs + 1) * sizeof(*b.req));
    b.outd = malloc((un - 1) * (owner_floats + 1) * sizeof(float));
    b.span = malloc((owner_runs + 1) * sizeof(*b.span));
    int flag = !b.req || !b.outd || !b.span ? ENOMEM : 0;

    struct sampi_opti_repair_cursor cur = {0, 0};
    for (uint64_t r = 0; r < rounds; r++) {
        if (!flag &&
            sampi_opti_repair_round(&m, &cur, budget, b.nruns, b.nfloats, b.mine, p.round_runs + 1))
            flag = EPROTO; /* the plan said this fits: cannot happen */
        for (int s = 0; s < n; s++) {
            b.cnt[3 * s] = flag ? 0 : (int)(2 * b.nruns[s]);
            b.cnt[3 * s + 1] = flag ? 0 : (int)b.nfloats[s];
            b.cnt[3 * s + 2] = flag;
        }
        /* 2: sizes, and every rank's flag reaches every rank */
        if (PMPI_Ialltoall(b.cnt, 3, MPI_INT, b.rcnt, 3, MPI_INT, comm, &req) != MPI_SUCCESS) {
            rc = -EIO;
            goto fail;
        }
        if ((rc = sampi_waiter_one(wt, &req))) {
            pending = 1;
            goto fail;
        }
        for (int i = 0; i < n; i++)
            flag = b.rcnt[3 * i + 2] > flag ? b.rcnt[3 * i + 2] : flag;
        if (flag) {
            rc = -flag;
            goto fail;
        }
        for (int i = 0; i < n; i++) {
            int nints = b.rcnt[3 * i], expect = b.rcnt[3 * i + 1];
            /* within the agreed maxima unless a peer's memory is corrupt;
             * then this rank posts no receive and MPI reports the mismatch */
            if (nints < 0 || nints % 2 || (size_t)nints > 2 * owner_runs || expect < 0 ||
                (size_t)expect > owner_floats || (i == me && nints)) {
                rc = -EPROTO;
                b.rcnt[3 * i] = b.rcnt[3 * i + 1] = 0;
            }
            b.rc[i] = b.rcnt[3 * i];
            b.sc[i] = b.cnt[3 * i];
        }
        displ(n, b.sc, b.sd);
        displ(n, b.rc, b.rd);
        /* 3: the requests to their owners */
        if (PMPI_Ialltoallv(b.mine, b.sc, b.sd, MPI_UINT32_T, b.req, b.rc, b.rd, MPI_UINT32_T, comm,
                            &req) != MPI_SUCCESS) {
            rc = -EIO;
            goto fail;
        }
        int wrc = sampi_waiter_one(wt, &req);
        if (wrc) {
            rc = wrc;
            pending = 1;
            goto fail;
        }
        answer(n, me, w + shard_off[me], shard_len[me], per_pkt, &b);
        for (int s = 0; s < n; s++)
            b.rc[s] = b.nruns[s] ? 1 + (int)b.nfloats[s] : 0;
        displ(n, b.rc, b.rd);
        /* 4: the data back */
        if (PMPI_Ialltoallv(b.outd, b.sc, b.sd, MPI_FLOAT, b.in, b.rc, b.rd, MPI_FLOAT, comm,
                            &req) != MPI_SUCCESS) {
            rc = -EIO;
            goto fail;
        }
        if ((wrc = sampi_waiter_one(wt, &req))) {
            rc = wrc;
            pending = 1;
            goto fail;
        }
        int u = unpack(n, &m, w, shard_off, &b, floats_repaired);
        rc = rc ? rc : u;
    }
fail:
    if (!pending)
        free_bufs(&b);
    return rc;
}

int sampi_opti_repair(MPI_Comm comm, struct sampi_waiter *wt, float *w, const size_t *shard_off,
                      const size_t *shard_len, uint32_t per_pkt, const uint8_t *seen,
                      const size_t *seen_base, uint64_t *floats_repaired)
{
    return sampi_opti_repair_budget(comm, wt, w, shard_off, shard_len, per_pkt, seen, seen_base, 0,
                                    floats_repaired);
}
