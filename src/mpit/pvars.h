/*
 * pvars.h - SAMPI's performance variables (pvars.def): what they are and how
 * their current values are read from the counters in stats.h and comm.h.
 *
 * Values here are raw: per-handle start/stop/reset semantics are applied by
 * the MPI_T layer (mpit_registry.c) on top of them.
 */
#ifndef SAMPI_PVARS_H
#define SAMPI_PVARS_H

#include <stdint.h>

struct sampi_comm;

enum sampi_pvar_id {
#define SAMPI_PVAR(id, ...) SAMPI_PVAR_##id,
#include "pvars.def"
#undef SAMPI_PVAR
    SAMPI_PVAR__COUNT
};

enum sampi_pvar_type {
    SAMPI_PVAR_TYPE_ULL, /* uint64_t elements, MPI_UNSIGNED_LONG_LONG */
    SAMPI_PVAR_TYPE_INT, /* int elements, MPI_INT */
};

enum sampi_pvar_count {
    SAMPI_PVAR_COUNT_ONE,
    SAMPI_PVAR_COUNT_ALGOS,     /* one element per algorithm */
    SAMPI_PVAR_COUNT_FALLBACKS, /* one element per fallback reason */
    SAMPI_PVAR_COUNT_PEERS,     /* one element per rank of the bound communicator */
    SAMPI_PVAR_COUNT_BUCKETS,   /* one element per message-size bucket of auto (autosel.h) */
};

enum sampi_pvar_kind {
    SAMPI_PVAR_SESSION, /* counter seen per handle: start/stop, write, reset, readreset */
    SAMPI_PVAR_LIVE,    /* current state: continuous, read-only */
};

struct sampi_pvar_desc {
    const char *name;
    int var_class; /* MPI_T_PVAR_CLASS_* */
    enum sampi_pvar_type type;
    int bind; /* MPI_T_BIND_NO_OBJECT or MPI_T_BIND_MPI_COMM */
    enum sampi_pvar_count count;
    enum sampi_pvar_kind kind;
    int verbosity; /* MPI_T_VERBOSITY_* */
    void (*fetch)(struct sampi_comm *c, void *out, int n);
    const char *description;
};

extern const struct sampi_pvar_desc sampi_pvar_descs[SAMPI_PVAR__COUNT];

/* Each variable's one-line meaning (SAMPI_PVAR_SUMMARY in pvars.def); NULL
 * for an entry that has none. */
extern const char *const sampi_pvar_summaries[SAMPI_PVAR__COUNT];

/* Elements in one value of `id`; c is the bound communicator's state (NULL
 * for unbound variables). */
int sampi_pvar_count(enum sampi_pvar_id id, const struct sampi_comm *c);

/* Name of element i of a per-algorithm or per-reason variable, else NULL. */
const char *sampi_pvar_element_name(enum sampi_pvar_id id, int i);

/* The current value of `id` into out (n elements of its type), n being
 * sampi_pvar_count(id, c) when the handle was made; elements beyond what
 * exists read as 0. */
void sampi_pvar_fetch(enum sampi_pvar_id id, struct sampi_comm *c, void *out, int n);

#endif
