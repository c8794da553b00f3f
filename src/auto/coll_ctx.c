/*
 * coll_ctx.c - the call context handed to the algorithms.
 */
#include "coll_ctx.h"
#include "argcheck.h"
#include "comm.h"
#include "revoke.h"
#include "tracker.h"

#include <errno.h>

static void host_waiter(void *owner, struct sampi_waiter *w, const char *what)
{
    sampi_comm_waiter(owner, w, what);
}

static void *host_scratch(void *owner, size_t size)
{
    return sampi_comm_scratch(owner, size);
}

static int host_note_substitute(void *owner, int why, enum sampi_algo_id instead, const char *what)
{
    return sampi_comm_note_substitute(owner, (enum sampi_fallback_reason)why, instead, what);
}

/* The cause is the argument check's verdict where it found a mismatch
 * (argcheck.h): every rank reports the same class (the wrapper reads it
 * from c->revoked). */
static void host_give_up(void *owner, int why, const char *what)
{
    struct sampi_comm *c = owner;
    sampi_revoke(c, sampi_comm_check_cause(c, why), what);
}

static int host_released(void *owner, int peer)
{
    return sampi_revoke_released(owner, peer);
}

static int host_agreed(void *owner)
{
    return sampi_comm_check_finish(owner);
}

/* The state of `sub`, made a part of c at its first use: it takes c's data
 * path choice, and its waits end when c is revoked (revoke.c). */
static int part_of(struct sampi_comm *c, MPI_Comm sub, struct sampi_comm **out)
{
    int rc = sampi_comm_get(sub, 1, out);
    if (rc)
        return rc;
    struct sampi_comm *s = *out;
    if (!s->parent) {
        s->parent = c;
        s->forced_netdev = c->forced_netdev;
    }
    return sampi_comm_poll(s);
}

static int host_part(void *owner, MPI_Comm sub, struct sampi_coll_ctx *out)
{
    struct sampi_comm *s;
    int rc = part_of(owner, sub, &s);
    if (rc)
        return rc;
    s->calls++;
    rc = sampi_comm_join(s);
    if (!rc)
        rc = sampi_comm_open_netdev(s);
    if (rc) /* -EINVAL: configured differently, which a part cannot be */
        return rc == -EINVAL ? -EIO : rc;
    sampi_coll_ctx_fill(s, out);
    return 0;
}

static sampi_part_allreduce_fn *part_entry;

void sampi_coll_ctx_set_part_entry(sampi_part_allreduce_fn *fn)
{
    part_entry = fn;
}

static int host_part_allreduce(void *owner, MPI_Comm sub, void *buf, size_t count,
                               const struct sampi_coll_args *like, enum sampi_algo_id algo,
                               int explore)
{
    struct sampi_comm *s;
    int rc = part_of(owner, sub, &s);
    if (rc)
        return rc;
    if (s->forced_algo != (int)algo) {
        /* the part's own setting (what its calls agree on), so that its
         * call reports a substitute under that name */
        s->forced_algo = (int)algo;
        s->agreed = 0;
    }
    s->auto_model_only = !explore;
    return part_entry ? part_entry(buf, count, like->datatype, like->mpi_op, sub) : -ENOSYS;
}

static const struct sampi_coll_host comm_host = {
    .waiter = host_waiter,
    .scratch = host_scratch,
    .note_substitute = host_note_substitute,
    .give_up = host_give_up,
    .released = host_released,
    .agreed = host_agreed,
    .part = host_part,
    .part_allreduce = host_part_allreduce,
};

void sampi_coll_ctx_fill(struct sampi_comm *c, struct sampi_coll_ctx *ctx)
{
    *ctx = (struct sampi_coll_ctx){
        .rank = c->rank,
        .size = c->size,
        .ctl = c->ctl,
        .nd = c->nd,
        .seq = &c->seq,
        .straggler = sampi_tracker_straggler(c),
        .slowdown = 1.0,
        .segment_bytes = (size_t)sampi_cvar_int(SAMPI_CVAR_SEGMENT_BYTES),
        .stats = &c->stats,
        .part = c->parent != NULL,
        .algos = sampi_algos,
        .host = &comm_host,
        .owner = c,
    };
    ctx->degraded = sampi_tracker_degraded(c, &ctx->slowdown);
}

void sampi_coll_ctx_bind(struct sampi_comm *c, struct sampi_coll_args *args,
                         enum sampi_algo_id algo)
{
    struct sampi_coll_ctx *ctx = args->ctx;
    ctx->nd = c->nd; /* opened since the context was filled */
    void *st = NULL;
    sampi_comm_algo_state_make(c, algo, args, &st);
    ctx->state = st;
}

int sampi_coll_ctx_suited(struct sampi_comm *c, const struct sampi_coll_args *args,
                          enum sampi_algo_id algo)
{
    const struct sampi_algo *x = &sampi_algos[algo];
    if (!x->suited)
        return 1;
    void *saved = args->ctx->state;
    args->ctx->state = sampi_comm_algo_state(c, algo);
    int ok = x->suited(args);
    args->ctx->state = saved;
    return ok;
}
