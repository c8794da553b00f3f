/*
 * selective_client.h - the worker side of selective reduce: spawning the
 * controller rank at MPI_Init, the READY/GROUP/DONE exchange around each
 * partial allreduce, the keep-alive timeout and the fallback to exact
 * allreduces when the controller is gone, and leaving at MPI_Finalize.
 */
#ifndef SAMPI_SELECTIVE_CLIENT_H
#define SAMPI_SELECTIVE_CLIENT_H

#include "algos.h"

#include <mpi.h>
#include <stdint.h>

/* Tags on the intercommunicator between the workers and the controller. */
enum { SAMPI_SEL_TAG_UP = 1, SAMPI_SEL_TAG_DOWN = 2 };

/* What one partial allreduce did (sampi_partial_info_t's content). */
enum sampi_sel_outcome {
    SAMPI_SEL_OUT_PARTIAL = 0, /* a group chosen by the controller */
    SAMPI_SEL_OUT_FULL = 1,    /* a full synchronisation of every worker */
    SAMPI_SEL_OUT_EXACT = 2,   /* no controller (mode off, or it failed): exact over all */
};

struct sampi_sel_result {
    long long group;     /* controller's group id; -1 without a controller */
    int outcome;         /* enum sampi_sel_outcome */
    int size;            /* members */
    double weight;       /* this rank's weight */
    long long iteration; /* this rank's iteration count after the call */
    double seconds;      /* the reduction's duration (ring or exact) */
    int *members;        /* caller storage, or NULL */
    double *weights;     /* caller storage, or NULL */
    int capacity;
};

/* MPI_Init hook (after PMPI_Init and sampi_runtime_mpi_ready): with
 * sampi_selective_mode other than off, spawn the controller (collective over
 * MPI_COMM_WORLD).  A failed spawn warns and leaves the mode off. */
void sampi_selective_init(void);

/* MPI_Finalize hook (before sampi_runtime_fini): tell the controller this
 * rank stops, help the ranks still running finish their fallback calls, and
 * disconnect from the controller. */
void sampi_selective_fini(void);

/* The outcome of this rank's last partial call (members/weights copied into
 * res's arrays; none for an exact call).  0, or -ENOENT without a
 * controller. */
int sampi_selective_last(struct sampi_sel_result *res);

/* sampi_partial_finish(): leave partial mode (see finish in the .c file). */
int sampi_selective_finish(void);

/* MPI_Allreduce hook, called for a validated eligible call: non-zero when
 * selective reduce took the call (sampi_selective_mode=allreduce, SUM on
 * MPI_FLOAT/MPI_DOUBLE, the chosen communicator), with *rc its MPI return
 * code; 0 to let the normal path run it. */
int sampi_selective_route(const struct sampi_coll_args *args, int *rc);

/* 1 where sampi_selective_route may take calls (sampi_selective_mode is
 * allreduce): then no call may bypass it (lane.h). */
int sampi_selective_may_route(void);

/* One partial allreduce: buf (count elements of a's datatype, in place)
 * becomes scale x the weighted average over the group.  0 or a negative
 * errno. */
int sampi_selective_partial(void *buf, size_t count, MPI_Datatype datatype, MPI_Comm comm,
                            double scale, struct sampi_sel_result *res);

/* This process's selective-reduce counters (the sampi_selective_* pvars). */
enum sampi_sel_counter {
    SAMPI_SEL_C_CALLS,         /* partial calls (API and routed MPI_Allreduce) */
    SAMPI_SEL_C_GROUP,         /* ... that ran in a partial group */
    SAMPI_SEL_C_FULL,          /* ... in a full synchronisation */
    SAMPI_SEL_C_EXACT,         /* ... as an exact fallback over the running ranks */
    SAMPI_SEL_C_LAST_SIZE,     /* members of the last group (0: none yet) */
    SAMPI_SEL_C_FALLBACKS,     /* times this rank gave the controller up (0 or 1) */
    SAMPI_SEL_C_GROUP_WAIT_NS, /* sum of READY sent -> GROUP received (ns) */
    SAMPI_SEL_C__COUNT
};

uint64_t sampi_selective_counter(enum sampi_sel_counter k);

#endif
