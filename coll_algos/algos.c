/*
 * algos.c - the algorithm descriptor table (rows in algos.def).
 */
#include "algos.h"
#include "debug_delay.h"

#include <string.h>

const struct sampi_algo sampi_algos[SAMPI_ALGO__COUNT] = {
#define SAMPI_ALGO(id_, name_, caps_, run_, suited_, state_, model_, desc_)                        \
    [SAMPI_ALGO_##id_] = {.id = SAMPI_ALGO_##id_,                                                  \
                          .name = name_,                                                           \
                          .caps = caps_,                                                           \
                          .run = run_,                                                             \
                          .suited = suited_,                                                       \
                          .state = state_,                                                         \
                          .model = model_,                                                         \
                          .description = desc_},
#include "algos.def"
#undef SAMPI_ALGO
};

/* The same names, as the enum items of sampi_algorithm. */
const char *const sampi_algo_names[] = {
#define SAMPI_ALGO(id_, name_, ...) name_,
#include "algos.def"
#undef SAMPI_ALGO
    NULL,
};

const struct sampi_algo *sampi_algo_find(const char *name)
{
    return sampi_algo_find_in(sampi_algos, name);
}

/* sampi_hier_inter's check (SAMPI_CVAR_PARSE in hier.def): hier says which
 * rows it may run among the nodes, given the table. */
int sampi_hier_inter_validate(const char *text, char *err, size_t errlen)
{
    return sampi_hier_inter_check(sampi_algos, text, err, errlen);
}

int sampi_algo_delayable(const char *name)
{
    const struct sampi_algo *a = sampi_algo_find(name);
    return a && a->id != SAMPI_ALGO_AUTO ? (int)a->id : -1;
}

/* sampi_debug_algo_delay's check (SAMPI_CVAR_PARSE in cvars.def): the base
 * parses the grammar, the table says which names exist. */
int sampi_debug_algo_delay_validate(const char *text, char *err, size_t errlen)
{
    double ms[SAMPI_ALGO__COUNT];
    return sampi_debug_algo_delay_parse(text, sampi_algo_delayable, ms, SAMPI_ALGO__COUNT, err,
                                        errlen);
}
