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

enum sampi_algo_id sampi_select(int setting, size_t bytes, int comm_size)
{
    if (setting <= SAMPI_ALGO_AUTO || setting >= SAMPI_ALGO__COUNT)
        return sampi_select_auto(bytes, comm_size);
    return (enum sampi_algo_id)setting;
}
