/*
 * predict.c - straggler prediction and the data path's beta (predict.h).
 * The algorithms' own cost models live with them (coll_algos, the `model`
 * column of algos.def).
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

void sampi_predictor_update(const struct sampi_predictor *p, struct sampi_prediction *now)
{
    int held = now->rank;
    sampi_predictor_predict(p, now);
    if (now->rank >= 0 || held < 0)
        return;
    int votes = 0;
    for (int i = 0; i < p->count; i++)
        votes += p->last[i] == held;
    if (4 * votes <= p->count)
        return; /* late in a quarter of the calls or fewer: no longer predicted */
    now->rank = held;
    now->votes = votes;
    now->lateness_ns = sampi_predictor_lateness(p, held);
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
