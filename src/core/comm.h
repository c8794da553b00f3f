/*
 * comm.h - SAMPI's state for one user communicator.
 *
 * Kept as a cached attribute on the user's communicator, created at the first
 * MPI_Allreduce on it (or when the program sets a per-communicator choice),
 * and freed by the attribute's delete callback when the communicator is freed
 * (or by MPI_Finalize).  The data path is opened later still: at the first
 * call that needs it, which is the same call on every rank because the
 * algorithm choice is agreed.
 */
#ifndef SAMPI_COMM_H
#define SAMPI_COMM_H

#include "argcheck.h"
#include "config.h"
#include "netdev.h"
#include "stats.h"

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sampi_tracker;
struct sampi_auto_state;
struct join_bufs;

struct sampi_comm {
    MPI_Comm comm; /* the user's */
    /* SAMPI's private duplicate, made at the first call (join): every
     * exchange SAMPI makes on its own behalf goes here, MPI_COMM_NULL before */
    MPI_Comm ctl;
    uint64_t id; /* agreed at the join: the same on every rank, unique in the job */
    int rank, size;
    int forced_algo;   /* -1: follow sampi_algorithm */
    int forced_netdev; /* -1: follow sampi_netdev */
    struct sampi_netdev *nd;
    int nd_tried; /* the data path was set up (or failed) */
    int agreed;   /* the configuration check has run since it was last armed */
    int mismatch; /* ranks disagree on the configuration: use PMPI */
    int limited;  /* some rank had a limit (sampi_timeout_ms) at the last agreement */
    int revoked;  /* 0, or why SAMPI gave up on it (a negative errno, revoke.h) */
    /* 1 after a call that only Open MPI's allreduce ran and every rank
     * joined: no rank can have given up on c since (only SAMPI's own
     * exchanges give up), so the next call need not look for a revocation
     * notice (pmpi_wrap/allreduce.c admit, settle_outcome) */
    int quiet;
    _Atomic int last_algo; /* -1 before the first call */
    uint64_t calls;        /* MPI_Allreduce calls SAMPI took on c, for messages */
    uint64_t seq;          /* calls that used the data path */
    MPI_Request revoke_rx; /* the notice receive (revoke.h) */
    int revoke_msg[8];
    /* once revoked: which peers have said they take nothing more of c's
     * data (sampi_revoke_released), NULL before */
    struct sampi_release *release;
    struct sampi_argcheck check; /* the current call's argument check */
    /* the first call's exchanges, when a wait on them failed: still pending
     * on the user's communicator (sampi_comm_outlives) */
    struct join_bufs *join;
    MPI_Request join_req[2];
    /* a nonblocking first call: the duplicate posted by the program's
     * thread (sampi_comm_join_post), whose join the progress thread
     * finishes; `dup_posted` is the program's thread's alone */
    struct join_bufs *dup_bufs;
    MPI_Request dup_req;
    int dup_posted;
    void *scratch; /* receive buffer for reductions */
    /* each algorithm's own state (its descriptor's state hooks), NULL until
     * it first ran here; read by the performance variables from any thread */
    void *_Atomic algo_state[SAMPI_ALGO__COUNT];
    /* arrivals and links seen in tracked calls (tracker.h), NULL until the first */
    struct sampi_tracker *tracker;
    /* auto's learned costs (auto.h), NULL until the first auto call */
    struct sampi_auto_state *autosel;
    uint64_t auto_regime_changes; /* regime changes already logged */
    /* Regime changes across a composition (tracker.h, "Regime changes"):
     * c's own (its tracker saw the regime change), agreed on c; this rank's
     * count of changes seen in c's parts; and that count summed over c's
     * ranks at c's last tracking exchange, agreed on c */
    uint64_t regime_epoch;
    _Atomic uint64_t parts_changes;
    uint64_t parts_epoch;
    size_t scratch_size;
    struct sampi_stats stats;
    /* the communicator c is a part of (a composed algorithm's stage, made
     * from the parent's private duplicate and freed with it), NULL for the
     * user's own: c's waits also end when the parent is revoked */
    struct sampi_comm *parent;
    /* auto takes its model's choice on c without measuring (a part whose
     * caller's auto measures the composition as a whole) */
    int auto_model_only;
    /* nonblocking calls posted on c that its progress thread has not
     * finished (pmpi_wrap/progress.c): a blocking call, MPI_Comm_free and
     * MPI_Finalize wait until none is left (sampi_comm_wait_pending) */
    _Atomic uint64_t nb_pending;
    struct sampi_nb_queue *nbq;     /* progress.c's queue and thread, NULL before */
    struct sampi_comm *prev, *next; /* every live state, for MPI_Finalize */
};

/* The state of `comm`, created when `create` is set and it does not exist.
 * 0, or -ENOENT (no state and !create), -ENOMEM, -EINVAL (bad communicator). */
int sampi_comm_get(MPI_Comm comm, int create, struct sampi_comm **out);

/* At every eligible call on c, before anything else (collective: every rank
 * makes that call).  The first time, the join: the ranks check that they
 * were configured alike and agree on c's id over the user's communicator
 * (two small nonblocking allreduces, the second telling a late rank that
 * the others gave up on the first), then make c->ctl.  Later, only when the
 * check was re-armed (c->agreed = 0, MPI_Comm_set_info), the check again
 * over c->ctl.  Every wait has the deadline of wait.h.
 * 0; -EINVAL when the ranks were configured differently (then c uses PMPI:
 * c->mismatch); or the revocation errno when the join failed (c->revoked). */
int sampi_comm_join(struct sampi_comm *c);

/* Whether the calls SAMPI leaves to Open MPI on c are checked first
 * (argcheck.h): sampi_check_args, and sampi_check_native or a limit on
 * some rank (agreed at the join), the same on every rank. */
int sampi_comm_checks_native(const struct sampi_comm *c);

/* A nonblocking call's half of the first call's join, on the program's
 * thread, in the program's order of collectives on the user's
 * communicator: it posts the duplicate (PMPI_Comm_idup) and returns at
 * once; sampi_comm_join, on the progress thread, waits for it and agrees
 * on the settings and the id over the duplicate.  Nothing to do when c was
 * joined or its duplicate posted already.  0, or -ENOMEM / -EIO. */
int sampi_comm_join_post(struct sampi_comm *c);

/* 1 when SAMPI left requests pending on the user's communicator `comm` (its
 * first call's agreement, after a rank gave up waiting in it), which Open MPI
 * would still progress after the communicator was freed, and crash: then
 * MPI_Comm_free must not free it (pmpi_wrap/comm_free.c keeps it, and drops
 * SAMPI's state).  0 otherwise, also once they completed. */
int sampi_comm_outlives(MPI_Comm comm);
/* Wait until c's progress thread finished every nonblocking call posted on c
 * (c->nb_pending is 0): they come first in the communicator's order.  The
 * thread needs nothing of the caller, so the wait ends by itself. */
void sampi_comm_wait_pending(struct sampi_comm *c);

/* Free SAMPI's state of `comm` now (its attribute's delete callback). */
void sampi_comm_drop_state(MPI_Comm comm);

/* What c's calls must agree on beyond their arguments: the configuration's
 * pattern hash and c's own overrides. */
uint32_t sampi_comm_pattern_hash(const struct sampi_comm *c);

/* The id shown in messages ("communicator 3"): the same on every rank.
 * c->id is (counter << SAMPI_COMM_LABEL_SHIFT) | the proposing world rank
 * (comm.c). */
#define SAMPI_COMM_LABEL_SHIFT 24
static inline uint64_t sampi_comm_label(const struct sampi_comm *c)
{
    return c->id >> SAMPI_COMM_LABEL_SHIFT;
}

/* "communicator 3 (4 ranks), call 17" */
static inline void sampi_comm_describe(const struct sampi_comm *c, char *buf, size_t len)
{
    snprintf(buf, len, "communicator %llu (%d ranks), call %llu",
             (unsigned long long)sampi_comm_label(c), c->size, (unsigned long long)c->calls);
}

struct sampi_waiter;

/* A waiter for one of c's exchanges (wait.h): its poll is sampi_comm_poll,
 * and it describes c in stall warnings. */
void sampi_comm_waiter(struct sampi_comm *c, struct sampi_waiter *w, const char *what);

/* Whether c's calls must stop: c was revoked, or now is because its
 * argument check found a mismatch (which comes first: every rank sees the
 * same verdict, whatever notice reaches it first), the communicator it is a
 * part of was revoked, or another rank's notice came (sampi_revoke_poll).
 * 0, or the negative error every call on c now returns. */
int sampi_comm_poll(struct sampi_comm *c);

/* At the end of the call (or earlier, hier's state): wait for c's argument
 * check (through c's waiter) and return 0, the mismatch error, or the
 * wait's error; called again in the same call, the same verdict.  0 when
 * none was posted. */
int sampi_comm_check_finish(struct sampi_comm *c);

/* The cause a call with outcome rc reports: a success or a message of the
 * wrong size (-EBADMSG, which points at a mismatch) takes the check's
 * verdict (sampi_comm_check_finish) when it found one, so that every rank
 * reports the same class; any other outcome stands. */
int sampi_comm_check_cause(struct sampi_comm *c, int rc);

/* Open the data path if not done yet.  Collective: called by every rank for
 * the same call, after the join.  0, or a negative errno, the same on every
 * rank (the ranks agree on the outcome); on failure the communicator uses
 * PMPI from then on.  A wait that fails revokes c. */
int sampi_comm_open_netdev(struct sampi_comm *c);

/* A scratch buffer of at least `size` bytes owned by the state. */
void *sampi_comm_scratch(struct sampi_comm *c, size_t size);

/* Algorithm `id`'s state on c, or NULL before it first ran there. */
void *sampi_comm_algo_state(struct sampi_comm *c, enum sampi_algo_id id);

/* The same, made by the algorithm's create hook when it does not exist yet
 * (args is the call about to run it: every rank of c calls this for the same
 * call).  0 (*out NULL when the algorithm keeps no state), or the hook's
 * negative errno; the next call tries again. */
int sampi_comm_algo_state_make(struct sampi_comm *c, enum sampi_algo_id id,
                               const struct sampi_coll_args *args, void **out);

/* Count a fallback to PMPI_Allreduce (c may be NULL) and, when the user forced
 * an algorithm, report it according to sampi_fallback (`what` names the call:
 * "MPI_SUM on MPI_CHAR", or NULL).  0: go on with PMPI;
 * -ENOTSUP: sampi_fallback=error, fail the call.  (fallback.c) */
int sampi_comm_note_fallback(struct sampi_comm *c, enum sampi_fallback_reason why,
                             const char *what);

/* The same, for a call the forced algorithm cannot run that goes to the SAMPI
 * algorithm `instead` rather than to PMPI_Allreduce. */
int sampi_comm_note_substitute(struct sampi_comm *c, enum sampi_fallback_reason why,
                               enum sampi_algo_id instead, const char *what);

/* The algorithm setting in force for c: its own, else sampi_algorithm. */
int sampi_comm_algorithm_setting(const struct sampi_comm *c);

/* The field holding c's override of control variable `id` (-1: follow the
 * process-wide value), or NULL when `id` has none.  Every variable whose
 * SAMPI_CVAR_INFO names an override has a row here (a unit test checks it);
 * the MPI_T communicator-bound variants write these same fields, so they and
 * sampi_comm_set_algorithm/sampi_comm_set_netdev are one setting. */
static inline int *sampi_comm_override(struct sampi_comm *c, int id)
{
    static const struct {
        int id;
        size_t offset;
    } fields[] = {
        {SAMPI_CVAR_ALGORITHM, offsetof(struct sampi_comm, forced_algo)},
        {SAMPI_CVAR_NETDEV, offsetof(struct sampi_comm, forced_netdev)},
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (fields[i].id == id)
            return (int *)((char *)c + fields[i].offset);
    return NULL;
}

/* A module above this one that keeps a part of its own in struct sampi_comm
 * (the tracker, auto): this file calls it through its row, never by name,
 * as Open MPI's frameworks call their components. */
struct sampi_comm_owner {
    /* Free the module's part of c, when c's state is freed (after the data
     * path closed, before the statistics go); NULL: nothing to free. */
    void (*release)(struct sampi_comm *c);
    /* What the module brings that every rank must have alike (it joins
     * sampi_comm_pattern_hash), fixed once MPI is up; NULL: nothing. */
    uint64_t (*pattern_hash)(void);
};

/* MPI_Finalize: free every state (closes the data paths). */
void sampi_comm_free_all(void);
/* Set up the attribute keyval; needs MPI initialised.  `owners` (n rows,
 * kept: static storage) are the modules above with a part in every state,
 * released in this order. */
int sampi_comm_init(const struct sampi_comm_owner *owners, size_t n);

#endif
