/*
 * iallreduce.c - MPI_Iallreduce and persistent allreduce (Open MPI 4.1's
 * MPIX_Allreduce_init, started with MPI_Start/MPI_Startall): SAMPI's
 * algorithms for calls that complete while the program computes.
 *
 * A call SAMPI takes is admitted here, on the program's thread (its
 * arguments checked as MPI_Allreduce's are, its communicator's state found,
 * on its first call the duplicate SAMPI works on posted), then handed to the progress
 * thread of its communicator (progress.c), which runs SAMPI's whole
 * MPI_Allreduce path on it: auto, the tracker, the argument check,
 * revocation and the limit work as for a blocking call.  The program gets a
 * request that Open MPI's own MPI_Wait/MPI_Test family handles, mixed with
 * any other requests:
 *
 *   nonblocking  a generalized request (MPI_Grequest_start), completed by
 *                the thread with MPI_Grequest_complete; its status carries
 *                the call's outcome (MPI_ERROR), MPI_SOURCE and MPI_TAG are
 *                MPI_UNDEFINED.  No wrapper of MPI_Wait: a program's
 *                unrelated waits cost what they cost without SAMPI.
 *   persistent   a generalized request cannot be started again, so the
 *                program's handle is a persistent zero-byte receive from
 *                itself on a private copy of MPI_COMM_SELF (the carrier):
 *                MPI_Start starts it and posts the call; the thread
 *                completes it by sending to it (a byte too many when the
 *                call failed: MPI_ERR_TRUNCATE, which the completion calls'
 *                wrappers turn into the call's class, request.c).
 *                MPI_Start, MPI_Startall and MPI_Request_free look the
 *                handle up only while such requests exist.
 *
 * Calls SAMPI does not take go to Open MPI unchanged (PMPI_Iallreduce,
 * PMPIX_Allreduce_init), counted in sampi_nb_native: the progress mode is
 * calls (no PU for a thread), an ineligible datatype or op, a single rank or
 * an intercommunicator, count 0, ranks configured differently.  Every rank
 * decides alike: the mode is agreed at MPI_Init, the rest is the call's.
 */
#include "progress.h"
#include "progress_mode.h"
#include "debug_delay.h"
#include "sampi_internal.h"

#include <mpi-ext.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static void finish(struct sampi_nb_call *call);

/* ------------------------------------------------------------ admitting */

enum nb_kind { NB_NONBLOCKING, NB_PERSISTENT };

/* Counted for the process only: a small nonblocking call with no thread
 * to run it (PETSc's pipelined solvers post a few scalars each iteration)
 * must cost what Open MPI's costs, not an attribute lookup more. */
static void count_native(void)
{
    sampi_stat_add(&sampi_process_stats.nb_native, 1);
}

/* Whether SAMPI takes the call: 1 with *n filled; 0 when Open MPI's own
 * call should run (*rc untouched), or -1 with *rc the error SAMPI reported. */
static int admit(struct sampi_nb_args *n, MPI_Request *request, int *rc)
{
    if (!request || !sampi_runtime_mpi_ready() ||
        sampi_progress_mode_now() != SAMPI_PROGRESS_THREAD)
        return 0;
    int why = 0;
    switch (sampi_check_allreduce(n->sendbuf, n->recvbuf, n->count, n->datatype, n->op, n->comm,
                                  &n->a, &why, rc)) {
    case SAMPI_CHECK_ANSWERED:
        return -1;
    case SAMPI_CHECK_TO_PMPI:
    case SAMPI_CHECK_INELIGIBLE:
        return 0;
    case SAMPI_CHECK_OK:
        break;
    }
    if (n->count == 0 || sampi_comm_get(n->comm, 1, &n->c))
        return 0;
    struct sampi_comm *c = n->c;
    /* A communicator's first call makes SAMPI's duplicate of it: posted
     * here, in the order of the program's collectives there, and finished
     * with the settings' agreement by the progress thread; a communicator
     * whose first blocking call found the ranks configured differently has
     * no duplicate, and stays Open MPI's. */
    if (!c->dup_posted && c->ctl == MPI_COMM_NULL) {
        if (c->revoked) {
            *rc = sampi_report_error(n->comm, -SAMPI_EREVOKED);
            return -1;
        }
        if (c->mismatch || sampi_comm_join_post(c))
            return 0;
    }
    if (sampi_progress_ready(c))
        return 0;
    return 1;
}

/* A call for c's progress thread; its request is set by the caller. */
static struct sampi_nb_call *new_call(const struct sampi_nb_args *n)
{
    struct sampi_nb_call *call = calloc(1, sizeof(*call));
    if (call) {
        call->args = *n;
        call->run = sampi_allreduce_nb;
        call->finish = finish;
    }
    return call;
}

static void post(struct sampi_nb_call *call)
{
    /* closes the communicator's lanes: a blocking call after this one
     * takes the full path, which waits for this one first */
    call->args.c->quiet = 0;
    sampi_progress_post(call);
}

/* ------------------------------------------------------------ nonblocking */

static int query(void *state, MPI_Status *status)
{
    const struct sampi_nb_call *call = state;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = call->error;
    return call->error;
}

static int release(void *state)
{
    free(state);
    sampi_nb_live_add(-1);
    return MPI_SUCCESS;
}

/* MPI: a collective's request cannot be cancelled.  Open MPI answers
 * MPI_Cancel on its own with MPI_ERR_REQUEST; so does SAMPI's. */
static int refuse_cancel(void *state, int complete)
{
    (void)state;
    (void)complete;
    return MPI_ERR_REQUEST;
}

/* The program's arguments, as admit and the progress thread read them. */
static struct sampi_nb_args args_of(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return (struct sampi_nb_args){.sendbuf = sendbuf,
                                  .recvbuf = recvbuf,
                                  .count = count,
                                  .datatype = datatype,
                                  .op = op,
                                  .comm = comm};
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request)
{
    struct sampi_nb_args n = args_of(sendbuf, recvbuf, count, datatype, op, comm);
    int rc = MPI_SUCCESS;
    if (sampi_runtime_mpi_ready())
        sampi_debug_delay_apply();
    switch (admit(&n, request, &rc)) {
    case -1:
        return rc;
    case 0:
        count_native();
        return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
    }
    struct sampi_nb_call *call = new_call(&n);
    if (!call)
        return sampi_report_error(comm, -ENOMEM);
    rc = PMPI_Grequest_start(query, release, refuse_cancel, call, &call->greq);
    if (rc != MPI_SUCCESS) {
        free(call);
        return rc;
    }
    sampi_nb_live_add(1);
    *request = call->greq;
    post(call);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ persistent */

struct sampi_persistent {
    struct sampi_nb_args args;
    MPI_Request carrier; /* the program's handle */
    int tag;
    int active;                    /* started, not yet finished (under `lock`) */
    int freed;                     /* MPI_Request_free while active: the thread frees it */
    int failed;                    /* the last run's class, until a completion call took it */
    struct sampi_persistent *next; /* every live one, under `lock` */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sampi_persistent *persistents;
static _Atomic int n_persistent; /* read without the lock by MPI_Start */
static _Atomic int n_untaken;    /* live ones whose `failed` is set (set_failed) */
static MPI_Comm carrier_comm = MPI_COMM_NULL;
static int next_tag;

/* p->failed = cls, under `lock`, keeping n_untaken its count. */
static void set_failed(struct sampi_persistent *p, int cls)
{
    atomic_fetch_add(&n_untaken, (cls != MPI_SUCCESS) - (p->failed != MPI_SUCCESS));
    p->failed = cls;
}

/* The carrier communicator: SAMPI's own copy of MPI_COMM_SELF, on which
 * nothing but the carriers' messages travel. */
static int carrier_ready(void)
{
    if (carrier_comm != MPI_COMM_NULL)
        return 0;
    if (PMPI_Comm_dup(MPI_COMM_SELF, &carrier_comm) != MPI_SUCCESS)
        return -EIO;
    PMPI_Comm_set_errhandler(carrier_comm, MPI_ERRORS_RETURN);
    return 0;
}

/* The persistent request behind `req`, or NULL (not SAMPI's). */
static struct sampi_persistent *find(MPI_Request req)
{
    if (!atomic_load_explicit(&n_persistent, memory_order_relaxed) || req == MPI_REQUEST_NULL)
        return NULL;
    pthread_mutex_lock(&lock);
    struct sampi_persistent *p = persistents;
    while (p && p->carrier != req)
        p = p->next;
    pthread_mutex_unlock(&lock);
    return p;
}

int MPIX_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    struct sampi_nb_args n = args_of(sendbuf, recvbuf, count, datatype, op, comm);
    int rc = MPI_SUCCESS;
    switch (admit(&n, request, &rc)) {
    case -1:
        return rc;
    case 0:
        count_native();
        return PMPIX_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    }
    struct sampi_persistent *p = calloc(1, sizeof(*p));
    pthread_mutex_lock(&lock);
    int crc = p ? carrier_ready() : -ENOMEM;
    if (!crc) {
        p->args = n;
        p->tag = next_tag++ & 0x3fffffff; /* within every MPI's MPI_TAG_UB */
        if (PMPI_Recv_init(NULL, 0, MPI_BYTE, 0, p->tag, carrier_comm, &p->carrier) != MPI_SUCCESS)
            crc = -EIO;
    }
    if (crc) {
        pthread_mutex_unlock(&lock);
        free(p);
        return sampi_report_error(comm, crc);
    }
    p->next = persistents;
    persistents = p;
    atomic_fetch_add(&n_persistent, 1);
    pthread_mutex_unlock(&lock);
    *request = p->carrier;
    return MPI_SUCCESS;
}

static int start(struct sampi_persistent *p)
{
    struct sampi_nb_call *call = new_call(&p->args);
    if (!call)
        return sampi_report_error(p->args.comm, -ENOMEM);
    pthread_mutex_lock(&lock);
    int was_active = p->active;
    p->active = 1;
    pthread_mutex_unlock(&lock);
    if (was_active) { /* MPI: starting an active request is erroneous */
        free(call);
        return sampi_report_error(p->args.comm, -EBUSY);
    }
    sampi_debug_delay_apply();
    int rc = PMPI_Start(&p->carrier);
    if (rc != MPI_SUCCESS) {
        free(call);
        pthread_mutex_lock(&lock);
        p->active = 0;
        pthread_mutex_unlock(&lock);
        return rc;
    }
    call->persist = p;
    post(call);
    return MPI_SUCCESS;
}

int MPI_Start(MPI_Request *request)
{
    struct sampi_persistent *p = request ? find(*request) : NULL;
    return p ? start(p) : PMPI_Start(request);
}

int MPI_Startall(int count, MPI_Request requests[])
{
    if (!atomic_load_explicit(&n_persistent, memory_order_relaxed))
        return PMPI_Startall(count, requests);
    int first_error = MPI_SUCCESS;
    for (int i = 0; i < count && requests; i++) {
        struct sampi_persistent *p = find(requests[i]);
        int rc = p ? start(p) : PMPI_Start(&requests[i]);
        if (rc != MPI_SUCCESS && first_error == MPI_SUCCESS)
            first_error = rc;
    }
    return requests ? first_error : PMPI_Startall(count, requests);
}

/* MPI: a collective's request cannot be cancelled; the carrier, a plain
 * receive, could be.  Refused as Open MPI refuses it for its own
 * collectives: MPI_ERR_REQUEST through MPI_COMM_WORLD's handler. */
int MPI_Cancel(MPI_Request *request)
{
    if (!request || !find(*request))
        return PMPI_Cancel(request);
    PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_REQUEST);
    return MPI_ERR_REQUEST;
}

static void unlink_persistent(struct sampi_persistent *p)
{
    for (struct sampi_persistent **q = &persistents; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            atomic_fetch_sub(&n_persistent, 1);
            return;
        }
}

int MPI_Request_free(MPI_Request *request)
{
    struct sampi_persistent *p = request ? find(*request) : NULL;
    if (!p)
        return PMPI_Request_free(request);
    pthread_mutex_lock(&lock);
    unlink_persistent(p);
    int keep = p->active; /* the thread frees it when the call finished */
    p->freed = 1;
    if (!keep)
        set_failed(p, MPI_SUCCESS);
    pthread_mutex_unlock(&lock);
    /* MPI lets an active request be freed: the receive still completes */
    int rc = PMPI_Request_free(&p->carrier);
    if (!keep)
        free(p);
    *request = MPI_REQUEST_NULL;
    return rc;
}

int sampi_persistent_any(void)
{
    return atomic_load_explicit(&n_persistent, memory_order_relaxed) != 0;
}

int sampi_persistent_failure(MPI_Request req, MPI_Request now, MPI_Comm *comm)
{
    struct sampi_persistent *p = find(req);
    if (!p)
        return MPI_SUCCESS;
    pthread_mutex_lock(&lock);
    int cls = p->active ? MPI_SUCCESS : p->failed;
    if (cls != MPI_SUCCESS)
        set_failed(p, MPI_SUCCESS);
    *comm = p->args.comm;
    int gone = cls != MPI_SUCCESS && now == MPI_REQUEST_NULL;
    if (gone) /* Open MPI freed the carrier: the request is no more */
        unlink_persistent(p);
    pthread_mutex_unlock(&lock);
    if (gone)
        free(p);
    return cls;
}

int sampi_persistent_untaken(void)
{
    return atomic_load_explicit(&n_untaken, memory_order_relaxed) != 0;
}

int sampi_persistent_failed(MPI_Request req)
{
    struct sampi_persistent *p = find(req);
    if (!p)
        return 0;
    pthread_mutex_lock(&lock);
    int failed = !p->active && p->failed != MPI_SUCCESS;
    pthread_mutex_unlock(&lock);
    return failed;
}

/* ------------------------------------------------------------ the ending */

/* How a finished call reaches its request (struct sampi_nb_call). */
static void finish(struct sampi_nb_call *call)
{
    struct sampi_persistent *p = call->persist;
    if (!p) {
        PMPI_Grequest_complete(call->greq); /* the request's now: release frees it */
        return;
    }
    static const char byte_too_many;
    int failed = call->error != MPI_SUCCESS, call_error = call->error;
    free(call);
    pthread_mutex_lock(&lock);
    p->active = 0; /* before the send: the program may start it again at once */
    int freed = p->freed;
    set_failed(p, failed && !freed ? call_error : MPI_SUCCESS);
    int tag = p->tag;
    pthread_mutex_unlock(&lock);
    PMPI_Send(failed ? &byte_too_many : NULL, failed, MPI_BYTE, 0, tag, carrier_comm);
    if (freed)
        free(p);
}

/* ------------------------------------------------------------ Fortran */

/* Open MPI 4.1's Fortran MPI_IALLREDUCE (mpif.h, `use mpi`, `use mpi_f08`)
 * calls PMPI_Iallreduce directly, as its MPI_ALLREDUCE does
 * (allreduce_f.c): SAMPI defines the same symbols. */
void ompi_iallreduce_f(char *sendbuf, char *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                       MPI_Fint *op, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr);

void ompi_iallreduce_f(char *sendbuf, char *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                       MPI_Fint *op, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc =
        MPI_Iallreduce(sampi_fortran_buffer(sendbuf), sampi_fortran_buffer(recvbuf), (int)*count,
                       PMPI_Type_f2c(*datatype), PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm), &req);
    if (rc == MPI_SUCCESS)
        *request = PMPI_Request_c2f(req);
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

#define SAMPI_FORTRAN_IALLREDUCE_ALIAS(name)                                                       \
    void name(char *, char *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,          \
              MPI_Fint *) __attribute__((alias("ompi_iallreduce_f")))
SAMPI_FORTRAN_IALLREDUCE_ALIAS(mpi_iallreduce_);
SAMPI_FORTRAN_IALLREDUCE_ALIAS(mpi_iallreduce__);
SAMPI_FORTRAN_IALLREDUCE_ALIAS(mpi_iallreduce);
SAMPI_FORTRAN_IALLREDUCE_ALIAS(MPI_IALLREDUCE);
