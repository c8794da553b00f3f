/*
 * validate.c - argument checks and eligibility of an MPI_Allreduce call.
 *
 * For every argument error Open MPI checks itself (null communicator, null op
 * or datatype, negative count, MPI_IN_PLACE as the receive buffer, aliased
 * buffers, an op not defined on the datatype) the call is handed to
 * PMPI_Allreduce unchanged: the user then gets exactly Open MPI's error class,
 * in Open MPI's order of checks, through the handler Open MPI would use.  What
 * Open MPI would not catch before touching memory (a NULL buffer with a
 * positive count) SAMPI reports as MPI_ERR_BUFFER.
 */
#include "errors.h"
#include "stats.h"
#include "sampi_internal.h"
#include "wrap.h"

#include <errno.h>
#include <stddef.h>

enum sampi_check sampi_check_allreduce(const void *sendbuf, void *recvbuf, int count,
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                       struct sampi_coll_args *args, int *why, int *rc)
{
    /* Open MPI skips its alias check for NULL (its MPI_BOTTOM) and would then
     * read through NULL: that case is left to the NULL-buffer check below. */
    int aliased = sendbuf == recvbuf && (sendbuf != NULL || count <= 0);
    if (comm == MPI_COMM_NULL || op == MPI_OP_NULL || datatype == MPI_DATATYPE_NULL || count < 0 ||
        recvbuf == MPI_IN_PLACE || aliased)
        return SAMPI_CHECK_TO_PMPI;

    int inter = 0, size = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return SAMPI_CHECK_TO_PMPI;
    if (inter) {
        *why = SAMPI_FALLBACK_COMM;
        return SAMPI_CHECK_INELIGIBLE;
    }

    int sop = sampi_op_lookup(op);
    if (sampi_dtype_lookup(datatype, &args->dt) != 0) {
        *why = sop < 0 ? SAMPI_FALLBACK_OP : SAMPI_FALLBACK_DATATYPE;
        return SAMPI_CHECK_INELIGIBLE;
    }
    if (sop < 0) {
        *why = SAMPI_FALLBACK_OP;
        return SAMPI_CHECK_INELIGIBLE;
    }
    if (!sampi_op_defined_on(sop, args->dt.tclass))
        return SAMPI_CHECK_TO_PMPI; /* Open MPI answers MPI_ERR_OP */
    if (count > 0 && (recvbuf == NULL || sendbuf == NULL)) {
        *rc = sampi_report_error(comm, -EFAULT); /* MPI_ERR_BUFFER */
        return SAMPI_CHECK_ANSWERED;
    }
    args->reduce = sampi_reduce_fn_get(sop, args->dt.elem);
    if (!args->reduce) {
        *why = SAMPI_FALLBACK_OP;
        return SAMPI_CHECK_INELIGIBLE;
    }
    PMPI_Comm_size(comm, &size);
    if (size < 2) {
        *why = SAMPI_FALLBACK_COMM;
        return SAMPI_CHECK_INELIGIBLE;
    }
    args->sendbuf = sendbuf;
    args->recvbuf = recvbuf;
    args->count = (size_t)count;
    args->datatype = datatype;
    args->mpi_op = op;
    args->op = sop;
    args->comm = comm;
    args->ctx = NULL;
    return SAMPI_CHECK_OK;
}

int sampi_report_error(MPI_Comm comm, int neg_errno)
{
    if (neg_errno == 0)
        return MPI_SUCCESS;
    int cls = sampi_errno_to_mpi(neg_errno);
    if (sampi_err_mpi_class(neg_errno) < 0) /* Open MPI reported its own */
        PMPI_Comm_call_errhandler(comm, cls);
    return cls;
}
