/*
 * rollcall.h - who has arrived at a collective wait, for its stall warning.
 *
 * A collective (the agreement of a data path's opening) cannot say which
 * rank it waits for: "still waiting for its peers" helps nobody on 512
 * ranks.  So before such a wait every rank sends every other rank one
 * small message, "I am here", and keeps a receive posted for each peer's;
 * when a stall warning is due, the receives that have not completed name
 * the ranks that have not arrived.  2(p-1) messages of 4 bytes per rank,
 * once per communicator.
 */
#ifndef SAMPI_ROLLCALL_H
#define SAMPI_ROLLCALL_H

#include <mpi.h>
#include <stddef.h>

/* The point-to-point tag on SAMPI's private duplicate: kind 3 (like
 * SAMPI_REVOKE_TAG, revoke.h) with a bit above it, which neither the
 * notices (exactly 3) nor the mpi netdev's data, probes and control
 * messages (kinds 0-2) use. */
#define SAMPI_ROLLCALL_TAG 7

struct sampi_rollcall {
    MPI_Comm comm;
    int rank, size;
    MPI_Request *rx; /* per peer; NULL: no roll call (it names nobody) */
    int *in;         /* the receive buffers */
    int me;          /* what this rank sends */
};

/* Say "here" to every other rank of comm and listen for theirs.  Never
 * fails: without memory the roll call names nobody. */
void sampi_rollcall_start(struct sampi_rollcall *r, MPI_Comm comm);

/* The ranks not heard from yet ("rank 2", "ranks 1, 3, ..."), "" when all
 * were or nothing is known: a stall warning's hook (wait.h `absent`). */
void sampi_rollcall_absent(void *rollcall, char *buf, size_t len);

/* The wait is over: cancel the receives of ranks not heard from. */
void sampi_rollcall_end(struct sampi_rollcall *r);

#endif
