/*
 * wait_mode.h - how a rank spends the time it waits for its peers: the mode
 * decided once at start-up from the node (docs/design.md, 'Waits follow the node'), and the one
 * idle turn every polling loop of SAMPI takes in that mode.
 *
 *   poll   spin without leaving the core: the right thing when every rank
 *          has a core of its own (the normal HPC layout).  A pause
 *          instruction per idle turn, no system call.
 *   yield  sched_yield each idle turn, never sleep: the ranks that still
 *          compute get a shared core at once, and a waiting rank is back as
 *          soon as the scheduler picks it.  For oversubscribed nodes.
 *   block  yield 64 times, then sleep for intervals doubling from 1 us to
 *          1 ms, and wait in the kernel on data paths with a file-descriptor
 *          wait object (ofi over tcp): the least CPU, but each wait may end
 *          up to 1 ms after its data arrived.  Only when asked for.
 *   auto   poll unless the node is oversubscribed (more ranks of the job on
 *          the node than the CPUs they are bound to, or Open MPI yields when
 *          idle), then yield.  The default.
 *
 * The mode in force is sampi_busy_poll when it names one, else auto's
 * answer; auto is resolved at start-up (pmpi_wrap/runtime.c) from the facts
 * of struct sampi_node_facts (node.c gathers them).  A process that never
 * resolved it (the selective controller, programs linked with the core
 * only) yields: it may share a core with the ranks.
 */
#ifndef SAMPI_WAIT_MODE_H
#define SAMPI_WAIT_MODE_H

#include <stddef.h>
#include <stdint.h>

/* sampi_busy_poll's items, in this order (the values MPI_T reads and
 * writes, and the values of the sampi_wait_mode pvar). */
enum sampi_wait_mode {
    SAMPI_WAIT_AUTO,
    SAMPI_WAIT_POLL,
    SAMPI_WAIT_YIELD,
    SAMPI_WAIT_BLOCK,
    SAMPI_WAIT__COUNT
};

/* "auto", "poll", "yield", "block", NULL */
extern const char *const sampi_wait_mode_names[];

/* What the node says about waiting.  0 / -1 where unknown. */
struct sampi_node_facts {
    int local_ranks;    /* ranks of this job on this node (0: unknown) */
    int cpus;           /* CPUs those ranks may run on (0: unknown) */
    int ompi_yields;    /* Open MPI's mpi_yield_when_idle: 1, 0, or -1 unknown */
    const char *source; /* how local_ranks was counted, for the explanation */
};

/* auto's answer for these facts, with the reason in `why` (for example
 * "oversubscribed; 8 local ranks on 2 CPUs").  Pure: no I/O, no state. */
enum sampi_wait_mode sampi_wait_mode_decide(const struct sampi_node_facts *f, char *why,
                                            size_t len);

/* Remember auto's answer for this process (start-up, once; later calls
 * replace it). */
void sampi_wait_mode_resolve(const struct sampi_node_facts *f);
int sampi_wait_mode_resolved(void);

/* The mode in force now (never SAMPI_WAIT_AUTO): sampi_busy_poll when it
 * names a mode, else auto's answer (yield when never resolved). */
enum sampi_wait_mode sampi_wait_mode_now(void);

/* "poll (auto: 2 local ranks on 2 CPUs)" or "yield (set by sampi_busy_poll;
 * auto would poll: ...)" into buf; returns buf. */
const char *sampi_wait_mode_describe(char *buf, size_t len);

/* One idle turn of a polling loop in the mode in force.  `spins` is the
 * caller's count of idle turns since its last progress (block mode sleeps
 * longer as it grows); reset it to 0 on progress. */
void sampi_wait_pause(unsigned *spins);

/* A data path that waited in the kernel (block mode) counts it here too. */
void sampi_wait_count_sleep(void);

/* Sleeps taken while waiting since the process started (the
 * sampi_wait_sleeps pvar): 0 in poll and yield modes. */
uint64_t sampi_wait_sleeps(void);

#endif
