/*
 * predict.c - straggler prediction and StragglAR's cost model (predict.h).
 *
 * Worked example, n = 8, 64 MiB at 1 ns/byte (1 GB/s): a ring needs
 * 2(n-1)/n = 1.75 s*beta = 117 ms after the last arrival.  StragglAR's other
 * seven ranks reduce-scatter in (n-2)/(n-1) = 0.857 s*beta = 57.5 ms while the
 * straggler is late, then the matching phase takes (n+log2 n-2)/(n-1) = 9/7 =
 * 1.286 s*beta = 86 ms.  With a delay D behind the second-last arrival,
 * stragglar ends at max(D, 57.5) + 86 ms and ring at D + 117 ms: stragglar
 * wins from D = 26.4 ms on (the critical delay, 0.393 s*beta).
 */
#include "predict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sampi_arrival_from_durations(const double *dur, int n, double min_gap_ns,
                                 struct sampi_arrival *out)
{
    int first = -1, second = -1; /* shortest and second shortest duration */
    if (n < 2)
        return -1;
    for (int i = 0; i < n; i++) {
        if (!(dur[i] >= 0)) /* also NaN */
            return -1;
        if (first < 0 || dur[i] < dur[first]) {
            second = first;
            first = i;
        } else if (second < 0 || dur[i] < dur[second]) {
            second = i;
        }
    }
    out->gap_ns = dur[second] - dur[first];
    out->last = out->gap_ns >= min_gap_ns ? first : -1;
    out->last_dur_ns = dur[first];
    return 0;
}

void sampi_predictor_init(struct sampi_predictor *p, int n, int window)
{
    memset(p, 0, sizeof(*p));
    p->n = n;
    p->window = window < 1                          ? 1
                : window > SAMPI_PREDICT_WINDOW_MAX ? SAMPI_PREDICT_WINDOW_MAX
                                                    : window;
}

void sampi_predictor_note(struct sampi_predictor *p, const struct sampi_arrival *a)
{
    p->last[p->head] = a->last >= 0 && a->last < p->n ? a->last : -1;
    p->gap_ns[p->head] = a->gap_ns;
    p->head = (p->head + 1) % p->window;
    if (p->count < p->window)
        p->count++;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double sampi_median(double *v, int m)
{
    qsort(v, (size_t)m, sizeof(v[0]), cmp_double);
    return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

void sampi_predictor_predict(const struct sampi_predictor *p, struct sampi_prediction *out)
{
    int best = -1, best_votes = 0;
    out->rank = -1;
    out->lateness_ns = 0;
    out->votes = 0;
    out->samples = p->count;
    /* the mode of the window, ties to the lower rank so every rank agrees */
    for (int i = 0; i < p->count; i++) {
        int r = p->last[i], votes = 0;
        for (int j = 0; r >= 0 && j < p->count; j++)
            votes += p->last[j] == r;
        if (r >= 0 && (votes > best_votes || (votes == best_votes && r < best))) {
            best = r;
            best_votes = votes;
        }
    }
    int need = p->window < 4 ? p->window : 4;
    if (best < 0 || p->count < need || 2 * best_votes <= p->count)
        return;
    out->rank = best;
    out->votes = best_votes;
    out->lateness_ns = sampi_predictor_lateness(p, best);
}

double sampi_predictor_lateness(const struct sampi_predictor *p, int rank)
{
    double gaps[SAMPI_PREDICT_WINDOW_MAX];
    int g = 0;
    for (int i = 0; i < p->count; i++)
        if (p->last[i] == rank)
            gaps[g++] = p->gap_ns[i];
    if (g == 0)
        return 0;
    return sampi_median(gaps, g);
}

void sampi_beta_note(struct sampi_beta *b, double last_dur_ns, double factor, double bytes)
{
    if (!(factor > 0) || !(bytes > 0) || !(last_dur_ns > 0))
        return;
    double sample = last_dur_ns / (factor * bytes);
    /* the first few samples set it, later ones move it by a quarter: one slow
     * call (a page-fault storm, a descheduled rank) does not swing auto */
    b->ns_per_byte = b->samples == 0 ? sample : b->ns_per_byte + (sample - b->ns_per_byte) / 4;
    b->samples++;
}

double sampi_stragglar_phase1_factor(int n)
{
    return n > 2 ? (double)(n - 2) / (n - 1) : 0;
}

double sampi_stragglar_phase2_factor(int n, int rounds)
{
    /* each round moves one chunk, s/(n-1), per rank */
    return n > 2 && rounds > 0 ? (double)rounds / (n - 1) : INFINITY;
}

double sampi_ring_factor(int n)
{
    return n > 1 ? 2.0 * (n - 1) / n : 0;
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

double sampi_stragglar_expected_gain(const struct sampi_predictor *p, int s, int rounds,
                                     double bytes, double beta)
{
    const int n = p->n;
    double sb = bytes * beta, ring = sampi_ring_factor(n) * sb;
    double p1 = sampi_stragglar_phase1_factor(n) * sb;
    double p2 = sampi_stragglar_phase2_factor(n, rounds) * sb;
    if (p->count == 0 || !(ring > 0) || !isfinite(p2))
        return 0;
    double saved = 0;
    for (int i = 0; i < p->count; i++) {
        double d = p->gap_ns[i];
        saved += p->last[i] == s ? ring - ((d > p1 ? d : p1) - d + p2) : ring - (p1 + p2);
    }
    return saved / p->count / ring;
}
