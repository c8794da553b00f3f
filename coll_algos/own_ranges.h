/*
 * own_ranges.h - which elements of the receive buffer already hold the
 * rank's current value, when the call is not in place.
 *
 * Without MPI_IN_PLACE the rank's own contribution starts in sendbuf.
 * Copying all of it into recvbuf before the first round is one more pass
 * over the whole vector (a third of a large call at p = 2:
 * docs/notes/2026-11-small-call-costs.md), and most of that copy is
 * overwritten: a range received by copy never
 * needed it, and a range about to be reduced can take it a block at a time,
 * in cache, just before the reduction.  So the executor brings a range in
 * only when a round needs it, and asks here what recvbuf holds:
 *
 *   a send        reads recvbuf where it holds the range, sendbuf where it
 *                 has none of it (the value is still the original), and
 *                 brings the missing parts in first when it holds some;
 *   a reduction   into a range recvbuf has none of copies it in blocks just
 *                 before reducing each block;
 *   a copy        marks its range once it landed;
 *   the end       brings in whatever no round touched.
 *
 * Example, ring at p = 2, rank 0, 8 elements: round 0 sends [4, 8) from
 * sendbuf (recvbuf holds nothing) and reduces [0, 4) into recvbuf, copying
 * each block of [0, 4) from sendbuf first; round 1 sends [0, 4) from recvbuf
 * and receives [4, 8) by copy.  No element was copied that was not reduced.
 *
 * Pure: no MPI, no I/O.  Ranges are in elements, [lo, hi).
 */
#ifndef SAMPI_OWN_RANGES_H
#define SAMPI_OWN_RANGES_H

#include <stddef.h>

struct sampi_own_ranges {
    size_t *lo, *hi; /* sorted, disjoint, not touching: [lo[i], hi[i]) */
    int n, cap;
    int all; /* recvbuf holds everything (in place): no list kept */
};

enum sampi_own_cover { SAMPI_OWN_NONE, SAMPI_OWN_ALL, SAMPI_OWN_PART };

/* Start a call: `all` when it is in place. */
void sampi_own_init(struct sampi_own_ranges *o, int all);
void sampi_own_free(struct sampi_own_ranges *o);

/* How much of [lo, hi) recvbuf holds (an empty range: ALL). */
enum sampi_own_cover sampi_own_cover(const struct sampi_own_ranges *o, size_t lo, size_t hi);

/* recvbuf now holds [lo, hi).  0, or -ENOMEM (nothing changed). */
int sampi_own_mark(struct sampi_own_ranges *o, size_t lo, size_t hi);

/* The parts of [lo, hi) that recvbuf does not hold, in order, through
 * fn(arg, part_lo, part_hi); then marks [lo, hi).  0, or -ENOMEM. */
int sampi_own_fill(struct sampi_own_ranges *o, size_t lo, size_t hi,
                   void (*fn)(void *arg, size_t lo, size_t hi), void *arg);

#endif
