/*
 * native.c - `native`: hand the call to Open MPI's own PMPI_Allreduce.
 *
 * Open MPI's tuned component wins for small messages (its latency-optimised
 * recursive doubling needs one round trip per doubling and no segmentation),
 * so `auto` sends small messages here.  The user's communicator is used as
 * is: Open MPI's collectives have their own context and never mix with
 * SAMPI's messages on the private duplicate.
 */
#include "algos.h"
#include "sampi_internal.h"

int sampi_allreduce_native(const struct sampi_coll_args *a)
{
    int rc = PMPI_Allreduce(a->sendbuf, a->recvbuf, (int)a->count, a->datatype, a->mpi_op, a->comm);
    /* PMPI_Allreduce has already invoked the communicator's error handler */
    return rc == MPI_SUCCESS ? 0 : sampi_err_from_mpi(rc);
}
