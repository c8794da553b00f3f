/*
 * own_ranges.c - the ranges of recvbuf that hold the rank's value
 * (own_ranges.h).  A schedule touches few distinct ranges (its chunks), so
 * a sorted array searched linearly is enough.
 */
#include "own_ranges.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sampi_own_init(struct sampi_own_ranges *o, int all)
{
    *o = (struct sampi_own_ranges){.all = all};
}

void sampi_own_free(struct sampi_own_ranges *o)
{
    free(o->lo);
    free(o->hi);
    *o = (struct sampi_own_ranges){0};
}

enum sampi_own_cover sampi_own_cover(const struct sampi_own_ranges *o, size_t lo, size_t hi)
{
    if (o->all || lo >= hi)
        return SAMPI_OWN_ALL;
    size_t held = 0;
    for (int i = 0; i < o->n && o->lo[i] < hi; i++) {
        size_t a = o->lo[i] > lo ? o->lo[i] : lo, b = o->hi[i] < hi ? o->hi[i] : hi;
        if (a < b)
            held += b - a;
    }
    return held == 0 ? SAMPI_OWN_NONE : held == hi - lo ? SAMPI_OWN_ALL : SAMPI_OWN_PART;
}

static int reserve(struct sampi_own_ranges *o, int n)
{
    if (n <= o->cap)
        return 0;
    int cap = o->cap ? 2 * o->cap : 8;
    while (cap < n)
        cap *= 2;
    size_t *lo = realloc(o->lo, (size_t)cap * sizeof(*lo));
    if (!lo)
        return -ENOMEM;
    o->lo = lo;
    size_t *hi = realloc(o->hi, (size_t)cap * sizeof(*hi));
    if (!hi)
        return -ENOMEM;
    o->hi = hi;
    o->cap = cap;
    return 0;
}

int sampi_own_mark(struct sampi_own_ranges *o, size_t lo, size_t hi)
{
    if (o->all || lo >= hi)
        return 0;
    if (reserve(o, o->n + 1))
        return -ENOMEM;
    /* the intervals that overlap or touch [lo, hi) are [first, last) */
    int first = 0;
    while (first < o->n && o->hi[first] < lo)
        first++;
    int last = first;
    while (last < o->n && o->lo[last] <= hi) {
        lo = o->lo[last] < lo ? o->lo[last] : lo;
        hi = o->hi[last] > hi ? o->hi[last] : hi;
        last++;
    }
    /* replace them by the one merged interval (memmove: either direction) */
    size_t tail = (size_t)(o->n - last);
    memmove(o->lo + first + 1, o->lo + last, tail * sizeof(*o->lo));
    memmove(o->hi + first + 1, o->hi + last, tail * sizeof(*o->hi));
    o->lo[first] = lo;
    o->hi[first] = hi;
    o->n += 1 - (last - first);
    return 0;
}

int sampi_own_fill(struct sampi_own_ranges *o, size_t lo, size_t hi,
                   void (*fn)(void *arg, size_t lo, size_t hi), void *arg)
{
    if (o->all || lo >= hi)
        return 0;
    size_t at = lo;
    for (int i = 0; i < o->n && at < hi; i++) {
        if (o->hi[i] <= at)
            continue;
        if (o->lo[i] >= hi)
            break;
        if (o->lo[i] > at)
            fn(arg, at, o->lo[i]);
        at = o->hi[i];
    }
    if (at < hi)
        fn(arg, at, hi);
    return sampi_own_mark(o, lo, hi);
}
