/*
 * clock.c - the clock and back-off that the waiter and every backend share
 * (clock.h).  The data-path modules reach these through module_glue.c.
 */
#include "clock.h"

#include <sched.h>
#include <time.h>

int64_t sampi_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A waiting rank first yields (cheap when a peer is about to answer), then
 * sleeps for intervals that double up to 1 ms: on an oversubscribed host the
 * ranks that still compute get the core, and a rank waiting on a 20 ms
 * straggler wakes at most ~20 times instead of spinning. */
void sampi_backoff(unsigned *spins)
{
    enum { YIELDS = 64, MAX_SLEEP_NS = 1000000 };
    unsigned n = (*spins)++;
    if (n < YIELDS) {
        sched_yield();
        return;
    }
    unsigned shift = n - YIELDS;
    long ns = shift >= 10 ? MAX_SLEEP_NS : (1000L << shift);
    if (ns > MAX_SLEEP_NS)
        ns = MAX_SLEEP_NS;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}
