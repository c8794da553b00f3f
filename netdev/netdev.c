/*
 * netdev.c - the table of transports, and the clock and back-off that every
 * backend shares.
 */
#include "netdev.h"
#include "config.h"

#include <sched.h>
#include <string.h>
#include <time.h>

const struct sampi_netdev_ops *const sampi_netdev_backends[] = {
    &sampi_netdev_mpi_ops,
    &sampi_netdev_ofi_ops,
    NULL,
};

const struct sampi_netdev_ops *sampi_netdev_find(const char *name)
{
    for (int i = 0; name && sampi_netdev_backends[i]; i++)
        if (strcmp(sampi_netdev_backends[i]->name, name) == 0)
            return sampi_netdev_backends[i];
    return NULL;
}

int64_t sampi_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A waiting rank first yields (cheap when a peer is about to answer), then
 * sleeps for intervals that double up to 1 ms: on an oversubscribed host the
 * ranks that still compute get the core, and a rank waiting on a 20 ms
 * straggler wakes at most ~20 times instead of spinning. */
void sampi_backoff(unsigned *spins)
{
    enum { YIELDS = 64, MAX_SLEEP_NS = 1000000 };
    unsigned n = (*spins)++;
    if (n < YIELDS) {
        sched_yield();
        return;
    }
    unsigned shift = n - YIELDS;
    long ns = shift >= 10 ? MAX_SLEEP_NS : (1000L << shift);
    if (ns > MAX_SLEEP_NS)
        ns = MAX_SLEEP_NS;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

int sampi_netdev_auto_choice(MPI_Comm comm)
{
    /* Measured side by side on one host (sampi_bench, ring, 4-64 MiB, np 2
     * and 4): ofi's shm provider is no faster than PMPI point-to-point, which
     * Open MPI 4.1's vader BTL already moves with a single copy
     * (process_vm_readv), and it is slower below 32 MiB.  Open MPI's slow
     * large allreduce comes from its algorithm choice, not its transport.  So
     * auto means mpi until a path beats it; ofi stays one setting away. */
    (void)comm;
    return SAMPI_NETDEV_MPI;
}
