/*
 * select.c - the selection table for `auto`.
 */
#include "select.h"
#include "detect.h"
#include "predict.h"

const struct sampi_select_rule sampi_auto_rules[] = {
    /* Open MPI's recursive doubling wins while latency dominates */
    {SAMPI_CVAR_NATIVE_MAX_BYTES, 2, SAMPI_ALGO_NATIVE},
    /* fewer rounds than the ring while messages are medium-sized */
    {SAMPI_CVAR_RHD_MAX_BYTES, 2, SAMPI_ALGO_RHD},
    /* bandwidth-optimal for everything larger */
    {SAMPI_CVAR__COUNT, 2, SAMPI_ALGO_RING},
};
const int sampi_auto_rule_count = sizeof(sampi_auto_rules) / sizeof(sampi_auto_rules[0]);

enum sampi_algo_id sampi_select_auto(size_t bytes, int comm_size)
{
    for (int i = 0; i < sampi_auto_rule_count; i++) {
        const struct sampi_select_rule *r = &sampi_auto_rules[i];
        if (comm_size < r->min_ranks)
            continue;
        if (r->max_bytes == SAMPI_CVAR__COUNT || (long long)bytes <= sampi_cvar_int(r->max_bytes))
            return r->algo;
    }
    return SAMPI_ALGO_NATIVE;
}

/* A degraded link: a ring runs at its pace (l T0); OptCC's model gives the
 * rest (detect.h).  Both are ratios, so no beta is needed. */
static int optcc_pays(size_t bytes, int n, const struct sampi_select_hints *h)
{
    if (h->degraded < 0 || h->optcc_k <= 0)
        return 0;
    return sampi_optcc_model_ratio(n, h->slowdown, h->optcc_k) * (1 + SAMPI_SELECT_MARGIN) <
           h->slowdown;
}

/* A persistent straggler: what StragglAR would have saved over the recent
 * calls, late or not (predict.h), so that a straggler late now and then, or
 * by less than the critical delay, does not pay; never at n = 3, where the
 * model says StragglAR cannot win. */
static int stragglar_pays(size_t bytes, int n, const struct sampi_select_hints *h)
{
    return h->straggler >= 0 && n >= 4 && h->stragglar_gain > SAMPI_SELECT_MARGIN;
}

const struct sampi_select_hint_rule sampi_hint_rules[] = {
    /* a slow link slows every call; a straggler only delays its start */
    {SAMPI_ALGO_OPTCC, optcc_pays},
    {SAMPI_ALGO_STRAGGLAR, stragglar_pays},
};
const int sampi_hint_rule_count = sizeof(sampi_hint_rules) / sizeof(sampi_hint_rules[0]);

enum sampi_algo_id sampi_select_auto_hinted(size_t bytes, int n, const struct sampi_select_hints *h)
{
    for (int i = 0; h && i < sampi_hint_rule_count; i++)
        if (sampi_hint_rules[i].pays(bytes, n, h))
            return sampi_hint_rules[i].algo;
    return sampi_select_auto(bytes, n);
}

/* The model's side of "the model prunes, measurements decide": arms it rules
 * out for a call before any measurement.  A ring whose messages carry less
 * than RING_MIN_BLOCK bytes pays 2(p-1) latency-bound rounds where rhd pays
 * 2 log2 p, on any machine; StragglAR cannot beat a ring on 3 ranks.  An
 * algorithm without a row here is never pruned: it is measured. */
#define RING_MIN_BLOCK 4096

static int ring_hopeless(size_t bytes, int n)
{
    return bytes / (size_t)n < RING_MIN_BLOCK;
}

static int stragglar_hopeless(size_t bytes, int n)
{
    (void)bytes;
    return n < 4;
}

static const struct {
    enum sampi_algo_id algo;
    int (*hopeless)(size_t bytes, int n);
} prunes[] = {
    {SAMPI_ALGO_RING, ring_hopeless},
    {SAMPI_ALGO_STRAGGLAR, stragglar_hopeless},
};

int sampi_select_hopeless(enum sampi_algo_id algo, size_t bytes, int n)
{
    for (size_t i = 0; i < sizeof(prunes) / sizeof(prunes[0]); i++)
        if (prunes[i].algo == algo)
            return prunes[i].hopeless(bytes, n);
    return 0;
}

enum sampi_algo_id sampi_select(int setting, size_t bytes, int comm_size,
                                const struct sampi_select_hints *h)
{
    if (setting <= SAMPI_ALGO_AUTO || setting >= SAMPI_ALGO__COUNT)
        return sampi_select_auto_hinted(bytes, comm_size, h);
    return (enum sampi_algo_id)setting;
}
