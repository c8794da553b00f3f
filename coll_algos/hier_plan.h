/*
 * hier_plan.h - the stages of `hier` (hier.c) as schedules: pure, no MPI.
 *
 * A communicator of H nodes of k ranks each.  Local rank j of a node (its
 * rank in the node's communicator) runs
 *
 *   stage 1  ring reduce-scatter among the node's k ranks (ring's first k-1
 *            rounds): it ends holding the node's sum of block (j+1) % k, its
 *            shard (ring.c: block b ends complete at rank b-1);
 *   stage 2  an allreduce of that shard among the H ranks with local index j,
 *            one per node (any exact algorithm: they all hold the same block);
 *   stage 3  ring allgather among the node's ranks (ring's last k-1 rounds):
 *            every rank receives the other shards, by copy.
 *
 * Each element is reduced inside its node at one place (stage 1), across the
 * nodes by an exact algorithm that gives its members identical bits (stage
 * 2), and only copied afterwards, so every rank ends with the same bits.
 * Traffic per rank: 2 (k-1)/k n inside the node and 2 (H-1)/H n/k across
 * nodes, against a flat ring's 2 (p-1)/p n, most of it across nodes when
 * its neighbours sit on other nodes.
 *
 * Example, H = 2 nodes of k = 2, ranks 0,1 | 2,3, blocks A B:
 *   stage 1: rank 0 and 1 exchange halves; 0 holds B0+B1, 1 holds A0+A1;
 *            2 holds B2+B3, 3 holds A2+A3
 *   stage 2: 0 and 2 allreduce B; 1 and 3 allreduce A (over the nodes' link)
 *   stage 3: 0 and 1 swap their complete halves; 2 and 3 likewise.
 */
#ifndef SAMPI_HIER_PLAN_H
#define SAMPI_HIER_PLAN_H

#include "schedule.h"

#include <stddef.h>

enum sampi_hier_stage { SAMPI_HIER_REDUCE_SCATTER, SAMPI_HIER_ALLGATHER };

/* The shard local rank `local` of a k-rank node holds between stages 1 and
 * 3: the range [*offset, *offset + *len) of the count elements. */
void sampi_hier_shard(size_t count, int k, int local, size_t *offset, size_t *len);

/* The rounds of stage 1 or 3 for local rank `local` of a k-rank node (peers
 * are local ranks): k - 1 rounds, or -EINVAL / -ENOSPC as the builders in
 * schedule.h.  k = 1: no rounds. */
int sampi_hier_node_rounds(int k, int local, size_t count, enum sampi_hier_stage stage,
                           struct sampi_round *rounds, int max_rounds);

/* The three stages as one flat schedule of p = H k ranks, for the symbolic
 * simulator (the run itself goes stage by stage on sub-communicators): rank
 * r is local rank r % k of node r / k, and stage 2 is a ring among the
 * nodes.  2(k-1) + 2(H-1) rounds on every rank, or -EINVAL when k does not
 * divide p, -ENOSPC. */
int sampi_hier_flat_schedule(int p, int k, int rank, size_t count, struct sampi_round *rounds,
                             int max_rounds);
int sampi_hier_flat_rounds(int p, int k);

#endif
