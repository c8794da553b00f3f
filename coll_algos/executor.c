/*
 * executor.c - runs schedules over a netdev.
 *
 * Each round's transfers are cut into segments.  All receives of a round are
 * posted before its sends (so no eager message waits on an unexpected queue
 * when it can be avoided), and each received segment is reduced as soon as it
 * lands, overlapping the reduction with the transfer of the next segments.
 * This is the one place where SAMPI's exact algorithms reduce data.
 *
 * Not in place, the rank's own values are read from sendbuf until a round
 * needs them in recvbuf (own_ranges.h): no pass copies the whole vector
 * first.
 *
 * Waiting: in slices of the communicator's waiter (wait.h), so that a late
 * peer is waited for without end unless the user set sampi_timeout_ms, a
 * long silence is reported naming the peers this rank waits for, and a
 * revocation by another rank (or a mismatch found by the argument check)
 * ends the wait at once.
 *
 * Errors: nothing SAMPI posted reads or writes the caller's buffers after
 * the call returned.  A failed or timed-out round cancels its receives (a
 * receive already matched is let land first) and gives up on the call
 * (host->give_up: the communicator is revoked, and every peer hears that
 * this rank takes nothing more of its data).  A send still pending may be
 * taken by its peer at any moment, which then reads this rank's buffer; so
 * it is waited for until it completed or its peer said it takes nothing
 * more (host->released), and only then let go.  Example, ring at p = 2, the
 * ops differ, rank 1 is slow to start: rank 0 learns of the mismatch from
 * the argument check while its first 256 KiB segment for rank 1 is posted;
 * it tells rank 1, and returns MPI_ERR_OP once rank 1 has taken the segment
 * or answered with its own notice - never while rank 1 could still read it.
 * That wait is bounded by sampi_timeout_ms like any other (a silent peer):
 * past it the send is let go, and the warning says so.
 */
#include "executor.h"
#include "netdev.h"
#include "own_ranges.h"
#include "sampi_internal.h"
#include "stats.h"
#include "wait.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SEGMENTS_PER_ROUND = SAMPI_NETDEV_MAX_SEGMENTS };

static size_t ceil_div(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

struct round_state {
    sampi_netdev_req_t *reqs; /* receives first, then sends */
    sampi_netdev_req_t **pending;
    unsigned char *reduced; /* per receive segment */
    size_t capacity;
};

static int grow(struct round_state *st, size_t n)
{
    if (n <= st->capacity)
        return 0;
    sampi_netdev_req_t *r = realloc(st->reqs, n * sizeof(*r));
    if (!r)
        return -ENOMEM;
    st->reqs = r;
    sampi_netdev_req_t **p = realloc(st->pending, n * sizeof(*p));
    if (!p)
        return -ENOMEM;
    st->pending = p;
    unsigned char *d = realloc(st->reduced, n);
    if (!d)
        return -ENOMEM;
    st->reduced = d;
    st->capacity = n;
    return 0;
}

/* Whether a send of this round that has not completed still reads
 * [lo, hi) of the vector.  A pair that exchanges the same range in one round
 * (StragglAR's exchange with the straggler) must not reduce into it before its
 * own send of that range is done: the transport may still be reading it. */
static int send_still_reads(const struct sampi_round *rd, size_t seg, size_t nsend,
                            const sampi_netdev_req_t *sends, size_t lo, size_t hi)
{
    size_t so = rd->send.offset, se = rd->send.offset + rd->send.count;
    if (nsend == 0 || hi <= so || lo >= se)
        return 0;
    for (size_t j = lo > so ? (lo - so) / seg : 0; j < nsend && so + j * seg < hi; j++)
        if (!sends[j].done)
            return 1;
    return 0;
}

/* ------------------------------------------------------------ own values */

/* Reductions that bring their range in from sendbuf do it this many bytes at
 * a time, so that the reduction reads the copy from the cache. */
enum { OWN_BLOCK_BYTES = 8192 };

struct own_copy {
    char *dst;
    const char *src;
    size_t ext;
};

static void copy_part(void *arg, size_t lo, size_t hi)
{
    const struct own_copy *c = arg;
    memcpy(c->dst + lo * c->ext, c->src + lo * c->ext, (hi - lo) * c->ext);
}

/* recvbuf gets the parts of [lo, hi) of the rank's value it lacks. */
static int own_bring(const struct sampi_coll_args *a, struct sampi_own_ranges *own, size_t lo,
                     size_t hi)
{
    struct own_copy c = {a->recvbuf, a->sendbuf, a->dt.extent};
    return sampi_own_fill(own, lo, hi, copy_part, &c);
}

/* Where a send of [lo, lo + len) reads the rank's current value: recvbuf
 * once it holds the range, sendbuf while it holds none of it. */
static const void *send_source(const struct sampi_coll_args *a, struct sampi_own_ranges *own,
                               size_t lo, size_t len, int *rc)
{
    const size_t ext = a->dt.extent;
    enum sampi_own_cover cov = sampi_own_cover(own, lo, lo + len);
    if (cov == SAMPI_OWN_NONE)
        return (const char *)a->sendbuf + lo * ext;
    if (cov == SAMPI_OWN_PART)
        *rc = own_bring(a, own, lo, lo + len);
    return (char *)a->recvbuf + lo * ext;
}

/* A received segment `in` of [lo, lo + len) meets the rank's value in
 * recvbuf: REDUCE leaves in OP own there, REDUCE_SWAP own OP in, both as the
 * kernels order their operands.  A range recvbuf holds none of is brought
 * in block by block, each just before its reduction. */
static int reduce_segment(const struct sampi_coll_args *a, struct sampi_own_ranges *own,
                          enum sampi_recv_action action, size_t lo, size_t len, char *in)
{
    const size_t ext = a->dt.extent;
    char *vec = (char *)a->recvbuf + lo * ext;
    enum sampi_own_cover cov = sampi_own_cover(own, lo, lo + len);
    if (cov == SAMPI_OWN_NONE) {
        const char *mine = (const char *)a->sendbuf + lo * ext;
        if (action == SAMPI_RECV_REDUCE_SWAP) {
            a->reduce(in, mine, len);
            memcpy(vec, in, len * ext);
        } else {
            size_t block = OWN_BLOCK_BYTES / ext ? OWN_BLOCK_BYTES / ext : 1;
            for (size_t k = 0; k < len; k += block) {
                size_t m = len - k < block ? len - k : block;
                memcpy(vec + k * ext, mine + k * ext, m * ext);
                a->reduce(vec + k * ext, in + k * ext, m);
            }
        }
        return sampi_own_mark(own, lo, lo + len);
    }
    if (cov == SAMPI_OWN_PART) {
        int rc = own_bring(a, own, lo, lo + len);
        if (rc)
            return rc;
    }
    if (action == SAMPI_RECV_REDUCE) {
        a->reduce(vec, in, len);
    } else {
        a->reduce(in, vec, len);
        memcpy(vec, in, len * ext);
    }
    return 0;
}

/* ------------------------------------------------------------ rounds */

/* Whom this rank still waits for in a round, for a stall warning. */
static void waiting_for(const struct sampi_round *rd, size_t nrecv, const struct round_state *st,
                        char *buf, size_t len)
{
    int recv_pending = 0;
    for (size_t i = 0; i < nrecv; i++)
        recv_pending |= !st->reqs[i].done;
    int peer = recv_pending ? rd->recv.peer : rd->send.peer;
    snprintf(buf, len, "rank %d (%s)", peer,
             recv_pending ? "its data" : "to take this rank's data");
}

/* A round failed with `why`: leave nothing posted that could touch the
 * caller's buffers after the return (see the top of the file).  reqs[0,
 * nrecv) are the round's receives, reqs[nrecv, posted) its sends, all to
 * `to`. */
static void settle_failed_round(const struct sampi_coll_args *a, struct sampi_netdev *nd,
                                struct round_state *st, size_t nrecv, size_t posted, int to,
                                int why)
{
    const struct sampi_coll_ctx *x = a->ctx;
    for (size_t i = 0; i < nrecv && i < posted; i++)
        if (!st->reqs[i].done)
            nd->ops->cancel(nd, &st->reqs[i]);
    int n = 0;
    for (size_t i = nrecv; i < posted; i++)
        if (!st->reqs[i].done)
            st->pending[n++] = &st->reqs[i];
    if (!n)
        return;
    x->host->give_up(x->owner, why, "the data exchange");
    /* the communicator is revoked now: this waiter's only end is the
     * user's limit, not the revocation */
    struct sampi_waiter w;
    x->host->waiter(x->owner, &w, "the peers to take or refuse this rank's data");
    w.poll = NULL;
    char whom[32];
    snprintf(whom, sizeof(whom), "rank %d", to);
    for (;;) {
        int left = 0, released = x->host->released(x->owner, to);
        for (int i = 0; i < n; i++) {
            sampi_netdev_req_t *r = st->pending[i];
            if (r->done)
                continue;
            if (released)
                nd->ops->cancel(nd, r); /* the peer will never take it */
            else
                st->pending[left++] = r;
        }
        n = left;
        if (!n)
            return;
        int rc = nd->ops->wait(nd, st->pending, n, sampi_waiter_slice_end(&w));
        if (rc == 0) {
            sampi_waiter_progress(&w);
            continue;
        }
        if (rc == -ETIMEDOUT && !(rc = sampi_waiter_idle(&w, whom)))
            continue;
        sampi_log_warn("%s: %d send(s) of this rank's data still pending after the call "
                       "failed (%s): let go; %s may still read this rank's buffer",
                       w.what, n, sampi_strerror(rc), whom);
        for (int i = 0; i < n; i++)
            nd->ops->cancel(nd, st->pending[i]);
        return;
    }
}

static int run_round(const struct sampi_coll_args *a, struct sampi_netdev *nd, uint64_t seq,
                     int index, const struct sampi_round *rd, size_t seg, char *scratch,
                     struct round_state *st, struct sampi_own_ranges *own, struct sampi_waiter *w)
{
    const size_t ext = a->dt.extent;
    char *buf = a->recvbuf;
    size_t nrecv = rd->recv.peer >= 0 ? ceil_div(rd->recv.count, seg) : 0;
    size_t nsend = rd->send.peer >= 0 ? ceil_div(rd->send.count, seg) : 0;
    size_t posted = 0;
    int rc = grow(st, nrecv + nsend);
    if (rc)
        return rc;

    for (size_t s = 0; s < nrecv; s++, posted++) {
        size_t off = s * seg, len = rd->recv.count - off < seg ? rd->recv.count - off : seg;
        char *dst = rd->action != SAMPI_RECV_COPY ? scratch + off * ext
                                                  : buf + (rd->recv.offset + off) * ext;
        st->reduced[s] = 0;
        rc = nd->ops->irecv(nd, dst, len * ext, rd->recv.peer,
                            sampi_netdev_tag(seq, (unsigned)index, (unsigned)s), &st->reqs[s]);
        if (rc)
            goto fail;
    }
    for (size_t s = 0; s < nsend; s++, posted++) {
        size_t off = s * seg, len = rd->send.count - off < seg ? rd->send.count - off : seg;
        const void *src = send_source(a, own, rd->send.offset + off, len, &rc);
        if (rc)
            goto fail;
        rc = nd->ops->isend(nd, src, len * ext, rd->send.peer,
                            sampi_netdev_tag(seq, (unsigned)index, (unsigned)s),
                            &st->reqs[nrecv + s]);
        if (rc)
            goto fail;
    }

    size_t left = posted;
    while (left) {
        int n = 0;
        for (size_t i = 0; i < posted; i++)
            if (!st->reqs[i].done)
                st->pending[n++] = &st->reqs[i];
        if (n) {
            rc = nd->ops->wait(nd, st->pending, n, sampi_waiter_slice_end(w));
            if (rc == -ETIMEDOUT) {
                char whom[96];
                waiting_for(rd, nrecv, st, whom, sizeof(whom));
                if ((rc = sampi_waiter_idle(w, whom)))
                    goto fail;
                continue;
            }
            if (rc)
                goto fail;
        }
        left = 0;
        int progressed = 0;
        for (size_t i = 0; i < posted; i++) {
            sampi_netdev_req_t *r = &st->reqs[i];
            if (!r->done) {
                left++;
                continue;
            }
            if (r->status) {
                rc = r->status;
                goto fail;
            }
            if (i < nrecv && !st->reduced[i]) {
                size_t off = i * seg;
                size_t len = rd->recv.count - off < seg ? rd->recv.count - off : seg;
                if (rd->action != SAMPI_RECV_COPY &&
                    send_still_reads(rd, seg, nsend, &st->reqs[nrecv], rd->recv.offset + off,
                                     rd->recv.offset + off + len)) {
                    left++; /* reduced once that send completes */
                    continue;
                }
                st->reduced[i] = 1;
                progressed = 1;
                rc = rd->action == SAMPI_RECV_COPY
                         ? sampi_own_mark(own, rd->recv.offset + off, rd->recv.offset + off + len)
                         : reduce_segment(a, own, rd->action, rd->recv.offset + off, len,
                                          scratch + off * ext);
                if (rc)
                    goto fail;
            }
        }
        if (progressed)
            sampi_waiter_progress(w); /* the limit is for a silent peer */
    }
    size_t sent = rd->send.peer >= 0 ? rd->send.count * ext : 0;
    size_t received = rd->recv.peer >= 0 ? rd->recv.count * ext : 0;
    sampi_stat_add(&a->ctx->stats->bytes_sent, sent);
    sampi_stat_add(&a->ctx->stats->bytes_received, received);
    sampi_stat_add(&sampi_process_stats.bytes_sent, sent);
    sampi_stat_add(&sampi_process_stats.bytes_received, received);
    return 0;
fail:
    settle_failed_round(a, nd, st, nrecv, posted, rd->send.peer, rc);
    return rc;
}

int sampi_execute_rounds_seq(const struct sampi_coll_args *a, const struct sampi_round *rounds,
                             int nrounds, uint64_t seq)
{
    const struct sampi_coll_ctx *x = a->ctx;
    struct round_state st = {0};
    const size_t ext = a->dt.extent;
    int rc = 0;

    size_t longest = 0, scratch_elems = 0;
    for (int i = 0; i < nrounds; i++) {
        size_t r = rounds[i].recv.peer >= 0 ? rounds[i].recv.count : 0;
        size_t s = rounds[i].send.peer >= 0 ? rounds[i].send.count : 0;
        longest = r > longest ? r : longest;
        longest = s > longest ? s : longest;
        if (rounds[i].action != SAMPI_RECV_COPY && r > scratch_elems)
            scratch_elems = r;
    }
    size_t seg = x->segment_bytes / ext;
    if (seg == 0)
        seg = 1;
    if (ceil_div(longest ? longest : 1, seg) > MAX_SEGMENTS_PER_ROUND)
        seg = ceil_div(longest, MAX_SEGMENTS_PER_ROUND); /* see netdev.h */

    char *scratch = scratch_elems ? x->host->scratch(x->owner, scratch_elems * ext) : NULL;
    if (scratch_elems && !scratch)
        return -ENOMEM;
    struct sampi_own_ranges own;
    sampi_own_init(&own, a->sendbuf == MPI_IN_PLACE);

    struct sampi_waiter w;
    x->host->waiter(x->owner, &w, "the data exchange");
    for (int i = 0; i < nrounds && !rc; i++) {
        if (rounds[i].send.peer < 0 && rounds[i].recv.peer < 0)
            continue;
        rc = run_round(a, x->nd, seq, i, &rounds[i], seg, scratch, &st, &own, &w);
    }
    if (!rc)
        rc = own_bring(a, &own, 0, a->count); /* what no round brought in */
    sampi_own_free(&own);
    free(st.reqs);
    free(st.pending);
    free(st.reduced);
    return rc;
}

int sampi_execute_rounds(const struct sampi_coll_args *a, const struct sampi_round *rounds,
                         int nrounds)
{
    return sampi_execute_rounds_seq(a, rounds, nrounds, (*a->ctx->seq)++);
}

int sampi_execute_schedule(const struct sampi_coll_args *a, sampi_schedule_builder build,
                           sampi_schedule_rounds rounds_of)
{
    const struct sampi_coll_ctx *x = a->ctx;
    int max = rounds_of(x->size);
    struct sampi_round stack_rounds[64];
    struct sampi_round *rounds = max <= 64 ? stack_rounds : malloc((size_t)max * sizeof(*rounds));
    if (!rounds)
        return -ENOMEM;
    int n = build(x->size, x->rank, a->count, rounds, max);
    int rc = n < 0 ? n : sampi_execute_rounds(a, rounds, n);
    if (rounds != stack_rounds)
        free(rounds);
    return rc;
}
