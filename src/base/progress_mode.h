/*
 * progress_mode.h - who moves a nonblocking allreduce forward while the
 * program computes: a progress thread of SAMPI's, or nobody but the
 * program's own MPI calls.
 *
 *   thread  SAMPI's algorithms run on a progress thread (one per
 *           communicator with nonblocking calls, all pinned to one PU of the
 *           rank's binding that the rank does not compute on), so a call
 *           completes while the program computes: the straggler's delay
 *           is used by the on-time ranks in the background.
 *   calls   no thread: nonblocking calls go to Open MPI's MPI_Iallreduce
 *           (libnbc), which moves only inside the program's MPI calls.
 *           The right thing where no PU is free: a thread would take the
 *           core the rank computes on.
 *   auto    thread where a PU is free for it, calls otherwise; the default.
 *
 * A free PU: the rank's binding holds more than one PU (a core with its
 * hyperthread, or two cores, as `--map-by ppr:8:node:pe=2` gives), or the
 * rank is unbound and the node has more PUs than the job has ranks there.
 * Every rank must take nonblocking calls the same way (SAMPI's algorithm on
 * one rank and Open MPI's on another never meet), so the mode is agreed at
 * MPI_Init: thread only where every rank of the job can run one.
 *
 * Example: mpirun -np 8 --map-by ppr:8:node:pe=2 on a 16-core node: each
 * binding holds 2 cores -> thread, on the binding's last PU.  mpirun -np 2
 * --bind-to core on 2 cores: 1 PU each -> calls.  mpirun -np 1 unbound on
 * 2 cores: 2 PUs for 1 rank -> thread.
 */
#ifndef SAMPI_PROGRESS_MODE_H
#define SAMPI_PROGRESS_MODE_H

#include <stddef.h>

/* sampi_progress's items, in this order (the MPI_T enum's values and the
 * sampi_progress_mode pvar's). */
enum sampi_progress_mode {
    SAMPI_PROGRESS_AUTO,
    SAMPI_PROGRESS_THREAD,
    SAMPI_PROGRESS_CALLS,
    SAMPI_PROGRESS__COUNT
};

/* "auto", "thread", "calls", NULL */
extern const char *const sampi_progress_mode_names[];

/* What this process sees before MPI starts.  0 where unknown. */
struct sampi_progress_facts {
    int binding_pus; /* PUs in this process's binding */
    int node_pus;    /* PUs of the node */
    int local_ranks; /* ranks of the job on this node (OMPI_COMM_WORLD_LOCAL_SIZE) */
};

/* auto's answer for these facts (thread or calls), with the reason in
 * `why`, for example "the binding holds 2 PUs: the rank computes on one".
 * Pure: no I/O, no state. */
enum sampi_progress_mode sampi_progress_mode_decide(const struct sampi_progress_facts *f, char *why,
                                                    size_t len);

/* This process's mode, once: `local` is what it decided for itself (the
 * setting, else auto's answer), `agreed` whether every rank of the job
 * decided thread and got the thread level a thread needs (MPI_Init's
 * agreement; 0 when it could not be made).  `why` explains it. */
void sampi_progress_mode_resolve(enum sampi_progress_mode local, int agreed, const char *why);

/* The mode in force: thread or calls (calls before it was resolved). */
enum sampi_progress_mode sampi_progress_mode_now(void);

/* Where the threads run ("pinned to PU 15 (the last PU of the binding)"),
 * said once they were placed (pmpi_wrap/progress.c); kept for describe. */
void sampi_progress_mode_placed(const char *where);

/* "thread (auto: the binding holds 2 PUs ...; threads pinned to PU 15 ...)"
 * into buf; returns buf. */
const char *sampi_progress_mode_describe(char *buf, size_t len);

#endif
