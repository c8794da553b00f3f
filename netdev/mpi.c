/*
 * mpi.c - the `mpi` netdev: PMPI point-to-point on SAMPI's private duplicate
 * of the user's communicator.
 *
 * Always available, so it is the path every other backend falls back to.  The
 * private duplicate (made once per communicator at its first call, shared
 * with SAMPI's own collectives and revocation notices, see src/core/revoke.h)
 * keeps SAMPI's messages from ever matching the application's receives.
 * MPI tags are 31 bits or fewer, so the 64-bit SAMPI tag is folded to its
 * kind (two low bits), the segment, the round, and the four low bits of the
 * call sequence number (mpi_tag).  That is enough: a blocking call is at most
 * one call ahead of another rank on the same communicator (an allreduce
 * cannot finish anywhere before every rank has entered it), and a caller
 * that keeps calls in flight at once (executor.h, sampi_exec_start_own)
 * keeps fewer than 16.  The kind keeps data, probes and notices apart.
 *
 * No receive is ever matched by a message of another size.  Open MPI 4.1.4
 * does not truncate a longer message into a receive over shared memory: it
 * writes the whole message past the receive buffer (seen here: a 5,000-byte
 * message into a 1,000-byte receive corrupted the heap; 262,144 bytes ended in
 * "Read -1, expected 262144, errno = 14" and a crash).  So a receive is not
 * posted ahead: it is matched with MPI_Improbe when its message is there,
 * its size read from the status, and taken with MPI_Imrecv only when the size
 * is the one expected; a message of another size is drained into a buffer of
 * its own and completes the request with -EBADMSG.  An unmatched receive
 * leaves nothing posted, so abandoning it is free.  The cost: matching
 * happens in wait() rather than in Open MPI's progress, and eager messages
 * are copied once more (segments are 256 KiB by default, which go by
 * single copy).
 */
#include "netdev.h"
#include "sampi_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct mpi_netdev {
    struct sampi_netdev base;
    MPI_Comm comm; /* the caller's: not ours to free */
    int tag_bits;
};

/* The MPI tag, low bits first: kind (2), segment (12), round (13), call
 * sequence number (4): 31 bits, Open MPI's ob1 and its MPI_TAG_UB of
 * 2^31 - 1.  Every message in flight between two ranks has a tag of its own,
 * which the matching by MPI_Improbe needs (see the top of the file): fewer
 * than 16 calls are in flight on a communicator, a round's segments are fewer
 * than 2^12 (SAMPI_NETDEV_MAX_SEGMENTS), and no schedule has 2^13 rounds in
 * flight at once.  Under a smaller MPI_TAG_UB the sequence number's high
 * bits go first (it is the top field): with 29 bits, 4 calls apart. */
#define MPI_SEG_BITS   12
#define MPI_ROUND_BITS 13
#define MPI_SEQ_BITS   4
_Static_assert(SAMPI_NETDEV_MAX_SEGMENTS <= (1 << MPI_SEG_BITS), "a segment index must fit");
_Static_assert(2 + MPI_SEG_BITS + MPI_ROUND_BITS + MPI_SEQ_BITS <= 31, "an MPI tag has 31 bits");

static int mpi_tag(const struct mpi_netdev *nd, uint64_t tag)
{
    uint64_t kind = tag >> SAMPI_TAG_KIND_SHIFT;
    uint64_t seq =
        (tag >> (SAMPI_TAG_SEG_BITS + SAMPI_TAG_ROUND_BITS)) & ((UINT64_C(1) << MPI_SEQ_BITS) - 1);
    uint64_t round = (tag >> SAMPI_TAG_SEG_BITS) & ((UINT64_C(1) << MPI_ROUND_BITS) - 1);
    uint64_t seg = tag & ((UINT64_C(1) << MPI_SEG_BITS) - 1);
    uint64_t folded = seq;
    folded = folded << MPI_ROUND_BITS | round;
    folded = folded << MPI_SEG_BITS | seg;
    folded = folded << 2 | (kind & 3);
    return (int)(folded & ((UINT64_C(1) << nd->tag_bits) - 1));
}

static int mpi_open(MPI_Comm comm, struct sampi_waiter *w, struct sampi_netdev **out)
{
    (void)w; /* nothing to exchange: the caller agrees on the outcome */
    struct mpi_netdev *nd = calloc(1, sizeof(*nd));
    *out = NULL;
    if (!nd)
        return -ENODEV;
    nd->comm = comm;
    PMPI_Comm_rank(comm, &nd->base.rank);
    PMPI_Comm_size(comm, &nd->base.size);
    nd->base.ops = &sampi_netdev_mpi_ops;

    int *tag_ub = NULL, flag = 0;
    PMPI_Comm_get_attr(nd->comm, MPI_TAG_UB, &tag_ub, &flag);
    long ub = (flag && tag_ub) ? *tag_ub : 32767;
    nd->tag_bits = 0;
    while (nd->tag_bits < 62 && ((INT64_C(1) << (nd->tag_bits + 1)) - 1) <= ub)
        nd->tag_bits++;
    *out = &nd->base;
    return 0;
}

static void mpi_close(struct sampi_netdev *base)
{
    free(base);
}

/* A request's MPI side.  A receive is not posted until its message is
 * there: it is matched with MPI_Improbe, its size checked, and only then
 * received with MPI_Imrecv (see the top of the file for why). */
struct mpi_req {
    MPI_Request req; /* the send, or the matched receive; MPI_REQUEST_NULL before */
    void *buf;       /* receive: where the message goes */
    int peer, tag;
    int matched; /* receive: Improbe found the message and Imrecv took it */
};
_Static_assert(sizeof(struct mpi_req) <= sizeof(((sampi_netdev_req_t *)0)->impl),
               "sampi_netdev_req_t.impl must hold a struct mpi_req");

static struct mpi_req *mreq(sampi_netdev_req_t *r)
{
    return (struct mpi_req *)&r->impl;
}

/* What a send and a receive share before they are posted. */
static int start_request(sampi_netdev_req_t *req, size_t len, int is_recv)
{
    req->done = 0;
    req->status = 0;
    req->len = len;
    req->is_recv = is_recv;
    *mreq(req) = (struct mpi_req){.req = MPI_REQUEST_NULL};
    return len > INT_MAX ? -EMSGSIZE : 0;
}

static int mpi_isend(struct sampi_netdev *base, const void *buf, size_t len, int peer, uint64_t tag,
                     sampi_netdev_req_t *req)
{
    struct mpi_netdev *nd = (struct mpi_netdev *)base;
    int rc = start_request(req, len, 0);
    if (rc)
        return rc;
    rc = PMPI_Isend(buf, (int)len, MPI_BYTE, peer, mpi_tag(nd, tag), nd->comm, &mreq(req)->req);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

/* Look for a receive's message; when it is there, take it: into the
 * caller's buffer when its size is the one posted, else into a throwaway
 * buffer of its own size (the request then fails with -EBADMSG).  Returns 1
 * when the request completed here, 0 otherwise. */
static int match(struct mpi_netdev *nd, sampi_netdev_req_t *r)
{
    struct mpi_req *m = mreq(r);
    int flag = 0, got = -1;
    MPI_Message msg;
    MPI_Status st;
    if (PMPI_Improbe(m->peer, m->tag, nd->comm, &flag, &msg, &st) != MPI_SUCCESS) {
        r->status = -EIO;
        return r->done = 1;
    }
    if (!flag)
        return 0;
    PMPI_Get_count(&st, MPI_BYTE, &got);
    if (got >= 0 && (size_t)got == r->len) {
        m->matched = 1;
        if (PMPI_Imrecv(m->buf, got, MPI_BYTE, &msg, &m->req) != MPI_SUCCESS) {
            r->status = -EIO;
            return r->done = 1;
        }
        return 0;
    }
    /* a message of another exchange's size: drain it, never into r's buffer */
    void *junk = malloc(got > 0 ? (size_t)got : 1);
    if (junk)
        PMPI_Mrecv(junk, got > 0 ? got : 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    free(junk);
    r->status = -EBADMSG;
    return r->done = 1;
}

static int mpi_irecv(struct sampi_netdev *base, void *buf, size_t len, int peer, uint64_t tag,
                     sampi_netdev_req_t *req)
{
    struct mpi_netdev *nd = (struct mpi_netdev *)base;
    int rc = start_request(req, len, 1);
    if (rc)
        return rc;
    struct mpi_req *m = mreq(req);
    m->buf = buf;
    m->peer = peer;
    m->tag = mpi_tag(nd, tag);
    /* Matched in wait(), not here: over shared memory Open MPI copies a
     * large message inside MPI_Imrecv, and a copy made while the round's
     * sends are not posted yet holds the peer up (docs/notes/2026-11-small-call-costs.md). */
    return 0;
}

/* 1 when r completed (done set), 0 when still pending. */
static int progress_one(struct mpi_netdev *nd, sampi_netdev_req_t *r)
{
    struct mpi_req *m = mreq(r);
    if (r->is_recv && !m->matched)
        return match(nd, r);
    int flag = 0;
    if (PMPI_Test(&m->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        r->status = -EIO;
        flag = 1;
    }
    return flag ? (r->done = 1) : 0;
}

static int mpi_wait(struct sampi_netdev *base, sampi_netdev_req_t *const *reqs, int n,
                    int64_t deadline_ns)
{
    struct mpi_netdev *nd = (struct mpi_netdev *)base;
    unsigned spins = 0;
    for (;;) {
        int pending = 0, progressed = 0;
        for (int i = 0; i < n; i++) {
            if (reqs[i]->done)
                continue;
            if (progress_one(nd, reqs[i]))
                progressed = 1;
            else
                pending++;
        }
        if (progressed || pending == 0)
            return 0;
        if (sampi_now_ns() > deadline_ns)
            return -ETIMEDOUT;
        sampi_wait_pause(&spins);
    }
}

static void mpi_cancel(struct sampi_netdev *base, sampi_netdev_req_t *req)
{
    (void)base;
    struct mpi_req *m = mreq(req);
    if (req->done)
        return;
    if (req->is_recv && m->matched) {
        /* the message is being received into the caller's buffer: let it
         * land (it is already here: over shared memory it was copied at the
         * match), so that nothing writes there after the call returned */
        PMPI_Wait(&m->req, MPI_STATUS_IGNORE);
    } else if (!req->is_recv) {
        /* A send cannot be cancelled reliably in Open MPI 4.1: the
         * executor asks for this only once the peer said it takes nothing
         * more (it will never match it), or past the user's limit. */
        PMPI_Request_free(&m->req);
    }
    /* an unmatched receive was never posted: nothing to undo */
    req->done = 1;
    req->status = -ECANCELED;
}

const struct sampi_netdev_ops sampi_netdev_mpi_ops = {
    .name = "mpi",
    .description = "PMPI point-to-point on a private duplicate of the communicator",
    .open = mpi_open,
    .close = mpi_close,
    .isend = mpi_isend,
    .irecv = mpi_irecv,
    .wait = mpi_wait,
    .cancel = mpi_cancel,
};
