/*
 * stragglar_schedule.h - the StragglAR matching schedule (pure builder).
 *
 * After a reduce-scatter among the n-1 non-stragglers, each of them owns one
 * chunk reduced over everyone but the straggler.  The schedule then runs in
 * rounds; in each round a rank is in at most one pair, in which it may send
 * one chunk and receive one chunk.  Ranks here are real communicator ranks:
 * the builder maps its virtual schedule (straggler = virtual n-1) with the
 * order-preserving relabelling, so every rank derives the same schedule from
 * (n, straggler) alone.
 */
#ifndef SAMPI_STRAGGLAR_SCHEDULE_H
#define SAMPI_STRAGGLAR_SCHEDULE_H

#include <stdio.h>

enum sampi_stragglar_op {
    SAMPI_STRAGGLAR_COPY,  /* overwrite the chunk with the incoming, fully reduced one */
    SAMPI_STRAGGLAR_REDUCE /* combine: only the exchange with the straggler */
};

/* One rank's part of one round.  peer -1: idle.  send_chunk / recv_chunk -1:
 * nothing in that direction (a one-way pair). */
struct sampi_stragglar_step {
    int peer;
    int send_chunk;
    int recv_chunk;
    enum sampi_stragglar_op op; /* what to do with recv_chunk */
};

struct sampi_stragglar_schedule {
    int n;
    int straggler;
    int nrounds;
    int *owner; /* owner[k]: rank holding chunk k after the reduce-scatter */
    struct sampi_stragglar_step *steps; /* steps[round * n + rank] */
};

static inline const struct sampi_stragglar_step *
sampi_stragglar_step(const struct sampi_stragglar_schedule *s, int round, int rank)
{
    return &s->steps[(size_t)round * (size_t)s->n + (size_t)rank];
}

/* n + ceil(log2 n) - 2: no StragglAR-structured schedule can be shorter, and
 * power-of-two n reach it exactly. */
int sampi_stragglar_lower_bound(int n);

/* Build the schedule for n >= 2 ranks (n <= SAMPI_STRAGGLAR_MAX_N) with the
 * given straggler.  Returns 0, -EINVAL for bad arguments, -ENOTSUP for an n
 * that is not a power of two above SAMPI_STRAGGLAR_MAX_MATCHING_N, -ENOMEM,
 * or -EPROTO if an internal invariant fails (a bug, never expected).  On
 * success release with sampi_stragglar_schedule_free.
 *
 * Powers of two cost O(n^2).  Other n solve one exact matching per round,
 * about O(n^4) in all (0.2 s at n = 100, 1.5 s at n = 200), hence the cap;
 * the schedule depends on the straggler only through the relabelling, so a
 * caller builds it once per communicator size. */
#define SAMPI_STRAGGLAR_MAX_N          4096
#define SAMPI_STRAGGLAR_MAX_MATCHING_N 256
int sampi_stragglar_schedule(int n, int straggler, struct sampi_stragglar_schedule *out);
void sampi_stragglar_schedule_free(struct sampi_stragglar_schedule *s);

/* Write the schedule in the text format the StragglAR reference checker reads
 * (header `n`, `straggler`, `owner K R`, then `round src dst chunk op` lines).
 * Returns 0 or -EIO. */
int sampi_stragglar_dump(const struct sampi_stragglar_schedule *s, FILE *fp);

/* Rank me's executor rounds for a call of `count` elements (schedule.h):
 * n-2 rounds of ring reduce-scatter among the ranks other than the straggler
 * (which sends and receives nothing in them), then one round per round of
 * the matching schedule.  rounds has room for n-2 + sch->nrounds entries.
 * Returns the number of rounds, or a negative errno.  Pure: the unit tests
 * run every rank's list through the symbolic simulator. */
struct sampi_round;
int sampi_stragglar_rounds(const struct sampi_stragglar_schedule *sch, int me, size_t count,
                           struct sampi_round *rounds);

#endif
