/*
 * err.h - how a failure travels inside SAMPI, and its text.
 *
 * A function of the library returns 0 or a negative error of one of three
 * kinds, told apart by their range:
 *
 *   -1 .. -(SAMPI_ERR_BASE - 1)     a system errno, negated: what a socket,
 *                                   a file, a mapping, libfabric or DPDK
 *                                   reported, or a plain condition that errno
 *                                   names well (-ENOMEM, -EINVAL, -ETIMEDOUT);
 *   -SAMPI_ERR_BASE .. -(SAMPI_ERR_END - 1)
 *                                   one of SAMPI's own causes (enum sampi_err),
 *                                   negated;
 *   -(SAMPI_ERR_MPI_BASE + class)   an error class Open MPI returned, carried
 *                                   as itself (sampi_err_from_mpi): Open MPI
 *                                   already reported it through the error
 *                                   handler, so the MPI boundary returns the
 *                                   class without invoking the handler again.
 *
 * sampi_strerror prints any of them.  They become MPI error classes only at
 * the MPI boundary (src/core/errors.h: sampi_errno_to_mpi).
 */
#ifndef SAMPI_ERR_H
#define SAMPI_ERR_H

/* SAMPI's own failure causes (positive, returned negated like errno). */
enum sampi_err {
    SAMPI_ERR_BASE = 10000,          /* above every errno */
    SAMPI_EREVOKED = SAMPI_ERR_BASE, /* the communicator's SAMPI state was revoked */
    SAMPI_EMISMATCH_COUNT,           /* ranks passed different counts */
    SAMPI_EMISMATCH_TYPE,            /* ... different datatypes */
    SAMPI_EMISMATCH_OP,              /* ... different ops */
    SAMPI_EMISMATCH_PATTERN,         /* ... chose different algorithms or settings */
    SAMPI_ERR_END
};

/* Where Open MPI's error classes start (see above). */
#define SAMPI_ERR_MPI_BASE 100000

/* The negative error carrying Open MPI's error class mpi_class. */
static inline int sampi_err_from_mpi(int mpi_class)
{
    return -(SAMPI_ERR_MPI_BASE + mpi_class);
}

/* The Open MPI error class err carries, or -1 when it is of another kind. */
static inline int sampi_err_mpi_class(int err)
{
    return err <= -SAMPI_ERR_MPI_BASE ? -err - SAMPI_ERR_MPI_BASE : -1;
}

/* Whether a negative error is one of the mismatches of enum sampi_err. */
static inline int sampi_errno_is_mismatch(int err)
{
    return -err >= SAMPI_EMISMATCH_COUNT && -err <= SAMPI_EMISMATCH_PATTERN;
}

/* The text of a negative error of any kind above (its sign is ignored, so a
 * positive errno prints as strerror prints it): SAMPI's causes from their
 * table, errno values as strerror, Open MPI's classes through
 * MPI_Error_string.  The text stays valid until the thread's next call. */
const char *sampi_strerror(int err);

#endif
