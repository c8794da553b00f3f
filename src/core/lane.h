/*
 * lane.h - replaying a decision already taken, so that a converged small
 * call costs what Open MPI's own allreduce costs.
 *
 * A Krylov solver calls MPI_Allreduce on 8 bytes once per iteration, with
 * the same communicator, datatype, op and count every time.  Once auto's
 * cell for that size has converged on Open MPI's own allreduce (native), the
 * next calls are decided the same way until the cell's next measured call or
 * re-check: the decision depends only on agreed inputs (the call, the
 * tracker's state, the variables), and none of them changes in a call that
 * only Open MPI ran.  The full path (pmpi_wrap/allreduce.c) works out how
 * many calls that is and opens a lane for them; each of those calls then
 * takes the lane: a key comparison, the counts, PMPI_Allreduce.
 *
 * Worked example: 8-byte calls at p = 2, cell converged on native with a
 * period of 2048, at its call 4097 (4096 was measured).  The full path
 * decides 4097 and opens a lane of 2046 calls (4098 to 6143); 6144
 * comes back to the full path, is measured, and the call after it opens the
 * next lane.  Every rank counts the same calls, so every rank measures 6144.
 *
 * A lane closes (the next call takes the full path) when its calls are used
 * up, when any control variable is written (MPI_T, sampi_cvar_set), when any
 * communicator's state is freed or its settings change
 * (sampi_lane_close_all), when the communicator is no longer quiet (a call of
 * SAMPI's own ran on it, or Open MPI's failed: c->quiet), and when another
 * call advanced the count auto's decisions follow (another size in the same
 * cell, another thread's call).  A call that differs in its key goes the
 * full path and leaves the lane open.  Each thread keeps eight lanes, so
 * that a program cycling through a few calls keeps them all.
 */
#ifndef SAMPI_LANE_H
#define SAMPI_LANE_H

#include <mpi.h>
#include <stdint.h>

struct sampi_comm;

/* What a call must repeat exactly to take a lane. */
struct sampi_lane_key {
    MPI_Comm comm;
    MPI_Datatype datatype;
    MPI_Op op;
    int count;
    int in_place; /* sendbuf was MPI_IN_PLACE */
};

/* The n calls after the one just decided on c with `key` are decided the
 * same way: Open MPI's allreduce, unmeasured.  `counter`, when not NULL, is
 * the count of calls the decision's owner keeps (auto's cell), which each
 * of those calls advances as the full path would. */
void sampi_lane_open(const struct sampi_lane_key *key, struct sampi_comm *c, uint64_t *counter,
                     uint64_t n);

/* The state of the call's communicator if the call takes one of this
 * thread's lanes (then its counts were advanced: c->calls and the owner's
 * counter), NULL for the full path. */
struct sampi_comm *sampi_lane_take(const struct sampi_lane_key *key);

/* Every thread's lane closes (a state freed, a setting changed). */
void sampi_lane_close_all(void);

#endif
