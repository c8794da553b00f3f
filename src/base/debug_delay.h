/*
 * debug_delay.h - straggler injection for unmodified programs (a debugging
 * aid, off by default).
 *
 * SAMPI_DEBUG_DELAY="rank:ms[:jitter_ms][,rank:ms[:jitter_ms]...]" makes the
 * named MPI_COMM_WORLD ranks ("*" for every rank) sleep ms milliseconds, plus
 * a uniform random 0..jitter_ms, inside each MPI_Allreduce before they join
 * it, so that benchmarks and applications show straggler behaviour with any
 * algorithm, Open MPI's included.
 */
#ifndef SAMPI_DEBUG_DELAY_H
#define SAMPI_DEBUG_DELAY_H

#include <stddef.h>

/* Parse `text` and find what applies to world rank `rank` (the last entry
 * naming it wins; "*" names every rank).  0 with *ms and *jitter_ms set (both
 * 0 when nothing applies); -EINVAL with a message in err otherwise. */
int sampi_debug_delay_parse(const char *text, int rank, double *ms, double *jitter_ms, char *err,
                            size_t errlen);

/* Sleep as sampi_debug_delay says for this process; free when it is empty. */
void sampi_debug_delay_apply(void);

/* SAMPI_DEBUG_STALL, the same grammar (a debugging aid, off by default):
 * the named ranks sleep inside each MPI_Allreduce that SAMPI's data path
 * runs, after the argument check was posted and before the data moves, so
 * that the others can learn of a mismatch while this rank has not taken
 * their data yet (the test that nothing is in flight after an error). */
void sampi_debug_stall_apply(void);

/* SAMPI_DEBUG_ALGO_DELAY="algorithm:ms[,algorithm:ms...]" (a debugging
 * aid, off by default): every rank sleeps ms milliseconds inside each call
 * that `algorithm` runs, after the data moved, so that the call costs that
 * much more to `auto`'s measurements; used to check that auto learns to
 * avoid an algorithm and comes back to it.
 *
 * This file knows the grammar, not the algorithms: the caller passes the
 * lookup from a name to the algorithm's id, -1 for a name that may not be
 * delayed (unknown, or auto). */
typedef int sampi_debug_algo_lookup_fn(const char *name);

/* Room for the per-algorithm delays: ids from the lookup are below it (the
 * caller checks at compile time, allreduce.c). */
#define SAMPI_DEBUG_ALGOS_MAX 16

/* Parse `text`: 0 and ms[id] for every id below nalgos (0 when not named);
 * -EINVAL with a message naming the variable and the accepted values
 * otherwise (a name the lookup refuses or maps to nalgos or beyond). */
int sampi_debug_algo_delay_parse(const char *text, sampi_debug_algo_lookup_fn *lookup, double *ms,
                                 int nalgos, char *err, size_t errlen);

/* Sleep as sampi_debug_algo_delay says for algorithm id `algo`; `lookup`
 * reads the names when the variable changed. */
void sampi_debug_algo_delay_apply(int algo, sampi_debug_algo_lookup_fn *lookup);

#endif
