/*
 * clock.h - the monotonic clock that deadlines are expressed on, and the
 * back-off of a rank that polls.
 *
 * Base utilities: the waiter (wait.c), the data paths (netdev.h includes
 * this header) and the algorithms all time and wait with the same two.
 */
#ifndef SAMPI_CLOCK_H
#define SAMPI_CLOCK_H

#include <stdint.h>

/* Monotonic clock in nanoseconds; deadlines are expressed on it. */
int64_t sampi_now_ns(void);

/* Back-off helper shared by backends that poll: yields first, then sleeps for
 * growing intervals (capped), so that waiting ranks leave the core to the ranks
 * that still compute.  `spins` is the caller's counter, reset on progress. */
void sampi_backoff(unsigned *spins);

#endif
