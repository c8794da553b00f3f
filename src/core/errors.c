/*
 * errors.c - the library's negative errors as MPI error classes, for the
 * MPI boundary (errors.h).
 */
#include "errors.h"

#include "revoke.h"
#include "sampi_internal.h"

#include <errno.h>

int sampi_errno_to_mpi(int neg_errno)
{
    if (sampi_err_mpi_class(neg_errno) >= 0)
        return sampi_err_mpi_class(neg_errno);
    if (neg_errno == -SAMPI_EREVOKED)
        return sampi_revoked_code(); /* class MPI_ERR_OTHER, with its own string */
    static const struct {
        int err;
        int mpi_class;
    } map[] = {
        {ENOMEM, MPI_ERR_NO_MEM},
        {EINVAL, MPI_ERR_ARG},
        {ENOTSUP, MPI_ERR_ARG},
        {ETIMEDOUT, MPI_ERR_OTHER},
        {EMSGSIZE, MPI_ERR_COUNT},
        {EIO, MPI_ERR_OTHER},
        {EFAULT, MPI_ERR_BUFFER},
        {EBUSY, MPI_ERR_REQUEST}, /* a persistent request started while active */
        {SAMPI_EMISMATCH_COUNT, MPI_ERR_COUNT},
        {SAMPI_EMISMATCH_TYPE, MPI_ERR_TYPE},
        {SAMPI_EMISMATCH_OP, MPI_ERR_OP},
        {SAMPI_EMISMATCH_PATTERN, MPI_ERR_OTHER},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (map[i].err == -neg_errno)
            return map[i].mpi_class;
    return MPI_ERR_INTERN;
}
