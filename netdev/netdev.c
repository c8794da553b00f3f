/*
 * netdev.c - the table of transports and how a communicator's ranks agree on
 * loading one.
 */
#include "netdev.h"
#include "module.h"
#include "sampi_internal.h"
#include "wait.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* sampi_netdev's items, in the order of enum sampi_netdev_choice */
const char *const sampi_netdev_names[] = {"auto", "mpi", "ofi", NULL};

/* `mpi` is built in; the others are modules (module.h), loaded on first use. */
const struct sampi_netdev_entry sampi_netdev_table[] = {
    {"mpi", &sampi_netdev_mpi_ops, NULL},
    {"ofi", NULL, "sampi_netdev_ofi"},
    {NULL, NULL, NULL},
};

const struct sampi_netdev_ops *const sampi_netdev_fallback = &sampi_netdev_mpi_ops;

static const struct sampi_netdev_entry *entry_of(const char *name)
{
    for (int i = 0; name && sampi_netdev_table[i].name; i++)
        if (strcmp(sampi_netdev_table[i].name, name) == 0)
            return &sampi_netdev_table[i];
    return NULL;
}

const struct sampi_netdev_ops *sampi_netdev_load(const char *name, char *err, size_t errlen)
{
    const struct sampi_netdev_entry *e = entry_of(name);
    if (!e) {
        if (err && errlen)
            snprintf(err, errlen, "no netdev '%s' in this build", name ? name : "(null)");
        return NULL;
    }
    if (e->builtin)
        return e->builtin;
    const struct sampi_module *m = sampi_module_load(e->module, e->name, err, errlen);
    if (m && !m->netdev) {
        if (err && errlen)
            snprintf(err, errlen, "module %s.so has no netdev", e->module);
        return NULL;
    }
    return m ? m->netdev : NULL;
}

int sampi_netdev_load_agreed(MPI_Comm comm, struct sampi_waiter *w, const char *name,
                             const char *fallback, const struct sampi_netdev_ops **out)
{
    static atomic_uint reported; /* one bit per table row: said once per process */
    char why[1024] = "";
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    const struct sampi_netdev_entry *e = entry_of(name);
    *out = NULL;
    if (!e || e->builtin) {
        /* the same on every rank (the name is): nothing to agree on */
        if (!e && rank == 0)
            sampi_log_warn("no netdev '%s' in this build%s%s", name ? name : "(null)",
                           fallback ? ": " : "", fallback ? fallback : "");
        *out = e ? e->builtin : NULL;
        return e ? 0 : -ENODEV;
    }
    const struct sampi_netdev_ops *ops = sampi_netdev_load(name, why, sizeof(why));
    /* The lowest rank that could not load it, or INT_MAX. */
    int mine = ops ? INT_MAX : rank, lowest = INT_MAX;
    int rc = sampi_waiter_allreduce(w, &mine, &lowest, 1, MPI_INT, MPI_MIN, comm);
    if (rc)
        return rc;
    if (lowest == INT_MAX) {
        *out = ops;
        return 0;
    }
    unsigned bit = 1u << (e - sampi_netdev_table);
    if (rank == lowest && !(atomic_fetch_or(&reported, bit) & bit))
        sampi_log_warn("netdev '%s' is not available on every rank (rank %d: %s)%s%s", name, rank,
                       why, fallback ? ": " : "", fallback ? fallback : "");
    return -ENODEV;
}

int sampi_netdev_auto_choice(MPI_Comm comm)
{
    /* On one host ofi's shm provider is no faster than PMPI point-to-point,
     * which Open MPI 4.1 already moves with a single copy
     * (docs/notes/2026-11-ofi-measurements.md).  So auto means mpi until a
     * path beats it; ofi stays one setting away. */
    (void)comm;
    return SAMPI_NETDEV_MPI;
}

const char *sampi_netdev_choice_name(MPI_Comm comm, int choice)
{
    if (choice == SAMPI_NETDEV_AUTO)
        choice = sampi_netdev_auto_choice(comm);
    return sampi_netdev_names[choice];
}
