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
 * The call object (struct sampi_exec, executor.h).  A call's whole state
 * between two looks at the netdev - the round posted, its requests, which
 * of its segments were reduced, what recvbuf holds of the rank's value,
 * the waiter's clocks - lives in one struct rather than on the stack of a
 * loop, so that a call can be left and resumed: several calls in flight on
 * a communicator, or a progress engine that tests a call between the
 * program's computations, as MPICH's nonblocking schedules and UCC's tasks
 * are driven.  The blocking functions are the same object driven to the
 * end in one go.  States:
 *
 *   IDLE --start--> RUNNING (round r posted) --test: round r complete-->
 *   RUNNING (round r + 1 posted) ... --last round complete--> DONE
 *   RUNNING --an error, or abort--> FAILED (settled, see Errors below)
 *
 * start posts the first round with a peer; test looks at the netdev once
 * (a deadline already passed), reduces or copies each segment that landed,
 * and once every request of the round completed counts its bytes, posts
 * the next round and looks again, until nothing more is there.  Only a
 * complete round moves the call on: round r + 1's receives reuse round r's
 * scratch and its sends may read what round r reduced.
 *
 * Example, ring at p = 3 (ring.c), rank 0, not in place, 6 doubles in
 * blocks A B C of 2, segments of one double:
 *
 *   start  round 0 posted: receives of C's segments 0 and 1 from rank 2
 *          (into scratch), then sends of A's two segments to rank 1, read
 *          from sendbuf (recvbuf holds nothing of the rank's value yet).
 *   test   C's segment 0 landed: sendbuf's C[0] copied into recvbuf and
 *          reduced with it; segment 1 and the sends are still pending:
 *          done = 0, at once.
 *   test   nothing new: the netdev looked once and said so; done = 0.
 *   test   segment 1 landed and both sends completed: C reduced, round 0
 *          complete, its bytes counted; round 1 posted (B from rank 2, C
 *          to rank 1, now read from recvbuf, which holds it); nothing of
 *          it here yet: done = 0.
 *   ...    rounds 1 to 3 the same way (2 and 3 copy what lands); after
 *          round 3 recvbuf gets from sendbuf what no round brought in
 *          (nothing, here): DONE, done = 1.
 *
 * A failure anywhere (a segment of the wrong size, a post refused, the
 * waiter's limit or a revocation in a blocking run, abort) settles the
 * round posted as below; the call is FAILED and each later test answers
 * the same errno.
 *
 * Waiting: in slices of the communicator's waiter (wait.h), so that a late
 * peer is waited for without end unless the user set sampi_timeout_ms, a
 * long silence is reported naming the peers this rank waits for, and a
 * revocation by another rank (or a mismatch found by the argument check)
 * ends the wait at once.  A blocking run is the test's step with the
 * slice's end for deadline instead of one already passed: the netdev's
 * wait looks at once (a test) and blocks only when nothing is there, and
 * at the slice's end the waiter is asked, exactly as before the call
 * object existed.  A test never asks the waiter: it does not block, so it
 * has no silence to judge; it does restart the waiter's clocks when a
 * segment lands, as a blocking wait would.
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
 * past it the send is let go, and the warning says so.  sampi_exec_abort is
 * this same path, so a caller that gives up on a call it tests (its own
 * limit, a revocation it saw) leaves the buffers as safe as a failed
 * blocking call does.
 *
 * Several calls at once on one communicator: the scratch of reducing rounds
 * is by default the communicator's one buffer (host->scratch), which a call
 * in flight beside others must not share; sampi_exec_start_own gives the
 * call a scratch of its own.  Their tags differ by the call's sequence
 * number, of which the mpi netdev keeps the four low bits (mpi.c): up to 16
 * consecutive calls can be in flight there.  check_executor.c drives four
 * calls per rank at once, tested in different orders on different ranks.
 */
#include "executor.h"
#include "clock.h"
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

static int grow(struct sampi_exec_round *st, size_t n)
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
static void waiting_for(const struct sampi_round *rd, size_t nrecv,
                        const struct sampi_exec_round *st, char *buf, size_t len)
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
                                struct sampi_exec_round *st, size_t nrecv, size_t posted, int to,
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

/* ------------------------------------------------------------ the call */

/* step()'s answer when nothing of the round completed before the deadline:
 * not a failure, so positive, never an errno. */
enum { STEP_IDLE = 1 };

/* The call failed with rc: settle the round posted (see the top of the
 * file), and remember why for every later look.  Before the first round and
 * after the last nothing is posted, and nothing is settled. */
static int fail(struct sampi_exec *x, int rc)
{
    if (x->phase == SAMPI_EXEC_RUNNING && x->round >= 0 && x->round < x->nrounds)
        settle_failed_round(x->args, x->args->ctx->nd, &x->st, x->st.nrecv, x->st.posted,
                            x->rounds[x->round].send.peer, rc);
    x->phase = SAMPI_EXEC_FAILED;
    x->rc = rc;
    return rc;
}

/* Post round x->round: every receive first, then every send (see the top of
 * the file).  0, or the call fails with what the netdev answered, settling
 * what of the round was posted. */
static int post_round(struct sampi_exec *x)
{
    const struct sampi_coll_args *a = x->args;
    struct sampi_netdev *nd = a->ctx->nd;
    const struct sampi_round *rd = &x->rounds[x->round];
    struct sampi_exec_round *st = &x->st;
    const size_t ext = a->dt.extent, seg = x->seg;
    char *buf = a->recvbuf;
    st->nrecv = rd->recv.peer >= 0 ? ceil_div(rd->recv.count, seg) : 0;
    st->nsend = rd->send.peer >= 0 ? ceil_div(rd->send.count, seg) : 0;
    st->posted = 0;
    int rc = grow(st, st->nrecv + st->nsend);
    if (rc)
        return fail(x, rc); /* nothing of the round posted yet */

    for (size_t s = 0; s < st->nrecv; s++, st->posted++) {
        size_t off = s * seg, len = rd->recv.count - off < seg ? rd->recv.count - off : seg;
        char *dst = rd->action != SAMPI_RECV_COPY ? x->scratch + off * ext
                                                  : buf + (rd->recv.offset + off) * ext;
        st->reduced[s] = 0;
        rc =
            nd->ops->irecv(nd, dst, len * ext, rd->recv.peer,
                           sampi_netdev_tag(x->seq, (unsigned)x->round, (unsigned)s), &st->reqs[s]);
        if (rc)
            return fail(x, rc);
    }
    for (size_t s = 0; s < st->nsend; s++, st->posted++) {
        size_t off = s * seg, len = rd->send.count - off < seg ? rd->send.count - off : seg;
        const void *src = send_source(a, &x->own, rd->send.offset + off, len, &rc);
        if (rc)
            return fail(x, rc);
        rc = nd->ops->isend(nd, src, len * ext, rd->send.peer,
                            sampi_netdev_tag(x->seq, (unsigned)x->round, (unsigned)s),
                            &st->reqs[st->nrecv + s]);
        if (rc)
            return fail(x, rc);
    }
    return 0;
}

/* Post the next round that has a peer; past the last, finish the call:
 * recvbuf gets what no round brought in, and the call is DONE.  0, or the
 * call's failure. */
static int next_round(struct sampi_exec *x)
{
    while (++x->round < x->nrounds) {
        const struct sampi_round *rd = &x->rounds[x->round];
        if (rd->send.peer >= 0 || rd->recv.peer >= 0)
            return post_round(x);
    }
    int rc = own_bring(x->args, &x->own, 0, x->args->count);
    if (rc)
        return fail(x, rc);
    x->phase = SAMPI_EXEC_DONE;
    return 0;
}

/* One look at the round posted: wait for any of its pending requests until
 * deadline_ns, then reduce or copy each segment that landed (a segment whose
 * range a send of the round still reads waits for that send); once every
 * request completed, post the next round (or finish the call).  0 with
 * *done, STEP_IDLE when nothing completed before the deadline, or the
 * call's failure (settled). */
static int step(struct sampi_exec *x, int64_t deadline_ns, int *done)
{
    *done = x->phase == SAMPI_EXEC_DONE;
    if (x->phase != SAMPI_EXEC_RUNNING)
        return x->phase == SAMPI_EXEC_FAILED ? x->rc : x->phase == SAMPI_EXEC_DONE ? 0 : -EINVAL;
    const struct sampi_coll_args *a = x->args;
    struct sampi_netdev *nd = a->ctx->nd;
    const struct sampi_round *rd = &x->rounds[x->round];
    struct sampi_exec_round *st = &x->st;
    const size_t ext = a->dt.extent, seg = x->seg;
    const size_t nrecv = st->nrecv, nsend = st->nsend, posted = st->posted;
    int rc, n = 0;

    for (size_t i = 0; i < posted; i++)
        if (!st->reqs[i].done)
            st->pending[n++] = &st->reqs[i];
    if (n) {
        rc = nd->ops->wait(nd, st->pending, n, deadline_ns);
        if (rc == -ETIMEDOUT)
            return STEP_IDLE;
        if (rc)
            return fail(x, rc);
    }
    size_t left = 0;
    int progressed = 0;
    for (size_t i = 0; i < posted; i++) {
        sampi_netdev_req_t *r = &st->reqs[i];
        if (!r->done) {
            left++;
            continue;
        }
        if (r->status)
            return fail(x, r->status);
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
                     ? sampi_own_mark(&x->own, rd->recv.offset + off, rd->recv.offset + off + len)
                     : reduce_segment(a, &x->own, rd->action, rd->recv.offset + off, len,
                                      x->scratch + off * ext);
            if (rc)
                return fail(x, rc);
        }
    }
    if (progressed)
        sampi_waiter_progress(&x->w); /* the limit is for a silent peer */
    if (left)
        return 0;

    size_t sent = rd->send.peer >= 0 ? rd->send.count * ext : 0;
    size_t received = rd->recv.peer >= 0 ? rd->recv.count * ext : 0;
    sampi_stat_add(&a->ctx->stats->bytes_sent, sent);
    sampi_stat_add(&a->ctx->stats->bytes_received, received);
    sampi_stat_add(&sampi_process_stats.bytes_sent, sent);
    sampi_stat_add(&sampi_process_stats.bytes_received, received);
    rc = next_round(x);
    *done = x->phase == SAMPI_EXEC_DONE;
    return rc;
}

static int start(struct sampi_exec *x, const struct sampi_coll_args *a,
                 const struct sampi_round *rounds, int nrounds, uint64_t seq, int own_scratch)
{
    const struct sampi_coll_ctx *c = a->ctx;
    const size_t ext = a->dt.extent;
    *x = (struct sampi_exec){.args = a,
                             .rounds = rounds,
                             .nrounds = nrounds,
                             .seq = seq,
                             .round = -1,
                             .phase = SAMPI_EXEC_RUNNING};
    sampi_own_init(&x->own, a->sendbuf == MPI_IN_PLACE);

    size_t longest = 0, scratch_elems = 0;
    for (int i = 0; i < nrounds; i++) {
        size_t r = rounds[i].recv.peer >= 0 ? rounds[i].recv.count : 0;
        size_t s = rounds[i].send.peer >= 0 ? rounds[i].send.count : 0;
        longest = r > longest ? r : longest;
        longest = s > longest ? s : longest;
        if (rounds[i].action != SAMPI_RECV_COPY && r > scratch_elems)
            scratch_elems = r;
    }
    x->seg = c->segment_bytes / ext;
    if (x->seg == 0)
        x->seg = 1;
    if (ceil_div(longest ? longest : 1, x->seg) > MAX_SEGMENTS_PER_ROUND)
        x->seg = ceil_div(longest, MAX_SEGMENTS_PER_ROUND); /* see netdev.h */

    if (scratch_elems) { /* none when every round copies */
        x->scratch = own_scratch ? (x->own_scratch = malloc(scratch_elems * ext))
                                 : c->host->scratch(c->owner, scratch_elems * ext);
        if (!x->scratch)
            return fail(x, -ENOMEM); /* nothing posted */
    }
    c->host->waiter(c->owner, &x->w, "the data exchange");
    return next_round(x);
}

int sampi_exec_start(struct sampi_exec *x, const struct sampi_coll_args *a,
                     const struct sampi_round *rounds, int nrounds, uint64_t seq)
{
    return start(x, a, rounds, nrounds, seq, 0);
}

int sampi_exec_start_own(struct sampi_exec *x, const struct sampi_coll_args *a,
                         const struct sampi_round *rounds, int nrounds, uint64_t seq)
{
    return start(x, a, rounds, nrounds, seq, 1);
}

int sampi_exec_test(struct sampi_exec *x, int *done)
{
    for (;;) {
        int round = x->round;
        /* A deadline already passed makes the netdev's wait one look, never
         * a pause: mpi.c's wait makes one pass of MPI_Improbe / MPI_Test
         * over the requests and answers -ETIMEDOUT when none completed,
         * before its first sampi_wait_pause; ofi.c's hands queued
         * operations over and reads the CQ once, then answers the same,
         * before any fi_cq_sread or pause.  now - 1 rather than INT64_MIN:
         * a backend that works out the time left gets a small number. */
        int rc = step(x, sampi_now_ns() - 1, done);
        if (rc == STEP_IDLE) {
            *done = 0;
            return 0;
        }
        if (rc || *done || x->round == round)
            return rc;
        /* the next round was posted: its first segments may be here already */
    }
}

void sampi_exec_abort(struct sampi_exec *x, int why)
{
    if (x->phase == SAMPI_EXEC_RUNNING)
        fail(x, why);
}

void sampi_exec_free(struct sampi_exec *x)
{
    sampi_exec_abort(x, -ECANCELED);
    sampi_own_free(&x->own);
    free(x->st.reqs);
    free(x->st.pending);
    free(x->st.reduced);
    free(x->own_scratch);
    *x = (struct sampi_exec){.phase = SAMPI_EXEC_IDLE};
}

/* A blocking run: the test's step with the waiter's slice for deadline, so
 * that the netdev blocks (or backs off, as its wait mode says) until a
 * request of the round completes; a slice that ends in silence asks the
 * waiter, naming whom this rank waits for, and a revocation or the user's
 * limit fails the call there. */
static int exec_run(struct sampi_exec *x)
{
    for (;;) {
        int done = 0;
        int rc = step(x, sampi_waiter_slice_end(&x->w), &done);
        if (rc == STEP_IDLE) {
            char whom[96];
            waiting_for(&x->rounds[x->round], x->st.nrecv, &x->st, whom, sizeof(whom));
            if (!(rc = sampi_waiter_idle(&x->w, whom)))
                continue;
            return fail(x, rc);
        }
        if (rc || done)
            return rc;
    }
}

/* ------------------------------------------------------------ blocking */

int sampi_execute_rounds_seq(const struct sampi_coll_args *a, const struct sampi_round *rounds,
                             int nrounds, uint64_t seq)
{
    struct sampi_exec x;
    int rc = sampi_exec_start(&x, a, rounds, nrounds, seq);
    if (!rc)
        rc = exec_run(&x);
    sampi_exec_free(&x);
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
