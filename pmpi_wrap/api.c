/*
 * api.c - SAMPI's public C interface (include/sampi.h).
 */
#include "sampi_autoconf.h"

#include "comm.h"
#include "lane.h"
#include "sampi.h"
#include "sampi_internal.h"
#include "wrap.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

const char *sampi_version(void)
{
    return PACKAGE_VERSION;
}

static struct sampi_comm *state_of(MPI_Comm comm, int create)
{
    struct sampi_comm *c = NULL;
    int inter = 0;
    if (comm == MPI_COMM_NULL || !sampi_runtime_mpi_ready() || !sampi_comm_handle_live(comm))
        return NULL;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return NULL;
    sampi_comm_get(comm, create, &c);
    return c;
}

int sampi_comm_set_algorithm(MPI_Comm comm, const char *algorithm)
{
    struct sampi_comm *c = state_of(comm, 1);
    if (!c)
        return MPI_ERR_COMM;
    sampi_lane_close_all(); /* the next calls decide again */
    if (!algorithm || !*algorithm) {
        c->forced_algo = -1;
        return MPI_SUCCESS;
    }
    const struct sampi_algo *al = sampi_algo_find(algorithm);
    if (!al) {
        /* once per process: a program that retries must not flood the log */
        static _Atomic int told;
        if (!atomic_exchange(&told, 1)) {
            char names[512] = "";
            size_t at = 0;
            for (int i = 0; i < SAMPI_ALGO__COUNT && at < sizeof(names); i++)
                at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s", i ? ", " : "",
                                       sampi_algos[i].name);
            sampi_log_warn("sampi_comm_set_algorithm: '%s' is not one of: %s", algorithm, names);
        }
        return MPI_ERR_ARG;
    }
    c->forced_algo = al->id;
    return MPI_SUCCESS;
}

int sampi_comm_set_netdev(MPI_Comm comm, const char *netdev)
{
    struct sampi_comm *c = state_of(comm, 1);
    if (!c)
        return MPI_ERR_COMM;
    if (c->nd_tried)
        return MPI_ERR_OTHER; /* the data path is chosen once, at first use */
    if (!netdev || !*netdev) {
        c->forced_netdev = -1;
        return MPI_SUCCESS;
    }
    int i = sampi_cvar_enum_index(SAMPI_CVAR_NETDEV, netdev);
    if (i < 0)
        return MPI_ERR_ARG;
    c->forced_netdev = i;
    return MPI_SUCCESS;
}

const char *sampi_comm_last_algorithm(MPI_Comm comm)
{
    struct sampi_comm *c = state_of(comm, 0);
    int a = c ? atomic_load_explicit(&c->last_algo, memory_order_relaxed) : -1;
    return a >= 0 && a < SAMPI_ALGO__COUNT ? sampi_algos[a].name : "none";
}

const char *sampi_comm_netdev(MPI_Comm comm)
{
    struct sampi_comm *c = state_of(comm, 0);
    return c && c->nd ? c->nd->ops->name : "none";
}
