/*
 * optireduce_timeout.h - optireduce's stage timeouts and incast rule (after
 * OptiReduce's adaptive timeouts; the rule here is SAMPI's own), as pure policy: times in,
 * decisions out, no clocks read here.
 *
 *   t_B  hard bound per stage: margin x P95 of the calibration calls' stage
 *        times (the slowest rank's), or a value the user sets;
 *   t_C  EWMA of the extrapolated full-delivery time e / rho;
 *   t_A  median of the estimates the peers advertised (and ours), <= t_B;
 *   a stage ends COMPLETE when everything arrived, EARLY when every sender's
 *   tail-marked packets arrived and nothing came for f x t_A, HARD at t_B.
 */
#ifndef SAMPI_OPTIREDUCE_TIMEOUT_H
#define SAMPI_OPTIREDUCE_TIMEOUT_H

#include <stdint.h>

enum sampi_opti_end {
    SAMPI_OPTI_END_NONE = -1, /* keep receiving */
    SAMPI_OPTI_END_COMPLETE = 0,
    SAMPI_OPTI_END_EARLY,
    SAMPI_OPTI_END_HARD,
    SAMPI_OPTI_END__COUNT
};

extern const char *const sampi_opti_end_names[SAMPI_OPTI_END__COUNT];

/* How a stage stands at `now_ns`. */
struct sampi_opti_stage_clock {
    int64_t deadline_ns;  /* start + t_B */
    int64_t last_rx_ns;   /* last accepted packet (stage start before any) */
    int64_t early_gap_ns; /* f x t_A; <= 0 disables the early timeout */
    uint64_t received, expected;
    int tails_seen, senders; /* senders whose tail-marked packets arrived / all */
};

/* The end reason, or SAMPI_OPTI_END_NONE while the stage should go on. */
enum sampi_opti_end sampi_opti_stage_check(const struct sampi_opti_stage_clock *s, int64_t now_ns);

/* The earliest time the answer above can change without a new packet. */
int64_t sampi_opti_stage_wake(const struct sampi_opti_stage_clock *s);

/* e / rho capped at t_B (t_B when nothing arrived). */
double sampi_opti_extrapolate(double elapsed, double rho, double t_b);

/* (1 - alpha) t_c + alpha s; s itself when t_c <= 0 (no estimate yet). */
double sampi_opti_ewma(double t_c, double s, double alpha);

/* Median of v[0..n) (sorted in place; mean of the middle two), capped at
 * t_b when t_b > 0.  0 for n = 0. */
double sampi_opti_agreed(double *v, int n, double t_b);

/* The p-th percentile (0..100, nearest rank) of v[0..n), sorted in place. */
double sampi_opti_pctl(double *v, int n, double p);

/* Next incast for a communicator of n ranks after a call: halve (>= 1) after
 * a hard timeout or a drop fraction above drop_hi, add one (<= n-1) after a
 * call without loss that ended every stage COMPLETE or EARLY, else keep. */
int sampi_opti_incast_next(int cur, int n, int hard_timeout, double drop, double drop_hi);

#endif
