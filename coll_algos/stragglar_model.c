/*
 * stragglar_model.c - StragglAR's cost model (stragglar_model.h) and its
 * row's model: the gain a predicted straggler promises, beta samples from
 * its calls, never on fewer than 4 ranks.
 *
 * Worked example, n = 8, 64 MiB at 1 ns/byte (1 GB/s): a ring needs
 * 2(n-1)/n = 1.75 s*beta = 117 ms after the last arrival.  StragglAR's other
 * seven ranks reduce-scatter in (n-2)/(n-1) = 0.857 s*beta = 57.5 ms while the
 * straggler is late, then the matching phase takes (n+log2 n-2)/(n-1) = 9/7 =
 * 1.286 s*beta = 86 ms.  With a delay D behind the second-last arrival,
 * stragglar ends at max(D, 57.5) + 86 ms and ring at D + 117 ms: stragglar
 * wins from D = 26.4 ms on (the critical delay, 0.393 s*beta).
 */
#include "stragglar_model.h"
#include "model.h"
#include "stragglar_schedule.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

double sampi_stragglar_phase1_factor(int n)
{
    return n > 2 ? (double)(n - 2) / (n - 1) : 0;
}

double sampi_stragglar_phase2_factor(int n, int rounds)
{
    /* each round moves one chunk, s/(n-1), per rank */
    return n > 2 && rounds > 0 ? (double)rounds / (n - 1) : INFINITY;
}

/* 0: not built yet; -1: the builder builds none */
static _Atomic int rounds_cache[SAMPI_STRAGGLAR_MAX_MATCHING_N + 1];

int sampi_stragglar_matching_rounds(int n)
{
    if (n < 3 || n > SAMPI_STRAGGLAR_MAX_MATCHING_N)
        return 0;
    int r = atomic_load_explicit(&rounds_cache[n], memory_order_relaxed);
    if (r == 0) { /* two threads may both build it: the same answer */
        struct sampi_stragglar_schedule sch;
        memset(&sch, 0, sizeof(sch));
        r = -1;
        if (sampi_stragglar_schedule(n, 0, &sch) == 0) {
            r = sch.nrounds;
            sampi_stragglar_schedule_free(&sch);
        }
        atomic_store_explicit(&rounds_cache[n], r, memory_order_relaxed);
    }
    return r > 0 ? r : 0;
}

double sampi_stragglar_predicted_ns(int n, int rounds, double bytes, double beta, double delay_ns)
{
    double sb = bytes * beta, rs = sampi_stragglar_phase1_factor(n) * sb;
    return (delay_ns > rs ? delay_ns : rs) + sampi_stragglar_phase2_factor(n, rounds) * sb;
}

double sampi_ring_predicted_ns(int n, double bytes, double beta, double delay_ns)
{
    return delay_ns + sampi_ring_factor(n) * bytes * beta;
}

double sampi_stragglar_critical_delay_ns(int n, int rounds, double bytes, double beta)
{
    double p1 = sampi_stragglar_phase1_factor(n), p2 = sampi_stragglar_phase2_factor(n, rounds),
           r = sampi_ring_factor(n);
    if (n < 3 || !(p2 < r))
        return -1;
    double d = p1 + p2 - r; /* from max(D, p1) + p2 = D + r */
    return (d > 0 ? d : 0) * bytes * beta;
}

double sampi_stragglar_expected_gain(int n, const int *last, const double *gap_ns, int samples,
                                     int s, int rounds, double bytes, double beta)
{
    double sb = bytes * beta, ring = sampi_ring_factor(n) * sb;
    double p1 = sampi_stragglar_phase1_factor(n) * sb;
    double p2 = sampi_stragglar_phase2_factor(n, rounds) * sb;
    if (samples <= 0 || !(ring > 0) || !isfinite(p2))
        return 0;
    double saved = 0;
    for (int i = 0; i < samples; i++) {
        double d = gap_ns[i];
        saved += last[i] == s ? ring - ((d > p1 ? d : p1) - d + p2) : ring - (p1 + p2);
    }
    return saved / samples / ring;
}

/* A persistent straggler: what StragglAR would have saved over the recent
 * calls, late or not, so that a straggler late now and then, or by less than
 * the critical delay, does not pay; never at n = 3, where the model says
 * StragglAR cannot win. */
static double gain(const struct sampi_algo_world *w)
{
    if (w->straggler < 0 || w->n < 4 || !(w->beta > 0))
        return 0;
    int rounds = sampi_stragglar_matching_rounds(w->n);
    if (!rounds)
        return 0;
    return sampi_stragglar_expected_gain(w->n, w->last, w->gap_ns, w->samples, w->straggler, rounds,
                                         w->bytes, w->beta);
}

/* Only a call whose first phase was hidden behind the delay: its time after
 * the last arrival is then the matching phase alone. */
static double beta_factor(const struct sampi_algo_world *w, double gap_ns)
{
    int rounds = sampi_stragglar_matching_rounds(w->n);
    if (w->beta > 0 && rounds > 0 &&
        gap_ns >= sampi_stragglar_phase1_factor(w->n) * w->bytes * w->beta)
        return sampi_stragglar_phase2_factor(w->n, rounds);
    return 0;
}

static int hopeless(size_t bytes, int n)
{
    (void)bytes;
    return n < 4;
}

const struct sampi_algo_model sampi_stragglar_model = {
    .gain = gain,
    .beta_factor = beta_factor,
    .hopeless = hopeless,
};
