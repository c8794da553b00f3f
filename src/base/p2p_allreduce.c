/*
 * p2p_allreduce.c - SAMPI's own nonblocking allreduce (p2p_allreduce.h).
 *
 * Accepts:  any p >= 1, a predefined datatype and op that kernels.c reduces;
 *           meant for a few hundred bytes (agreements, the argument check).
 * Cost:     p <= SAMPI_P2P_DIRECT_MAX, direct: alpha + (p - 1) n beta (p - 1
 *           messages each way, all posted at the start) and p - 1 local
 *           reductions in rank order.  Above, recursive doubling: with q the
 *           largest power of two
 *           <= p and r = p - q, log2(q) steps, plus two when r > 0 (the
 *           fold-in and the fold-out): (log2 q + 2) (alpha + n beta).
 * Stragglers: a late rank delays everyone by its delay.  Direct, a rank
 *           that started and went on with other work delays nobody; in the
 *           doubling a rank's later steps wait until it tests the exchange.
 *
 * Direct example, p = 3: each rank sends x_r to the two others at once and,
 * with x0 x1 x2 in hand, computes x2.(x1.x0) (a kernel takes the next
 * rank's vector on the left): the same expression, so the same bits, on
 * every rank.
 *
 * Doubling example, p = 6 (q = 4, r = 2), "a.b" is a OP b:
 * Exactness: each doubling step's partners hold the same bits (by induction)
 *           and both compute high OP low, the value of the larger rank
 *           number on the left; the folded ranks receive a copy.  So every
 *           rank ends with identical bits, NaN and signed zeros included.

 *   stage 0 (fold-in):  0 -> 1, 2 -> 3        1: 1.0   3: 3.2
 *   the four left are virtual ranks 0 1 2 3 = ranks 1 3 4 5
 *   stage 1 (vrank ^ 1): 1 <-> 3, 4 <-> 5     1, 3: (3.2).(1.0)   4, 5: 5.4
 *   stage 2 (vrank ^ 2): 1 <-> 4, 3 <-> 5     1, 3, 4, 5: (5.4).((3.2).(1.0))
 *   stage 31 (fold-out): 1 -> 0, 3 -> 2       0, 2: a copy of the same
 *
 * Why one call's message never meets another call's receive, on the same
 * communicator and tag: (1) within one call an ordered pair of ranks carries
 * at most one message: direct, each rank sends once to each other rank; in
 * the doubling, the fold-in goes 2i -> 2i+1 and the fold-out
 * 2i+1 -> 2i, and the doubling steps pair only the ranks that are not folded
 * away, each with a different partner per step; (2) every rank starts the
 * exchanges of one tag in the same order (p2p_allreduce.h), posting each
 * step's receive before it returns from the call, so by MPI's
 * non-overtaking rule the k-th message from s to d with that tag is taken
 * by d's k-th receive from s with that tag: the same call's.  In the example,
 * if rank 5 finished call 7 and sent its call-8 vector to 4 while 4 still
 * waited in call 7 for 1, the call-8 message waits unmatched at 4 until 4
 * posts its call-8 receive from 5, its call-7 receive from 5 having taken
 * the call-7 message already.  The tag also carries the call's sequence
 * number modulo 512, so even a message let go by a call that gave up
 * (release) is never taken by the next 511 calls; after a give-up, SAMPI
 * revokes the communicator and starts no more exchanges on it.
 *
 * Every receive is posted with its real size: all ranks pass the same
 * count and datatype (a collective's contract, here SAMPI's own calls).
 */
#include "p2p_allreduce.h"
#include "dtype.h"
#include "wait.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

int sampi_p2p_plan(int p, int rank, struct sampi_p2p_step *steps)
{
    if (p < 1 || rank < 0 || rank >= p)
        return -EINVAL;
    int q = 1;
    while (q <= p / 2)
        q *= 2;
    int r = p - q, n = 0, vrank;
    if (rank < 2 * r) {
        if (rank % 2 == 0) {
            steps[n++] = (struct sampi_p2p_step){
                .stage = 0, .peer = rank + 1, .send = 1, .recv = SAMPI_P2P_RECV_NONE};
            steps[n++] = (struct sampi_p2p_step){
                .stage = SAMPI_P2P_STAGE_OUT, .peer = rank + 1, .recv = SAMPI_P2P_RECV_COPY};
            return n;
        }
        steps[n++] = (struct sampi_p2p_step){
            .stage = 0, .peer = rank - 1, .recv = SAMPI_P2P_RECV_REDUCE, .mine_low = 0};
        vrank = rank / 2;
    } else {
        vrank = rank - r;
    }
    for (int i = 0; (1 << i) < q; i++) {
        int pv = vrank ^ (1 << i);
        steps[n++] = (struct sampi_p2p_step){.stage = 1 + i,
                                             .peer = pv < r ? 2 * pv + 1 : pv + r,
                                             .send = 1,
                                             .recv = SAMPI_P2P_RECV_REDUCE,
                                             .mine_low = vrank < pv};
    }
    if (rank < 2 * r)
        steps[n++] = (struct sampi_p2p_step){
            .stage = SAMPI_P2P_STAGE_OUT, .peer = rank - 1, .send = 1, .recv = SAMPI_P2P_RECV_NONE};
    return n;
}

static _Atomic int direct_max = SAMPI_P2P_DIRECT_MAX;

int sampi_p2p_set_direct_max(int n)
{
    if (n > SAMPI_P2P_DIRECT_MAX)
        n = SAMPI_P2P_DIRECT_MAX;
    return atomic_exchange(&direct_max, n);
}

void sampi_p2p_allreduce_init(struct sampi_p2p_allreduce *allreduce)
{
    allreduce->comm = MPI_COMM_NULL;
    allreduce->nsteps = allreduce->at = allreduce->posted = allreduce->direct = 0;
    allreduce->rank = 0;
    allreduce->size = 1;
    allreduce->nrecv = allreduce->nreq = 0;
    for (int i = 0; i < 2 * SAMPI_P2P_DIRECT_MAX; i++)
        allreduce->req[i] = MPI_REQUEST_NULL;
    allreduce->acc = allreduce->rx = NULL;
    allreduce->mem = NULL;
    allreduce->mem_size = 0;
}

/* The kernel for (dt, op), or NULL. */
static sampi_reduce_fn kernel_of(MPI_Datatype dt, MPI_Op op, size_t *extent)
{
    struct sampi_dtype_info info;
    int o = sampi_op_lookup(op);
    if (o < 0 || sampi_dtype_lookup(dt, &info) || !sampi_op_defined_on(o, info.tclass))
        return NULL;
    *extent = info.extent;
    return sampi_reduce_fn_get(o, info.elem);
}

int sampi_p2p_allreduce_start(struct sampi_p2p_allreduce *allreduce, const void *in, int count,
                              MPI_Datatype dt, MPI_Op op, MPI_Comm comm, int tag)
{
    if (allreduce->at < allreduce->nsteps)
        sampi_p2p_allreduce_release(allreduce); /* one let go unfinished: never reuse its buffers */
    size_t extent = 0;
    sampi_reduce_fn fn = count > 0 ? kernel_of(dt, op, &extent) : NULL;
    if (count < 0 || (count > 0 && !fn))
        return -ENOTSUP;
    size_t bytes = (size_t)count * extent;
    if (bytes > INT_MAX)
        return -ENOTSUP;
    int rank = 0, size = 1;
    if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return -EIO;
    int direct = size <= atomic_load_explicit(&direct_max, memory_order_relaxed);
    /* each buffer on its own 64-byte lines (the kernels' alignment): direct,
     * one per rank and the result; else the value and the receive buffer */
    size_t half = (bytes + 63) & ~(size_t)63;
    size_t need = half ? (direct ? (size_t)size + 1 : 2) * half : 64;
    if (need > allreduce->mem_size) {
        void *p = NULL;
        if (posix_memalign(&p, 64, need))
            return -ENOMEM;
        free(allreduce->mem);
        allreduce->mem = p;
        allreduce->mem_size = need;
    }
    allreduce->acc = (unsigned char *)allreduce->mem + (direct ? (size_t)rank * half : 0);
    allreduce->rx = (unsigned char *)allreduce->mem + (direct ? (size_t)size * half : half);
    memcpy(allreduce->acc, in, bytes);
    allreduce->comm = comm;
    allreduce->tag = tag;
    allreduce->fn = fn;
    allreduce->bytes = bytes;
    allreduce->count = (size_t)count;
    allreduce->at = allreduce->posted = 0;
    allreduce->direct = direct;
    allreduce->rank = rank;
    allreduce->size = size;
    allreduce->nrecv = allreduce->nreq = 0;
    if (!bytes || size == 1)
        allreduce->nsteps = 0;
    else if (direct)
        allreduce->nsteps = 1;
    else if ((allreduce->nsteps = sampi_p2p_plan(size, rank, allreduce->steps)) < 0)
        return -EIO;
    int rc = sampi_p2p_allreduce_test(allreduce, NULL); /* post the first step */
    return rc < 0 ? rc : 0;
}

/* Slot r of a direct exchange: rank r's vector. */
static unsigned char *slot(const struct sampi_p2p_allreduce *x, int r)
{
    size_t half = (x->bytes + 63) & ~(size_t)63;
    return (unsigned char *)x->mem + (size_t)r * half;
}

static int post_direct(struct sampi_p2p_allreduce *x)
{
    int me = x->rank;
    for (int r = 0; r < x->size; r++)
        if (r != me && PMPI_Irecv(slot(x, r), (int)x->bytes, MPI_BYTE, r, x->tag, x->comm,
                                  &x->req[x->nreq++]) != MPI_SUCCESS)
            return -EIO;
    x->nrecv = x->nreq;
    for (int r = 0; r < x->size; r++)
        if (r != me && PMPI_Isend(x->acc, (int)x->bytes, MPI_BYTE, r, x->tag, x->comm,
                                  &x->req[x->nreq++]) != MPI_SUCCESS)
            return -EIO;
    x->posted = 1;
    return 0;
}

static int post(struct sampi_p2p_allreduce *x, const struct sampi_p2p_step *s)
{
    x->nrecv = x->nreq = 0;
    if (s->recv != SAMPI_P2P_RECV_NONE &&
        PMPI_Irecv(x->rx, (int)x->bytes, MPI_BYTE, s->peer, x->tag, x->comm, &x->req[x->nreq++]) !=
            MPI_SUCCESS)
        return -EIO;
    x->nrecv = x->nreq;
    if (s->send && PMPI_Isend(x->acc, (int)x->bytes, MPI_BYTE, s->peer, x->tag, x->comm,
                              &x->req[x->nreq++]) != MPI_SUCCESS)
        return -EIO;
    x->posted = 1;
    return 0;
}

/* Every vector is there: x_{p-1}.(...(x1.x0)) into the result buffer. */
static void land_direct(struct sampi_p2p_allreduce *x)
{
    memcpy(x->rx, slot(x, 0), x->bytes);
    for (int r = 1; r < x->size; r++)
        x->fn(x->rx, slot(x, r), x->count);
    x->acc = x->rx;
}

/* Step s's messages are done: fold the received vector in. */
static void land(struct sampi_p2p_allreduce *x, const struct sampi_p2p_step *s)
{
    if (s->recv == SAMPI_P2P_RECV_NONE)
        return;
    if (s->recv == SAMPI_P2P_RECV_REDUCE) {
        /* a kernel computes inout = in OP inout: high OP low on both sides */
        if (s->mine_low) {
            x->fn(x->acc, x->rx, x->count);
            return;
        }
        x->fn(x->rx, x->acc, x->count);
    }
    /* the result (or the copy received) is in rx */
    unsigned char *t = x->acc;
    x->acc = x->rx;
    x->rx = t;
}

int sampi_p2p_allreduce_test(struct sampi_p2p_allreduce *allreduce, int *progressed)
{
    while (allreduce->at < allreduce->nsteps) {
        const struct sampi_p2p_step *s = &allreduce->steps[allreduce->at];
        if (!allreduce->posted && (allreduce->direct ? post_direct(allreduce) : post(allreduce, s)))
            return -EIO;
        int flag = 0;
        if (PMPI_Testall(allreduce->nreq, allreduce->req, &flag, MPI_STATUSES_IGNORE) !=
            MPI_SUCCESS)
            return -EIO;
        if (!flag)
            return 0;
        if (allreduce->direct)
            land_direct(allreduce);
        else
            land(allreduce, s);
        allreduce->at++;
        allreduce->posted = 0;
        if (progressed)
            *progressed = 1;
    }
    return 1;
}

int sampi_p2p_allreduce_waiting_for(const struct sampi_p2p_allreduce *x, int *ranks, int max)
{
    if (!x->posted || x->at >= x->nsteps)
        return 0;
    int n = 0;
    for (int i = 0; i < x->nrecv && n < max; i++) {
        int done = 1;
        MPI_Request r = x->req[i];
        if (r != MPI_REQUEST_NULL &&
            PMPI_Request_get_status(r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            done = 0;
        if (!done) /* direct: receive i is from the i-th rank but this one */
            ranks[n++] = x->direct ? (i < x->rank ? i : i + 1) : x->steps[x->at].peer;
    }
    return n;
}

void sampi_p2p_allreduce_release(struct sampi_p2p_allreduce *allreduce)
{
    int sent = 1;
    for (int i = 0; i < allreduce->nreq; i++) {
        if (i < allreduce->nrecv) {
            sampi_request_cancel(&allreduce->req[i]);
            continue;
        }
        int done = 1;
        if (allreduce->req[i] != MPI_REQUEST_NULL &&
            PMPI_Test(&allreduce->req[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            done = 0;
        if (!done) {
            PMPI_Request_free(&allreduce->req[i]); /* the message may still be taken: keep mem */
            sent = 0;
        }
    }
    if (sent)
        free(allreduce->mem);
    sampi_p2p_allreduce_init(allreduce);
}

int sampi_request_cancel(MPI_Request *req)
{
    if (*req == MPI_REQUEST_NULL)
        return 0;
    MPI_Status st;
    int cancelled = 0;
    PMPI_Cancel(req);
    PMPI_Wait(req, &st);
    PMPI_Test_cancelled(&st, &cancelled);
    return !cancelled;
}
