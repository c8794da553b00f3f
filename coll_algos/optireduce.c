/*
 * optireduce.c - `optireduce`: approximate, tail-bounded allreduce for float
 * SUM, after OptiReduce ("OptiReduce: Resilient and Tail-Optimal AllReduce for
 * Distributed Deep Learning in the Cloud", NSDI 2025; docs/design.md, 'The
 * published designs').
 *
 * What:     Transpose AllReduce over unreliable datagrams.  Rank j owns shard
 *           j of the (Hadamard-encoded) vector.  Stage 1: every rank sends
 *           shard j to owner j, which adds what arrives to its own.  Stage 2:
 *           every owner sends its reduced shard to every rank.  Each stage
 *           ends when everything arrived, or early (every sender's
 *           tail-marked packets arrived and the line went quiet for a
 *           fraction of the agreed estimate), or at the hard bound t_B.
 *           What has not arrived by then is dropped: zero in the Hadamard
 *           domain, so the loss becomes small noise over its block.
 * Accepts:  MPI_FLOAT with MPI_SUM (average with sampi_optireduce_average),
 *           p >= 2, count x 4 >= sampi_optireduce_min_bytes, MPI_IN_PLACE.
 *           Anything else runs as `ring` (dispatcher, 'unsuited').
 * Cost:     2 (p-1)/p n beta over the datagram path, like ring, in 2 stages
 *           of ceil((p-1)/I) rounds (incast I) plus two barriers, plus
 *           2 n log2(B) flops for the transform; bounded by 2 t_B whatever
 *           the tail does.
 * Stragglers: a packet that is late by more than the stage's slack is simply
 *           lost (counted per stage and per peer); a rank late to the
 *           barrier delays everyone (sync=barrier, the public code's mode).
 * Exactness: approximate.  Without loss the result is the sum up to float
 *           rounding (about log2(B) extra roundings per element).  Stage-1
 *           loss is the same on every rank (everyone gets the owner's
 *           shard); stage-2 loss differs per rank unless
 *           sampi_optireduce_consistency makes them agree.
 *
 * Example, p = 3, count 6, no transform: shards [0,2) [2,4) [4,6).  Stage 1:
 *   rank 0 sends x0[2,4) to 1 and x0[4,6) to 2, and so on; rank 1 ends with
 *   s[2,4) = x0+x1+x2 on [2,4).  Stage 2: rank 1 sends s[2,4) to 0 and 2.
 *   If rank 2's copy of s[2,4) is lost, rank 2 holds zeros there (none) or
 *   every rank does (union_zero), or rank 2 asks rank 1 for exactly that
 *   packet again over MPI (refetch).
 */
#include "optireduce.h"
#include "algos.h"
#include "dgram.h"
#include "dgram_fault.h"
#include "hadamard.h"
#include "netdev.h"
#include "opti_hdr.h"
#include "optireduce_plan.h"
#include "optireduce_repair.h"
#include "optireduce_timeout.h"
#include "sampi_internal.h"
#include "stats.h"
#include "wait.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NCLASS     64 /* size classes: ceil(log2(bytes)) */
#define BURST      16 /* packets sent between two polls of the receive side */
#define HT_SEED    0x9E3779B97F4A7C15ull
#define CALIB_KEEP 256

enum consistency { CONS_NONE, CONS_UNION_ZERO, CONS_REFETCH };
enum on_excess { EXCESS_WARN, EXCESS_RELIABLE, EXCESS_ERROR };

static const char *const consistency_names[] = {"none", "union_zero", "refetch", NULL};
static const char *const excess_names[] = {"warn", "reliable", "error", NULL};

/* Timing state of one size class and stage (times in ns). */
struct tclass {
    int ncalib;
    double calib[CALIB_KEEP];
    double t_b, t_c;
};

struct sampi_optireduce_state {
    int rank, size;
    struct sampi_dgram *dg;
    int failed; /* set-up failed on some rank: calls go to PMPI_Allreduce */
    /* a wait of the set-up failed (a negative errno): the ranks may not
     * agree on anything, so the call fails and the caller revokes */
    int broken;
    uint32_t job_key, comm_id, seq;
    int incast;
    int want;               /* incast this rank asked for after the previous call (advertised) */
    unsigned warned_excess; /* excess-loss calls logged: the first one only */
    uint32_t per_pkt;
    enum consistency cons;
    enum on_excess excess;
    uint8_t *tx, *rx;
    float *w, *tmp;
    size_t wcap, tmpcap;
    uint8_t *seen; /* packet bitmap of the armed stage, per source */
    size_t seencap;
    uint32_t *flow;     /* elements expected from each source, armed stage */
    size_t *seen_base;  /* first bit of each source in `seen` */
    uint64_t *rcv_from; /* elements received from each source, armed stage */
    uint8_t *tail_seen; /* per source */
    double *peer_est;   /* t_C advertised by each source (ns), armed stage */
    int *dests;         /* one round's destinations */
    int min_vote;       /* smallest incast vote seen in this call */
    struct tclass cls[NCLASS][2];
    _Atomic uint64_t counters[SAMPI_OPTI_C__COUNT];
    _Atomic uint64_t *peer_lost;
};

/* One call's shape, the same on every rank. */
struct call {
    const struct sampi_coll_args *a;
    struct sampi_ht_layout L;
    struct tclass *tc[2];
    int calibrating;
    double t_b; /* ns */
    uint32_t seq;
    /* per stage results */
    uint64_t expected[2], received[2];
    double elapsed[2];
    enum sampi_opti_end end[2];
    double t_a;
    int error;
};

/* Serialises comm_counter: communicators may be set up from several threads. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t comm_counter;

static void cadd(struct sampi_optireduce_state *st, enum sampi_opti_counter k, uint64_t v)
{
    atomic_fetch_add_explicit(&st->counters[k], v, memory_order_relaxed);
}

static void cset(struct sampi_optireduce_state *st, enum sampi_opti_counter k, uint64_t v)
{
    atomic_store_explicit(&st->counters[k], v, memory_order_relaxed);
}

/* The state of a rank that could not allocate its own and whose wait for
 * the others then failed: the call must still fail, not fall back to
 * PMPI_Allreduce (see state_create); shared, never written. */
static struct sampi_optireduce_state unreached = {.broken = -ETIMEDOUT};

/* Every exchange optireduce makes on its own behalf goes over SAMPI's
 * private communicator, nonblocking, waited for through the communicator's
 * waiter: a silent rank ends it at sampi_timeout_ms, a revocation at once,
 * and the error goes up to the caller, which revokes.  The waiter works on
 * private copies, so nothing here is written after a failed wait. */
static int agree(const struct sampi_coll_ctx *x, void *buf, int count, MPI_Datatype dt, MPI_Op op)
{
    struct sampi_waiter w;
    x->host->waiter(x->owner, &w, "optireduce's agreement");
    return sampi_waiter_allreduce(&w, buf, buf, count, dt, op, x->ctl);
}

/* sync=barrier: every receiver is armed before anyone sends. */
static int barrier(const struct sampi_coll_ctx *x)
{
    struct sampi_waiter w;
    x->host->waiter(x->owner, &w, "optireduce's barrier");
    return sampi_waiter_barrier(&w, x->ctl);
}

/* The destroy hook: the caller runs it while MPI still works (communicator
 * freed, or MPI_Finalize before PMPI_Finalize), so the datagram path closes
 * cleanly. */
static void state_destroy(void *state)
{
    struct sampi_optireduce_state *st = state;
    if (st == &unreached)
        return;
    if (st->dg)
        st->dg->ops->close(st->dg);
    free(st->tx);
    free(st->rx);
    free(st->w);
    free(st->tmp);
    free(st->seen);
    free(st->flow);
    free(st->seen_base);
    free(st->rcv_from);
    free(st->tail_seen);
    free(st->peer_est);
    free(st->dests);
    free((void *)st->peer_lost);
    free(st);
}

static int name_index(const char *const *names, const char *text, int dflt, const char *var)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], text) == 0)
            return i;
    sampi_log_warn("%s: unknown value '%s', using '%s'", var, text, names[dflt]);
    return dflt;
}

static uint32_t fnv(uint32_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return (h ^ 0xff) * 16777619u;
}

/* Every setting that changes the datagram pattern, hashed: set-up checks
 * that all ranks agree (sampi_comm_agree covers only the core variables). */
static uint32_t settings_hash(void)
{
    static const enum sampi_cvar_id ids[] = {
        SAMPI_CVAR_OPTIREDUCE_NETDEV,        SAMPI_CVAR_OPTIREDUCE_MIN_BYTES,
        SAMPI_CVAR_OPTIREDUCE_AVERAGE,       SAMPI_CVAR_OPTIREDUCE_HADAMARD,
        SAMPI_CVAR_OPTIREDUCE_HT_BLOCK,      SAMPI_CVAR_OPTIREDUCE_PAYLOAD_BYTES,
        SAMPI_CVAR_OPTIREDUCE_TB_MS,         SAMPI_CVAR_OPTIREDUCE_TB_MAX_MS,
        SAMPI_CVAR_OPTIREDUCE_TB_MARGIN_PCT, SAMPI_CVAR_OPTIREDUCE_CALIB_ITERS,
        SAMPI_CVAR_OPTIREDUCE_LAST_PCT,      SAMPI_CVAR_OPTIREDUCE_INCAST,
        SAMPI_CVAR_OPTIREDUCE_CONSISTENCY,   SAMPI_CVAR_OPTIREDUCE_MAX_DROP_PPM,
        SAMPI_CVAR_OPTIREDUCE_ON_EXCESS,     SAMPI_CVAR_OPTIREDUCE_JOB_KEY,
    };
    char buf[SAMPI_CVAR_STRING_MAX];
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        h = fnv(h, sampi_cvar_text(ids[i], buf, sizeof(buf)));
    return h;
}

/* Open the transport named by sampi_optireduce_netdev; collective, the same
 * answer on every rank (netdev/dgram.c agrees on loading its module first)
 * unless a wait failed (then st->broken). */
static int open_dgram(struct sampi_optireduce_state *st, const struct sampi_coll_ctx *x)
{
    char name[SAMPI_CVAR_STRING_MAX];
    struct sampi_waiter w;
    sampi_cvar_text(SAMPI_CVAR_OPTIREDUCE_NETDEV, name, sizeof(name));
    x->host->waiter(x->owner, &w, "opening optireduce's datagram path");
    int rc = sampi_dgram_open(x->ctl, &w, name, &st->dg);
    if (rc && rc != -ENOENT && rc != -ENODEV)
        st->broken = rc;
    else if (rc && st->rank == 0)
        sampi_log_warn("optireduce: no datagram transport opened on every rank");
    return rc;
}

/* One agreement of the set-up; a failed wait marks the state broken. */
static int setup_agree(struct sampi_optireduce_state *st, const struct sampi_coll_ctx *x, void *buf,
                       int count, MPI_Datatype dt, MPI_Op op)
{
    int rc = agree(x, buf, count, dt, op);
    if (rc)
        st->broken = rc;
    return rc;
}

/* Job key, communicator id and transport: collective at the first call. */
static int setup(struct sampi_optireduce_state *st, const struct sampi_coll_ctx *x)
{
    char err[256], text[SAMPI_CVAR_STRING_MAX];
    int rc = 0;
    long h[2];
    uint32_t hash = settings_hash();
    h[0] = (long)hash;
    h[1] = -(long)hash;
    if ((rc = setup_agree(st, x, h, 2, MPI_LONG, MPI_MAX)))
        return rc;
    if (h[0] != -h[1]) {
        if (st->rank == 0)
            sampi_log_warn("optireduce: ranks have different sampi_optireduce_* settings");
        return -EINVAL;
    }
    unsigned key = (unsigned)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_JOB_KEY);
    if (!key && st->rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        key = (unsigned)(ts.tv_nsec ^ ts.tv_sec * 2654435761u ^ (unsigned)getpid() << 16) | 1u;
    }
    /* rank 0's key (the others offer 0: a set key is the same everywhere,
     * the settings hash says so) and the largest communicator count, in
     * one exchange */
    unsigned ids[2] = {st->rank == 0 ? key : 0, 0};
    pthread_mutex_lock(&lock);
    ids[1] = ++comm_counter;
    pthread_mutex_unlock(&lock);
    if ((rc = setup_agree(st, x, ids, 2, MPI_UNSIGNED, MPI_MAX)))
        return rc;
    pthread_mutex_lock(&lock);
    if (comm_counter < ids[1])
        comm_counter = ids[1];
    pthread_mutex_unlock(&lock);
    st->job_key = ids[0];
    st->comm_id = ids[1];
    st->cons = name_index(consistency_names,
                          sampi_cvar_text(SAMPI_CVAR_OPTIREDUCE_CONSISTENCY, text, sizeof(text)),
                          CONS_NONE, "sampi_optireduce_consistency");
    st->excess = name_index(excess_names,
                            sampi_cvar_text(SAMPI_CVAR_OPTIREDUCE_ON_EXCESS, text, sizeof(text)),
                            EXCESS_WARN, "sampi_optireduce_on_excess");
    int n = st->size;
    st->flow = calloc((size_t)n, sizeof(*st->flow));
    st->seen_base = calloc((size_t)n + 1, sizeof(*st->seen_base));
    st->rcv_from = calloc((size_t)n, sizeof(*st->rcv_from));
    st->tail_seen = calloc((size_t)n, 1);
    st->peer_est = calloc((size_t)n, sizeof(*st->peer_est));
    st->peer_lost = calloc((size_t)n, sizeof(*st->peer_lost));
    st->dests = calloc((size_t)n, sizeof(*st->dests));
    int ok = st->flow && st->seen_base && st->rcv_from && st->tail_seen && st->peer_est &&
             st->peer_lost && st->dests;
    if ((rc = setup_agree(st, x, &ok, 1, MPI_INT, MPI_MIN)))
        return rc;
    if (!ok)
        return -ENOMEM;

    if ((rc = open_dgram(st, x)))
        return rc;
    struct sampi_fault_cfg fc;
    rc = sampi_fault_parse(sampi_cvar_text(SAMPI_CVAR_OPTIREDUCE_FAULT, text, sizeof(text)), &fc,
                           err, sizeof(err));
    if (rc)
        sampi_log_warn("%s; injecting nothing", err);
    else if (sampi_fault_active(&fc)) {
        struct sampi_dgram *f;
        if (sampi_dgram_fault_wrap(st->dg, &fc, &f) == 0)
            st->dg = f;
    }
    size_t payload = (size_t)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_PAYLOAD_BYTES);
    if (payload == 0 || payload + SAMPI_OPTI_HDR_BYTES > st->dg->mtu)
        payload = st->dg->mtu - SAMPI_OPTI_HDR_BYTES;
    payload &= ~(size_t)3;
    if (payload > 4 * 65535u)
        payload = 4 * 65535u;
    st->per_pkt = (uint32_t)(payload / 4);
    cset(st, SAMPI_OPTI_C_PKT_FLOATS, st->per_pkt);
    /* the mtu is the backend's, the same on every rank, but a zero payload
     * must fail everywhere alike */
    st->tx = malloc(st->dg->mtu);
    st->rx = aligned_alloc(64, (st->dg->mtu + 63) & ~(size_t)63);
    ok = st->per_pkt > 0 && st->tx && st->rx;
    if ((rc = setup_agree(st, x, &ok, 1, MPI_INT, MPI_MIN)))
        return rc;
    if (!ok)
        return -ENOMEM;
    int I = (int)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_INCAST);
    st->incast = st->want = I < 1 || I > n - 1 ? n - 1 : I;
    cset(st, SAMPI_OPTI_C_INCAST, (uint64_t)st->incast);
    sampi_log(SAMPI_LOG_SETUP,
              "optireduce: communicator of size %d on %s, id %u, %u floats per datagram", n,
              st->dg->ops->name, st->comm_id, st->per_pkt);
    return 0;
}

/* The create hook, at the first optireduce call on a communicator (every
 * rank makes it).  A set-up that failed is kept, marked failed: the calls
 * then go to PMPI_Allreduce without trying again.  One whose wait failed is
 * kept marked broken: the call fails (and the caller revokes), since the
 * ranks may not have agreed on anything. */
static int state_create(const struct sampi_coll_args *a, void **out)
{
    struct sampi_optireduce_state *st = calloc(1, sizeof(*st));
    int ok = st != NULL;
    /* every rank must know whether every other one has state to set up */
    int rc = agree(a->ctx, &ok, 1, MPI_INT, MPI_MIN);
    if (rc) {
        if (st)
            st->broken = rc;
        *out = st ? st : &unreached;
        return 0;
    }
    if (!ok) {
        free(st);
        return -ENOMEM;
    }
    st->rank = a->ctx->rank;
    st->size = a->ctx->size;
    if (setup(st, a->ctx)) {
        st->failed = 1;
        if (st->dg)
            st->dg->ops->close(st->dg);
        st->dg = NULL;
    }
    *out = st;
    return 0;
}

const struct sampi_algo_state_hooks sampi_optireduce_state = {state_create, state_destroy};

int sampi_optireduce_suited(const struct sampi_coll_args *a)
{
    long long min = sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_MIN_BYTES);
    return a->dt.elem == SAMPI_ELEM_F32 && a->op == SAMPI_OP_SUM && a->ctx->size >= 2 &&
           a->count <= UINT32_MAX / 2 && (long long)(a->count * 4) >= min;
}

static int grow(void **p, size_t *cap, size_t bytes)
{
    if (bytes <= *cap)
        return 0;
    void *q = NULL;
    if (posix_memalign(&q, 64, bytes))
        return -ENOMEM;
    free(*p);
    *p = q;
    *cap = bytes;
    return 0;
}

static unsigned size_class(size_t bytes)
{
    unsigned k = 0;
    while (k < NCLASS - 1 && ((size_t)1 << k) < bytes)
        k++;
    return k;
}

/* Arm stage `g` (0 scatter-reduce, 1 gather): what each source sends us. */
static int arm(struct sampi_optireduce_state *st, struct call *cl, int g)
{
    int n = st->size, me = st->rank;
    size_t bits = 0;
    for (int s = 0; s < n; s++) {
        st->flow[s] = s == me ? 0 : (uint32_t)sampi_ht_shard_len(&cl->L, g ? s : me);
        st->seen_base[s] = bits;
        bits += sampi_tar_npkts(st->flow[s], st->per_pkt);
        st->rcv_from[s] = 0;
        st->tail_seen[s] = s == me || st->flow[s] == 0;
        st->peer_est[s] = 0;
    }
    st->seen_base[n] = bits;
    if (grow((void **)&st->seen, &st->seencap, bits / 8 + 1))
        return -ENOMEM;
    memset(st->seen, 0, bits / 8 + 1);
    return 0;
}

/* Take one datagram in: check it, place it, count it. */
static void take(struct sampi_optireduce_state *st, struct call *cl, int g, ssize_t len,
                 struct sampi_opti_stage_clock *clk, uint64_t *got_elems)
{
    struct sampi_opti_hdr h;
    struct sampi_opti_expect e = {st->job_key, st->comm_id, cl->seq,     g,
                                  st->size,    st->rank,    st->per_pkt, st->flow};
    enum sampi_opti_verdict v = sampi_opti_hdr_accept(st->rx, (size_t)len, &e, &h);
    if (v != SAMPI_OPTI_OK) {
        cadd(st, SAMPI_OPTI_C_BAD_PKTS, 1);
        if (v == SAMPI_OPTI_STALE || v == SAMPI_OPTI_WRONG_STAGE)
            cadd(st, SAMPI_OPTI_C_STALE_PKTS, 1);
        return;
    }
    size_t bit = st->seen_base[h.src] + h.elem_off / st->per_pkt;
    if (st->seen[bit / 8] & (1u << (bit % 8))) {
        cadd(st, SAMPI_OPTI_C_DUP_PKTS, 1);
        return;
    }
    st->seen[bit / 8] |= (uint8_t)(1u << (bit % 8));
    const float *pl = (const float *)(st->rx + SAMPI_OPTI_HDR_BYTES);
    if (g == 0) {
        float *acc = st->w + sampi_ht_shard_off(&cl->L, st->rank) + h.elem_off;
        for (uint32_t i = 0; i < h.nelem; i++)
            acc[i] += pl[i];
    } else {
        memcpy(st->w + sampi_ht_shard_off(&cl->L, h.src) + h.elem_off, pl,
               (size_t)h.nelem * sizeof(float));
    }
    st->rcv_from[h.src] += h.nelem;
    *got_elems += h.nelem;
    clk->received += h.nelem;
    clk->last_rx_ns = sampi_now_ns();
    if ((h.flags & (SAMPI_OPTI_F_LAST_PCTL | SAMPI_OPTI_F_FIN)) && !st->tail_seen[h.src]) {
        st->tail_seen[h.src] = 1;
        clk->tails_seen++;
    }
    if (h.t_est_100us)
        st->peer_est[h.src] = h.t_est_100us * 1e5;
    if (h.incast_want && h.incast_want < st->min_vote)
        st->min_vote = h.incast_want;
}

/* Drain what is already there (deadline in the past: one poll each). */
static int poll_rx(struct sampi_optireduce_state *st, struct call *cl, int g,
                   struct sampi_opti_stage_clock *clk, uint64_t *got, int64_t until)
{
    for (int i = 0; i < 4 * BURST; i++) {
        int peer;
        ssize_t r = st->dg->ops->recv(st->dg, st->rx, st->dg->mtu, &peer, until);
        if (r == -ETIMEDOUT)
            return 0;
        if (r < 0)
            return (int)r;
        take(st, cl, g, r, clk, got);
        until = 0;
    }
    return 0;
}

static void fill_hdr(struct sampi_optireduce_state *st, struct call *cl, int g,
                     struct sampi_opti_hdr *h)
{
    double tc = cl->tc[g]->t_c / 1e5;
    memset(h, 0, sizeof(*h));
    h->flags =
        (uint8_t)((g ? SAMPI_OPTI_F_GATHER : 0) | (cl->calibrating ? SAMPI_OPTI_F_CALIB : 0));
    h->job_key = st->job_key;
    h->comm_id = st->comm_id;
    h->seq = cl->seq;
    h->src = (uint16_t)st->rank;
    h->t_est_100us = (uint16_t)(tc > 65535 ? 65535 : tc < 1 && tc > 0 ? 1 : tc);
    h->incast_want = (uint8_t)(st->want > 255 ? 255 : st->want);
    h->loss_pm = 255;
}

/* Run stage g: send our flows round by round while draining receipts, then
 * receive until the stage ends.  0 or a negative errno (transport failure:
 * the stage still runs to its end so that the peers are not left waiting). */
static int run_stage(struct sampi_optireduce_state *st, struct call *cl, int g)
{
    int n = st->size, me = st->rank, rc = 0;
    const int64_t t0 = sampi_now_ns();
    struct sampi_opti_stage_clock clk = {
        .deadline_ns = t0 + (int64_t)cl->t_b,
        .last_rx_ns = t0,
        .expected = 0,
        .senders = n - 1,
    };
    for (int s = 0; s < n; s++) {
        clk.expected += st->flow[s];
        clk.tails_seen += s != me && st->tail_seen[s];
    }
    uint64_t got = 0;
    const double tail_pct = (double)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_LAST_PCT);
    struct sampi_opti_hdr h;
    fill_hdr(st, cl, g, &h);
    int *dests = st->dests;
    int rounds = sampi_tar_rounds(n, st->incast);
    int I = st->incast;
    unsigned burst = 0, spins = 0;
    for (int k = 0; k < rounds && !rc; k++) {
        int nd = sampi_tar_round_dests(n, me, I, k, dests);
        uint32_t maxp = 0;
        for (int i = 0; i < nd; i++) {
            uint32_t len = (uint32_t)sampi_ht_shard_len(&cl->L, g ? me : dests[i]);
            uint32_t np = sampi_tar_npkts(len, st->per_pkt);
            maxp = np > maxp ? np : maxp;
        }
        for (uint32_t p = 0; p < maxp && !rc; p++) {
            for (int i = 0; i < nd && !rc; i++) {
                int d = dests[i], j = g ? me : d;
                uint32_t len = (uint32_t)sampi_ht_shard_len(&cl->L, j);
                uint32_t np = sampi_tar_npkts(len, st->per_pkt);
                if (p >= np)
                    continue;
                h.flow_nelem = len;
                h.elem_off = p * st->per_pkt;
                h.nelem =
                    (uint16_t)(len - h.elem_off < st->per_pkt ? len - h.elem_off : st->per_pkt);
                h.flags = (uint8_t)((h.flags & (SAMPI_OPTI_F_GATHER | SAMPI_OPTI_F_CALIB)) |
                                    sampi_tar_pkt_flags(p, np, sampi_tar_tail_pkts(np, tail_pct)));
                sampi_opti_hdr_pack(&h, st->tx);
                memcpy(st->tx + SAMPI_OPTI_HDR_BYTES,
                       st->w + sampi_ht_shard_off(&cl->L, j) + h.elem_off,
                       (size_t)h.nelem * sizeof(float));
                size_t bytes = SAMPI_OPTI_HDR_BYTES + (size_t)h.nelem * sizeof(float);
                for (;;) {
                    int s = st->dg->ops->send(st->dg, d, st->tx, bytes);
                    if (s == 0)
                        break;
                    if (s != -EAGAIN) {
                        rc = s;
                        break;
                    }
                    /* the queue is full: let the receive side make room */
                    rc = poll_rx(st, cl, g, &clk, &got, 0);
                    if (rc)
                        break;
                    sampi_wait_pause(&spins);
                }
                spins = 0;
                if (++burst % BURST == 0 && !rc)
                    rc = poll_rx(st, cl, g, &clk, &got, 0);
                /* the sender timer: past the deadline nothing sent still counts */
                if (sampi_now_ns() >= clk.deadline_ns)
                    goto sent;
            }
        }
    }
sent:;
    /* t_A: the median of the estimates the senders advertised, and ours */
    double early = (double)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_EARLY_PCT) / 100.0;
    for (;;) {
        double est[n];
        int ne = 0;
        if (cl->tc[g]->t_c > 0)
            est[ne++] = cl->tc[g]->t_c;
        for (int s = 0; s < n; s++)
            if (s != me && st->peer_est[s] > 0)
                est[ne++] = st->peer_est[s];
        cl->t_a = sampi_opti_agreed(est, ne, cl->t_b);
        clk.early_gap_ns = cl->calibrating || ne == 0 ? 0 : (int64_t)(early * cl->t_a);
        enum sampi_opti_end e = sampi_opti_stage_check(&clk, sampi_now_ns());
        if (e != SAMPI_OPTI_END_NONE) {
            cl->end[g] = e;
            break;
        }
        int peer;
        ssize_t r =
            st->dg->ops->recv(st->dg, st->rx, st->dg->mtu, &peer, sampi_opti_stage_wake(&clk));
        if (r >= 0)
            take(st, cl, g, r, &clk, &got);
        else if (r != -ETIMEDOUT && !rc)
            rc = (int)r;
        if (rc && r != -ETIMEDOUT && r < 0)
            sampi_wait_pause(&spins); /* a failing transport must not spin */
    }
    cl->expected[g] = clk.expected;
    cl->received[g] = got;
    cl->elapsed[g] = (double)(sampi_now_ns() - t0);
    return rc;
}

/* Zero what stage 2 did not deliver.  With union_zero the ranks first OR
 * their maps of missing packets, laid out alike on every rank (every shard,
 * the own one included, which is never missing locally), and all zero the
 * union, the owners included, so that every rank holds the same bits. */
static int fill_missing(struct sampi_optireduce_state *st, struct call *cl)
{
    const struct sampi_coll_ctx *x = cl->a->ctx;
    int n = st->size, me = st->rank, rc = 0;
    size_t total = 0, *base = malloc(((size_t)n + 1) * sizeof(size_t));
    uint8_t *miss = NULL;
    if (!base)
        return -ENOMEM;
    for (int s = 0; s < n; s++) {
        base[s] = total;
        total += sampi_tar_npkts((uint32_t)sampi_ht_shard_len(&cl->L, s), st->per_pkt);
    }
    base[n] = total;
    miss = calloc(total / 8 + 1, 1);
    int ok = miss != NULL;
    /* union_zero reduces the maps: a rank without one must not leave the
     * others waiting in that reduction */
    if (st->cons == CONS_UNION_ZERO && (rc = agree(x, &ok, 1, MPI_INT, MPI_MIN)))
        goto fail;
    if (!ok) {
        rc = -ENOMEM;
        goto fail;
    }
    for (int s = 0; s < n; s++)
        for (size_t b = st->seen_base[s]; s != me && b < st->seen_base[s + 1]; b++)
            if (!(st->seen[b / 8] & (1u << (b % 8)))) {
                size_t gb = base[s] + (b - st->seen_base[s]);
                miss[gb / 8] |= (uint8_t)(1u << (gb % 8));
            }
    if (st->cons == CONS_UNION_ZERO &&
        (rc = agree(x, miss, (int)(total / 8 + 1), MPI_BYTE, MPI_BOR)))
        goto fail;
    for (int s = 0; s < n; s++) {
        float *dst = st->w + sampi_ht_shard_off(&cl->L, s);
        size_t len = sampi_ht_shard_len(&cl->L, s);
        for (size_t b = base[s]; b < base[s + 1]; b++)
            if (miss[b / 8] & (1u << (b % 8))) {
                size_t off = (b - base[s]) * st->per_pkt;
                size_t cnt = len - off < st->per_pkt ? len - off : st->per_pkt;
                memset(dst + off, 0, cnt * sizeof(float));
            }
    }
fail:
    free(base);
    free(miss);
    return rc;
}

/* refetch: every rank asks each owner, over MPI (reliable) on SAMPI's
 * private communicator, for exactly the stage-2 packets it missed, and the
 * owners answer (optireduce_repair.c), so all hold the owners' bits; a
 * loss-free call costs one small allreduce. */
static int refetch(struct sampi_optireduce_state *st, struct call *cl)
{
    int n = st->size;
    size_t *off = malloc((size_t)n * sizeof(size_t)), *len = malloc((size_t)n * sizeof(size_t));
    for (int s = 0; off && len && s < n; s++) {
        off[s] = sampi_ht_shard_off(&cl->L, s);
        len[s] = sampi_ht_shard_len(&cl->L, s);
    }
    uint64_t repaired = 0;
    const struct sampi_coll_ctx *x = cl->a->ctx;
    struct sampi_waiter w;
    x->host->waiter(x->owner, &w, "optireduce's repair");
    /* NULL arrays make every rank return -ENOMEM together */
    int rc = sampi_opti_repair(x->ctl, &w, st->w, off, len, st->per_pkt, st->seen, st->seen_base,
                               &repaired);
    cadd(st, SAMPI_OPTI_C_REPAIRED, 4 * repaired);
    free(off);
    free(len);
    return rc;
}

/* After the call: timing estimates, calibration, incast, counters. */
static void account(struct sampi_optireduce_state *st, struct call *cl)
{
    for (int g = 0; g < 2; g++) {
        struct tclass *tc = cl->tc[g];
        double rho = cl->expected[g] ? (double)cl->received[g] / (double)cl->expected[g] : 1;
        tc->t_c =
            sampi_opti_ewma(tc->t_c, sampi_opti_extrapolate(cl->elapsed[g], rho, cl->t_b), 0.125);
        if (cl->calibrating && tc->ncalib < CALIB_KEEP)
            tc->calib[tc->ncalib++] = cl->elapsed[g];
        uint64_t lost = cl->expected[g] - cl->received[g];
        cadd(st, g ? SAMPI_OPTI_C_EXPECTED2 : SAMPI_OPTI_C_EXPECTED1, 4 * cl->expected[g]);
        cadd(st, g ? SAMPI_OPTI_C_RECEIVED2 : SAMPI_OPTI_C_RECEIVED1, 4 * cl->received[g]);
        cadd(st, g ? SAMPI_OPTI_C_LOST2 : SAMPI_OPTI_C_LOST1, 4 * lost);
        cadd(st, (g ? SAMPI_OPTI_C_END2_COMPLETE : SAMPI_OPTI_C_END1_COMPLETE) + cl->end[g], 1);
    }
    uint64_t exp = cl->expected[0] + cl->expected[1];
    uint64_t lost = exp - cl->received[0] - cl->received[1];
    double drop = exp ? (double)lost / (double)exp : 0;
    cset(st, SAMPI_OPTI_C_DROP_PPM, (uint64_t)(drop * 1e6 + 0.5));
    cset(st, SAMPI_OPTI_C_TB_US, (uint64_t)(cl->t_b / 1e3));
    cset(st, SAMPI_OPTI_C_TA_US, (uint64_t)(cl->t_a / 1e3));
    cadd(st, SAMPI_OPTI_C_CALLS, 1);
    if (cl->calibrating)
        cadd(st, SAMPI_OPTI_C_CALIB_CALLS, 1);
    int hard = cl->end[0] == SAMPI_OPTI_END_HARD || cl->end[1] == SAMPI_OPTI_END_HARD;
    int want =
        sampi_opti_incast_next(st->incast, st->size, hard, drop,
                               (double)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_DROP_HI_PPM) / 1e6);
    /* the peers' votes seen in this call were cast after the previous one:
     * the smallest wish wins, so a receiver that saw trouble slows everyone */
    st->incast = want < st->min_vote ? want : st->min_vote;
    st->want = want;
    cset(st, SAMPI_OPTI_C_INCAST, (uint64_t)st->incast);
}

/* The stage bound for this call; at the end of calibration, agree on t_B. */
static int plan_timeouts(struct sampi_optireduce_state *st, struct call *cl, size_t bytes)
{
    unsigned k = size_class(bytes);
    cl->tc[0] = &st->cls[k][0];
    cl->tc[1] = &st->cls[k][1];
    double tbmax = (double)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_TB_MAX_MS) * 1e6;
    long long fixed = sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_TB_MS);
    if (fixed > 0) {
        cl->t_b = (double)fixed * 1e6;
        return 0;
    }
    int iters = (int)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_CALIB_ITERS);
    if (iters > CALIB_KEEP)
        iters = CALIB_KEEP;
    if (cl->tc[0]->t_b <= 0 && cl->tc[0]->ncalib >= iters) {
        /* every rank reaches this at the same call: collective is safe */
        double p95[2];
        for (int g = 0; g < 2; g++)
            p95[g] = sampi_opti_pctl(cl->tc[g]->calib, cl->tc[g]->ncalib, 95);
        int rc = agree(cl->a->ctx, p95, 2, MPI_DOUBLE, MPI_MAX);
        if (rc)
            return rc;
        double margin = (double)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_TB_MARGIN_PCT) / 100.0;
        /* one bound for both stages: the larger, so that rank clocks need not agree */
        double tb = margin * (p95[0] > p95[1] ? p95[0] : p95[1]);
        tb = tb > tbmax ? tbmax : tb < 1e5 ? 1e5 : tb;
        cl->tc[0]->t_b = cl->tc[1]->t_b = tb;
        sampi_log(SAMPI_LOG_SETUP, "optireduce: %zu-byte class calibrated, t_B = %.3f ms",
                  (size_t)1 << k, tb / 1e6);
    }
    cl->calibrating = cl->tc[0]->t_b <= 0;
    cl->t_b = cl->calibrating ? tbmax : cl->tc[0]->t_b;
    return 0;
}

static int fall_back(const struct sampi_coll_args *a)
{
    const struct sampi_coll_ctx *x = a->ctx;
    int rc = x->host->note_substitute(x->owner, SAMPI_FALLBACK_BROKEN, SAMPI_ALGO_NATIVE, NULL);
    return rc ? rc : sampi_allreduce_native(a);
}

int sampi_allreduce_optireduce(const struct sampi_coll_args *a)
{
    struct sampi_optireduce_state *st = a->ctx->state;
    if (st && st->broken)
        return st->broken;
    if (!st || st->failed)
        return fall_back(a);
    struct call cl = {.a = a};
    int rc = 0, n = st->size;
    const float *x = a->sendbuf == MPI_IN_PLACE ? a->recvbuf : a->sendbuf;
    cl.seq = ++st->seq;
    st->min_vote = 255;
    sampi_ht_layout_init(&cl.L, a->count, n, (int)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_HADAMARD),
                         (size_t)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_HT_BLOCK), 1024);
    int ok = !grow((void **)&st->w, &st->wcap, cl.L.total * sizeof(float)) &&
             !grow((void **)&st->tmp, &st->tmpcap, cl.L.bmax * sizeof(float) + 64);
    if ((rc = agree(a->ctx, &ok, 1, MPI_INT, MPI_MIN)))
        return rc;
    if (!ok)
        return fall_back(a);
    rc = plan_timeouts(st, &cl, a->count * 4);
    if (rc)
        return rc;
    uint64_t seed = sampi_ht_seed(HT_SEED, st->job_key, st->comm_id, cl.seq);
    int64_t t_start = sampi_now_ns();
    sampi_ht_encode(&cl.L, x, st->w, seed, st->tmp);
    int64_t t_sync[2] = {0, 0}, t_encoded = sampi_now_ns();
    sampi_dgram_fault_bypass(st->dg, cl.calibrating);

    int err = 0;
    for (int g = 0; g < 2; g++) {
        int64_t t_arm = sampi_now_ns();
        if (arm(st, &cl, g))
            return -EIO;
        if ((rc = barrier(a->ctx)))
            return rc;
        t_sync[g] = sampi_now_ns() - t_arm;
        int r = run_stage(st, &cl, g);
        err = err ? err : r;
        for (int s = 0; s < n; s++)
            if (s != st->rank)
                atomic_fetch_add_explicit(&st->peer_lost[s], 4 * (st->flow[s] - st->rcv_from[s]),
                                          memory_order_relaxed);
    }
    rc = fill_missing(st, &cl);
    if (!rc && st->cons == CONS_REFETCH)
        rc = refetch(st, &cl);
    if (rc)
        return rc;
    account(st, &cl);

    /* the excess-loss guard: the worst rank decides, so all take one branch */
    double drop = (double)sampi_optireduce_counter(st, SAMPI_OPTI_C_DROP_PPM);
    double limit = (double)sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_MAX_DROP_PPM);
    if (st->excess != EXCESS_WARN && (rc = agree(a->ctx, &drop, 1, MPI_DOUBLE, MPI_MAX)))
        return rc;
    if (drop > limit) {
        cadd(st, SAMPI_OPTI_C_EXCESS, 1);
        if (st->excess == EXCESS_WARN) {
            if (!st->warned_excess++)
                sampi_log_warn("optireduce: call %u dropped %.3f%% of its data (limit %.3f%%); "
                               "further ones are only counted (sampi_comm_optireduce_excess)",
                               cl.seq, drop / 1e4, limit / 1e4);
        } else if (st->excess == EXCESS_RELIABLE)
            return sampi_allreduce_native(a); /* the input is untouched until decode */
        else
            return -EIO;
    }
    float scale = sampi_cvar_int(SAMPI_CVAR_OPTIREDUCE_AVERAGE) ? 1.0f / (float)n : 1.0f;
    int64_t t_decode = sampi_now_ns();
    sampi_ht_decode(&cl.L, st->w, a->recvbuf, seed, scale, st->tmp);
    if (sampi_log_enabled(SAMPI_LOG_CALL))
        sampi_log(SAMPI_LOG_CALL,
                  "optireduce: call %u: encode %.2f ms, sync %.2f + %.2f ms, stages %.2f + %.2f ms "
                  "(%s, %s), decode %.2f ms, total %.2f ms, incast %d",
                  cl.seq, (double)(t_encoded - t_start) / 1e6, (double)t_sync[0] / 1e6,
                  (double)t_sync[1] / 1e6, cl.elapsed[0] / 1e6, cl.elapsed[1] / 1e6,
                  sampi_opti_end_names[cl.end[0]], sampi_opti_end_names[cl.end[1]],
                  (double)(sampi_now_ns() - t_decode) / 1e6,
                  (double)(sampi_now_ns() - t_start) / 1e6, st->incast);
    return err;
}

uint64_t sampi_optireduce_counter(const struct sampi_optireduce_state *st,
                                  enum sampi_opti_counter which)
{
    return st ? atomic_load_explicit(&st->counters[which], memory_order_relaxed) : 0;
}

void sampi_optireduce_peer_lost(const struct sampi_optireduce_state *st, uint64_t *out, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = st && st->peer_lost && i < st->size
                     ? atomic_load_explicit(&st->peer_lost[i], memory_order_relaxed)
                     : 0;
}

int sampi_optireduce_fault_counts(const struct sampi_optireduce_state *st,
                                  struct sampi_fault_counts *out)
{
    return st && st->dg && sampi_dgram_fault_counts(st->dg, out) == 0 ? 0 : -ENOENT;
}
