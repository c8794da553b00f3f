/*
 * sampi.h - the public C interface of SAMPI (Straggler-Aware MPI).
 *
 * An unmodified program needs none of this: relinking with -lsampi (before
 * -lmpi) or starting it with `mpirun -x LD_PRELOAD=libsampi.so` routes its
 * MPI_Allreduce through SAMPI, configured by SAMPI_* environment variables.
 * The calls below are for programs and tools that want to choose per
 * communicator, or ask what ran.
 *
 * Every setter is collective in meaning: all ranks of the communicator must
 * set the same value before their next MPI_Allreduce on it, or the ranks
 * would run different communication patterns.
 */
#ifndef SAMPI_H
#define SAMPI_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SAMPI_VERSION_MAJOR 0
#define SAMPI_VERSION_MINOR 1
#define SAMPI_VERSION_PATCH 0

/* "0.1.0" */
const char *sampi_version(void);

/* Force an algorithm ("auto", "native", "ring", "rhd", ...) for `comm`;
 * NULL or "" returns to the process-wide setting.  MPI_SUCCESS, or
 * MPI_ERR_ARG for an unknown name, MPI_ERR_COMM for a bad communicator. */
int sampi_comm_set_algorithm(MPI_Comm comm, const char *algorithm);

/* Choose the data path ("mpi", "ofi") for `comm`.  Takes effect only before
 * the first MPI_Allreduce on `comm` (the path is opened then); afterwards it
 * returns MPI_ERR_OTHER.  NULL or "" returns to the process-wide setting. */
int sampi_comm_set_netdev(MPI_Comm comm, const char *netdev);

/* Name of the algorithm that ran the last MPI_Allreduce on `comm` ("none"
 * before the first call).  The string is static. */
const char *sampi_comm_last_algorithm(MPI_Comm comm);

/* Name of the data path `comm` uses ("none" before the first call). */
const char *sampi_comm_netdev(MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif
