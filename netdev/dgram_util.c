/*
 * dgram_util.c - what the datagram backends share (dgram_backend.h): the
 * collective vote of their open(), and the check of a send's arguments.
 * Built into each datagram module (and the unit tests), not into the core.
 */
#include "dgram_backend.h"
#include "wait.h"

#include <errno.h>
#include <limits.h>

int sampi_dgram_vote(MPI_Comm comm, struct sampi_waiter *w, int rank, int stage, int err,
                     long long proposal, struct sampi_dgram_vote *out)
{
    /* MIN of {ok, key of a failure, -proposal}: the key orders failures by
     * rank first, so every rank names the same one. */
    long long key =
        stage == 0 ? LLONG_MAX
                   : ((long long)rank << 32) | ((long long)(stage & 0xffff) << 16) | (err & 0xffff);
    long long mine[3] = {stage == 0, key, -proposal}, v[3];
    int rc = sampi_waiter_allreduce(w, mine, v, 3, MPI_LONG_LONG, MPI_MIN, comm);
    if (rc)
        return rc;
    out->all_ok = v[0] != 0;
    out->fail_rank = out->all_ok ? -1 : (int)(v[1] >> 32);
    out->fail_stage = out->all_ok ? 0 : (int)((v[1] >> 16) & 0xffff);
    out->fail_err = out->all_ok ? 0 : (int)(v[1] & 0xffff);
    out->max = -v[2];
    return 0;
}

int sampi_dgram_check_send(const struct sampi_dgram *dg, int peer, size_t len)
{
    if (peer < 0 || peer >= dg->size || peer == dg->rank)
        return -EINVAL;
    return len > dg->mtu ? -EMSGSIZE : 0;
}
