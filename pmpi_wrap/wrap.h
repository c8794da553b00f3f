/*
 * wrap.h - shared by the MPI entry points in pmpi_wrap/.
 */
#ifndef SAMPI_WRAP_H
#define SAMPI_WRAP_H

#include "algos.h"
#include "comm.h"

#include <mpi.h>

/* Outcome of checking an MPI_Allreduce call. */
enum sampi_check {
    SAMPI_CHECK_OK,         /* valid and eligible: args filled in */
    SAMPI_CHECK_TO_PMPI,    /* let PMPI_Allreduce handle it (an error Open MPI reports
                             * itself, in its own order, through the right handler) */
    SAMPI_CHECK_INELIGIBLE, /* valid, but not for SAMPI: *why says why */
    SAMPI_CHECK_ANSWERED,   /* an error SAMPI reported itself; *rc holds the class */
};

/* Validate like Open MPI and decide eligibility.  On SAMPI_CHECK_OK fills
 * everything in *args but `state`. */
enum sampi_check sampi_check_allreduce(const void *sendbuf, void *recvbuf, int count,
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                       struct sampi_coll_args *args, int *why, int *rc);

/* Report an internal error (negative errno) through comm's error handler,
 * unless Open MPI already did; returns the MPI error class. */
int sampi_report_error(MPI_Comm comm, int neg_errno);

/* 0 when `comm` is a handle the program freed through MPI_Comm_free and no
 * live communicator has taken its address since (comm_free.c); 1 otherwise.
 * Never dereferences comm. */
int sampi_comm_handle_live(MPI_Comm comm);

/* SAMPI's whole MPI_Allreduce on `comm`, in place on buf: a composed
 * algorithm's stage (coll_ctx.h, allreduce.c).  0, or a negative errno:
 * comm's revocation cause, else -EIO. */
int sampi_allreduce_part(void *buf, size_t count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/* A nonblocking call as its progress thread runs it: the arguments the
 * program passed and what admitting it at the post found (the checked
 * arguments, the communicator's state). */
struct sampi_nb_args {
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
    struct sampi_coll_args a; /* sampi_check_allreduce's, ctx not yet set */
    struct sampi_comm *c;
};

/* SAMPI's whole MPI_Allreduce for a posted nonblocking call, on the
 * progress thread of its communicator (progress.c), after the calls posted
 * before it there: MPI_SUCCESS or the error class for the request's status,
 * the same on every rank; no error handler is called. */
int sampi_allreduce_nb(const struct sampi_nb_args *n);

/* A Fortran buffer argument as C sees it: Open MPI's MPI_IN_PLACE and
 * MPI_BOTTOM sentinels become the C constants (allreduce_f.c). */
void *sampi_fortran_buffer(char *buf);

/* One-time start-up and shutdown of the library (runtime.c).  Init is
 * idempotent and cheap after the first call; it does not need MPI. */
void sampi_runtime_init(void);
/* True once MPI is initialised (and not finalised) and SAMPI's MPI-side state
 * is set up; sets it up on first use.  SAMPI stays out of the way otherwise. */
int sampi_runtime_mpi_ready(void);
/* Before MPI_Init: whether this process may run progress threads
 * (sampi_progress, decided from its binding and the node: progress_mode.h),
 * so that Open MPI is started with the thread level they need. */
int sampi_runtime_wants_threads(void);
/* The same from MPI_Init and MPI_Init_thread, where every rank of
 * MPI_COMM_WORLD is: the wait mode is decided from the node collectively
 * (src/base/node.h), and the ranks agree on the progress mode (thread only
 * where every rank wanted threads and Open MPI gave MPI_THREAD_MULTIPLE:
 * `thread_level` is the level it gave); the lazy path of
 * sampi_runtime_mpi_ready decides the wait mode from what this process can
 * see alone, and leaves the progress mode at calls. */
int sampi_runtime_mpi_start(int thread_level);
/* Releases every communicator's data path; called from MPI_Finalize before
 * PMPI_Finalize. */
void sampi_runtime_fini(void);

/* The end-of-run report (sampi_report, report.c): keep c's record as its
 * state is freed (a sampi_comm_owner release row); at MPI_Finalize, after
 * every state was freed, gather the records to MPI_COMM_WORLD rank 0 and
 * write the report (collective over MPI_COMM_WORLD when sampi_report is
 * set, nothing otherwise). */
struct sampi_comm;
void sampi_report_keep(struct sampi_comm *c);
void sampi_report_finalize(void);

#endif
