/*
 * executor.c - runs schedules over a netdev.
 *
 * Each round's transfers are cut into segments.  All receives of a round are
 * posted before its sends (so no eager message waits on an unexpected queue
 * when it can be avoided), and each received segment is reduced as soon as it
 * lands, overlapping the reduction with the transfer of the next segments.
 * This is the one place where SAMPI's exact algorithms reduce data.
 *
 * Waiting: in slices of the communicator's waiter (wait.h), so that a late
 * peer is waited for without end unless the user set sampi_timeout_ms, a
 * long silence is reported naming the peers this rank waits for, and a
 * revocation by another rank (or a mismatch found by the argument check)
 * ends the wait at once.
 *
 * Errors: a failed or timed-out transfer cancels what is still posted and
 * returns the error; the dispatcher then revokes the communicator (messages
 * may still be in flight), which tells the peers instead of leaving them
 * waiting.
 */
#include "executor.h"
#include "netdev.h"
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

static int run_round(const struct sampi_coll_args *a, struct sampi_netdev *nd, uint64_t seq,
                     int index, const struct sampi_round *rd, size_t seg, char *scratch,
                     struct round_state *st, struct sampi_waiter *w)
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
        rc = nd->ops->isend(nd, buf + (rd->send.offset + off) * ext, len * ext, rd->send.peer,
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
                char *vec = buf + (rd->recv.offset + off) * ext;
                if (rd->action != SAMPI_RECV_COPY &&
                    send_still_reads(rd, seg, nsend, &st->reqs[nrecv], rd->recv.offset + off,
                                     rd->recv.offset + off + len)) {
                    left++; /* reduced once that send completes */
                    continue;
                }
                st->reduced[i] = 1;
                progressed = 1;
                if (rd->action == SAMPI_RECV_REDUCE) {
                    a->reduce(vec, scratch + off * ext, len);
                } else if (rd->action == SAMPI_RECV_REDUCE_SWAP) {
                    a->reduce(scratch + off * ext, vec, len);
                    memcpy(vec, scratch + off * ext, len * ext);
                }
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
    for (size_t i = 0; i < posted; i++)
        if (!st->reqs[i].done)
            nd->ops->cancel(nd, &st->reqs[i]);
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
    if (a->sendbuf != MPI_IN_PLACE)
        memcpy(a->recvbuf, a->sendbuf, a->count * ext);

    struct sampi_waiter w;
    x->host->waiter(x->owner, &w, "the data exchange");
    for (int i = 0; i < nrounds && !rc; i++) {
        if (rounds[i].send.peer < 0 && rounds[i].recv.peer < 0)
            continue;
        rc = run_round(a, x->nd, seq, i, &rounds[i], seg, scratch, &st, &w);
    }
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
