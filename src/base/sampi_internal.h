/*
 * sampi_internal.h - what every part of the library may use: the registry,
 * logging, and the error convention (err.h).
 */
#ifndef SAMPI_INTERNAL_H
#define SAMPI_INTERNAL_H

#include "config.h"
#include "err.h"
#include "log.h"

#include <errno.h>
#include <mpi.h>

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
