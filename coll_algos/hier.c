/*
 * hier.c - `hier`: node-aware allreduce, composed of the exact algorithms.
 *
 * Accepts:  any p, any count, any predefined commutative op, MPI_IN_PLACE;
 *           runs its three stages when the communicator spans two or more
 *           nodes of the same number (two or more) of ranks each, else
 *           `ring`, counted as a fallback (reason 'unsuited').
 * Stages:   (hier_plan.h, with an example) a ring reduce-scatter inside each
 *           node over the node's own data path (shared memory), an allreduce
 *           of each shard among the ranks with the same local index, one per
 *           node (sampi_hier_inter: by default what auto's model picks there
 *           from the size table and that communicator's hints), and a ring
 *           allgather inside each node.
 * Cost:     inside a node 2(k-1)/k n per rank; across the nodes each rank
 *           moves its shard of n/k, so a node's link carries 2(H-1)/H n in
 *           all, where a flat ring whose neighbours sit on other nodes
 *           carries up to 2(p-1)/p n per rank crossing it.
 * Stragglers: stage 2 runs as a call of SAMPI's own on the communicator of
 *           one rank per node: its tracker sees nodes arrive, so a late rank
 *           makes its node the predicted straggler there, and stage 2 runs
 *           StragglAR among the nodes where its model says it gains; a
 *           degraded link makes its node the degraded rank of `optcc` there.
 * Exactness: each element is reduced inside its node at one place, then
 *           across the nodes by an exact algorithm, then only copied: every
 *           rank holds the same bits.
 *
 * The sub-communicators (the node's, and the one of each local index) are
 * made from the call's private duplicate at hier's first call on a
 * communicator - after the call's argument check has passed, so that ranks
 * that passed different arguments never meet in a blocking split - and
 * freed with it.  They are SAMPI communicators of their own (their data
 * paths, trackers, counters), each a part of the caller's: their waits end
 * when the caller's communicator is revoked, and a stage that fails revokes
 * its part, so that the peers waiting there stop too.  Compositions do not
 * nest: inside a stage `auto` never chooses `hier`.
 */
#include "algos.h"
#include "config.h"
#include "executor.h"
#include "hier_plan.h"
#include "node.h"
#include "stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hier_state {
    MPI_Comm node, cross; /* this rank's node; the ranks of its local index */
    int k, local, nodes;
    int layered; /* every node has k >= 2 ranks and there are nodes >= 2 */
};

/* The names sampi_hier_inter accepts: hint, auto, and the exact algorithms
 * but this one. */
static int inter_allowed(const struct sampi_algo *table, const char *name)
{
    const struct sampi_algo *x = sampi_algo_find_in(table, name);
    if (name && strcmp(name, "hint") == 0)
        return 1;
    return x && x->id != SAMPI_ALGO_HIER &&
           (x->id == SAMPI_ALGO_AUTO || (x->caps & SAMPI_CAP_EXACT));
}

int sampi_hier_inter_check(const struct sampi_algo *table, const char *text, char *err,
                           size_t errlen)
{
    if (inter_allowed(table, text))
        return 0;
    /* the exact algorithms, from the table, so that a new row needs no edit */
    char names[256] = "";
    size_t at = 0;
    for (int i = 0; i < SAMPI_ALGO__COUNT && at < sizeof(names); i++)
        if (i != SAMPI_ALGO_AUTO && inter_allowed(table, table[i].name))
            at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s", at ? ", " : "",
                                   table[i].name);
    snprintf(err, errlen,
             "sampi_hier_inter: '%s' is not hint, auto or an exact algorithm other than hier "
             "(%s)",
             text ? text : "", names);
    return -EINVAL;
}

/* The algorithm among the nodes (sampi_hier_inter), and whether an `auto`
 * there measures: `hint` is auto's model alone on the nodes' communicator
 * (the size table, and stragglar or optcc where that communicator's
 * tracker sees a late node or a degraded link and their models say they
 * gain), unmeasured - the caller's auto measures hier as a whole against
 * the flat algorithms, and an auto inside, still exploring its own arms,
 * would make hier's first samples look worse than hier is. */
static enum sampi_algo_id inter_algo(const struct sampi_coll_ctx *ctx, int *explore)
{
    char name[32];
    sampi_cvar_text(SAMPI_CVAR_HIER_INTER, name, sizeof(name));
    *explore = strcmp(name, "hint") != 0;
    const struct sampi_algo *x = sampi_algo_find_in(ctx->algos, name);
    return *explore && inter_allowed(ctx->algos, name) && x ? x->id : SAMPI_ALGO_AUTO;
}

static void state_destroy(void *state)
{
    struct hier_state *st = state;
    if (st->cross != MPI_COMM_NULL)
        PMPI_Comm_free(&st->cross);
    if (st->node != MPI_COMM_NULL)
        PMPI_Comm_free(&st->node);
    free(st);
}

/* The node of this rank: Open MPI's, or ranks r / N with N =
 * sampi_hier_ranks_per_node. */
static int split_node(const struct sampi_coll_ctx *x, MPI_Comm *node)
{
    const int per = (int)sampi_cvar_int(SAMPI_CVAR_HIER_RANKS_PER_NODE);
    return per > 0
               ? PMPI_Comm_split(x->ctl, x->rank / per, x->rank, node)
               : PMPI_Comm_split_type(x->ctl, MPI_COMM_TYPE_SHARED, x->rank, MPI_INFO_NULL, node);
}

/* Collective over the call's communicator (every rank runs hier for this
 * call: the argument check said so). */
static int state_create(const struct sampi_coll_args *a, void **out)
{
    const struct sampi_coll_ctx *x = a->ctx;
    int rc = x->host->agreed(x->owner);
    if (rc)
        return rc;
    struct hier_state *st = malloc(sizeof(*st));
    if (!st)
        return -ENOMEM;
    *st = (struct hier_state){.node = MPI_COMM_NULL, .cross = MPI_COMM_NULL};
    long long mine[2], all[2];
    int ok = split_node(x, &st->node) == MPI_SUCCESS &&
             PMPI_Comm_rank(st->node, &st->local) == MPI_SUCCESS &&
             PMPI_Comm_size(st->node, &st->k) == MPI_SUCCESS &&
             PMPI_Comm_split(x->ctl, st->local, x->rank, &st->cross) == MPI_SUCCESS &&
             PMPI_Comm_size(st->cross, &st->nodes) == MPI_SUCCESS;
    /* every rank learns whether the nodes are alike: (k, -k) under MAX */
    mine[0] = ok ? st->k : -1;
    mine[1] = ok ? -st->k : -1;
    if (PMPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_MAX, x->ctl) != MPI_SUCCESS || !ok ||
        all[0] != -all[1]) {
        st->layered = 0; /* uneven nodes, or a split failed somewhere: ring */
    } else {
        st->layered = st->k >= 2 && st->nodes >= 2;
    }
    /* a failed stage returns to hier, which fails the caller's call */
    if (st->node != MPI_COMM_NULL)
        PMPI_Comm_set_errhandler(st->node, MPI_ERRORS_RETURN);
    if (st->cross != MPI_COMM_NULL)
        PMPI_Comm_set_errhandler(st->cross, MPI_ERRORS_RETURN);
    *out = st;
    return 0;
}

const struct sampi_algo_state_hooks sampi_hier_state = {state_create, state_destroy};

int sampi_hier_suited(const struct sampi_coll_args *a)
{
    const struct sampi_coll_ctx *x = a->ctx;
    if (x->part)
        return 0; /* compositions do not nest */
    const struct hier_state *st = x->state;
    if (st)
        return st->layered;
    /* before its first run: where there can be nodes */
    return sampi_node_job_spans_nodes() || sampi_cvar_int(SAMPI_CVAR_HIER_RANKS_PER_NODE) > 0;
}

/* Stage 1 or 3 on the node's communicator. */
static int node_stage(const struct sampi_coll_args *a, const struct hier_state *st,
                      struct sampi_coll_ctx *nctx, enum sampi_hier_stage stage,
                      struct sampi_round *rounds)
{
    struct sampi_coll_args na = *a;
    na.comm = st->node;
    na.ctx = nctx;
    if (stage == SAMPI_HIER_ALLGATHER)
        na.sendbuf = MPI_IN_PLACE; /* the shard is in recvbuf now */
    int n = sampi_hier_node_rounds(st->k, st->local, a->count, stage, rounds, st->k - 1);
    return n < 0 ? n : sampi_execute_rounds(&na, rounds, n);
}

/* Stage 2: the shard at buf among the nodes, as a whole SAMPI call there. */
static int across_nodes(const struct sampi_coll_args *a, const struct hier_state *st, void *buf,
                        size_t len)
{
    const struct sampi_coll_ctx *x = a->ctx;
    int explore;
    enum sampi_algo_id algo = inter_algo(x, &explore);
    return x->host->part_allreduce(x->owner, st->cross, buf, len, a, algo, explore);
}

int sampi_allreduce_hier(const struct sampi_coll_args *a)
{
    const struct sampi_coll_ctx *x = a->ctx;
    const struct hier_state *st = x->state;
    if (!st || !st->layered) {
        int rc = x->host->note_substitute(x->owner, SAMPI_FALLBACK_UNSUITED, SAMPI_ALGO_RING, NULL);
        return rc ? rc : sampi_allreduce_ring(a);
    }
    struct sampi_coll_ctx nctx;
    int rc = x->host->part(x->owner, st->node, &nctx);
    if (rc)
        return rc;
    struct sampi_round *rounds = malloc((size_t)(st->k - 1) * sizeof(*rounds));
    if (!rounds)
        return -ENOMEM;
    rc = node_stage(a, st, &nctx, SAMPI_HIER_REDUCE_SCATTER, rounds);
    size_t off, len;
    sampi_hier_shard(a->count, st->k, st->local, &off, &len);
    if (!rc && len) /* the same len on every rank of the local index */
        rc = across_nodes(a, st, (char *)a->recvbuf + off * a->dt.extent, len);
    if (!rc)
        rc = node_stage(a, st, &nctx, SAMPI_HIER_ALLGATHER, rounds);
    free(rounds);
    if (rc) /* the node's other ranks may wait for this one in a stage */
        nctx.host->give_up(nctx.owner, rc, "a stage of hier");
    return rc;
}
