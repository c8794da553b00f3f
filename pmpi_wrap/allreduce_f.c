/*
 * allreduce_f.c - Fortran entry points for MPI_ALLREDUCE (MPI_INIT and
 * MPI_FINALIZE are in init_f.c).
 *
 * Open MPI 4.1's Fortran bindings call PMPI_Allreduce directly, so a C-only
 * wrapper never sees Fortran callers.  Its mpif.h and `use mpi` bindings are
 * the symbols mpi_allreduce_, mpi_allreduce__, mpi_allreduce and
 * MPI_ALLREDUCE, all aliases of ompi_allreduce_f, which the `use mpi_f08`
 * bindings call too.  SAMPI defines all five, so every Fortran flavour reaches
 * SAMPI's MPI_Allreduce, whichever name the compiler mangles to.
 *
 * MPI_IN_PLACE and MPI_BOTTOM arrive as the addresses of Open MPI's Fortran
 * sentinels; they are translated to the C constants here.
 */
#include "sampi_internal.h"
#include "wrap.h"

#include <mpi.h>

extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));

void *sampi_fortran_buffer(char *buf)
{
    if (&mpi_fortran_in_place_ && buf == (char *)&mpi_fortran_in_place_)
        return MPI_IN_PLACE;
    if (&mpi_fortran_bottom_ && buf == (char *)&mpi_fortran_bottom_)
        return MPI_BOTTOM;
    return buf;
}

void ompi_allreduce_f(char *sendbuf, char *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                      MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr);

void ompi_allreduce_f(char *sendbuf, char *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                      MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
{
    int rc =
        MPI_Allreduce(sampi_fortran_buffer(sendbuf), sampi_fortran_buffer(recvbuf), (int)*count,
                      PMPI_Type_f2c(*datatype), PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm));
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

#define SAMPI_FORTRAN_ALIAS(name)                                                                  \
    void name(char *, char *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)          \
        __attribute__((alias("ompi_allreduce_f")))
SAMPI_FORTRAN_ALIAS(mpi_allreduce_);
SAMPI_FORTRAN_ALIAS(mpi_allreduce__);
SAMPI_FORTRAN_ALIAS(mpi_allreduce);
SAMPI_FORTRAN_ALIAS(MPI_ALLREDUCE);
