/*
 * init_f.c - Fortran entry points for MPI_INIT, MPI_INIT_THREAD,
 * MPI_QUERY_THREAD and MPI_FINALIZE.
 *
 * Open MPI 4.1's Fortran bindings call PMPI_Init, PMPI_Init_thread,
 * PMPI_Query_thread and PMPI_Finalize directly, as its MPI_ALLREDUCE calls
 * PMPI_Allreduce (allreduce_f.c).  Without these, a Fortran program's start
 * would go past SAMPI: the wait mode decided from this process alone, no
 * agreement on the progress mode (so no progress threads), and its data
 * paths never released before MPI goes away.  Each symbol of the mpif.h and
 * `use mpi` bindings (lower case with one or two underscores, none, upper
 * case) and the ompi_*_f name the `use mpi_f08` bindings call is defined
 * here and sent through SAMPI's C entry point.
 */
#include "sampi_internal.h"
#include "wrap.h"

#include <mpi.h>

void ompi_init_f(MPI_Fint *ierr);
void ompi_init_f(MPI_Fint *ierr)
{
    int rc = MPI_Init(NULL, NULL);
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

void ompi_init_thread_f(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
void ompi_init_thread_f(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    int got = MPI_THREAD_SINGLE;
    int rc = MPI_Init_thread(NULL, NULL, (int)*required, &got);
    if (rc == MPI_SUCCESS)
        *provided = (MPI_Fint)got;
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

void ompi_query_thread_f(MPI_Fint *provided, MPI_Fint *ierr);
void ompi_query_thread_f(MPI_Fint *provided, MPI_Fint *ierr)
{
    int got = MPI_THREAD_SINGLE;
    int rc = MPI_Query_thread(&got);
    if (rc == MPI_SUCCESS)
        *provided = (MPI_Fint)got;
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

void ompi_finalize_f(MPI_Fint *ierr);
void ompi_finalize_f(MPI_Fint *ierr)
{
    int rc = MPI_Finalize();
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

/* The four spellings of NAME's mpif.h / `use mpi` symbol, aliases of
 * ompi_NAME_f. */
#define SAMPI_FORTRAN_ALIASES(lower, upper, target, ...)                                           \
    void lower##_(__VA_ARGS__) __attribute__((alias(target)));                                     \
    void lower##__(__VA_ARGS__) __attribute__((alias(target)));                                    \
    void lower(__VA_ARGS__) __attribute__((alias(target)));                                        \
    void upper(__VA_ARGS__) __attribute__((alias(target)))
SAMPI_FORTRAN_ALIASES(mpi_init, MPI_INIT, "ompi_init_f", MPI_Fint *);
SAMPI_FORTRAN_ALIASES(mpi_init_thread, MPI_INIT_THREAD, "ompi_init_thread_f", MPI_Fint *,
                      MPI_Fint *, MPI_Fint *);
SAMPI_FORTRAN_ALIASES(mpi_query_thread, MPI_QUERY_THREAD, "ompi_query_thread_f", MPI_Fint *,
                      MPI_Fint *);
SAMPI_FORTRAN_ALIASES(mpi_finalize, MPI_FINALIZE, "ompi_finalize_f", MPI_Fint *);
