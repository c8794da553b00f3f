/*
 * stragglar_model.h - StragglAR's cost model (its row's model in algos.def):
 * when it pays, and the pieces the tracker and the pvars read.
 *
 * Pure code: no MPI, no clocks.  Units of s*beta (s the vector's bytes) on n
 * ranks whose matching schedule has `rounds` rounds (n + log2(n) - 2 for
 * powers of two; what the builder reached otherwise).
 */
#ifndef SAMPI_STRAGGLAR_MODEL_H
#define SAMPI_STRAGGLAR_MODEL_H

#include "algos.h"

/* The first phase (the others' reduce-scatter) and the matching phase after
 * the straggler arrives. */
double sampi_stragglar_phase1_factor(int n);
double sampi_stragglar_phase2_factor(int n, int rounds);

/* The rounds of the matching schedule on n ranks, from the builder, once per
 * n (cached); 0 when it builds none (n < 3, or past the sizes whose
 * matching it solves quickly). */
int sampi_stragglar_matching_rounds(int n);

/* The delay of the straggler (behind the second-last arrival) above which
 * `stragglar` finishes before `ring`, for a message of `bytes` bytes at
 * beta ns/byte.  Negative: never (n = 3, where StragglAR's matching phase
 * alone moves more than a whole ring). */
double sampi_stragglar_critical_delay_ns(int n, int rounds, double bytes, double beta);

/* Predicted time from the second-last arrival: stragglar given the
 * straggler's delay, and ring. */
double sampi_stragglar_predicted_ns(int n, int rounds, double bytes, double beta, double delay_ns);
double sampi_ring_predicted_ns(int n, double bytes, double beta, double delay_ns);

/* What running `stragglar` with straggler s would have saved over `ring`,
 * averaged over `samples` recent calls (last[i]: who was last in call i, -1
 * nobody; gap_ns[i]: by how much), as a fraction of a ring's time after the
 * last arrival, for a message of `bytes` at beta ns/byte.  In a call where s
 * was last by D it saves ring - (max(D, phase 1) - D + phase 2); in a call
 * where it was not (someone else late, or nobody) the other ranks' first
 * phase could not start early and it loses phase 1 + phase 2 - ring.  So a
 * straggler that is late only now and then, or by less than the critical
 * delay, gives a gain below zero.  0 with no samples. */
double sampi_stragglar_expected_gain(int n, const int *last, const double *gap_ns, int samples,
                                     int s, int rounds, double bytes, double beta);

#endif
