/*
 * coll_ctx.h - what an algorithm sees of a communicator for one call
 * (struct sampi_coll_ctx, coll_algos/algos.h), filled from the communicator's
 * state and its tracker, so that coll_algos never reads struct sampi_comm.
 */
#ifndef SAMPI_COLL_CTX_H
#define SAMPI_COLL_CTX_H

#include "algos.h"

struct sampi_comm;

/* Fill ctx for a call on c from what holds now (the data path, the
 * predicted straggler, the degraded rank); no algorithm's state yet.  Enough
 * for the descriptors' suited functions and auto's selection. */
void sampi_coll_ctx_fill(struct sampi_comm *c, struct sampi_coll_ctx *ctx);

/* Just before `algo` runs the call a on c: give a->ctx (filled once, at the
 * start of the call) the data path, open now, and algo's state, made at
 * its first use (collective: every rank runs the same algorithm for the
 * call).  A state that could not be made is passed as NULL; the algorithm
 * then fails or falls back the same way on every rank. */
void sampi_coll_ctx_bind(struct sampi_comm *c, struct sampi_coll_args *a, enum sampi_algo_id algo);

#endif
