/*
 * init.c - MPI_Init, MPI_Init_thread, MPI_Query_thread and MPI_Finalize.
 *
 * Start-up work is kept out of MPI_Init beyond what is cheap (the registry,
 * an attribute keyval, the node's facts): data paths are opened per
 * communicator at its first MPI_Allreduce, so programs that never call it pay
 * nothing.
 *
 * The thread level: where this process may run progress threads
 * (runtime.c, sampi_progress), they call MPI, so Open MPI is initialised
 * with MPI_THREAD_MULTIPLE underneath; the program still gets, and
 * MPI_Query_thread still says, the level it asked for (MPI_THREAD_SINGLE
 * from MPI_Init).  Nothing changes where no thread can run.
 */
#include "sampi_internal.h"
#include "selective_client.h"
#include "module.h"
#include "wrap.h"

/* The level the program asked for and got; -1 when SAMPI did not raise it
 * (then Open MPI's own answer stands). */
static int program_level = -1;

static int start(int rc, int underlying)
{
    if (rc == MPI_SUCCESS && sampi_runtime_mpi_start(underlying))
        sampi_selective_init();
    return rc;
}

int MPI_Init(int *argc, char ***argv)
{
    sampi_runtime_init();
    if (!sampi_runtime_wants_threads())
        return start(PMPI_Init(argc, argv), MPI_THREAD_SINGLE);
    int got = MPI_THREAD_SINGLE;
    int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &got);
    program_level = MPI_THREAD_SINGLE;
    return start(rc, got);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    sampi_runtime_init();
    if (!sampi_runtime_wants_threads() || required >= MPI_THREAD_MULTIPLE) {
        int rc = PMPI_Init_thread(argc, argv, required, provided);
        return start(rc, rc == MPI_SUCCESS ? *provided : MPI_THREAD_SINGLE);
    }
    int got = MPI_THREAD_SINGLE;
    int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &got);
    if (rc == MPI_SUCCESS) {
        *provided = got < required ? got : required;
        program_level = *provided;
    }
    return start(rc, got);
}

int MPI_Query_thread(int *provided)
{
    if (program_level < 0 || !provided)
        return PMPI_Query_thread(provided);
    *provided = program_level;
    return MPI_SUCCESS;
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
