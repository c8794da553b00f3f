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

/* Just before `algo` runs the call args on c: give args->ctx (filled once, at the
 * start of the call) the data path, open now, and algo's state, made at
 * its first use (collective: every rank runs the same algorithm for the
 * call).  A state that could not be made is passed as NULL; the algorithm
 * then fails or falls back the same way on every rank. */
void sampi_coll_ctx_bind(struct sampi_comm *c, struct sampi_coll_args *args,
                         enum sampi_algo_id algo);

/* Whether `algo` suits call args on c (its descriptor's suited), shown its
 * state on c where it has one already. */
int sampi_coll_ctx_suited(struct sampi_comm *c, const struct sampi_coll_args *args,
                          enum sampi_algo_id algo);

/* The whole of SAMPI's MPI_Allreduce on `comm`, in place on buf, with comm's
 * own algorithm setting: what a composed algorithm's stage runs (struct
 * sampi_coll_host's part_allreduce sets the setting first).  0 or a negative
 * errno.  The MPI entry points (pmpi_wrap/, above this layer) register it at
 * start-up. */
typedef int sampi_part_allreduce_fn(void *buf, size_t count, MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm);
void sampi_coll_ctx_set_part_entry(sampi_part_allreduce_fn *fn);

#endif
