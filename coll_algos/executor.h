/*
 * executor.h - runs a schedule (schedule.h) over the communicator's netdev.
 */
#ifndef SAMPI_EXECUTOR_H
#define SAMPI_EXECUTOR_H

#include "algos.h"
#include "schedule.h"

#include <stdint.h>

typedef int (*sampi_schedule_builder)(int p, int rank, size_t count, struct sampi_round *rounds,
                                      int max_rounds);
typedef int (*sampi_schedule_rounds)(int p);

/* Build this rank's schedule and run it: per round, post every segment's
 * receive and send, and reduce or copy each received segment as it lands;
 * not in place, the rank's own values come from sendbuf as the rounds need
 * them (own_ranges.h), and recvbuf holds the whole result at the end.  0 or
 * a negative errno. */
int sampi_execute_schedule(const struct sampi_coll_args *args, sampi_schedule_builder build,
                           sampi_schedule_rounds rounds);

/* Run already built rounds (for algorithms that build their own), tagged
 * with the communicator's next call sequence number. */
int sampi_execute_rounds(const struct sampi_coll_args *args, const struct sampi_round *rounds,
                         int nrounds);

/* The same with the sequence number given: for calls that only some ranks
 * make (selective reduce's groups), whose members agree on a number that the
 * communicator's per-rank count would not give them.  c->seq is left alone.
 * seq must not collide with another call's in flight on the communicator. */
int sampi_execute_rounds_seq(const struct sampi_coll_args *args, const struct sampi_round *rounds,
                             int nrounds, uint64_t seq);

#endif
