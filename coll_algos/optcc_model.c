/*
 * optcc_model.c - OptCC's cost model and its row's model: on a call that
 * optcc can run (a degraded rank known, given by sampi_optcc_slowdown or
 * detected), a ring runs at the slow link's pace, l times a healthy ring;
 * optcc's model gives the rest.  Example, p = 8, l = 2, k = 32: optcc takes
 * 1.179 healthy rings, a ring 2, so optcc saves 1 - 1.179/2 = 41%.
 */
#include "optcc_model.h"
#include "algos.h"

#include <math.h>

double sampi_optcc_model_ratio(int p, double l, int k)
{
    double t;
    if (p < 3 || !(l >= 1) || k < 1)
        return INFINITY;
    if (l >= 2)
        t = l * (k + 1.0) / k;
    else
        t = 2.0 * (p - 1) * l / ((p - 2) * l + 2) * (k + l - 1.0) / k;
    return t / (2.0 * (p - 1) / p);
}

double sampi_optcc_lower_bound_ratio(int p, double l)
{
    if (p < 3 || !(l >= 1))
        return INFINITY;
    return l <= 2 ? p * l / ((p - 2) * l + 2) : l * p / (2.0 * (p - 1));
}

static double gain(const struct sampi_algo_world *w)
{
    int z, k;
    double l;
    if (!w->ctx || sampi_optcc_params(w->ctx, w->count, w->extent, &z, &l, &k))
        return 0;
    double ratio = sampi_optcc_model_ratio(w->n, l, k);
    return isfinite(ratio) && l > 0 ? 1 - ratio / l : 0;
}

const struct sampi_algo_model sampi_optcc_model = {
    .gain = gain,
};
