/*
 * selective_cdf.h - empirical CDF of one training round's compute time, for
 * BPAWR's readiness probabilities (Luo et al., "Progress and Bandwidth Aware Partial Model
 * Synchronization With Selective Reduce", Sec. III-D).
 * Internal to the selective policy; no I/O, no clocks.
 */
#ifndef SAMPI_SELECTIVE_CDF_H
#define SAMPI_SELECTIVE_CDF_H

#include <stddef.h>

struct sampi_sel_cdf {
    double *sorted; /* the samples kept, ascending */
    size_t n, cap;
    double *ring; /* window > 0: the same samples in arrival order */
    size_t window, head;
};

/* window > 0 keeps only the most recent `window` samples. */
void sampi_sel_cdf_init(struct sampi_sel_cdf *f, size_t window);
void sampi_sel_cdf_free(struct sampi_sel_cdf *f);
/* 0 or -ENOMEM. */
int sampi_sel_cdf_add(struct sampi_sel_cdf *f, double x);
/* Many samples at once (warm start), O((n + count) log): 0 or -ENOMEM. */
int sampi_sel_cdf_add_many(struct sampi_sel_cdf *f, const double *x, size_t count);
/* Fraction of the samples <= t; 0 when there is none. */
double sampi_sel_cdf_eval(const struct sampi_sel_cdf *f, double t);

#endif
