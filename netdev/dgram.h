/*
 * dgram.h - SAMPI's datagram transport interface.
 *
 * optireduce trades reliability for a bounded tail: it sends its data as
 * datagrams and drops what has not arrived by a deadline.  It therefore needs
 * a transport with the opposite contract from netdev.h's tagged messages:
 *
 *  - a datagram arrives whole or not at all, possibly late, duplicated or out
 *    of order; nothing is retransmitted below this interface;
 *  - every datagram carries its own header (the algorithm's, bounds-checked on
 *    receipt), so a backend moves opaque bytes of at most `mtu` bytes;
 *  - recv() blocks or backs off until a datagram arrives or the deadline
 *    passes, never busy-spinning a shared core unless busy polling was asked for.
 *
 * Backends (one file each, built as modules loaded on first use, rows in
 * netdev/dgram.c): `dpdk` (UDP/IPv4 over DPDK ports) and `ofi-udp`
 * (libfabric FI_EP_DGRAM on the udp provider) for hosts without DPDK.
 * Decorators (fault injection for tests and benchmarks) wrap a struct
 * sampi_dgram and forward to it.
 *
 * open() is collective over the communicator and returns the same success or
 * failure on every rank; addresses are exchanged there, once, every wait
 * through the caller's waiter (wait.h), so that a hard limit bounds it too.
 */
#ifndef SAMPI_DGRAM_H
#define SAMPI_DGRAM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sampi_dgram;
struct sampi_waiter;

struct sampi_dgram_ops {
    const char *name;
    const char *description;
    /* Collective over comm (SAMPI's private communicator), every wait
     * through w (NULL: blocking).  0; -ENODEV when it cannot open (the same
     * on all ranks); another negative errno when a wait failed (the caller
     * revokes the communicator).  *out is NULL on failure. */
    int (*open)(MPI_Comm comm, struct sampi_waiter *w, struct sampi_dgram **out);
    void (*close)(struct sampi_dgram *dg);
    /* Queue one datagram of len <= dg->mtu bytes for peer (a rank of the
     * communicator, not itself).  0 once queued, -EAGAIN when the transmit
     * queue is full (the caller backs off and retries the same datagram:
     * the fault decorator counts it as one), other negative errno on
     * failure.  A queued datagram may still be lost. */
    int (*send)(struct sampi_dgram *dg, int peer, const void *buf, size_t len);
    /* Receive one datagram into buf (cap >= dg->mtu).  Returns its length, or
     * -ETIMEDOUT once deadline_ns (CLOCK_MONOTONIC, see sampi_now_ns) has
     * passed, or another negative errno.  *peer is the sending rank as the
     * backend knows it (from the source address, or from a few bytes of its
     * own ahead of the caller's: ofi-udp), or -1 when it cannot tell. */
    ssize_t (*recv)(struct sampi_dgram *dg, void *buf, size_t cap, int *peer, int64_t deadline_ns);
    /* For sampi_info (optional), without MPI and without opening anything:
     * whether the transport looks usable on this host with the current
     * settings: 0 and what was found in detail ("on 127.0.0.1, datagrams
     * of 65503 bytes"), 1 when only an open can tell, or a negative errno
     * and why not. */
    int (*probe)(char *detail, size_t len);
};

/* Fields common to every backend and decorator; they embed this first. */
struct sampi_dgram {
    const struct sampi_dgram_ops *ops;
    int rank;
    int size;
    size_t mtu; /* largest datagram send() accepts, header included */
};

/* The datagram transports this build knows, in the order sampi_dgram_open
 * tries them for "auto"; NULL-terminated.  Each is a module (module.h). */
extern const char *const sampi_dgram_names[];

/* The backend `name` ("dpdk", "ofi-udp"), loading its module on first use.
 * Local to this process; NULL when unknown, not built or not loadable, with
 * one line saying why in err (which may be NULL). */
const struct sampi_dgram_ops *sampi_dgram_load(const char *name, char *err, size_t errlen);

/* Collective over comm, every wait through w (NULL: blocking): open the
 * transport `name`, or with "auto" the first of sampi_dgram_names that
 * opens.  Loading is agreed before any open, so every rank gets the same
 * answer: 0 and *out, or a negative errno and *out = NULL (-ENOENT: no such
 * transport; -ENODEV: its module is missing on some rank, which the lowest
 * such rank explained once per process, or it could not be opened).  Any
 * other errno is a wait that failed (-ETIMEDOUT at the hard limit, -EIO: MPI
 * failed, or the waiter's owner stopped it): then the ranks may not agree,
 * and the caller revokes the communicator.  Process-wide state (DPDK's EAL)
 * is released by sampi_module_finalize_all (module.h). */
int sampi_dgram_open(MPI_Comm comm, struct sampi_waiter *w, const char *name,
                     struct sampi_dgram **out);

#endif
