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
#include <stdint.h>
#include <string.h>

struct sampi_netdev;
struct sampi_stats;
struct sampi_waiter;
struct sampi_coll_ctx;
struct sampi_algo;
struct sampi_coll_args;

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
    SAMPI_CAP_COMPOSED = 1u << 9,         /* runs other algorithms on parts (tracker.h) */
};

enum sampi_algo_id {
#define SAMPI_ALGO(id, ...) SAMPI_ALGO_##id,
#include "algos.def"
#undef SAMPI_ALGO
    SAMPI_ALGO__COUNT
};

/* What the caller lends an algorithm beyond the data: services whose owner
 * (the communicator's state, in src/) coll_algos never sees. */
struct sampi_coll_host {
    /* a waiter (wait.h) for an exchange on the communicator: its revocation
     * ends the wait, its stall warnings name it */
    void (*waiter)(void *owner, struct sampi_waiter *w, const char *what);
    /* a receive buffer of at least `size` bytes, kept by the owner */
    void *(*scratch)(void *owner, size_t size);
    /* count (and report as sampi_fallback says) that the call runs as
     * `instead` for reason `why` (enum sampi_fallback_reason, stats.h):
     * 0, or -ENOTSUP to fail the call */
    int (*note_substitute)(void *owner, int why, enum sampi_algo_id instead, const char *what);
    /* this rank gives up on the call (`why` a negative errno, in `what`):
     * every peer hears that it takes nothing more of the communicator's
     * data.  From then on `released` says which peers said the same. */
    void (*give_up)(void *owner, int why, const char *what);
    int (*released)(void *owner, int peer);
    /* For algorithms composed of others on sub-communicators they made from
     * ctl (hier.c; every rank of the call's communicator makes the same
     * calls).  `agreed` waits for this call's argument check: 0, or the
     * mismatch's negative errno, so that ranks that passed different
     * arguments never meet in a blocking split.  `part` gives the context
     * for a stage on `sub`, a part of the owner's communicator: its data
     * path open, its waits ending when the owner's do, the stage's failure
     * revoking it.  `part_allreduce` runs the whole of SAMPI's MPI_Allreduce
     * on `sub`, in place on `count` elements at buf of like's datatype and
     * op, with `algo`; SAMPI_ALGO_AUTO: sub's own choice, from its own
     * measured calls when `explore`, else its model's alone (the size table
     * and what sub's tracker hints: a straggler, a degraded link).  Each: 0
     * or a negative errno. */
    int (*agreed)(void *owner);
    int (*part)(void *owner, MPI_Comm sub, struct sampi_coll_ctx *out);
    int (*part_allreduce)(void *owner, MPI_Comm sub, void *buf, size_t count,
                          const struct sampi_coll_args *like, enum sampi_algo_id algo, int explore);
};

/* One call's context: everything an algorithm needs from the communicator,
 * filled by src/ from its state and its tracker before the algorithm's
 * suited and run functions are called.  All fields are agreed across the
 * ranks except `state`, `stats` and the host's owner. */
struct sampi_coll_ctx {
    int rank, size;
    /* SAMPI's private duplicate of the communicator: an algorithm's own
     * agreements go there, nonblocking, waited for through host->waiter */
    MPI_Comm ctl;
    struct sampi_netdev *nd; /* the open data path, NULL before it is opened */
    uint64_t *seq;           /* the communicator's count of data-path calls (tags) */
    int straggler;           /* the straggler predicted for this call, -1: none */
    int degraded;            /* the rank whose link was detected degraded, -1: none */
    double slowdown;         /* ... and its slowdown factor */
    size_t segment_bytes;    /* the executor's segment size (sampi_segment_bytes) */
    /* the running algorithm's per-communicator state (state_create), NULL
     * when it has none or could not make it */
    void *state;
    struct sampi_stats *stats; /* the communicator's counters */
    /* the call is a stage of a composed algorithm (host->part): no
     * composition runs inside it */
    int part;
    /* the algorithm table (sampi_algos), handed to a composition that runs
     * others by name (hier's algorithm among the nodes) so that it never
     * looks up the table that names it */
    const struct sampi_algo *algos;
    const struct sampi_coll_host *host;
    void *owner; /* the host's first argument */
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
    struct sampi_coll_ctx *ctx;
};

/* Returns 0 or a negative errno (mapped to an MPI error class by the caller). */
typedef int (*sampi_algo_run_fn)(const struct sampi_coll_args *args);

/* An algorithm's state per communicator (caches, transports), kept by the
 * caller in an opaque slot and handed back in sampi_coll_ctx.state.  create
 * runs at the first call that runs the algorithm on a communicator (on every
 * rank: it may be collective over args->comm); on failure (a negative errno)
 * the call gets state NULL and the next call tries again.  destroy runs when
 * the communicator is freed, or at MPI_Finalize while MPI still works. */
struct sampi_algo_state_hooks {
    int (*create)(const struct sampi_coll_args *args, void **out);
    void (*destroy)(void *state);
};

/* The world one call meets, as the communicator's tracker knows it (every
 * field agreed across ranks): what an algorithm's cost model reads. */
struct sampi_algo_world {
    int n;         /* ranks */
    double bytes;  /* the call's vector */
    double beta;   /* the data path's ns per byte, 0: not measured yet */
    int straggler; /* the rank predicted (or set) to arrive last, -1: none */
    /* the recent tracked calls: who arrived last in each (-1: nobody notably
     * late) and how long after the second-last */
    const int *last;
    const double *gap_ns;
    int samples;
    /* the call, for a model that reads its algorithm's own parameters */
    const struct sampi_coll_ctx *ctx;
    size_t count, extent;
};

/* What `auto` and the tracker may ask an algorithm's model (algos.def's
 * `model` column; NULL: the algorithm is only measured).  Every hook is
 * optional and pure. */
struct sampi_algo_model {
    /* The fraction of a ring's time after the last arrival this algorithm
     * would save on this call in world w (its hint: a known straggler, a
     * degraded link); 0 or below when it would not.  auto's model prefers
     * the algorithm with the largest gain above SAMPI_ALGO_GAIN_MARGIN to
     * the size table. */
    double (*gain)(const struct sampi_algo_world *w);
    /* The factor f such that a call of this algorithm took f * bytes * beta
     * after its last arrival, which arrived gap_ns after the second-last: a
     * sample for the data path's beta; 0 when the call says nothing. */
    double (*beta_factor)(const struct sampi_algo_world *w, double gap_ns);
    /* Non-zero where the algorithm can never win (auto never measures it
     * there), from the call's size and the communicator's alone. */
    int (*hopeless)(size_t bytes, int n);
};
#define SAMPI_ALGO_GAIN_MARGIN 0.05

struct sampi_algo {
    enum sampi_algo_id id;
    const char *name;
    unsigned caps;
    sampi_algo_run_fn run;
    /* NULL, or non-zero when the algorithm can run this call; decided from
     * inputs identical on every rank, so all ranks agree.  ctx->state is
     * the algorithm's state on the communicator where it exists already
     * (auto passes it), NULL before its first run there. */
    int (*suited)(const struct sampi_coll_args *args);
    const struct sampi_algo_state_hooks *state; /* NULL: the algorithm keeps none */
    const struct sampi_algo_model *model;       /* NULL: measured only */
    const char *description;
};

/* The models of the rows (model.c, stragglar_model.c, optcc_model.c). */
extern const struct sampi_algo_model sampi_ring_model, sampi_ring_like_model, sampi_stragglar_model,
    sampi_optcc_model;

extern const struct sampi_algo sampi_algos[SAMPI_ALGO__COUNT];

/* The descriptor named `name`, or NULL. */
const struct sampi_algo *sampi_algo_find(const char *name);
/* The row of `table` (SAMPI_ALGO__COUNT rows, as sampi_algos) named `name`,
 * or NULL (also for a NULL table or name). */
static inline const struct sampi_algo *sampi_algo_find_in(const struct sampi_algo *table,
                                                          const char *name)
{
    for (int i = 0; table && name && i < SAMPI_ALGO__COUNT; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}
/* The id sampi_debug_algo_delay may name `name` by (every algorithm but auto),
 * -1 for any other name. */
int sampi_algo_delayable(const char *name);

int sampi_allreduce_native(const struct sampi_coll_args *args);
int sampi_allreduce_ring(const struct sampi_coll_args *args);
int sampi_allreduce_rhd(const struct sampi_coll_args *args);
int sampi_allreduce_stragglar(const struct sampi_coll_args *args);

/* The values of sampi_stragglar_mode (sampi_stragglar_mode_names, in
 * stragglar.c): how the straggler is known.  Read by the tracker (src/),
 * which predicts it. */
enum sampi_stragglar_mode { SAMPI_STRAGGLAR_PREDICT, SAMPI_STRAGGLAR_FIXED, SAMPI_STRAGGLAR_OFF };

/* The straggler `stragglar` assumes for a call of `count` elements, or -1
 * when it cannot run the call (no straggler known - see
 * sampi_stragglar_mode -, n < 3, count < n-1, or an n the schedule builder
 * refuses); the dispatcher then runs `ring`.  Depends only on agreed values,
 * so every rank answers alike. */
int sampi_stragglar_straggler(const struct sampi_coll_ctx *ctx, size_t count);
int sampi_stragglar_suited(const struct sampi_coll_args *args);
extern const struct sampi_algo_state_hooks sampi_stragglar_state;

int sampi_allreduce_optcc(const struct sampi_coll_args *args);

/* sampi_optcc_slowdown's text: "" (none: *rank = -1) or "rank:l", one
 * degraded rank with slowdown 1 <= l <= 4096.  0, or -EINVAL with a message
 * naming the variable in err. */
int sampi_optcc_slowdown_parse(const char *text, int *rank, double *l, char *err, size_t errlen);

/* The degraded rank, slowdown and segment count `optcc` uses for a call of
 * `count` elements of `extent` bytes in context ctx: 0, or -1 when it cannot
 * run the call (no degraded rank inside the communicator - given by
 * sampi_optcc_slowdown or detected, see sampi_optcc_detect -, p < 3, count <
 * 4(p-1)); the dispatcher then runs `ring`.  Agreed values only. */
int sampi_optcc_params(const struct sampi_coll_ctx *ctx, size_t count, size_t extent, int *rank,
                       double *l, int *k);
int sampi_optcc_suited(const struct sampi_coll_args *args);
extern const struct sampi_algo_state_hooks sampi_optcc_state;

/* hier.c: node-aware composition (hier_plan.h); sampi_hier_inter's check. */
int sampi_allreduce_hier(const struct sampi_coll_args *args);
int sampi_hier_suited(const struct sampi_coll_args *args);
/* Whether `text` names what hier may run among the nodes, given the
 * algorithm table: 0, or -EINVAL with the reason in err (algos.c hands it
 * sampi_algos for the registry's sampi_hier_inter_validate). */
int sampi_hier_inter_check(const struct sampi_algo *table, const char *text, char *err,
                           size_t errlen);
extern const struct sampi_algo_state_hooks sampi_hier_state;

/* optireduce.c: approximate, opt-in; see optireduce.h for the rest. */
int sampi_allreduce_optireduce(const struct sampi_coll_args *args);
int sampi_optireduce_suited(const struct sampi_coll_args *args);
extern const struct sampi_algo_state_hooks sampi_optireduce_state;

#endif
