/*
 * comm_info_f.c - Fortran entry points for MPI_COMM_SET_INFO and
 * MPI_COMM_DUP_WITH_INFO.
 *
 * Open MPI 4.1's Fortran bindings call PMPI_Comm_set_info and
 * PMPI_Comm_dup_with_info directly, so the hints that comm_info.c reads
 * (sampi_algorithm, sampi_netdev) would never reach SAMPI from a Fortran
 * program.  As for MPI_ALLREDUCE (allreduce_f.c), the mpif.h and `use mpi`
 * bindings are the symbols mpi_comm_set_info_, mpi_comm_set_info__,
 * mpi_comm_set_info and MPI_COMM_SET_INFO, all aliases of
 * ompi_comm_set_info_f in libmpi_mpifh, and the `use mpi_f08` bindings
 * (mpi_comm_set_info_f08_ in libmpi_usempif08) call ompi_comm_set_info_f too;
 * likewise for MPI_COMM_DUP_WITH_INFO and ompi_comm_dup_with_info_f.  SAMPI
 * defines all five names of each and hands the call to its C wrapper, so one
 * code path applies the hints whichever language asked.
 */
#include <mpi.h>

void ompi_comm_set_info_f(MPI_Fint *comm, MPI_Fint *info, MPI_Fint *ierr);
void ompi_comm_dup_with_info_f(MPI_Fint *comm, MPI_Fint *info, MPI_Fint *newcomm, MPI_Fint *ierr);

void ompi_comm_set_info_f(MPI_Fint *comm, MPI_Fint *info, MPI_Fint *ierr)
{
    int rc = MPI_Comm_set_info(PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info));
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

void ompi_comm_dup_with_info_f(MPI_Fint *comm, MPI_Fint *info, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    MPI_Comm c_newcomm = MPI_COMM_NULL;
    int rc = MPI_Comm_dup_with_info(PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info), &c_newcomm);
    /* Like Open MPI's own binding: the output handle is written only on
     * success, so a failed call leaves the caller's variable as it was. */
    if (rc == MPI_SUCCESS)
        *newcomm = PMPI_Comm_c2f(c_newcomm);
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

#define SAMPI_FORTRAN_SET_INFO_ALIAS(name)                                                         \
    void name(MPI_Fint *, MPI_Fint *, MPI_Fint *) __attribute__((alias("ompi_comm_set_info_f")))
SAMPI_FORTRAN_SET_INFO_ALIAS(mpi_comm_set_info_);
SAMPI_FORTRAN_SET_INFO_ALIAS(mpi_comm_set_info__);
SAMPI_FORTRAN_SET_INFO_ALIAS(mpi_comm_set_info);
SAMPI_FORTRAN_SET_INFO_ALIAS(MPI_COMM_SET_INFO);

#define SAMPI_FORTRAN_DUP_WITH_INFO_ALIAS(name)                                                    \
    void name(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)                                      \
        __attribute__((alias("ompi_comm_dup_with_info_f")))
SAMPI_FORTRAN_DUP_WITH_INFO_ALIAS(mpi_comm_dup_with_info_);
SAMPI_FORTRAN_DUP_WITH_INFO_ALIAS(mpi_comm_dup_with_info__);
SAMPI_FORTRAN_DUP_WITH_INFO_ALIAS(mpi_comm_dup_with_info);
SAMPI_FORTRAN_DUP_WITH_INFO_ALIAS(MPI_COMM_DUP_WITH_INFO);
