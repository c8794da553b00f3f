/*
 * init.c - MPI_Init, MPI_Init_thread and MPI_Finalize.
 *
 * Start-up work is kept out of MPI_Init beyond what is cheap (the registry and
 * an attribute keyval): data paths are opened per communicator at its first
 * MPI_Allreduce, so programs that never call it pay nothing.
 */
#include "sampi_internal.h"
#include "selective_client.h"
#include "module.h"
#include "wrap.h"

int MPI_Init(int *argc, char ***argv)
{
    sampi_runtime_init();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS && sampi_runtime_mpi_start())
        sampi_selective_init();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    sampi_runtime_init();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS && sampi_runtime_mpi_start())
        sampi_selective_init();
    return rc;
}

int MPI_Finalize(void)
{
    sampi_selective_fini();
    sampi_runtime_fini();
    int rc = PMPI_Finalize();
    /* after PMPI_Finalize: deleting MPI_COMM_WORLD's attributes there closes
     * the last datagram paths, which DPDK's cleanup (the dpdk module's
     * finalize) must follow */
    sampi_module_finalize_all();
    return rc;
}
