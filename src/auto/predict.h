/*
 * predict.h - who will be late to the next allreduce, and does StragglAR pay.
 *
 * Pure code (no MPI, no clocks): src/auto/tracker.c feeds it, after every tracked
 * call, the durations every rank measured on its own clock from entering
 * MPI_Allreduce to leaving it, which all ranks hold after one small allgather.
 * A rank's duration is short when it arrived late (the others waited for it),
 * so durations order the arrivals without synchronised clocks (DESIGN rule 1):
 * the rank with the shortest duration arrived last, and the gap between the
 * two shortest is how long it kept the others waiting after the second-last
 * arrival - the time StragglAR's first phase can use.  Every rank runs the
 * same code on the same numbers, so every rank predicts the same.
 */
#ifndef SAMPI_PREDICT_H
#define SAMPI_PREDICT_H

#include <stddef.h>

#define SAMPI_PREDICT_WINDOW_MAX 64

/* One call's arrivals, as the durations tell them. */
struct sampi_arrival {
    int last;           /* the rank that arrived last, -1: nobody notably late */
    double gap_ns;      /* how long after the second-last it arrived */
    double last_dur_ns; /* the last rank's duration: the call's time from the last arrival */
};

/* Read dur[0..n) (ns, negative = this rank has no valid measurement, which
 * makes the whole observation invalid: returns -1).  A gap below min_gap_ns
 * is noise: last = -1.  0 on success. */
int sampi_arrival_from_durations(const double *dur, int n, double min_gap_ns,
                                 struct sampi_arrival *out);

/* The median of v[0..m) (m >= 1), sorting v in place. */
double sampi_median(double *v, int m);

/* The recent arrivals of one communicator. */
struct sampi_predictor {
    int n, window;
    int count, head; /* ring buffer of the last `window` observations */
    int last[SAMPI_PREDICT_WINDOW_MAX];
    double gap_ns[SAMPI_PREDICT_WINDOW_MAX];
};

struct sampi_prediction {
    int rank;           /* -1: no persistent straggler */
    double lateness_ns; /* the median of its gaps when it was last */
    int votes;          /* observations in which it was last */
    int samples;        /* observations in the window */
};

void sampi_predictor_init(struct sampi_predictor *p, int n, int window);
void sampi_predictor_note(struct sampi_predictor *p, const struct sampi_arrival *a);
/* A rank is predicted when the window holds at least min(4, window)
 * observations and it was last in more than half of them. */
void sampi_predictor_predict(const struct sampi_predictor *p, struct sampi_prediction *out);

/* The median delay of `rank` over the window's calls in which it was last
 * (0 when it never was). */
double sampi_predictor_lateness(const struct sampi_predictor *p, int rank);

/* Time per byte of the data path, from calls whose time after the last
 * arrival the alpha-beta model explains: a sample is last_dur_ns /
 * (factor * bytes), folded into an exponential average. */
struct sampi_beta {
    double ns_per_byte; /* 0: unknown yet */
    int samples;
};
void sampi_beta_note(struct sampi_beta *b, double last_dur_ns, double factor, double bytes);

/* StragglAR's cost model in units of s*beta (s the message size), on n ranks
 * whose matching schedule has `rounds` rounds (n + log2(n) - 2 for powers of
 * two; what the builder reached otherwise): the first phase (the others'
 * reduce-scatter), the matching phase after the straggler arrives, and a
 * ring's time after the last arrival. */
double sampi_stragglar_phase1_factor(int n);
double sampi_stragglar_phase2_factor(int n, int rounds);
double sampi_ring_factor(int n);

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
 * averaged over the window's calls, as a fraction of a ring's time after the
 * last arrival, for a message of `bytes` at beta ns/byte.  In a call where s
 * was last by D it saves ring - (max(D, phase 1) - D + phase 2); in a call
 * where it was not (someone else late, or nobody) the other ranks' first
 * phase could not start early and it loses phase 1 + phase 2 - ring.  So a
 * straggler that is late only now and then, or by less than the critical
 * delay, gives a gain below zero.  0 with an empty window. */
double sampi_stragglar_expected_gain(const struct sampi_predictor *p, int s, int rounds,
                                     double bytes, double beta);

#endif
