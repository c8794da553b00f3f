/*
 * selective_cdf.c - empirical CDF of compute times, updated online.
 *
 * F(t) = #{samples <= t} / #samples over a sorted array: eval is a binary
 * search, O(log N); add is a binary search plus a memmove, O(N) bytes moved
 * but no allocation once the window is full.  With a window W the oldest
 * sample leaves when a new one arrives, so the distribution follows a
 * workload that drifts.  Example: samples {0.3, 0.4, 0.4, 0.9}: F(0.35) =
 * 0.25, F(0.4) = 0.75, F(1) = 1, F(0.1) = 0.
 */
#include "selective_cdf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* First index whose value is > t (bisect_right). */
static size_t upper_bound(const double *a, size_t n, double t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void sampi_sel_cdf_init(struct sampi_sel_cdf *f, size_t window)
{
    memset(f, 0, sizeof(*f));
    f->window = window;
}

void sampi_sel_cdf_free(struct sampi_sel_cdf *f)
{
    free(f->sorted);
    free(f->ring);
    sampi_sel_cdf_init(f, f->window);
}

static int reserve(struct sampi_sel_cdf *f, size_t need)
{
    int rc = 0;
    if (need <= f->cap)
        goto fail;
    size_t cap = f->cap ? f->cap : 256;
    while (cap < need)
        cap *= 2;
    if (f->window && cap > f->window)
        cap = f->window;
    double *s = realloc(f->sorted, cap * sizeof(*s));
    if (!s) {
        rc = -ENOMEM;
        goto fail;
    }
    f->sorted = s;
    if (f->window) {
        double *r = realloc(f->ring, cap * sizeof(*r));
        if (!r) {
            rc = -ENOMEM;
            goto fail;
        }
        f->ring = r;
    }
    f->cap = cap;
fail:
    return rc;
}

int sampi_sel_cdf_add(struct sampi_sel_cdf *f, double x)
{
    int rc = 0;
    if (f->window && f->n == f->window) {
        /* Full: the oldest sample (ring[head]) makes room. */
        double old = f->ring[f->head];
        size_t at = upper_bound(f->sorted, f->n, old) - 1; /* a copy of it: remove any one */
        memmove(f->sorted + at, f->sorted + at + 1, (f->n - at - 1) * sizeof(double));
        f->n--;
        f->ring[f->head] = x;
        f->head = (f->head + 1) % f->window;
    } else {
        rc = reserve(f, f->n + 1);
        if (rc)
            goto fail;
        if (f->window)
            f->ring[f->n] = x; /* head stays 0 until the ring is full */
    }
    size_t at = upper_bound(f->sorted, f->n, x);
    memmove(f->sorted + at + 1, f->sorted + at, (f->n - at) * sizeof(double));
    f->sorted[at] = x;
    f->n++;
fail:
    return rc;
}

int sampi_sel_cdf_add_many(struct sampi_sel_cdf *f, const double *x, size_t count)
{
    int rc = 0;
    if (f->window && f->n + count > f->window) {
        /* Slow path only when the window overflows: order matters there. */
        for (size_t i = 0; i < count && !rc; i++)
            rc = sampi_sel_cdf_add(f, x[i]);
        goto fail;
    }
    rc = reserve(f, f->n + count);
    if (rc)
        goto fail;
    memcpy(f->sorted + f->n, x, count * sizeof(double));
    if (f->window)
        memcpy(f->ring + f->n, x, count * sizeof(double));
    f->n += count;
    qsort(f->sorted, f->n, sizeof(double), cmp_double);
fail:
    return rc;
}

double sampi_sel_cdf_eval(const struct sampi_sel_cdf *f, double t)
{
    if (f->n == 0)
        return 0.0;
    return (double)upper_bound(f->sorted, f->n, t) / (double)f->n;
}
