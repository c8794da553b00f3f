/*
 * selective_params.c - Selective Reduce parameters: the paper's defaults
 * (Luo et al., "Progress and Bandwidth Aware Partial Model Synchronization
 * With Selective Reduce", Sec. IV-A) and their sampi_selective_*
 * control variables.  The numbers that the registry cannot type (p, eta,
 * theta, delta_t) are STRING variables parsed here, so a bad value is
 * reported by the controller that reads them.
 */
#include "selective_policy.h"
#include "config.h"
#include "log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

void sampi_sel_params_default(struct sampi_sel_params *prm)
{
    *prm = (struct sampi_sel_params){
        .scheme = SAMPI_SEL_SCHEME_SELECTIVE,
        .p_frac = 0.3,
        .p_count = 0,
        .eta = 0.3,
        .theta = 1.0,
        .delta_t = 0.01,
        .c = 0,
        .model_bytes = 500e6,
        .alpha = 1e-3,
        .cdf_mode = SAMPI_SEL_CDF_SHARED,
        .cdf_window = 8192,
        .cdf_min_samples = 20,
        .prob = SAMPI_SEL_PROB_PAPER,
        .literal_bag = 0,
        .strict_trigger = 0,
        .weighting = SAMPI_SEL_WEIGHT_STALENESS,
    };
}

int sampi_sel_params_p(const struct sampi_sel_params *prm, int n)
{
    /* round() as the reference simulator does (0.3 x 40 = 12, never 12.5). */
    long p = prm->p_count > 0 ? prm->p_count : lround(prm->p_frac * n);
    if (p < 1)
        p = 1;
    if (p > n)
        p = n;
    return (int)p;
}

/* A STRING variable as a number in [lo, hi]; *out unchanged on error. */
static int number_cvar(enum sampi_cvar_id id, double lo, double hi, int open_lo, double *out)
{
    char buf[64], *end;
    int rc = 0;
    sampi_cvar_text(id, buf, sizeof(buf));
    double v = strtod(buf, &end);
    while (*end == ' ')
        end++;
    if (end == buf || *end || !isfinite(v) || v < lo || v > hi || (open_lo && v == lo)) {
        sampi_log_error("sampi_%s: '%s' is not a number in %s%g, %g]", sampi_cvar_descs[id].name,
                        buf, open_lo ? "(" : "[", lo, hi);
        rc = -EINVAL;
        goto fail;
    }
    *out = v;
fail:
    return rc;
}

int sampi_sel_params_from_cvars(struct sampi_sel_params *prm)
{
    struct sampi_sel_params t = *prm;
    double p;
    int rc = 0;
    if ((rc = number_cvar(SAMPI_CVAR_SELECTIVE_P, 0.0, 1e9, 1, &p)) ||
        (rc = number_cvar(SAMPI_CVAR_SELECTIVE_ETA, 0.0, 0.999999, 0, &t.eta)) ||
        (rc = number_cvar(SAMPI_CVAR_SELECTIVE_THETA, 0.0, 1e9, 0, &t.theta)) ||
        (rc = number_cvar(SAMPI_CVAR_SELECTIVE_DELTA_T, 0.0, 3600.0, 1, &t.delta_t)))
        goto fail;
    if (p < 1.0) {
        t.p_frac = p;
        t.p_count = 0;
    } else {
        t.p_count = (int)lround(p);
    }
    t.scheme = (enum sampi_sel_scheme)sampi_cvar_int(SAMPI_CVAR_SELECTIVE_SCHEME);
    t.c = (int)sampi_cvar_int(SAMPI_CVAR_SELECTIVE_C);
    t.cdf_mode = (enum sampi_sel_cdf_mode)sampi_cvar_int(SAMPI_CVAR_SELECTIVE_CDF);
    t.cdf_window = (int)sampi_cvar_int(SAMPI_CVAR_SELECTIVE_CDF_WINDOW);
    t.cdf_min_samples = (int)sampi_cvar_int(SAMPI_CVAR_SELECTIVE_CDF_MIN_SAMPLES);
    t.prob = (enum sampi_sel_prob_mode)sampi_cvar_int(SAMPI_CVAR_SELECTIVE_PROB);
    t.literal_bag = (int)sampi_cvar_int(SAMPI_CVAR_SELECTIVE_LITERAL_BAG);
    t.strict_trigger = (int)sampi_cvar_int(SAMPI_CVAR_SELECTIVE_STRICT_TRIGGER);
    t.weighting = (enum sampi_sel_weighting)sampi_cvar_int(SAMPI_CVAR_SELECTIVE_WEIGHTS);
    *prm = t;
fail:
    return rc;
}
