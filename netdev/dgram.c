/*
 * dgram.c - the table of datagram transports (netdev/dgram.h), and how the
 * ranks of a communicator agree on loading one.
 *
 * Every datagram backend is a module (module.h), loaded the first time a
 * communicator asks for it.  Adding one is a module and one row here.
 * `dpdk` is listed only when configure found DPDK (its module is built only
 * then); `ofi-udp` needs libfabric, which configure always requires.
 */
#include "sampi_autoconf.h"

#include "dgram.h"
#include "module.h"
#include "sampi_internal.h"
#include "wait.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    const char *module;
} table[] = {
#ifdef SAMPI_HAVE_DPDK
    {"dpdk", "sampi_dgram_dpdk"},
#endif
    {"ofi-udp", "sampi_dgram_ofi_udp"},
};
#define N_BACKENDS (sizeof(table) / sizeof(table[0]))

const char *const sampi_dgram_names[] = {
#ifdef SAMPI_HAVE_DPDK
    "dpdk",
#endif
    "ofi-udp",
    NULL,
};

static int index_of(const char *name)
{
    for (size_t i = 0; name && i < N_BACKENDS; i++)
        if (strcmp(table[i].name, name) == 0)
            return (int)i;
    return -1;
}

const struct sampi_dgram_ops *sampi_dgram_load(const char *name, char *err, size_t errlen)
{
    int i = index_of(name);
    if (i < 0) {
        if (err && errlen)
            snprintf(err, errlen, "no datagram transport '%s' in this build",
                     name ? name : "(null)");
        return NULL;
    }
    const struct sampi_module *m = sampi_module_load(table[i].module, table[i].name, err, errlen);
    if (m && !m->dgram) {
        if (err && errlen)
            snprintf(err, errlen, "module %s.so has no datagram transport", table[i].module);
        return NULL;
    }
    return m ? m->dgram : NULL;
}

/* Load `name` on every rank and agree, before anyone calls its (collective)
 * open: the ops on every rank, or NULL on every rank after the lowest rank
 * that could not load it said why (once per process). */
static int load_agreed(MPI_Comm comm, struct sampi_waiter *w, const char *name,
                       const struct sampi_dgram_ops **out)
{
    static atomic_uint reported; /* one bit per table row */
    char why[1024] = "";
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    const struct sampi_dgram_ops *ops = sampi_dgram_load(name, why, sizeof(why));
    int mine = ops ? INT_MAX : rank, lowest = INT_MAX;
    *out = NULL;
    int rc = sampi_waiter_allreduce(w, &mine, &lowest, 1, MPI_INT, MPI_MIN, comm);
    if (rc)
        return rc;
    if (lowest == INT_MAX) {
        *out = ops;
        return 0;
    }
    int i = index_of(name);
    unsigned bit = i >= 0 ? 1u << i : 0;
    if (rank == lowest && (!bit || !(atomic_fetch_or(&reported, bit) & bit)))
        sampi_log_warn("datagram transport '%s' is not available on every rank (rank %d: %s)", name,
                       rank, why);
    return i < 0 ? -ENOENT : -ENODEV;
}

/* The failures every rank agrees on: the next backend may be tried. */
static int agreed_failure(int rc)
{
    return rc == -ENOENT || rc == -ENODEV;
}

int sampi_dgram_open(MPI_Comm comm, struct sampi_waiter *w, const char *name,
                     struct sampi_dgram **out)
{
    const struct sampi_dgram_ops *ops = NULL;
    *out = NULL;
    if (strcmp(name, "auto") != 0) {
        int rc = load_agreed(comm, w, name, &ops);
        return rc ? rc : ops->open(comm, w, out);
    }
    int rc = -ENOENT;
    for (size_t i = 0; i < N_BACKENDS; i++) {
        int lrc = load_agreed(comm, w, table[i].name, &ops);
        if (lrc && !agreed_failure(lrc))
            return lrc;
        if (lrc) {
            rc = lrc;
            continue;
        }
        rc = ops->open(comm, w, out);
        if (!rc || !agreed_failure(rc))
            return rc;
    }
    return rc;
}
