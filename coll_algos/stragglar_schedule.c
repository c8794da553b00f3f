/*
 * stragglar_schedule.c - the StragglAR matching schedule ("Efficient
 * AllReduce with Stragglers", arXiv:2505.23523, Sec. 3.1 and App. E).
 *
 * What:     the part of StragglAR that runs once the straggler S arrives.  The
 *           n-1 other ranks have already reduce-scattered their vectors into
 *           n-1 chunks (not n), so rank v of them owns c_v reduced over all
 *           but S.  In round r <= n-2, S and the owner of c_r exchange c_r and
 *           both reduce (the only place S's data enters); every other
 *           transfer copies a fully reduced chunk, so that each rank is in at
 *           most one pair per round and chunks spread by doubling.
 *           Power-of-two n: the paper's Algorithm 1 with fixed tie-breaks
 *           (build_pow2), n + log2(n) - 2 rounds, which is optimal.
 *           Other n: one maximum-weight matching per round (the paper's
 *           appendix E) with our edge weights and a critical window
 *           (default_window), solved exactly (Edmonds' blossom algorithm): the
 *           lower bound n + ceil(log2 n) - 2 for every even n up to 64, at
 *           most 2 rounds above it for odd n (which the paper leaves out).
 *           A greedy matcher would lose up to 9 rounds on odd n.
 * Cost:     R rounds of one chunk, s/(n-1) bytes each:
 *           R alpha + R/(n-1) s beta, R = n + log2 n - 2 for powers of two,
 *           so the bandwidth term tends to s beta, half of ring's 2(n-1)/n s
 *           beta.  Reductions: one chunk per round at S and at its partner.
 * Stragglers: assumes one rank, S, is late by at least the reduce-scatter's
 *           time, (n-2) alpha + (n-2)/(n-1) s beta; then the reduce-scatter
 *           is hidden and only the R rounds are paid after S arrives.  If S is
 *           not late (or another rank is) the result is still exact; the
 *           reduce-scatter is then on the critical path and StragglAR loses to
 *           ring for small n (at n = 3 always).
 * Exactness: c_r is computed only by the exchange of round r, at both of its
 *           ends from the same two operands (the executor applies them in the
 *           same order on both), and is only copied afterwards.
 *
 * Example, n = 4, S = 3, chunks c0 c1 c2, rank v owns partial c_v:
 *   round 0: 0 <-> 3 exchange c0, both reduce       full: 0{c0} 3{c0}
 *   round 1: 1 <-> 3 exchange c1; 0 copies c0 to 2  full: 0,2{c0} 1{c1} 3{c0,c1}
 *   round 2: 2 <-> 3 exchange c2; 0 and 1 swap c0/c1
 *   round 3: 0 and 2 swap c1/c2; 3 copies c2 to 1   every rank holds c0 c1 c2
 * Four rounds of s/3 bytes: 4/3 s beta against ring's 3/2 s beta.
 *
 * The builder is a pure function of (n, S): no MPI, no I/O, no clock.  It
 * works on virtual ranks (S = n-1, virtual v < n-1 = the v-th smallest other
 * rank) and maps them to real ranks at the end.
 */
#include "stragglar_schedule.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct xfer {
    int src, dst, chunk;
    enum sampi_stragglar_op op;
};

/* Per-rank sets of fully reduced chunks, one bit per chunk. */
struct chunkset {
    int words; /* per rank */
    uint64_t *bits;
};

struct builder {
    int n;
    struct chunkset full;
    int nrounds, cap;
    struct xfer *xf; /* this round's transfers, at most n */
    int nxf;
    int *round_start; /* offsets into all[], nrounds + 1 entries */
    struct xfer *all;
    int nall, allcap;
};

static int ilog2_ceil(int n)
{
    int l = 0;
    while ((1 << l) < n)
        l++;
    return l;
}

int sampi_stragglar_lower_bound(int n)
{
    return n + ilog2_ceil(n) - 2;
}

static uint64_t *set_of(const struct chunkset *cs, int g)
{
    return cs->bits + (size_t)g * (size_t)cs->words;
}

static int has(const struct chunkset *cs, int g, int c)
{
    return (int)((set_of(cs, g)[c / 64] >> (c % 64)) & 1u);
}

static void add(struct chunkset *cs, int g, int c)
{
    set_of(cs, g)[c / 64] |= (uint64_t)1 << (c % 64);
}

static int empty(const struct chunkset *cs, int g)
{
    const uint64_t *s = set_of(cs, g);
    for (int w = 0; w < cs->words; w++)
        if (s[w])
            return 0;
    return 1;
}

/* Highest chunk in g's set that h lacks, or -1. */
static int newest_missing(const struct chunkset *cs, int g, int h)
{
    const uint64_t *a = set_of(cs, g), *b = set_of(cs, h);
    for (int w = cs->words - 1; w >= 0; w--) {
        uint64_t m = a[w] & ~b[w];
        if (m)
            return w * 64 + 63 - __builtin_clzll(m);
    }
    return -1;
}

static int lowest(const struct chunkset *cs, int g)
{
    const uint64_t *a = set_of(cs, g);
    for (int w = 0; w < cs->words; w++)
        if (a[w])
            return w * 64 + __builtin_ctzll(a[w]);
    return -1;
}

static void emit(struct builder *b, int src, int dst, int chunk, enum sampi_stragglar_op op)
{
    b->xf[b->nxf++] = (struct xfer){src, dst, chunk, op};
}

/* Close the round: record its transfers and apply what they deliver (every
 * transfer read the state at the start of the round). */
static int end_round(struct builder *b)
{
    if (b->nrounds + 1 >= b->cap) {
        int cap = b->cap * 2;
        int *rs = realloc(b->round_start, (size_t)(cap + 1) * sizeof(*rs));
        if (!rs)
            return -ENOMEM;
        b->round_start = rs;
        b->cap = cap;
    }
    if (b->nall + b->nxf > b->allcap) {
        int cap = b->allcap * 2 + b->nxf;
        struct xfer *a = realloc(b->all, (size_t)cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        b->all = a;
        b->allcap = cap;
    }
    memcpy(b->all + b->nall, b->xf, (size_t)b->nxf * sizeof(*b->xf));
    b->nall += b->nxf;
    b->round_start[++b->nrounds] = b->nall;
    for (int i = 0; i < b->nxf; i++)
        add(&b->full, b->xf[i].dst, b->xf[i].chunk);
    b->nxf = 0;
    return 0;
}

static void exchange_with_straggler(struct builder *b, int r, char *busy)
{
    int s = b->n - 1;
    emit(b, r, s, r, SAMPI_STRAGGLAR_REDUCE);
    emit(b, s, r, r, SAMPI_STRAGGLAR_REDUCE);
    busy[r] = busy[s] = 1;
}

/* ------------------------------------------------------------------------
 * Power-of-two n: Algorithm 1.  The tie-breaks (ascending senders and
 * targets in phase 1, smallest eligible partner first in the critical
 * window, then ascending zip) are fixed, so the dump equals the
 * paper's reference generator's line for line up to the order within a round.
 */
static int build_pow2(struct builder *b, int *scratch)
{
    int n = b->n, s = n - 1, L = ilog2_ceil(n);
    char *busy = (char *)(scratch + 6 * n);
    int *act = scratch, *P = scratch + n, *Q = scratch + 2 * n, *used = scratch + 3 * n;
    int *pp = scratch + 4 * n, *pq = scratch + 5 * n;

    for (int r = 0; r < n + L - 2; r++) {
        memset(busy, 0, (size_t)n);
        if (r <= n - 2)
            exchange_with_straggler(b, r, busy);
        if (r < L) {
            if (r >= 1) {
                int src = r - 1, dst = r - 1 + L;
                if (!has(&b->full, src, r - 1) || !empty(&b->full, dst))
                    return -EPROTO;
                emit(b, src, dst, r - 1, SAMPI_STRAGGLAR_COPY);
                busy[src] = busy[dst] = 1;
            }
            /* every other holder doubles its chunk onto a rank that phase 1
             * gives no chunk by construction */
            int t = 2 * L - 1;
            for (int g = 0; g < n - 1; g++) {
                if (busy[g] || empty(&b->full, g))
                    continue;
                while (t < n - 1 && (busy[t] || !empty(&b->full, t)))
                    t++;
                if (t >= n - 1)
                    return -EPROTO;
                emit(b, g, t, lowest(&b->full, g), SAMPI_STRAGGLAR_COPY);
                t++;
            }
        } else {
            int o = r - L, hi = r < n - 1 ? r : n - 1, np = 0, nq = 0, npairs = 0;
            for (int g = 0; g < n - 1; g++) {
                act[g] = -1;
                for (int c = o; c < hi; c++) {
                    if (!has(&b->full, g, c))
                        continue;
                    if (act[g] >= 0)
                        return -EPROTO; /* the invariant: one active chunk */
                    act[g] = c;
                }
                if (act[g] < 0)
                    return -EPROTO;
            }
            /* in the tail S is free and only ever sends the last chunk */
            act[s] = n - 2;
            for (int g = 0; g < n; g++) {
                used[g] = 0;
                if (busy[g] || (g == s && r <= n - 2))
                    continue;
                if (act[g] == o)
                    P[np++] = g;
                else
                    Q[nq++] = g;
            }
            if (r <= n - 2 ? (act[r] != o || np + 1 != n / 2 || nq != n / 2 - 1)
                           : (np != n / 2 || nq != n / 2))
                return -EPROTO;
            /* a rank g in the window meets S within L-1 rounds and must then
             * hold exactly c_{g-L}: it may receive only chunks <= g-L */
            int wlo = r + 1, whi = r + L - 1 < n - 2 ? r + L - 1 : n - 2;
            for (int g = wlo; g <= whi; g++) {
                int h = -1;
                if (act[g] == o) {
                    for (int i = 0; i < nq && h < 0; i++)
                        if (!used[Q[i]] && (Q[i] < wlo || Q[i] > whi) && act[Q[i]] == o + 1)
                            h = Q[i];
                    if (h < 0)
                        return -EPROTO;
                    pp[npairs] = g, pq[npairs++] = h;
                } else {
                    if (act[g] > g - L)
                        return -EPROTO;
                    for (int i = 0; i < np && h < 0; i++)
                        if (!used[P[i]] && (P[i] < wlo || P[i] > whi))
                            h = P[i];
                    if (h < 0)
                        return -EPROTO;
                    pp[npairs] = h, pq[npairs++] = g;
                }
                used[g] = used[h] = 1;
            }
            int i = 0, j = 0;
            for (;;) {
                while (i < np && used[P[i]])
                    i++;
                while (j < nq && used[Q[j]])
                    j++;
                if (i == np || j == nq)
                    break;
                pp[npairs] = P[i++], pq[npairs++] = Q[j++];
            }
            if (i != np || j != nq)
                return -EPROTO;
            for (int k = 0; k < npairs; k++) {
                if (pq[k] != s)
                    emit(b, pp[k], pq[k], o, SAMPI_STRAGGLAR_COPY);
                emit(b, pq[k], pp[k], act[pq[k]], SAMPI_STRAGGLAR_COPY);
            }
        }
        int rc = end_round(b);
        if (rc)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * Exact maximum-weight maximum-cardinality matching: Edmonds' blossom
 * algorithm in the primal-dual O(V^3) form of Galil (1986), after Joris van
 * Rantwijk's well-known formulation.  Endpoint p of edge k is 2k (its first
 * vertex) or 2k+1; mate[v] is the endpoint at v's partner.  The order in
 * which it scans vertices, edges and blossoms is the one of the
 * reference checker's, so ties resolve the same way and the schedules agree with it.
 */
struct mwm {
    int nv, ne, nb;
    int *endp;
    long *w2; /* doubled weights, so that duals stay integral */
    int *inc_start, *inc;
    int *mate, *label, *labelend, *inb, *bparent, *bbase, *bestedge;
    int **bchilds, **bendps, *nchilds;
    int **bbest, *nbbest; /* nbbest -1: no list kept */
    int *unused, nunused;
    long *dual;
    char *allowed;
    int *queue, nq, qcap;
    int *lv, *stack, *best, *path, *eps;
    int oom;
};

static int wrap(int j, int len)
{
    return ((j % len) + len) % len;
}

static long slack(const struct mwm *m, int k)
{
    return m->dual[m->endp[2 * k]] + m->dual[m->endp[2 * k + 1]] - m->w2[k];
}

static void qpush(struct mwm *m, int v)
{
    if (m->nq == m->qcap) {
        int cap = 2 * m->qcap;
        int *q = realloc(m->queue, (size_t)cap * sizeof(*q));
        if (!q) {
            m->oom = 1;
            return;
        }
        m->queue = q;
        m->qcap = cap;
    }
    m->queue[m->nq++] = v;
}

/* The vertices inside b, in the reference checker's depth-first order, into m->lv. */
static int leaves(struct mwm *m, int b)
{
    int n = 0, top = 0;
    if (b < m->nv) {
        m->lv[0] = b;
        return 1;
    }
    m->stack[top++] = b;
    while (top) {
        int x = m->stack[--top];
        for (int i = 0; i < m->nchilds[x]; i++) {
            int c = m->bchilds[x][i];
            if (c < m->nv)
                m->lv[n++] = c;
            else
                m->stack[top++] = c;
        }
    }
    return n;
}

static void assign_label(struct mwm *m, int w, int t, int p)
{
    for (;;) {
        int b = m->inb[w];
        m->label[w] = m->label[b] = t;
        m->labelend[w] = m->labelend[b] = p;
        m->bestedge[w] = m->bestedge[b] = -1;
        if (t == 1) {
            int nl = leaves(m, b);
            for (int i = 0; i < nl; i++)
                qpush(m, m->lv[i]);
            return;
        }
        p = m->mate[m->bbase[b]];
        w = m->endp[p];
        t = 1;
        p ^= 1;
    }
}

static int scan_blossom(struct mwm *m, int v, int w)
{
    int np = 0, base = -1;
    while (v != -1 || w != -1) {
        int b = m->inb[v];
        if (m->label[b] & 4) {
            base = m->bbase[b];
            break;
        }
        m->path[np++] = b;
        m->label[b] = 5;
        if (m->labelend[b] == -1) {
            v = -1;
        } else {
            v = m->endp[m->labelend[b]];
            b = m->inb[v];
            v = m->endp[m->labelend[b]];
        }
        if (w != -1) {
            int t = v;
            v = w;
            w = t;
        }
    }
    for (int i = 0; i < np; i++)
        m->label[m->path[i]] = 1;
    return base;
}

static void add_blossom(struct mwm *m, int base, int k)
{
    int v = m->endp[2 * k], w = m->endp[2 * k + 1];
    int bb = m->inb[base], bv = m->inb[v], bw = m->inb[w];
    int b = m->unused[--m->nunused], np = 0;
    int *path = malloc((size_t)(m->nv + 1) * sizeof(int));
    int *eps = malloc((size_t)(m->nv + 1) * sizeof(int));
    int *bl = malloc((size_t)m->nb * sizeof(int));
    if (!path || !eps || !bl) {
        free(path), free(eps), free(bl);
        m->oom = 1;
        return;
    }
    m->bbase[b] = base;
    m->bparent[b] = -1;
    m->bparent[bb] = b;
    while (bv != bb) {
        m->bparent[bv] = b;
        path[np] = bv;
        eps[np++] = m->labelend[bv];
        v = m->endp[m->labelend[bv]];
        bv = m->inb[v];
    }
    path[np++] = bb;
    for (int i = 0, j = np - 1; i < j; i++, j--) {
        int t = path[i];
        path[i] = path[j], path[j] = t;
    }
    for (int i = 0, j = np - 2; i < j; i++, j--) {
        int t = eps[i];
        eps[i] = eps[j], eps[j] = t;
    }
    eps[np - 1] = 2 * k;
    while (bw != bb) {
        m->bparent[bw] = b;
        path[np] = bw;
        eps[np++] = m->labelend[bw] ^ 1;
        w = m->endp[m->labelend[bw]];
        bw = m->inb[w];
    }
    m->bchilds[b] = path;
    m->bendps[b] = eps;
    m->nchilds[b] = np;
    m->label[b] = 1;
    m->labelend[b] = m->labelend[bb];
    m->dual[b] = 0;
    int nl = leaves(m, b);
    for (int i = 0; i < nl; i++) {
        int x = m->lv[i];
        if (m->label[m->inb[x]] == 2)
            qpush(m, x);
        m->inb[x] = b;
    }
    for (int i = 0; i < m->nb; i++)
        m->best[i] = -1;
    for (int ci = 0; ci < np; ci++) {
        int c = path[ci];
        /* either c's kept list, or every edge at every vertex of c */
        int nlist = m->nbbest[c] < 0 ? leaves(m, c) : 1;
        for (int li = 0; li < nlist; li++) {
            int cnt, *lst = NULL, x = -1;
            if (m->nbbest[c] < 0) {
                x = m->lv[li];
                cnt = m->inc_start[x + 1] - m->inc_start[x];
            } else {
                lst = m->bbest[c];
                cnt = m->nbbest[c];
            }
            for (int e = 0; e < cnt; e++) {
                int kk = lst ? lst[e] : m->inc[m->inc_start[x] + e] >> 1;
                int bj = m->inb[m->endp[2 * kk + 1]];
                if (bj == b)
                    bj = m->inb[m->endp[2 * kk]];
                if (bj != b && m->label[bj] == 1) {
                    int cur = m->best[bj];
                    if (cur == -1 || slack(m, kk) < slack(m, cur))
                        m->best[bj] = kk;
                }
            }
        }
        free(m->bbest[c]);
        m->bbest[c] = NULL;
        m->nbbest[c] = -1;
        m->bestedge[c] = -1;
    }
    int nbl = 0;
    for (int i = 0; i < m->nb; i++)
        if (m->best[i] != -1)
            bl[nbl++] = m->best[i];
    free(m->bbest[b]);
    m->bbest[b] = bl;
    m->nbbest[b] = nbl;
    m->bestedge[b] = -1;
    for (int i = 0; i < nbl; i++)
        if (m->bestedge[b] == -1 || slack(m, bl[i]) < slack(m, m->bestedge[b]))
            m->bestedge[b] = bl[i];
}

static void expand_blossom(struct mwm *m, int b, int endstage)
{
    int *childs = m->bchilds[b], *ends = m->bendps[b], len = m->nchilds[b];
    for (int i = 0; i < len; i++) {
        int s = childs[i];
        m->bparent[s] = -1;
        if (s < m->nv) {
            m->inb[s] = s;
        } else if (endstage && m->dual[s] == 0) {
            expand_blossom(m, s, endstage);
        } else {
            int nl = leaves(m, s);
            for (int l = 0; l < nl; l++)
                m->inb[m->lv[l]] = s;
        }
    }
    if (!endstage && m->label[b] == 2) {
        int entry = m->inb[m->endp[m->labelend[b] ^ 1]];
        int j = 0, jstep, trick;
        while (childs[j] != entry)
            j++;
        if (j & 1) {
            j -= len;
            jstep = 1, trick = 0;
        } else {
            jstep = -1, trick = 1;
        }
        int p = m->labelend[b];
        while (j != 0) {
            m->label[m->endp[p ^ 1]] = 0;
            m->label[m->endp[ends[wrap(j - trick, len)] ^ trick ^ 1]] = 0;
            assign_label(m, m->endp[p ^ 1], 2, p);
            m->allowed[ends[wrap(j - trick, len)] >> 1] = 1;
            j += jstep;
            p = ends[wrap(j - trick, len)] ^ trick;
            m->allowed[p >> 1] = 1;
            j += jstep;
        }
        int bv = childs[wrap(j, len)];
        m->label[m->endp[p ^ 1]] = m->label[bv] = 2;
        m->labelend[m->endp[p ^ 1]] = m->labelend[bv] = p;
        m->bestedge[bv] = -1;
        j += jstep;
        while (childs[wrap(j, len)] != entry) {
            bv = childs[wrap(j, len)];
            if (m->label[bv] == 1) {
                j += jstep;
                continue;
            }
            int found = -1, nl = leaves(m, bv);
            for (int l = 0; l < nl && found < 0; l++)
                if (m->label[m->lv[l]] != 0)
                    found = m->lv[l];
            if (found != -1) {
                m->label[found] = 0;
                m->label[m->endp[m->mate[m->bbase[bv]]]] = 0;
                assign_label(m, found, 2, m->labelend[found]);
            }
            j += jstep;
        }
    }
    m->label[b] = m->labelend[b] = -1;
    free(m->bchilds[b]);
    free(m->bendps[b]);
    m->bchilds[b] = m->bendps[b] = NULL;
    m->nchilds[b] = 0;
    m->bbase[b] = -1;
    free(m->bbest[b]);
    m->bbest[b] = NULL;
    m->nbbest[b] = -1;
    m->bestedge[b] = -1;
    m->unused[m->nunused++] = b;
}

static void augment_blossom(struct mwm *m, int b, int v)
{
    int t = v;
    while (m->bparent[t] != b)
        t = m->bparent[t];
    if (t >= m->nv)
        augment_blossom(m, t, v);
    int *childs = m->bchilds[b], *ends = m->bendps[b], len = m->nchilds[b];
    int i = 0, j, jstep, trick;
    while (childs[i] != t)
        i++;
    j = i;
    if (i & 1) {
        j -= len;
        jstep = 1, trick = 0;
    } else {
        jstep = -1, trick = 1;
    }
    while (j != 0) {
        j += jstep;
        t = childs[wrap(j, len)];
        int p = ends[wrap(j - trick, len)] ^ trick;
        if (t >= m->nv)
            augment_blossom(m, t, m->endp[p]);
        j += jstep;
        t = childs[wrap(j, len)];
        if (t >= m->nv)
            augment_blossom(m, t, m->endp[p ^ 1]);
        m->mate[m->endp[p]] = p ^ 1;
        m->mate[m->endp[p ^ 1]] = p;
    }
    /* rotate so that the new base's child comes first */
    int *tmp = m->path;
    for (int r = 0; r < len; r++)
        tmp[r] = childs[(i + r) % len];
    memcpy(childs, tmp, (size_t)len * sizeof(int));
    for (int r = 0; r < len; r++)
        tmp[r] = ends[(i + r) % len];
    memcpy(ends, tmp, (size_t)len * sizeof(int));
    m->bbase[b] = m->bbase[childs[0]];
}

static void augment_matching(struct mwm *m, int k)
{
    for (int side = 0; side < 2; side++) {
        int s = m->endp[2 * k + side], p = 2 * k + 1 - side;
        for (;;) {
            int bs = m->inb[s];
            if (bs >= m->nv)
                augment_blossom(m, bs, s);
            m->mate[s] = p;
            if (m->labelend[bs] == -1)
                break;
            int t = m->endp[m->labelend[bs]];
            int bt = m->inb[t];
            s = m->endp[m->labelend[bt]];
            int j = m->endp[m->labelend[bt] ^ 1];
            if (bt >= m->nv)
                augment_blossom(m, bt, j);
            m->mate[j] = m->labelend[bt];
            p = m->labelend[bt] ^ 1;
        }
    }
}

static long floordiv2(long x)
{
    return x >= 0 ? x / 2 : -((-x + 1) / 2);
}

static void mwm_stages(struct mwm *m)
{
    int nv = m->nv, nb = m->nb;
    for (int stage = 0; stage < nv && !m->oom; stage++) {
        for (int i = 0; i < nb; i++)
            m->label[i] = 0, m->bestedge[i] = -1;
        for (int i = nv; i < nb; i++) {
            free(m->bbest[i]);
            m->bbest[i] = NULL;
            m->nbbest[i] = -1;
        }
        memset(m->allowed, 0, (size_t)m->ne);
        m->nq = 0;
        for (int v = 0; v < nv; v++)
            if (m->mate[v] == -1 && m->label[m->inb[v]] == 0)
                assign_label(m, v, 1, -1);
        int augmented = 0;
        for (;;) {
            while (m->nq && !augmented && !m->oom) {
                int v = m->queue[--m->nq];
                for (int e = m->inc_start[v]; e < m->inc_start[v + 1]; e++) {
                    int p = m->inc[e], k = p >> 1, w = m->endp[p];
                    long ks = 0;
                    if (m->inb[v] == m->inb[w])
                        continue;
                    if (!m->allowed[k]) {
                        ks = m->dual[v] + m->dual[w] - m->w2[k];
                        if (ks <= 0)
                            m->allowed[k] = 1;
                    }
                    if (m->allowed[k]) {
                        if (m->label[m->inb[w]] == 0) {
                            assign_label(m, w, 2, p ^ 1);
                        } else if (m->label[m->inb[w]] == 1) {
                            int base = scan_blossom(m, v, w);
                            if (base >= 0) {
                                add_blossom(m, base, k);
                            } else {
                                augment_matching(m, k);
                                augmented = 1;
                                break;
                            }
                        } else if (m->label[w] == 0) {
                            m->label[w] = 2;
                            m->labelend[w] = p ^ 1;
                        }
                    } else if (m->label[m->inb[w]] == 1) {
                        int b = m->inb[v];
                        if (m->bestedge[b] == -1 || ks < slack(m, m->bestedge[b]))
                            m->bestedge[b] = k;
                    } else if (m->label[w] == 0) {
                        if (m->bestedge[w] == -1 || ks < slack(m, m->bestedge[w]))
                            m->bestedge[w] = k;
                    }
                }
            }
            if (augmented || m->oom)
                break;
            int dtype = -1, dedge = -1, dblossom = -1;
            long delta = 0;
            for (int v = 0; v < nv; v++)
                if (m->label[m->inb[v]] == 0 && m->bestedge[v] != -1) {
                    long d = slack(m, m->bestedge[v]);
                    if (dtype == -1 || d < delta)
                        dtype = 2, delta = d, dedge = m->bestedge[v];
                }
            for (int b = 0; b < nb; b++)
                if (m->bparent[b] == -1 && m->label[b] == 1 && m->bestedge[b] != -1) {
                    long d = floordiv2(slack(m, m->bestedge[b]));
                    if (dtype == -1 || d < delta)
                        dtype = 3, delta = d, dedge = m->bestedge[b];
                }
            for (int b = nv; b < nb; b++)
                if (m->bbase[b] >= 0 && m->bparent[b] == -1 && m->label[b] == 2 &&
                    (dtype == -1 || m->dual[b] < delta))
                    dtype = 4, delta = m->dual[b], dblossom = b;
            if (dtype == -1) {
                long mn = m->dual[0];
                for (int v = 1; v < nv; v++)
                    mn = m->dual[v] < mn ? m->dual[v] : mn;
                dtype = 1, delta = mn > 0 ? mn : 0;
            }
            for (int v = 0; v < nv; v++) {
                int lv = m->label[m->inb[v]];
                if (lv == 1)
                    m->dual[v] -= delta;
                else if (lv == 2)
                    m->dual[v] += delta;
            }
            for (int b = nv; b < nb; b++)
                if (m->bbase[b] >= 0 && m->bparent[b] == -1) {
                    if (m->label[b] == 1)
                        m->dual[b] += delta;
                    else if (m->label[b] == 2)
                        m->dual[b] -= delta;
                }
            if (dtype == 1)
                break;
            if (dtype == 2) {
                m->allowed[dedge] = 1;
                int i = m->endp[2 * dedge], j = m->endp[2 * dedge + 1];
                if (m->label[m->inb[i]] == 0)
                    i = j;
                qpush(m, i);
            } else if (dtype == 3) {
                m->allowed[dedge] = 1;
                qpush(m, m->endp[2 * dedge]);
            } else {
                expand_blossom(m, dblossom, 0);
            }
        }
        if (!augmented)
            break;
        for (int b = nv; b < nb; b++)
            if (m->bparent[b] == -1 && m->bbase[b] >= 0 && m->label[b] == 1 && m->dual[b] == 0)
                expand_blossom(m, b, 1);
    }
}

/* w[i * nv + j] > 0 is an edge; fills mate[] with partner vertices or -1. */
static int blossom_matching(int nv, const long *w, int *mate_out)
{
    struct mwm m = {0};
    int ne = 0, rc = -ENOMEM;
    long maxw = 0;
    for (int i = 0; i < nv; i++) {
        mate_out[i] = -1;
        for (int j = i + 1; j < nv; j++)
            if (w[i * nv + j]) {
                ne++;
                maxw = w[i * nv + j] > maxw ? w[i * nv + j] : maxw;
            }
    }
    if (!ne)
        return 0;
    m.nv = nv, m.ne = ne, m.nb = 2 * nv;
    size_t nb = (size_t)m.nb;
    m.endp = malloc(2 * (size_t)ne * sizeof(int));
    m.w2 = malloc((size_t)ne * sizeof(long));
    m.inc_start = calloc((size_t)nv + 1, sizeof(int));
    m.inc = malloc(2 * (size_t)ne * sizeof(int));
    m.mate = malloc((size_t)nv * sizeof(int));
    m.label = malloc(nb * sizeof(int));
    m.labelend = malloc(nb * sizeof(int));
    m.inb = malloc((size_t)nv * sizeof(int));
    m.bparent = malloc(nb * sizeof(int));
    m.bbase = malloc(nb * sizeof(int));
    m.bestedge = malloc(nb * sizeof(int));
    m.bchilds = calloc(nb, sizeof(int *));
    m.bendps = calloc(nb, sizeof(int *));
    m.nchilds = calloc(nb, sizeof(int));
    m.bbest = calloc(nb, sizeof(int *));
    m.nbbest = malloc(nb * sizeof(int));
    m.unused = malloc(nb * sizeof(int));
    m.dual = malloc(nb * sizeof(long));
    m.allowed = malloc((size_t)ne);
    m.qcap = 4 * nv;
    m.queue = malloc((size_t)m.qcap * sizeof(int));
    m.lv = malloc((size_t)nv * sizeof(int));
    m.stack = malloc(nb * sizeof(int));
    m.best = malloc(nb * sizeof(int));
    m.path = malloc(nb * sizeof(int));
    if (!m.endp || !m.w2 || !m.inc_start || !m.inc || !m.mate || !m.label || !m.labelend ||
        !m.inb || !m.bparent || !m.bbase || !m.bestedge || !m.bchilds || !m.bendps || !m.nchilds ||
        !m.bbest || !m.nbbest || !m.unused || !m.dual || !m.allowed || !m.queue || !m.lv ||
        !m.stack || !m.best || !m.path)
        goto fail;
    int k = 0;
    for (int i = 0; i < nv; i++)
        for (int j = i + 1; j < nv; j++)
            if (w[i * nv + j]) {
                m.endp[2 * k] = i, m.endp[2 * k + 1] = j;
                m.w2[k] = 2 * w[i * nv + j];
                m.inc_start[i + 1]++, m.inc_start[j + 1]++;
                k++;
            }
    for (int v = 0; v < nv; v++)
        m.inc_start[v + 1] += m.inc_start[v];
    int *fill = m.lv; /* per-vertex insertion cursor, in edge order */
    for (int v = 0; v < nv; v++)
        fill[v] = m.inc_start[v];
    for (k = 0; k < ne; k++) {
        m.inc[fill[m.endp[2 * k]]++] = 2 * k + 1;
        m.inc[fill[m.endp[2 * k + 1]]++] = 2 * k;
    }
    for (int i = 0; i < m.nb; i++) {
        m.label[i] = 0, m.labelend[i] = -1, m.bparent[i] = -1, m.bestedge[i] = -1;
        m.bbase[i] = i < nv ? i : -1;
        m.nbbest[i] = -1;
        m.dual[i] = i < nv ? maxw : 0;
    }
    for (int v = 0; v < nv; v++)
        m.mate[v] = -1, m.inb[v] = v;
    m.nunused = 0;
    for (int b = nv; b < m.nb; b++)
        m.unused[m.nunused++] = b;
    mwm_stages(&m);
    if (m.oom)
        goto fail;
    for (int v = 0; v < nv; v++)
        mate_out[v] = m.mate[v] >= 0 ? m.endp[m.mate[v]] : -1;
    rc = 0;
fail:
    if (m.bchilds)
        for (size_t i = 0; i < nb; i++) {
            free(m.bchilds[i]);
            free(m.bendps[i]);
            free(m.bbest[i]);
        }
    free(m.endp), free(m.w2), free(m.inc_start), free(m.inc), free(m.mate);
    free(m.label), free(m.labelend), free(m.inb), free(m.bparent), free(m.bbase);
    free(m.bestedge), free(m.bchilds), free(m.bendps), free(m.nchilds), free(m.bbest);
    free(m.nbbest), free(m.unused), free(m.dual), free(m.allowed), free(m.queue);
    free(m.lv), free(m.stack), free(m.best), free(m.path);
    return rc;
}

/* Window length of the critical-window pruning: log2 n is too tight for
 * odd n unless n-1 is a power of two. */
static int default_window(int n)
{
    int L = ilog2_ceil(n);
    if (n % 2 == 1 && (n - 1) & (n - 2))
        return L + 1;
    return L;
}

/* ------------------------------------------------------------------------
 * Any n: the straggler exchange plus, each round, a maximum-weight matching
 * of the free ranks.  Weight n^2 k + max(a, b) for k useful directions
 * sending chunks a and b (the newest each side lacks): the number of
 * transfers first, then moving new chunks, which are the ones still far from
 * complete.  A rank about to meet S must not receive a chunk newer than the
 * one it will then hold, or it would have no chunk to trade afterwards.
 */
static int build_matching(struct builder *b)
{
    int n = b->n, W = default_window(n), rc = -ENOMEM;
    long big = (long)n * n;
    size_t nn = (size_t)n * (size_t)n;
    long *w = calloc(nn, sizeof(*w));
    int *av = malloc((size_t)n * sizeof(*av)), *mate = malloc((size_t)n * sizeof(*mate));
    int *ca = malloc(nn * sizeof(*ca)), *cb = malloc(nn * sizeof(*cb));
    char *busy = malloc((size_t)n);
    if (!w || !av || !mate || !ca || !cb || !busy)
        goto fail;

    for (int r = 0;; r++) {
        int done = 1;
        for (int g = 0; g < n && done; g++)
            for (int c = 0; c < n - 1 && done; c++)
                done = has(&b->full, g, c);
        if (done)
            break;
        if (r > 4 * n) {
            rc = -EPROTO;
            goto fail;
        }
        memset(busy, 0, (size_t)n);
        if (r <= n - 2)
            exchange_with_straggler(b, r, busy);
        int nv = 0;
        for (int g = 0; g < n; g++)
            if (!busy[g])
                av[nv++] = g;
        memset(w, 0, (size_t)nv * (size_t)nv * sizeof(*w));
        for (int i = 0; i < nv; i++) {
            int u = av[i];
            for (int j = i + 1; j < nv; j++) {
                int v = av[j];
                int a = newest_missing(&b->full, u, v), c = newest_missing(&b->full, v, u);
                if (a < 0 && c < 0)
                    continue;
                if (r < n - 1) {
                    if (a >= 0 && 0 < v - r && v - r < W && v <= n - 2 && a > v - W)
                        continue;
                    if (c >= 0 && 0 < u - r && u - r < W && u <= n - 2 && c > u - W)
                        continue;
                }
                long wt = big * ((a >= 0) + (c >= 0)) + (a > c ? a : c);
                w[i * nv + j] = w[j * nv + i] = wt;
                ca[i * nv + j] = a;
                cb[i * nv + j] = c;
            }
        }
        rc = blossom_matching(nv, w, mate);
        if (rc)
            goto fail;
        for (int i = 0; i < nv; i++) {
            int j = mate[i];
            if (j <= i)
                continue;
            if (ca[i * nv + j] >= 0)
                emit(b, av[i], av[j], ca[i * nv + j], SAMPI_STRAGGLAR_COPY);
            if (cb[i * nv + j] >= 0)
                emit(b, av[j], av[i], cb[i * nv + j], SAMPI_STRAGGLAR_COPY);
        }
        rc = end_round(b);
        if (rc)
            goto fail;
    }
    rc = 0;
fail:
    free(w);
    free(av);
    free(mate);
    free(ca);
    free(cb);
    free(busy);
    return rc;
}

/* Turn the virtual transfer list into per-rank steps on real ranks. */
static int to_steps(const struct builder *b, int straggler, struct sampi_stragglar_schedule *out)
{
    int n = b->n;
    int *real = malloc((size_t)n * sizeof(*real));
    if (!real)
        return -ENOMEM;
    for (int v = 0, g = 0; g < n; g++)
        if (g != straggler)
            real[v++] = g;
    real[n - 1] = straggler;

    out->owner = malloc((size_t)(n - 1) * sizeof(*out->owner));
    out->steps = malloc((size_t)b->nrounds * (size_t)n * sizeof(*out->steps));
    if (!out->owner || !out->steps) {
        free(real);
        return -ENOMEM;
    }
    for (int k = 0; k < n - 1; k++)
        out->owner[k] = real[k];
    for (size_t i = 0; i < (size_t)b->nrounds * (size_t)n; i++)
        out->steps[i] = (struct sampi_stragglar_step){-1, -1, -1, SAMPI_STRAGGLAR_COPY};
    int rc = 0;
    for (int r = 0; r < b->nrounds && !rc; r++) {
        for (int i = b->round_start[r]; i < b->round_start[r + 1]; i++) {
            const struct xfer *x = &b->all[i];
            struct sampi_stragglar_step *from = &out->steps[(size_t)r * n + real[x->src]];
            struct sampi_stragglar_step *to = &out->steps[(size_t)r * n + real[x->dst]];
            if ((from->peer != -1 && from->peer != real[x->dst]) || from->send_chunk != -1 ||
                (to->peer != -1 && to->peer != real[x->src]) || to->recv_chunk != -1) {
                rc = -EPROTO;
                break;
            }
            from->peer = real[x->dst];
            from->send_chunk = x->chunk;
            to->peer = real[x->src];
            to->recv_chunk = x->chunk;
            to->op = x->op;
        }
    }
    free(real);
    return rc;
}

int sampi_stragglar_schedule(int n, int straggler, struct sampi_stragglar_schedule *out)
{
    int rc = -EINVAL;
    struct builder b = {0};
    int *scratch = NULL;

    if (!out)
        return -EINVAL;
    *out = (struct sampi_stragglar_schedule){0};
    if (n < 2 || n > SAMPI_STRAGGLAR_MAX_N || straggler < 0 || straggler >= n)
        goto fail;
    rc = -ENOTSUP;
    if ((n & (n - 1)) != 0 && n > SAMPI_STRAGGLAR_MAX_MATCHING_N)
        goto fail;
    rc = -ENOMEM;
    b.n = n;
    b.full.words = (n - 1 + 63) / 64;
    b.full.bits = calloc((size_t)n * (size_t)b.full.words, sizeof(uint64_t));
    b.cap = 2 * n + 8;
    b.round_start = calloc((size_t)b.cap + 1, sizeof(int));
    b.xf = malloc((size_t)n * sizeof(*b.xf));
    scratch = malloc((size_t)7 * (size_t)n * sizeof(int));
    if (!b.full.bits || !b.round_start || !b.xf || !scratch)
        goto fail;

    rc = (n & (n - 1)) == 0 ? build_pow2(&b, scratch) : build_matching(&b);
    if (rc)
        goto fail;
    out->n = n;
    out->straggler = straggler;
    out->nrounds = b.nrounds;
    rc = to_steps(&b, straggler, out);
fail:
    if (rc)
        sampi_stragglar_schedule_free(out);
    free(b.full.bits);
    free(b.round_start);
    free(b.xf);
    free(b.all);
    free(scratch);
    return rc;
}

void sampi_stragglar_schedule_free(struct sampi_stragglar_schedule *s)
{
    if (!s)
        return;
    free(s->owner);
    free(s->steps);
    *s = (struct sampi_stragglar_schedule){0};
}

int sampi_stragglar_dump(const struct sampi_stragglar_schedule *s, FILE *fp)
{
    int rc = fprintf(fp, "# StragglAR schedule, %d rounds\nn %d\nstraggler %d\n", s->nrounds, s->n,
                     s->straggler) < 0;
    for (int k = 0; k < s->n - 1; k++)
        rc |= fprintf(fp, "owner %d %d\n", k, s->owner[k]) < 0;
    for (int r = 0; r < s->nrounds; r++)
        for (int g = 0; g < s->n; g++) {
            const struct sampi_stragglar_step *st = sampi_stragglar_step(s, r, g);
            if (st->send_chunk < 0)
                continue;
            const struct sampi_stragglar_step *pe = sampi_stragglar_step(s, r, st->peer);
            rc |= fprintf(fp, "%d %d %d %d %s\n", r, g, st->peer, st->send_chunk,
                          pe->op == SAMPI_STRAGGLAR_REDUCE ? "reduce" : "copy") < 0;
        }
    return rc ? -EIO : 0;
}
