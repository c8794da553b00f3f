/*
 * clock.h - the monotonic clock that deadlines are expressed on.
 *
 * Base utilities: the waiter (wait.c), the data paths (netdev.h includes
 * this header) and the algorithms all time with it; how they wait between
 * polls is wait_mode.h's.
 */
#ifndef SAMPI_CLOCK_H
#define SAMPI_CLOCK_H

#include <stdint.h>

/* Monotonic clock in nanoseconds; deadlines are expressed on it. */
int64_t sampi_now_ns(void);

#endif
