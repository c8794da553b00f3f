/*
 * progress.h - the progress threads that run nonblocking allreduce calls
 * (progress.c), below the entry points that post them (iallreduce.c).
 */
#ifndef SAMPI_PROGRESS_H
#define SAMPI_PROGRESS_H

#include "wrap.h"

struct sampi_persistent;

/* One posted call: what its progress thread runs, and how it tells the
 * program it finished. */
struct sampi_nb_call {
    struct sampi_nb_args args;
    /* a nonblocking call: the program's generalized request, completed when
     * the call finished; a persistent one: the request it started */
    MPI_Request greq;
    struct sampi_persistent *persist;
    int error; /* MPI_SUCCESS or the class, the same on every rank */
    /* set by the poster (iallreduce.c), so that the threads know neither:
     * what the thread runs (allreduce.c's sampi_allreduce_nb: MPI_SUCCESS
     * or the class), and how the finished call reaches its request, called
     * on the progress thread; after it, the call object is the request's,
     * not the thread's */
    int (*run)(const struct sampi_nb_args *args);
    void (*finish)(struct sampi_nb_call *call);
    struct sampi_nb_call *next;
};

/* Start c's progress thread if it has none.  0, or -EAGAIN when no thread
 * could be started (then the call goes to Open MPI). */
int sampi_progress_ready(struct sampi_comm *c);

/* Hand `call` to its communicator's progress thread (sampi_progress_ready
 * said yes), behind the calls posted there before it. */
void sampi_progress_post(struct sampi_nb_call *call);

/* At MPI_Init: the PU progress threads are pinned to (sampi_pin), with its
 * reason for sampi_info and the start line (sampi_progress_mode_describe). */
void sampi_progress_place(void);

/* A communicator's state is freed: its thread (idle: c->nb_pending is 0)
 * stops, and its queue goes.  A sampi_comm_owner release hook. */
void sampi_progress_release(struct sampi_comm *c);

/* Whether SAMPI holds any persistent request (one atomic load). */
int sampi_persistent_any(void);

/* When `req` (a handle before a completion call) is one of SAMPI's
 * persistent requests whose last call failed (its receive completed with
 * MPI_ERR_TRUNCATE): that call's class, taken (the next look answers
 * MPI_SUCCESS), with *comm the request's communicator; MPI_SUCCESS
 * otherwise.  `now` is the handle after the call: Open MPI frees a request
 * that completed in error and sets it to MPI_REQUEST_NULL, and then SAMPI
 * drops the request too. */
int sampi_persistent_failure(MPI_Request req, MPI_Request now, MPI_Comm *comm);

/* Whether a failure of a persistent request of SAMPI's waits to be taken
 * (one atomic load), and whether `req` is such a request (its call
 * finished in failure, not taken yet): Open MPI's MPI_Testall returns
 * MPI_SUCCESS for a persistent request that completed in error. */
int sampi_persistent_untaken(void);
int sampi_persistent_failed(MPI_Request req);

/* Requests of nonblocking calls the program has not completed or freed
 * yet, for MPI_Finalize's warning: counted by iallreduce.c as it makes and
 * frees them (delta +1 or -1). */
void sampi_nb_live_add(int delta);
uint64_t sampi_nb_live_requests(void);

/* MPI_Finalize: every thread finishes the calls posted to it. */
void sampi_progress_finish_all(void);

#endif
