/*
 * sampi_internal.h - what every part of the library may use: the registry,
 * logging, and the error convention.
 *
 * Internally errors are negative errno values; they become MPI error classes
 * only at the PMPI boundary (pmpi_wrap/), through sampi_errno_to_mpi.
 */
#ifndef SAMPI_INTERNAL_H
#define SAMPI_INTERNAL_H

#include "config.h"
#include "log.h"

#include <errno.h>
#include <mpi.h>

/* Errnos with a meaning of SAMPI's own (negative, like the others). */
#define SAMPI_EREVOKED          ESHUTDOWN  /* the communicator's SAMPI state was revoked */
#define SAMPI_EMISMATCH_COUNT   ERANGE     /* ranks passed different counts */
#define SAMPI_EMISMATCH_TYPE    EPROTOTYPE /* ... different datatypes */
#define SAMPI_EMISMATCH_OP      EBADRQC    /* ... different ops */
#define SAMPI_EMISMATCH_PATTERN EBADE      /* ... chose different algorithms or settings */
/* Whether a negative errno is one of the mismatches above. */
int sampi_errno_is_mismatch(int neg_errno);

/* MPI error class for a negative errno returned by the library (an MPI
 * error code for -SAMPI_EREVOKED: see revoke.h). */
int sampi_errno_to_mpi(int neg_errno);

/* Errors that Open MPI already reported through the error handler (for
 * example from PMPI_Allreduce) travel as -(SAMPI_EHANDLED + class), so that
 * the boundary returns the class without invoking the handler a second time. */
#define SAMPI_EHANDLED 100000
static inline int sampi_error_handled(int mpi_class)
{
    return -(SAMPI_EHANDLED + mpi_class);
}

/* PMPI_T_init_thread that never lowers MPI's thread level.  Open MPI 4.1's
 * MPI_T_init_thread sets the process's thread level to the one it is given
 * even after MPI_Init_thread: MPI_T_init_thread(MPI_THREAD_SINGLE) in a
 * program that got MPI_THREAD_MULTIPLE makes MPI_Query_thread answer
 * MPI_THREAD_SINGLE and turns off Open MPI's own locking while threads
 * still call MPI (seen with Open MPI 4.1.4, without SAMPI too).  So the
 * level asked for is at least the one MPI runs at. */
static inline int sampi_t_init_thread(int required, int *provided)
{
    int initialized = 0, finalized = 0, level = MPI_THREAD_SINGLE;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized && PMPI_Query_thread(&level) == MPI_SUCCESS && level > required)
        required = level;
    return PMPI_T_init_thread(required, provided);
}

#endif
