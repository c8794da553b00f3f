/*
 * mpi.c - the `mpi` netdev: PMPI point-to-point on a private duplicate of the
 * user's communicator.
 *
 * Always available, so it is the path every other backend falls back to.  The
 * private duplicate keeps SAMPI's messages from ever matching the
 * application's receives.  MPI tags are 31 bits or fewer, so the 64-bit SAMPI
 * tag is folded to the round and the two low bits of the call sequence
 * number.  That is enough: MPI orders messages between a pair of ranks on one
 * communicator, and a rank can be at most one call ahead of another on the
 * same communicator (an allreduce cannot finish anywhere before every rank
 * has entered it).
 */
#include "netdev.h"
#include "sampi_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

struct mpi_netdev {
    struct sampi_netdev base;
    MPI_Comm comm;
    int tag_bits;
    int busy_poll;
};

static int mpi_tag(const struct mpi_netdev *nd, uint64_t tag)
{
    /* MPI keeps messages between two ranks on one communicator in order, so
     * the segment bits are not needed to tell segments apart; the round and
     * the low bits of the sequence number are. */
    uint64_t seq = tag >> (SAMPI_TAG_SEG_BITS + SAMPI_TAG_ROUND_BITS);
    uint64_t round = (tag >> SAMPI_TAG_SEG_BITS) & ((UINT64_C(1) << SAMPI_TAG_ROUND_BITS) - 1);
    uint64_t folded = ((seq & 3) << SAMPI_TAG_ROUND_BITS) | round;
    return (int)(folded & ((UINT64_C(1) << nd->tag_bits) - 1));
}

static int mpi_open(MPI_Comm comm, struct sampi_netdev **out)
{
    struct mpi_netdev *nd = calloc(1, sizeof(*nd));
    int ok = nd != NULL, all_ok = 0;
    /* every rank must agree on success before anyone uses the path */
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok)
        goto fail;
    if (PMPI_Comm_dup(comm, &nd->comm) != MPI_SUCCESS)
        goto fail;
    PMPI_Comm_rank(comm, &nd->base.rank);
    PMPI_Comm_size(comm, &nd->base.size);
    nd->base.ops = &sampi_netdev_mpi_ops;

    int *tag_ub = NULL, flag = 0;
    PMPI_Comm_get_attr(nd->comm, MPI_TAG_UB, &tag_ub, &flag);
    long ub = (flag && tag_ub) ? *tag_ub : 32767;
    nd->tag_bits = 0;
    while (nd->tag_bits < 62 && ((INT64_C(1) << (nd->tag_bits + 1)) - 1) <= ub)
        nd->tag_bits++;
    nd->busy_poll = sampi_cvar_int(SAMPI_CVAR_BUSY_POLL);
    *out = &nd->base;
    return 0;
fail:
    free(nd);
    *out = NULL;
    return -ENOMEM;
}

static void mpi_close(struct sampi_netdev *base)
{
    struct mpi_netdev *nd = (struct mpi_netdev *)base;
    if (!nd)
        return;
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (!finalized)
        PMPI_Comm_free(&nd->comm);
    free(nd);
}

/* What a send and a receive share before they are posted. */
static int start_request(sampi_netdev_req_t *req, size_t len)
{
    req->done = 0;
    req->status = 0;
    return len > INT_MAX ? -EMSGSIZE : 0;
}

static int mpi_isend(struct sampi_netdev *base, const void *buf, size_t len, int peer, uint64_t tag,
                     sampi_netdev_req_t *req)
{
    struct mpi_netdev *nd = (struct mpi_netdev *)base;
    int rc = start_request(req, len);
    if (rc)
        return rc;
    rc = PMPI_Isend(buf, (int)len, MPI_BYTE, peer, mpi_tag(nd, tag), nd->comm, &req->impl.mpi);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

static int mpi_irecv(struct sampi_netdev *base, void *buf, size_t len, int peer, uint64_t tag,
                     sampi_netdev_req_t *req)
{
    struct mpi_netdev *nd = (struct mpi_netdev *)base;
    int rc = start_request(req, len);
    if (rc)
        return rc;
    rc = PMPI_Irecv(buf, (int)len, MPI_BYTE, peer, mpi_tag(nd, tag), nd->comm, &req->impl.mpi);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

static int mpi_wait(struct sampi_netdev *base, sampi_netdev_req_t *const *reqs, int n,
                    int64_t deadline_ns)
{
    struct mpi_netdev *nd = (struct mpi_netdev *)base;
    unsigned spins = 0;
    for (;;) {
        int pending = 0, progressed = 0;
        for (int i = 0; i < n; i++) {
            sampi_netdev_req_t *r = reqs[i];
            if (r->done)
                continue;
            int flag = 0;
            if (PMPI_Test(&r->impl.mpi, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                r->done = 1;
                r->status = -EIO;
                flag = 1;
            }
            if (flag) {
                r->done = 1;
                progressed = 1;
            } else {
                pending++;
            }
        }
        if (progressed || pending == 0)
            return 0;
        if (sampi_now_ns() > deadline_ns)
            return -ETIMEDOUT;
        if (!nd->busy_poll)
            sampi_backoff(&spins);
    }
}

static void mpi_cancel(struct sampi_netdev *base, sampi_netdev_req_t *req)
{
    if (req->done || req->impl.mpi == MPI_REQUEST_NULL)
        return;
    /* A send cannot be cancelled reliably in Open MPI 4.1; leaving the request
     * behind is safer than waiting on it (the peer is not answering). */
    PMPI_Cancel(&req->impl.mpi);
    PMPI_Request_free(&req->impl.mpi);
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
