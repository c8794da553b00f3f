/*
 * err.c - the text of the library's errors (err.h).
 */
#include "err.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

static const char *const cause_text[SAMPI_ERR_END - SAMPI_ERR_BASE] = {
    [SAMPI_EREVOKED - SAMPI_ERR_BASE] = "SAMPI revoked its state on the communicator",
    [SAMPI_EMISMATCH_COUNT - SAMPI_ERR_BASE] = "the ranks passed different counts",
    [SAMPI_EMISMATCH_TYPE - SAMPI_ERR_BASE] = "the ranks passed different datatypes",
    [SAMPI_EMISMATCH_OP - SAMPI_ERR_BASE] = "the ranks passed different ops",
    [SAMPI_EMISMATCH_PATTERN - SAMPI_ERR_BASE] =
        "the ranks passed different algorithms or settings",
};

/* Open MPI's text for an error class, where MPI may be asked. */
static const char *mpi_text(int mpi_class)
{
    static __thread char text[MPI_MAX_ERROR_STRING + 48];
    char mpi[MPI_MAX_ERROR_STRING] = "";
    int initialized = 0, finalized = 0, len = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (!initialized || finalized || PMPI_Error_string(mpi_class, mpi, &len) != MPI_SUCCESS)
        mpi[0] = '\0';
    if (mpi[0])
        snprintf(text, sizeof(text), "MPI error class %d (%s)", mpi_class, mpi);
    else
        snprintf(text, sizeof(text), "MPI error class %d", mpi_class);
    return text;
}

const char *sampi_strerror(int err)
{
    int e = err < 0 ? -err : err;
    if (e >= SAMPI_ERR_MPI_BASE)
        return mpi_text(e - SAMPI_ERR_MPI_BASE);
    if (e >= SAMPI_ERR_BASE && e < SAMPI_ERR_END)
        return cause_text[e - SAMPI_ERR_BASE];
    if (e >= SAMPI_ERR_BASE)
        return "unknown SAMPI error";
    return strerror(e);
}
