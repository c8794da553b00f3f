/*
 * hier_plan.c - the stages of `hier` as schedules (hier_plan.h).
 */
#include "hier_plan.h"

#include <errno.h>
#include <stdlib.h>

void sampi_hier_shard(size_t count, int k, int local, size_t *offset, size_t *len)
{
    sampi_block_range(count, k, (local + 1) % k, offset, len);
}

int sampi_hier_node_rounds(int k, int local, size_t count, enum sampi_hier_stage stage,
                           struct sampi_round *rounds, int max_rounds)
{
    if (k < 1 || local < 0 || local >= k)
        return -EINVAL;
    if (k == 1)
        return 0;
    if (max_rounds < k - 1)
        return -ENOSPC;
    /* ring's schedule, of which the stage is one half */
    struct sampi_round *all = malloc(2 * (size_t)(k - 1) * sizeof(*all));
    if (!all)
        return -ENOMEM;
    int n = sampi_ring_schedule(k, local, count, all, 2 * (k - 1));
    if (n >= 0) {
        const struct sampi_round *from = stage == SAMPI_HIER_REDUCE_SCATTER ? all : all + (k - 1);
        for (int i = 0; i < k - 1; i++)
            rounds[i] = from[i];
        n = k - 1;
    }
    free(all);
    return n;
}

int sampi_hier_flat_rounds(int p, int k)
{
    return 2 * (k - 1) + 2 * (p / k - 1);
}

/* A node's round with local peers made global. */
static struct sampi_round node_round(struct sampi_round rd, int node, int k)
{
    if (rd.send.peer >= 0)
        rd.send.peer += node * k;
    if (rd.recv.peer >= 0)
        rd.recv.peer += node * k;
    return rd;
}

int sampi_hier_flat_schedule(int p, int k, int rank, size_t count, struct sampi_round *rounds,
                             int max_rounds)
{
    if (k < 1 || p < 2 || p % k || rank < 0 || rank >= p)
        return -EINVAL;
    const int h = p / k, node = rank / k, local = rank % k;
    if (max_rounds < sampi_hier_flat_rounds(p, k))
        return -ENOSPC;
    struct sampi_round *stage = malloc(2 * (size_t)(k > h ? k : h) * sizeof(*stage));
    if (!stage)
        return -ENOMEM;
    int n = 0, m = sampi_hier_node_rounds(k, local, count, SAMPI_HIER_REDUCE_SCATTER, stage, k);
    for (int i = 0; i < m; i++)
        rounds[n++] = node_round(stage[i], node, k);
    size_t off, len;
    sampi_hier_shard(count, k, local, &off, &len);
    if (m >= 0 && h > 1)
        m = sampi_ring_schedule(h, node, len, stage, 2 * (h - 1));
    for (int i = 0; h > 1 && i < m; i++) {
        /* the nodes' ring over the shard, among the ranks of local index `local` */
        struct sampi_round rd = stage[i];
        rd.send.offset += off;
        rd.recv.offset += off;
        rd.send.peer = rd.send.peer >= 0 ? rd.send.peer * k + local : -1;
        rd.recv.peer = rd.recv.peer >= 0 ? rd.recv.peer * k + local : -1;
        rounds[n++] = rd;
    }
    if (m >= 0)
        m = sampi_hier_node_rounds(k, local, count, SAMPI_HIER_ALLGATHER, stage, k);
    for (int i = 0; i < m; i++)
        rounds[n++] = node_round(stage[i], node, k);
    free(stage);
    return m < 0 ? m : n;
}
