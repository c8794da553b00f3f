/*
 * rollcall.c - sampi_rollcall (rollcall.h).
 *
 * Example, 4 ranks opening a data path, rank 3 still in its own work: ranks
 * 0-2 have each other's "here" and not rank 3's; after sampi_stall_warn_ms
 * each of them prints "still waiting for rank 3 in opening the data path".
 */
#include "rollcall.h"
#include "p2p_allreduce.h"
#include "wait.h"

#include <stdlib.h>

void sampi_rollcall_start(struct sampi_rollcall *r, MPI_Comm comm)
{
    *r = (struct sampi_rollcall){.comm = comm};
    PMPI_Comm_rank(comm, &r->rank);
    PMPI_Comm_size(comm, &r->size);
    r->rx = malloc((size_t)r->size * sizeof(*r->rx));
    r->in = malloc((size_t)r->size * sizeof(*r->in));
    if (!r->rx || !r->in) {
        free(r->rx);
        free(r->in);
        r->rx = NULL;
        r->in = NULL;
        return;
    }
    r->me = r->rank;
    for (int p = 0; p < r->size; p++) {
        r->rx[p] = MPI_REQUEST_NULL;
        if (p == r->rank)
            continue;
        PMPI_Irecv(&r->in[p], 1, MPI_INT, p, SAMPI_ROLLCALL_TAG, comm, &r->rx[p]);
        /* small enough to go eagerly: completes locally, let go */
        MPI_Request tx;
        if (PMPI_Isend(&r->me, 1, MPI_INT, p, SAMPI_ROLLCALL_TAG, comm, &tx) == MPI_SUCCESS)
            PMPI_Request_free(&tx);
    }
}

void sampi_rollcall_absent(void *rollcall, char *buf, size_t len)
{
    struct sampi_rollcall *r = rollcall;
    buf[0] = '\0';
    if (!r || !r->rx)
        return;
    int *missing = malloc((size_t)r->size * sizeof(*missing)), n = 0;
    if (!missing)
        return;
    for (int p = 0; p < r->size; p++) {
        int flag = 1;
        if (r->rx[p] != MPI_REQUEST_NULL)
            PMPI_Test(&r->rx[p], &flag, MPI_STATUS_IGNORE);
        if (!flag)
            missing[n++] = p;
    }
    if (n)
        sampi_waiter_ranks(missing, n, buf, len);
    free(missing);
}

void sampi_rollcall_end(struct sampi_rollcall *r)
{
    for (int p = 0; r->rx && p < r->size; p++)
        sampi_request_cancel(&r->rx[p]);
    free(r->rx);
    free(r->in);
    r->rx = NULL;
    r->in = NULL;
}
