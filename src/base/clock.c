/*
 * clock.c - the clock that the waiter and every backend share (clock.h).
 * The data-path modules reach it through module_glue.c.
 */
#include "clock.h"

#include <time.h>

int64_t sampi_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
