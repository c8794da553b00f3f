/*
 * errors.h - the library's errors (src/base/err.h) as MPI error classes, for
 * the MPI boundary.
 */
#ifndef SAMPI_ERRORS_H
#define SAMPI_ERRORS_H

/* MPI error class for a negative error returned by the library: Open MPI's
 * class for one that carries it, SAMPI's revocation code for
 * -SAMPI_EREVOKED (class MPI_ERR_OTHER: see revoke.h), a class of the
 * cause's kind for the mismatches and the errnos the library returns,
 * MPI_ERR_INTERN for any other. */
int sampi_errno_to_mpi(int neg_errno);

#endif
