/*
 * detect.h - which rank's network link is degraded, and by how much.
 *
 * Pure code (no MPI, no clocks): src/auto/tracker.c runs a short probe now and
 * then on the communicator's data path - every rank sends the same number of
 * bytes to its right neighbour, then to its left one, and times the two
 * receives on its own clock - and all ranks allgather the 2n times.  A rank whose own link is
 * slow in both directions is the one whose four links (to and from both
 * neighbours) are ALL slow; a neighbour of it has two fast links.  So each
 * rank r is scored min(its four link times) / median(the links not touching
 * r), and the detector confirms a rank only when it stands out in several
 * probes in a row, and lets it go after several normal ones (hysteresis), so
 * one noisy probe on a shared host switches nothing.  All ranks run the same
 * code on the same numbers and agree (docs/design.md, 'Decisions are agreed').
 */
#ifndef SAMPI_DETECT_H
#define SAMPI_DETECT_H

#include <stddef.h>

/* One probe: from_left[i] / from_right[i] = the time rank i took to receive
 * the probe from rank i-1 / i+1 (mod n), any unit.  Returns the rank with the
 * highest score and writes that score to *slowdown: its quickest link over
 * the median of the links that do not touch it (>= 1 when every link of it is
 * slower than the rest: what detection asks).  *estimate is how much slower
 * its links are: the median of its four over the same median.  The quickest
 * of four noisy times is biased low: on the testbed (8 ranks, rank 7 at
 * l = 2) the score read 1.72-1.97, the estimate 2.2-2.4, and optcc given l
 * below 2 fills bubbles that are not there (135 ms at 2 MiB against 118 with
 * l = 2 and 114 with 3).  -1 when n < 3 or a time is missing (<= 0 or NaN). */
int sampi_detect_probe(const double *from_left, const double *from_right, int n, double *slowdown,
                       double *estimate);

struct sampi_detector {
    int rank;         /* the confirmed degraded rank, -1: none */
    double slowdown;  /* its estimated slowdown l (quantised to 1/64) */
    int candidate;    /* the rank that stood out in the last probes */
    int streak;       /* consecutive probes it stood out in */
    int calm;         /* consecutive probes in which the confirmed rank did not */
    double recent[3]; /* its last estimates, for a median */
};

/* Confirm after this many probes in a row with slowdown >= the threshold;
 * release after this many without. */
#define SAMPI_DETECT_CONFIRM 3
#define SAMPI_DETECT_RELEASE 2
/* A link this much slower than the median of the others counts as degraded
 * (probe noise on a loaded loopback stays below); once confirmed, it stays
 * degraded while above the lower release threshold. */
#define SAMPI_DETECT_THRESHOLD         1.25
#define SAMPI_DETECT_RELEASE_THRESHOLD 1.10

void sampi_detector_init(struct sampi_detector *d);

/* The test hook sampi_debug_slow_link, "rank:l:after" (detect.c): 0 with
 * the three parts, or -EINVAL with a message naming the variable. */
int sampi_debug_slow_link_parse(const char *text, int *rank, double *l, long *after, char *err,
                                size_t errlen);
int sampi_debug_slow_link_validate(const char *text, char *err, size_t errlen);

/* Pure: the probe times of rank r of n as they would be with r's links l
 * times slower: r's own receives and its neighbours' receives from r. */
void sampi_detect_slow_link(double *from_left, double *from_right, int n, int r, double l);
/* Feed one probe's outcome (rank -1 for an invalid probe, which changes
 * nothing): the thresholds apply to `slowdown`, the detector's l is the
 * median of the last three `estimate`s (sampi_detect_probe's).  Returns 1
 * when the confirmed rank or its slowdown changed. */
int sampi_detector_note(struct sampi_detector *d, int rank, double slowdown, double estimate);

#endif
