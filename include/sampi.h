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

/* ---------------------------------------------------------------- selective reduce
 * Partial, weighted averaging for data-parallel training on heterogeneous
 * workers (sampi-controller(1)).  With SAMPI_SELECTIVE_MODE=api or allreduce,
 * MPI_Init spawns a controller rank (never part of MPI_COMM_WORLD) that forms
 * groups of ready workers; each call averages the caller's buffer over its
 * group only.  Approximate by design: opt-in, floating point only. */

/* What a call did.  `members`/`weights` are optional caller arrays of
 * `capacity` entries (the communicator's size suffices); the rest is filled
 * in by the call. */
typedef struct sampi_partial_info {
    long long group;     /* the controller's group number; -1: no controller */
    int kind;            /* SAMPI_PARTIAL_GROUP, SAMPI_PARTIAL_FULL or SAMPI_PARTIAL_EXACT */
    int size;            /* ranks that took part */
    double weight;       /* this rank's weight */
    long long iteration; /* this rank's iteration count afterwards (the group's largest) */
    double seconds;      /* time spent reducing (waiting for the group excluded) */
    int *members;        /* ascending ranks of the group, or NULL */
    double *weights;     /* their weights (sum 1), or NULL */
    int capacity;        /* entries members/weights can hold */
} sampi_partial_info_t;

#define SAMPI_PARTIAL_GROUP 0 /* a group chosen by the controller */
#define SAMPI_PARTIAL_FULL  1 /* a full synchronisation (every sampi_selective_c-th) */
#define SAMPI_PARTIAL_EXACT 2 /* no controller (mode off, or it failed): exact over all ranks */

/* buf (count elements of MPI_FLOAT or MPI_DOUBLE) becomes sum_j w_j buf_j over
 * the group the controller chose for this call, w_j the weights (sum 1;
 * sampi_selective_weights): a weighted mean, to be used as the new model.
 * Each call counts as one iteration of this rank.  Without a controller the
 * call is the exact mean over all ranks (kind SAMPI_PARTIAL_EXACT), which is
 * collective.  comm: MPI_COMM_WORLD, or with sampi_selective_comm=congruent a
 * communicator with the same ranks in the same order.  info may be NULL.
 * MPI_SUCCESS, MPI_ERR_TYPE for other datatypes, MPI_ERR_OTHER when the
 * controller refused the call or a group member failed. */
int sampi_partial_allreduce(void *buf, int count, MPI_Datatype datatype, MPI_Comm comm,
                            sampi_partial_info_t *info);

/* What this rank's last partial call did, including an MPI_Allreduce made
 * partial by sampi_selective_mode=allreduce (members/weights: none for kind
 * SAMPI_PARTIAL_EXACT).  MPI_SUCCESS, or MPI_ERR_OTHER when no controller
 * runs. */
int sampi_partial_last(MPI_Comm comm, sampi_partial_info_t *info);

/* This rank makes no more partial calls.  Collective over the ranks of comm
 * (MPI_COMM_WORLD): it returns once every rank has called it, after helping
 * the others finish their calls.  Call it before any other collective that
 * follows the training loop (ranks leave the loop at different iterations);
 * MPI_Finalize calls it when the program did not.  Later partial calls are
 * exact means over all ranks (collective).  MPI_SUCCESS or MPI_ERR_COMM. */
int sampi_partial_finish(MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif
