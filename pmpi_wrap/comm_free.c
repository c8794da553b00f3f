/*
 * comm_free.c - MPI_Comm_free, watched so that SAMPI's C interface can turn a
 * freed communicator into MPI_ERR_COMM instead of reading freed memory.
 *
 * The handles the program freed are remembered (the most recent
 * FREED_KEPT).  A handle on that list is looked up in Open MPI's table of
 * live communicators through MPI_Comm_f2c, which never dereferences the
 * handle: found means the address was reused by a new communicator (then it
 * is live, and leaves the list); not found means it is stale.
 *
 * Fortran's MPI_COMM_FREE calls PMPI_Comm_free directly in Open MPI 4.1, so
 * its entry points are defined here too and sent through the C wrapper.
 */
#include "comm.h"
#include "sampi_internal.h"
#include "wrap.h"

#include <pthread.h>

#define FREED_KEPT 256
/* Open MPI's table has no size query: scanning stops after this many empty
 * slots in a row past the last live one. */
#define EMPTY_RUN 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static MPI_Comm freed[FREED_KEPT];
static unsigned next_slot;

int MPI_Comm_free(MPI_Comm *comm)
{
    MPI_Comm before = comm ? *comm : MPI_COMM_NULL;
    struct sampi_comm *c = NULL;
    int rc;
    /* MPI: the collectives pending on a freed communicator complete
     * normally; SAMPI's progress thread finishes them first, with no lock
     * of Open MPI's held (the state goes in the attribute's delete) */
    if (before != MPI_COMM_NULL && sampi_runtime_mpi_ready() && sampi_comm_get(before, 0, &c) == 0)
        sampi_comm_wait_pending(c);
    if (before != MPI_COMM_NULL && sampi_runtime_mpi_ready() && sampi_comm_outlives(before)) {
        /* Collectives SAMPI could not finish are still pending on it, and
         * Open MPI would progress them on a freed communicator when the late
         * rank arrives (a crash, seen here): the program's handle is
         * released, the communicator itself kept until MPI_Finalize. */
        sampi_comm_drop_state(before);
        *comm = MPI_COMM_NULL;
        rc = MPI_SUCCESS;
    } else {
        rc = PMPI_Comm_free(comm);
    }
    if (rc == MPI_SUCCESS && before != MPI_COMM_NULL) {
        pthread_mutex_lock(&lock);
        freed[next_slot++ % FREED_KEPT] = before;
        pthread_mutex_unlock(&lock);
    }
    return rc;
}

static int in_table(MPI_Comm comm)
{
    for (int i = 0, empty = 0; empty < EMPTY_RUN; i++) {
        MPI_Comm c = PMPI_Comm_f2c(i);
        if (c == MPI_COMM_NULL || c == NULL) { /* Open MPI answers NULL past its table */
            empty++;
            continue;
        }
        empty = 0;
        if (c == comm)
            return 1;
    }
    return 0;
}

int sampi_comm_handle_live(MPI_Comm comm)
{
    int live = 1;
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < FREED_KEPT; i++) {
        if (freed[i] != comm || comm == MPI_COMM_NULL)
            continue;
        live = in_table(comm);
        if (live)
            freed[i] = MPI_COMM_NULL; /* a new communicator at the same address */
        break;
    }
    pthread_mutex_unlock(&lock);
    return live;
}

void ompi_comm_free_f(MPI_Fint *comm, MPI_Fint *ierr);

void ompi_comm_free_f(MPI_Fint *comm, MPI_Fint *ierr)
{
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    int rc = MPI_Comm_free(&c);
    if (rc == MPI_SUCCESS)
        *comm = PMPI_Comm_c2f(c);
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

#define SAMPI_FORTRAN_COMM_FREE_ALIAS(name)                                                        \
    void name(MPI_Fint *, MPI_Fint *) __attribute__((alias("ompi_comm_free_f")))
SAMPI_FORTRAN_COMM_FREE_ALIAS(mpi_comm_free_);
SAMPI_FORTRAN_COMM_FREE_ALIAS(mpi_comm_free__);
SAMPI_FORTRAN_COMM_FREE_ALIAS(mpi_comm_free);
SAMPI_FORTRAN_COMM_FREE_ALIAS(MPI_COMM_FREE);
