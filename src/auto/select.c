/*
 * select.c - the selection table for `auto`.
 */
#include "select.h"

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

enum sampi_algo_id sampi_select_auto_hinted(size_t bytes, int n, const struct sampi_select_hints *h)
{
    int best = -1;
    for (int id = 0; h && id < SAMPI_ALGO__COUNT; id++)
        if (h->gain[id] > SAMPI_ALGO_GAIN_MARGIN && (best < 0 || h->gain[id] > h->gain[best]))
            best = id;
    return best >= 0 ? (enum sampi_algo_id)best : sampi_select_auto(bytes, n);
}

/* The model's side of "the model prunes, measurements decide": the arms a
 * row's model rules out for a call before any measurement. */
int sampi_select_hopeless(enum sampi_algo_id algo, size_t bytes, int n)
{
    const struct sampi_algo_model *m = sampi_algos[algo].model;
    return m && m->hopeless && m->hopeless(bytes, n);
}

enum sampi_algo_id sampi_select(int setting, size_t bytes, int comm_size,
                                const struct sampi_select_hints *h)
{
    if (setting <= SAMPI_ALGO_AUTO || setting >= SAMPI_ALGO__COUNT)
        return sampi_select_auto_hinted(bytes, comm_size, h);
    return (enum sampi_algo_id)setting;
}
