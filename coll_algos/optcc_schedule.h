/*
 * optcc_schedule.h - the OptCC schedule for one bandwidth-degraded rank
 * ("Don't Let a Few Network Failures Slow the Entire AllReduce", Sec. 4.1
 * and 4.2), as a pure builder.
 *
 * The schedule is a lockstep of (k+1)(p-1) steps; in each step a rank sends
 * at most one message to one peer and receives at most one message from one
 * peer.  A message has up to two contiguous parts (a section and a bubble
 * chunk, or the two packed ring lanes), each reduced or copied by the
 * receiver.  The builder keeps only the O(k p) element layout; a rank's send
 * and receive lists for a step are computed in O(1) from it, so the executor
 * and the dump use the very same function.
 */
#ifndef SAMPI_OPTCC_SCHEDULE_H
#define SAMPI_OPTCC_SCHEDULE_H

#include "schedule.h"

#include <stddef.h>
#include <stdio.h>

/* l is quantised to this many steps per unit so that every rank computes the
 * same integer sizes from the same (p, straggler, l, k, n). */
#define SAMPI_OPTCC_L_SCALE   64
#define SAMPI_OPTCC_MAX_L     4096.0
#define SAMPI_OPTCC_MAX_K     (1 << 20)
#define SAMPI_OPTCC_MAX_PARTS 2

struct sampi_optcc_part {
    size_t offset;
    size_t count; /* never 0: empty parts are dropped on both sides */
    enum sampi_recv_action op;
};

/* peer -1 (and nparts 0): nothing in this direction. */
struct sampi_optcc_msg {
    int peer;
    int nparts;
    struct sampi_optcc_part part[SAMPI_OPTCC_MAX_PARTS];
};

/* One rank's view of one step. */
struct sampi_optcc_step {
    struct sampi_optcc_msg send;
    struct sampi_optcc_msg recv;
};

struct sampi_optcc_schedule {
    int p;
    int straggler;
    int k;      /* segments, a multiple of 4 */
    int l_q;    /* quantised slowdown, in units of 1 / SAMPI_OPTCC_L_SCALE */
    double l;   /* l_q / SAMPI_OPTCC_L_SCALE, exactly representable */
    int bubble; /* bubble filling in use (requested and l < 2) */
    int nsteps; /* (k+1)(p-1) */
    size_t n;
    /* sec_off/sec_cnt[sigma * (p-1) + c]: section c of segment sigma;
     * bub_off/bub_cnt[sigma]: bubble chunk beta_sigma (count 0 without
     * bubble filling).  One allocation, owned by the schedule. */
    size_t *sec_off, *sec_cnt, *bub_off, *bub_cnt;
};

/* l in units of 1/SAMPI_OPTCC_L_SCALE (nearest), or -EINVAL unless
 * 1 <= l <= SAMPI_OPTCC_MAX_L. */
int sampi_optcc_quantise_l(double l);

/* Build the schedule for p >= 3 ranks, degraded rank `straggler`, slowdown l
 * (quantised here), k segments (k % 4 == 0), n >= 1 elements; `bubble`
 * requests bubble filling, which is used only when the quantised l < 2.
 * Returns 0, -EINVAL for bad arguments, or -ENOMEM. */
int sampi_optcc_schedule_build(struct sampi_optcc_schedule *s, int p, int straggler, double l,
                               int k, size_t n, int bubble);

void sampi_optcc_schedule_free(struct sampi_optcc_schedule *s);

/* What `rank` sends and receives in `step` (0 <= step < s->nsteps). */
void sampi_optcc_schedule_step(const struct sampi_optcc_schedule *s, int rank, int step,
                               struct sampi_optcc_step *out);

/* Write the schedule as text, one line per transfer, from the sender's
 * side (the format the OptCC reference model reads, where present).  Returns 0 or -EIO. */
int sampi_optcc_schedule_dump(const struct sampi_optcc_schedule *s, FILE *f);

#endif
