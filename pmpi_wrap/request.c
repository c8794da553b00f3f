/*
 * request.c - the MPI_Wait/MPI_Test family, for one purpose: a persistent
 * allreduce request of SAMPI's whose call failed completes with
 * MPI_ERR_TRUNCATE (its carrier receive got a byte too many, iallreduce.c);
 * here that becomes the call's own class, in the return code and the
 * status's MPI_ERROR, and the communicator's error handler sees it, as for
 * a blocking call.  Open MPI frees a request that completed in error (its
 * handle becomes MPI_REQUEST_NULL, as for its own persistent collectives);
 * SAMPI then drops its part of the request too.
 *
 * What other requests pay: while SAMPI holds no persistent request, one
 * atomic load; the handles are copied before the call (Open MPI may null
 * them) only while it holds some, and looked at only when Open MPI returned
 * an error.  Open MPI's Fortran completion calls go to PMPI directly, so a
 * Fortran program sees MPI_ERR_TRUNCATE (sampi(7) NONBLOCKING).
 *
 * And one defect of Open MPI 4.1 worked around: its MPI_Waitall under
 * MPI_THREAD_MULTIPLE never returns when one of its requests had already
 * completed in error when it was called (ompi_request_default_wait_all
 * then skips the wait on its sync object and spins until a signal that
 * nobody sends; its MPI_Wait, Waitany, Waitsome, Testany and Testsome have
 * no such defect: iallreduce.test checks each).  SAMPI makes that case
 * common: the level is MULTIPLE underneath wherever progress threads run,
 * and a persistent request whose call failed at once (a revoked
 * communicator) is complete in error before the program's MPI_Waitall.
 * There MPI_Waitall is MPI_Testall until done (test_all_loop).
 */
#include "progress.h"
#include "progress_mode.h"
#include "sampi_internal.h"

#include <stdlib.h>
#include <string.h>

/* `before`, a handle before the completion call, and `now`, after: the
 * class of SAMPI's failed call, or `rc` (then nothing was SAMPI's). */
static int mend(int rc, MPI_Request before, MPI_Request now, MPI_Status *status)
{
    MPI_Comm comm = MPI_COMM_NULL;
    int failure = sampi_persistent_failure(before, now, &comm);
    if (failure == MPI_SUCCESS)
        return rc;
    if (status && status != MPI_STATUS_IGNORE)
        status->MPI_ERROR = failure;
    PMPI_Comm_call_errhandler(comm, failure);
    return failure;
}

/* The handles of an array, kept before a completion call while SAMPI holds
 * persistent requests (NULL otherwise: nothing to mend). */
struct kept {
    MPI_Request few[16];
    MPI_Request *handles;
};

static void keep(struct kept *k, int n, const MPI_Request reqs[])
{
    k->handles = NULL;
    if (n <= 0 || !reqs || !sampi_persistent_any())
        return;
    k->handles = n <= 16 ? k->few : malloc((size_t)n * sizeof(MPI_Request));
    if (k->handles)
        memcpy(k->handles, reqs, (size_t)n * sizeof(MPI_Request));
}

static void release(struct kept *k)
{
    if (k->handles != k->few)
        free(k->handles);
}

/* Each of `which` (all n when NULL) that was SAMPI's; `rc` stays
 * (MPI_ERR_IN_STATUS: the statuses say which failed), or becomes
 * MPI_ERR_IN_STATUS where Open MPI answered success for a failed one. */
static int several(int rc, struct kept *k, int n, MPI_Request now[], const int which[],
                   MPI_Status st[])
{
    if (k->handles && (rc != MPI_SUCCESS || sampi_persistent_untaken()))
        for (int j = 0; j < n; j++) {
            int i = which ? which[j] : j;
            /* Open MPI's MPI_Testall answers MPI_SUCCESS for a persistent
             * request that completed in error and keeps it (its status
             * says it): freed here as Open MPI frees the others, and
             * MPI_ERR_IN_STATUS (Open MPI filled every MPI_ERROR) */
            if (now[i] != MPI_REQUEST_NULL && sampi_persistent_failed(k->handles[i])) {
                PMPI_Request_free(&now[i]);
                if (rc == MPI_SUCCESS)
                    rc = MPI_ERR_IN_STATUS;
            }
            mend(rc, k->handles[i], now[i], st == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &st[j]);
        }
    release(k);
    return rc;
}

/* Single completions: Open MPI returns a persistent request's error. */
int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    MPI_Request before = request ? *request : MPI_REQUEST_NULL;
    int rc = PMPI_Wait(request, status);
    return rc == MPI_SUCCESS ? rc : mend(rc, before, *request, status);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    MPI_Request before = request ? *request : MPI_REQUEST_NULL;
    int rc = PMPI_Test(request, flag, status);
    return rc == MPI_SUCCESS ? rc : mend(rc, before, *request, status);
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    int rc = PMPI_Request_get_status(request, flag, status);
    return rc == MPI_SUCCESS ? rc : mend(rc, request, request, status);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    struct kept k;
    keep(&k, count, requests);
    int rc = PMPI_Waitany(count, requests, index, status);
    if (rc != MPI_SUCCESS && k.handles && index && *index >= 0 && *index < count)
        rc = mend(rc, k.handles[*index], requests[*index], status);
    release(&k);
    return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    struct kept k;
    keep(&k, count, requests);
    int rc = PMPI_Testany(count, requests, index, flag, status);
    if (rc != MPI_SUCCESS && k.handles && index && *index >= 0 && *index < count)
        rc = mend(rc, k.handles[*index], requests[*index], status);
    release(&k);
    return rc;
}

/* MPI_Waitall as MPI_Testall until it completes them all (Open MPI's
 * MPI_Testall takes a request complete in error as any other; it moves
 * the progress engine once per call, as MPI_Waitall's loop does): the
 * same statuses, the same cost (a halo exchange of 8 requests at np 2,
 * sampi(7) NONBLOCKING). */
static int test_all_loop(int count, MPI_Request requests[], MPI_Status statuses[])
{
    struct kept k;
    keep(&k, count, requests);
    int flag = 0, rc;
    do
        rc = PMPI_Testall(count, requests, &flag, statuses);
    while (!flag && rc == MPI_SUCCESS);
    return several(rc, &k, count, requests, NULL, statuses);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (count > 0 && requests && sampi_progress_mode_now() == SAMPI_PROGRESS_THREAD)
        return test_all_loop(count, requests, statuses);
    struct kept k;
    keep(&k, count, requests);
    return several(PMPI_Waitall(count, requests, statuses), &k, count, requests, NULL, statuses);
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    struct kept k;
    keep(&k, count, requests);
    int rc = PMPI_Testall(count, requests, flag, statuses);
    return several(rc, &k, flag && *flag ? count : 0, requests, NULL, statuses);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    struct kept k;
    keep(&k, incount, requests);
    int rc = PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    int n = rc != MPI_SUCCESS && outcount && *outcount != MPI_UNDEFINED ? *outcount : 0;
    return several(rc, &k, n, requests, indices, statuses);
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    struct kept k;
    keep(&k, incount, requests);
    int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    int n = rc != MPI_SUCCESS && outcount && *outcount != MPI_UNDEFINED ? *outcount : 0;
    return several(rc, &k, n, requests, indices, statuses);
}
