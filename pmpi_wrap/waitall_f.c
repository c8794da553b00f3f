/*
 * waitall_f.c - Fortran's MPI_WAITALL (mpif.h, `use mpi`, `use mpi_f08`),
 * routed to SAMPI's MPI_Waitall (request.c).
 *
 * Open MPI 4.1's Fortran MPI_WAITALL calls PMPI_Waitall directly, which
 * under MPI_THREAD_MULTIPLE never returns when one of its requests had
 * completed in error before the call (request.c's header says why).  SAMPI
 * runs Open MPI threaded wherever progress threads run, so a Fortran
 * program's truncated receive would hang its MPI_WAITALL there instead of
 * failing.  Its symbols mpi_waitall_, mpi_waitall__, mpi_waitall and
 * MPI_WAITALL are aliases of ompi_waitall_f, which `use mpi_f08` calls too;
 * SAMPI defines all five, as it does for MPI_ALLREDUCE (allreduce_f.c).
 *
 * Unlike Open MPI's, the handles and statuses are written back when the
 * call failed too: with MPI_ERR_IN_STATUS the statuses say which request
 * failed, and a failed request was freed (its handle is MPI_REQUEST_NULL).
 */
#include "sampi_internal.h"

#include <mpi.h>
#include <stdlib.h>

/* Fortran's MPI_STATUSES_IGNORE and MPI_STATUS_IGNORE: the addresses of
 * Open MPI's sentinels (gfortran's mangling, the one libmpi exports). */
extern int mpi_fortran_statuses_ignore_ __attribute__((weak));
extern int mpi_fortran_status_ignore_ __attribute__((weak));

enum { FEW = 16, STATUS_FINTS = sizeof(MPI_Status) / sizeof(MPI_Fint) };

void ompi_waitall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses, MPI_Fint *ierr);

void ompi_waitall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses, MPI_Fint *ierr)
{
    const int n = (int)*count;
    const int ignore =
        &mpi_fortran_statuses_ignore_ && (void *)statuses == (void *)&mpi_fortran_statuses_ignore_;
    MPI_Request few_req[FEW];
    MPI_Status few_st[FEW];
    MPI_Request *req = n <= FEW ? few_req : malloc((size_t)n * sizeof(*req));
    MPI_Status *st = n <= FEW ? few_st : malloc((size_t)n * sizeof(*st));
    int rc;
    if (!req || !st) {
        PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    for (int i = 0; i < n; i++)
        req[i] = PMPI_Request_f2c(requests[i]);
    rc = MPI_Waitall(n, req, ignore ? MPI_STATUSES_IGNORE : st);
    for (int i = 0; i < n; i++) {
        requests[i] = PMPI_Request_c2f(req[i]);
        MPI_Fint *f = &statuses[(size_t)i * STATUS_FINTS];
        if (!ignore &&
            !(&mpi_fortran_status_ignore_ && (void *)f == (void *)&mpi_fortran_status_ignore_))
            PMPI_Status_c2f(&st[i], f);
    }
out:
    if (req != few_req)
        free(req);
    if (st != few_st)
        free(st);
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

#define SAMPI_FORTRAN_WAITALL_ALIAS(name)                                                          \
    void name(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)                                      \
        __attribute__((alias("ompi_waitall_f")))
SAMPI_FORTRAN_WAITALL_ALIAS(mpi_waitall_);
SAMPI_FORTRAN_WAITALL_ALIAS(mpi_waitall__);
SAMPI_FORTRAN_WAITALL_ALIAS(mpi_waitall);
SAMPI_FORTRAN_WAITALL_ALIAS(MPI_WAITALL);
