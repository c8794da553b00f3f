/*
 * coll_ctx.c - the call context handed to the algorithms.
 */
#include "coll_ctx.h"
#include "argcheck.h"
#include "comm.h"
#include "revoke.h"
#include "tracker.h"

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
    sampi_revoke(c, sampi_argcheck_cause(c, why), what);
}

static int host_released(void *owner, int peer)
{
    return sampi_revoke_released(owner, peer);
}

static const struct sampi_coll_host comm_host = {
    .waiter = host_waiter,
    .scratch = host_scratch,
    .note_substitute = host_note_substitute,
    .give_up = host_give_up,
    .released = host_released,
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
        .host = &comm_host,
        .owner = c,
    };
    ctx->degraded = sampi_tracker_degraded(c, &ctx->slowdown);
}

void sampi_coll_ctx_bind(struct sampi_comm *c, struct sampi_coll_args *a, enum sampi_algo_id algo)
{
    struct sampi_coll_ctx *ctx = a->ctx;
    ctx->nd = c->nd; /* opened since the context was filled */
    void *st = NULL;
    sampi_comm_algo_state_make(c, algo, a, &st);
    ctx->state = st;
}
