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

/* SAMPI_DEBUG_ALGO_DELAY="algorithm:ms[,algorithm:ms...]" (a debugging
 * aid, off by default): every rank sleeps ms milliseconds inside each call
 * that `algorithm` runs, after the data moved, so that the call costs that
 * much more to `auto`'s measurements; used to check that auto learns to
 * avoid an algorithm and comes back to it.  Parse `text`: 0 and ms[id] for
 * every algorithm id (0 when not named); -EINVAL with a message naming the
 * variable and the accepted values otherwise. */
int sampi_debug_algo_delay_parse(const char *text, double *ms, int nalgos, char *err,
                                 size_t errlen);

/* Sleep as sampi_debug_algo_delay says for algorithm `algo`. */
void sampi_debug_algo_delay_apply(int algo);

#endif
