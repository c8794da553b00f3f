/*
 * algos.h - the allreduce algorithm descriptor table and what an algorithm
 * receives when it runs.
 */
#ifndef SAMPI_ALGOS_H
#define SAMPI_ALGOS_H

#include "dtype.h"
#include "kernels.h"

#include <mpi.h>
#include <stddef.h>

struct sampi_comm;

/* Capabilities, in the spirit of MPICH's `restrictions:`.  The selection code
 * checks a call against them; an algorithm's run function may assume them. */
enum sampi_algo_caps {
    SAMPI_CAP_EXACT = 1u << 0,            /* every rank gets identical, exact bits */
    SAMPI_CAP_APPROX = 1u << 1,           /* may drop data; opt-in only */
    SAMPI_CAP_COMMUTATIVE_ONLY = 1u << 2, /* reorders operands */
    SAMPI_CAP_BUILTIN_OP_ONLY = 1u << 3,  /* reduces with SAMPI's own kernels */
    SAMPI_CAP_NEEDS_STRAGGLER = 1u << 4,  /* needs an agreed straggler rank */
    SAMPI_CAP_NEEDS_SLOWDOWNS = 1u << 5,  /* needs agreed per-rank slowdown factors */
    SAMPI_CAP_NEEDS_DATAGRAM = 1u << 6,   /* needs a datagram netdev */
    SAMPI_CAP_IN_PLACE = 1u << 7,         /* accepts MPI_IN_PLACE */
    SAMPI_CAP_AUTO = 1u << 8,             /* `auto` may choose it */
};

enum sampi_algo_id {
#define SAMPI_ALGO(id, ...) SAMPI_ALGO_##id,
#include "algos.def"
#undef SAMPI_ALGO
    SAMPI_ALGO__COUNT
};

/* One MPI_Allreduce call, already validated and found eligible. */
struct sampi_coll_args {
    const void *sendbuf; /* MPI_IN_PLACE allowed */
    void *recvbuf;
    size_t count;
    MPI_Datatype datatype;
    MPI_Op mpi_op;
    struct sampi_dtype_info dt;
    enum sampi_op op;
    sampi_reduce_fn reduce;
    MPI_Comm comm;
    struct sampi_comm *state;
};

/* Returns 0 or a negative errno (mapped to an MPI error class by the caller). */
typedef int (*sampi_algo_run_fn)(const struct sampi_coll_args *args);

struct sampi_algo {
    enum sampi_algo_id id;
    const char *name;
    unsigned caps;
    sampi_algo_run_fn run;
    /* NULL, or non-zero when the algorithm can run this call; decided from
     * inputs identical on every rank, so all ranks agree */
    int (*suited)(const struct sampi_coll_args *args);
    const char *description;
};

extern const struct sampi_algo sampi_algos[SAMPI_ALGO__COUNT];

/* The descriptor named `name`, or NULL. */
const struct sampi_algo *sampi_algo_find(const char *name);

int sampi_allreduce_native(const struct sampi_coll_args *args);
int sampi_allreduce_ring(const struct sampi_coll_args *args);
int sampi_allreduce_rhd(const struct sampi_coll_args *args);
int sampi_allreduce_stragglar(const struct sampi_coll_args *args);

/* The straggler `stragglar` assumes for a call of `count` elements on c, or
 * -1 when it cannot run the call (no straggler known - see
 * sampi_stragglar_mode -, n < 3, count < n-1, or an n the schedule builder
 * refuses); the dispatcher then runs `ring`.  Depends only on agreed values,
 * so every rank answers alike. */
int sampi_stragglar_straggler(struct sampi_comm *c, size_t count);
int sampi_stragglar_suited(const struct sampi_coll_args *args);

int sampi_allreduce_optcc(const struct sampi_coll_args *args);

/* sampi_optcc_slowdown's text: "" (none: *rank = -1) or "rank:l", one
 * degraded rank with slowdown 1 <= l <= 4096.  0, or -EINVAL with a message
 * naming the variable in err. */
int sampi_optcc_slowdown_parse(const char *text, int *rank, double *l, char *err, size_t errlen);

/* The degraded rank, slowdown and segment count `optcc` uses for a call of
 * `count` elements of `extent` bytes on c: 0, or -1 when it cannot run the
 * call (no degraded rank inside the communicator - given by
 * sampi_optcc_slowdown or detected, see sampi_optcc_detect -, p < 3, count <
 * 4(p-1)); the dispatcher then runs `ring`.  Agreed values only. */
int sampi_optcc_params(struct sampi_comm *c, size_t count, size_t extent, int *rank, double *l,
                       int *k);
int sampi_optcc_suited(const struct sampi_coll_args *args);

struct sampi_optcc_cache;
void sampi_optcc_cache_free(struct sampi_optcc_cache *oc);

/* optireduce.c: approximate, opt-in; see optireduce.h for the rest. */
int sampi_allreduce_optireduce(const struct sampi_coll_args *args);
int sampi_optireduce_suited(const struct sampi_coll_args *args);

#endif
