/*
 * predict.h - who will be late to the next allreduce, and how fast the data
 * path moves a byte.
 *
 * Pure code (no MPI, no clocks): src/auto/tracker.c feeds it, after every tracked
 * call, the durations every rank measured on its own clock from entering
 * MPI_Allreduce to leaving it, which all ranks hold after one small allgather.
 * A rank's duration is short when it arrived late (the others waited for it),
 * so durations order the arrivals without synchronised clocks (docs/design.md, 'Decisions are
 * agreed'): the rank with the shortest duration arrived last, and the gap between the two shortest
 * is how long it kept the others waiting after the second-last arrival - the time StragglAR's first
 * phase can use.  Every rank runs the same code on the same numbers, so every rank predicts the
 * same.
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

/* The prediction after a new observation, with hysteresis: a rank is
 * predicted from the moment it was last in more than half of the window
 * (sampi_predictor_predict) until it is last in a quarter of it or fewer,
 * or another rank has the majority; so a rank late in about half of the
 * calls does not make auto change regime at every other call.  `now` holds
 * the prediction in force and receives the new one. */
void sampi_predictor_update(const struct sampi_predictor *p, struct sampi_prediction *now);
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

#endif
