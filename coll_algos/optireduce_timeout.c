/*
 * optireduce_timeout.c - stage timeouts and incast rule (optireduce_timeout.h).
 */
#include "optireduce_timeout.h"

#include <stdlib.h>

const char *const sampi_opti_end_names[SAMPI_OPTI_END__COUNT] = {
    [SAMPI_OPTI_END_COMPLETE] = "complete",
    [SAMPI_OPTI_END_EARLY] = "early",
    [SAMPI_OPTI_END_HARD] = "hard",
};

enum sampi_opti_end sampi_opti_stage_check(const struct sampi_opti_stage_clock *s, int64_t now_ns)
{
    if (s->received >= s->expected)
        return SAMPI_OPTI_END_COMPLETE;
    if (now_ns >= s->deadline_ns)
        return SAMPI_OPTI_END_HARD;
    if (s->early_gap_ns > 0 && s->tails_seen >= s->senders &&
        now_ns - s->last_rx_ns >= s->early_gap_ns)
        return SAMPI_OPTI_END_EARLY;
    return SAMPI_OPTI_END_NONE;
}

int64_t sampi_opti_stage_wake(const struct sampi_opti_stage_clock *s)
{
    int64_t t = s->deadline_ns;
    if (s->early_gap_ns > 0 && s->tails_seen >= s->senders && s->last_rx_ns + s->early_gap_ns < t)
        t = s->last_rx_ns + s->early_gap_ns;
    return t;
}

double sampi_opti_extrapolate(double elapsed, double rho, double t_b)
{
    if (rho <= 0)
        return t_b;
    double s = elapsed / rho;
    return t_b > 0 && s > t_b ? t_b : s;
}

double sampi_opti_ewma(double t_c, double s, double alpha)
{
    return t_c <= 0 ? s : (1 - alpha) * t_c + alpha * s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sampi_opti_agreed(double *v, int n, double t_b)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return t_b > 0 && m > t_b ? t_b : m;
}

double sampi_opti_pctl(double *v, int n, double p)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    double r = p / 100.0 * n;
    int k = (int)r;
    if (k < r)
        k++;
    k = k < 1 ? 1 : k > n ? n : k;
    return v[k - 1];
}

int sampi_opti_incast_next(int cur, int n, int hard_timeout, double drop, double drop_hi)
{
    int hi = n - 1 < 1 ? 1 : n - 1;
    if (hard_timeout || drop > drop_hi)
        cur = cur / 2;
    else if (drop == 0)
        cur = cur + 1;
    return cur < 1 ? 1 : cur > hi ? hi : cur;
}
