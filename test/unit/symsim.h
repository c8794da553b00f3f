/*
 * symsim.h - a symbolic simulator for schedules (coll_algos/schedule.h).
 *
 * Every element of every rank's vector is tracked as the set of ranks whose
 * input it holds (a bit set, p <= SYMSIM_MAX_P) and the place where its current
 * value was computed.  Running all ranks' rounds in lockstep it checks that
 * sends and receives pair up, that a round never receives over what it sends,
 * that no reduction counts a rank twice, and at the end that every rank holds
 * every element reduced over all ranks, computed at a single place (so all
 * ranks have identical bits).
 */
#ifndef SAMPI_SYMSIM_H
#define SAMPI_SYMSIM_H

#include "schedule.h"

#include <stddef.h>

#define SYMSIM_MAX_P 512 /* 64 nodes of 8 ranks, 2 of 256 */

typedef int (*symsim_builder)(int p, int rank, size_t count, struct sampi_round *rounds,
                              int max_rounds);

struct symsim_result {
    int ok;
    char error[256];
    size_t max_sent_elems; /* by any one rank over the whole schedule */
    int nrounds;
};

void symsim_run(symsim_builder build, int max_rounds, int p, size_t count,
                struct symsim_result *res);

#endif
