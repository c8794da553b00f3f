/*
 * partial_ring.h - ring allreduce among a subset of a communicator's ranks
 * (selective reduce's groups).
 */
#ifndef SAMPI_PARTIAL_RING_H
#define SAMPI_PARTIAL_RING_H

#include "algos.h"

#include <stdint.h>

/* The sequence number a group's messages are tagged with. */
uint64_t sampi_partial_ring_seq(uint64_t group_id);

/* Reduce args->recvbuf (in place: args->sendbuf must be MPI_IN_PLACE) over
 * the m ranks members[] (ascending, the caller among them) of args->comm,
 * whose netdev (args->ctx->nd) must be open; every member calls it with the same
 * members and group_id.  0, -EINVAL (caller not a member, no netdev) or
 * the executor's error (the communicator is then marked broken). */
int sampi_partial_ring(const struct sampi_coll_args *args, const int *members, int m,
                       uint64_t group_id);

#endif
