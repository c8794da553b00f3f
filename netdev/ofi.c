/*
 * ofi.c - the `ofi` netdev: libfabric reliable-datagram (FI_EP_RDM) tagged
 * messages.
 *
 * One fabric, domain, completion queue, address vector and endpoint per
 * instance (per communicator).  The domain is asked for FI_THREAD_DOMAIN: the
 * netdev contract lets one thread at a time use an instance, and two
 * instances never share a libfabric object (shm grants FI_THREAD_DOMAIN,
 * tcp;ofi_rxm answers FI_THREAD_SAFE; two threads with an instance each were
 * checked on both).  Peer addresses are exchanged once, in open(), and
 * inserted into the AV in rank order; a receive from rank r matches only
 * messages from r (FI_DIRECTED_RECV).  The 64-bit SAMPI tag is the libfabric
 * tag, unchanged.
 *
 * The caller's request is the libfabric context: fi_tsend/fi_trecv get
 * &req->impl (sized for struct fi_context2), and a completion finds its
 * request again from op_context, whichever wait() call reads it.
 *
 * Waiting (docs/design.md, 'Waits follow the node') follows the wait mode
 * (src/base/wait_mode.h): poll and yield read the CQ between
 * sampi_wait_pause turns; block sleeps in fi_cq_sread when the CQ has a
 * file-descriptor wait object.  tcp;ofi_rxm has one, and its sread drives
 * the sockets' progress while it sleeps; shm has none (its FI_WAIT_UNSPEC is
 * a sched_yield spin), so shm waits pause as the mode says.
 *
 * Per-rank addresses: with sampi_ofi_bind_base = A.B.C.D, MPI_COMM_WORLD rank
 * r asks fi_getinfo for A.B.C.(D+r) as its source (FI_SOURCE) and defaults to
 * tcp;ofi_rxm even on one host, so that every connection it listens on or
 * opens carries that address and tc can shape each rank apart on one `lo`
 * (benchmarks/testbed).
 *
 * Message sizes: a provider that reports a max_msg_size below a message gets
 * -EMSGSIZE for it (shm and tcp;ofi_rxm report 2^64-1).
 *
 * Queue depths: a provider refuses operations past its tx/rx queue sizes
 * (shm fi_trecv with -FI_ENOMEM, the others -FI_EAGAIN), and an executor
 * step posts all its segments at once.  So each direction counts what the
 * provider holds, hands it no more than its depth, and queues the rest in
 * posting order (post()).  shm also keeps unexpected messages in its receive
 * queue, and while that is full it reads nothing at all, so a rank that
 * hears from two peers at once could hang: SAMPI gives shm at most a quarter
 * of each queue, which leaves room for two other peers' unmatched sends.
 * Sends of 4 KiB or less are not bounded by it: with segments that small,
 * rhd and stragglar at np >= 3 can still hang over shm.  tcp;ofi_rxm keeps
 * unexpected messages apart and gets its full depth.
 *
 * Over tcp SAMPI sets three of rxm's variables (ofi_tcp_env_defaults):
 * FI_TCP_NODELAY=1, a smaller shared receive pool (FI_OFI_RXM_MSG_RX_SIZE)
 * so that opening an endpoint is cheap, and an eager limit of SAMPI's
 * default segment (FI_OFI_RXM_EAGER_LIMIT) so that a segment is not sent by
 * rendezvous.  isend/irecv never block on a peer: rxm answers -FI_EAGAIN
 * until the connection to a new peer is up, which needs that peer to
 * progress, and the peer may be inside an MPI call waiting for us; such
 * operations are queued and posted from wait().
 *
 * The measurements behind all of this (CPU used while waiting, queue limits
 * and the sizes that failed or hung, the tcp tuning, loopback latencies) are
 * in docs/notes/2026-11-ofi-measurements.md, with the commands.
 */
#include "ofi_util.h"
#include "module.h"
#include "netdev.h"
#include "sampi_internal.h"
#include "wait.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which of the provider's queues an operation occupies. */
enum { DIR_SEND, DIR_RECV, DIR__COUNT };

/* A request's impl area: the provider's struct fi_context2 first (its
 * address is the op_context a completion carries), then, in the word after
 * it, the queue the operation occupies, so that its completion frees room in
 * the right one. */
#define DIR_SLOT (sizeof(struct fi_context2) / sizeof(void *))
_Static_assert(sizeof(struct fi_context2) % sizeof(void *) == 0 &&
                   sizeof(((sampi_netdev_req_t *)0)->impl.ptr) >=
                       sizeof(struct fi_context2) + sizeof(void *),
               "sampi_netdev_req_t.impl must hold a struct fi_context2 and one word more");

static void set_dir(sampi_netdev_req_t *r, int dir)
{
    r->impl.ptr[DIR_SLOT] = (void *)(uintptr_t)dir;
}

static int dir_of(const sampi_netdev_req_t *r)
{
    return (int)(uintptr_t)r->impl.ptr[DIR_SLOT];
}

static const struct sampi_netdev_ops ofi_ops; /* at the end */

#define OFI_API_VERSION FI_VERSION(1, 10)
#define OFI_NAME_MAX    256 /* endpoint names: shm ~20 bytes, tcp 16 or 28 */
#define OFI_CQ_BATCH    16

/* An operation not handed to the provider yet (see post()), kept in posting
 * order among those of its direction. */
struct deferred {
    struct deferred *next;
    sampi_netdev_req_t *req;
    void *buf;
    size_t len;
    uint64_t tag;
    int peer;
};

/* A cancelled operation the provider still holds (see ofi_cancel()). */
struct orphan {
    void *ctx;
    int dir;
};

struct ofi_netdev {
    struct sampi_netdev base;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    fi_addr_t *peers;
    size_t max_msg;
    int blocking; /* the CQ has a wait object fi_cq_sread can sleep on (block mode) */
    /* Contexts of cancelled operations whose completion never came (a send
     * the provider could not cancel): their late completion is swallowed
     * instead of marking whatever request now lives at that address. */
    struct orphan *orphans;
    size_t n_orphans, cap_orphans;
    /* Per direction: operations handed to the provider whose completion has
     * not been read, the most SAMPI hands it at once (see open_local()), and
     * the operations waiting for room, in posting order (see post()). */
    size_t outstanding[DIR__COUNT];
    size_t depth[DIR__COUNT];
    struct deferred *deferred[DIR__COUNT], **deferred_tail[DIR__COUNT];
    /* The provider refused a queued operation with -FI_EAGAIN at the last
     * try: what lets it through (a connection coming up) need not wake a CQ
     * wait. */
    int refused;
    char provider[SAMPI_CVAR_STRING_MAX];
    /* sampi_ofi_bind_base applied to this process: the address every socket
     * binds, "" when the provider chooses. */
    char node[INET_ADDRSTRLEN];
};

/* Where open() failed, for the one warning line rank 0 prints. */
enum ofi_stage {
    ST_NONE,
    ST_NOMEM,
    ST_GETINFO,
    ST_FABRIC,
    ST_DOMAIN,
    ST_CQ,
    ST_AV,
    ST_ENDPOINT,
    ST_BIND,
    ST_ENABLE,
    ST_GETNAME,
    ST_PROVIDER_MISMATCH,
    ST_AV_INSERT,
    ST_BIND_ADDR,
    ST__COUNT,
};

static const char *const stage_names[] = {
    [ST_NONE] = "nothing",           [ST_NOMEM] = "memory allocation",
    [ST_GETINFO] = "fi_getinfo",     [ST_FABRIC] = "fi_fabric",
    [ST_DOMAIN] = "fi_domain",       [ST_CQ] = "fi_cq_open",
    [ST_AV] = "fi_av_open",          [ST_ENDPOINT] = "fi_endpoint",
    [ST_BIND] = "fi_ep_bind",        [ST_ENABLE] = "fi_enable",
    [ST_GETNAME] = "fi_getname",     [ST_PROVIDER_MISMATCH] = "provider agreement",
    [ST_AV_INSERT] = "fi_av_insert", [ST_BIND_ADDR] = "sampi_ofi_bind_base (address past .254)",
};

/*
 * Provider settings SAMPI applies when the user has not set them (the notes at
 * the top of this file give the measurements behind each).  libfabric reads
 * its FI_* variables once, when it loads its providers at the first
 * fi_getinfo in the process, so they take effect only when SAMPI's first
 * open is that first use; an application or MPI library that used libfabric
 * earlier keeps what it read then.  The rxm values are right for rxm over tcp
 * only (over verbs the eager limit must equal the buffer size), so they are
 * set unless the user named a provider that is not tcp-based: with the
 * default choice, a process whose first communicator is on one host (shm)
 * uses tcp;ofi_rxm for any communicator that spans hosts.
 */
static const struct {
    const char *name, *value;
} ofi_tcp_env_defaults[] = {
    /* libfabric 1.17 already sets TCP_NODELAY unless the traffic class is
     * FI_TC_BULK_DATA; say so explicitly: with Nagle on, every rxm
     * rendezvous waits out a 40 ms delayed ACK. */
    {"FI_TCP_NODELAY", "1"},
    /* rxm over tcp shares one receive context among all connections and
     * posts 4096 bounce buffers of 16 KiB to it when the endpoint is enabled:
     * 64 MiB per endpoint, i.e. per communicator here, and slow to open
     * (docs/notes/2026-11-ofi-measurements.md).  They
     * hold unexpected messages only (expected ones land in the posted
     * buffer), and SAMPI has a few outstanding per peer it talks to. */
    {"FI_OFI_RXM_MSG_RX_SIZE", "256"},
    /* Over tcp, rxm sends everything above its eager limit (16 KiB) by
     * rendezvous: RTS, a read request, the data, an ACK -- two extra round
     * trips per message.  With dynamic receive buffers (tcp's default) eager
     * data goes straight into a posted receive, so let SAMPI's default
     * segment (256 KiB) go eager. */
    {"FI_OFI_RXM_EAGER_LIMIT", "262144"},
    {NULL, NULL},
};

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static int env_done;

/* `requested` is sampi_ofi_provider as the user set it ("" for the default). */
static void apply_env_defaults(const char *requested)
{
    /* setenv is not thread-safe: serialise our own calls, and do it once. */
    pthread_mutex_lock(&env_lock);
    if (!env_done && (requested[0] == '\0' || strstr(requested, "tcp"))) {
        for (size_t i = 0; ofi_tcp_env_defaults[i].name; i++)
            setenv(ofi_tcp_env_defaults[i].name, ofi_tcp_env_defaults[i].value, 0);
    }
    env_done = 1;
    pthread_mutex_unlock(&env_lock);
}

static sampi_netdev_req_t *req_of(void *op_context)
{
    return (sampi_netdev_req_t *)((char *)op_context - offsetof(sampi_netdev_req_t, impl));
}

static void leave_provider(struct ofi_netdev *nd, int dir)
{
    if (dir >= 0 && dir < DIR__COUNT && nd->outstanding[dir] > 0)
        nd->outstanding[dir]--;
}

/* A completion the provider reported: its operation no longer holds room in
 * the provider's queue. */
static void complete(struct ofi_netdev *nd, void *op_context, int status)
{
    if (!op_context)
        return;
    for (size_t i = 0; i < nd->n_orphans; i++) {
        if (nd->orphans[i].ctx == op_context) {
            leave_provider(nd, nd->orphans[i].dir);
            nd->orphans[i] = nd->orphans[--nd->n_orphans];
            return;
        }
    }
    sampi_netdev_req_t *r = req_of(op_context);
    leave_provider(nd, dir_of(r));
    r->status = status;
    r->done = 1;
}

/* Take one error entry off the CQ: its request completes with the error
 * (-ECANCELED for a cancelled one).  Returns how many requests completed, or
 * a negative errno when the CQ itself failed. */
static int take_error(struct ofi_netdev *nd)
{
    struct fi_cq_err_entry err;
    memset(&err, 0, sizeof(err));
    ssize_t rc = fi_cq_readerr(nd->cq, &err, 0);
    if (rc == -FI_EAGAIN)
        return 0;
    if (rc < 0)
        return sampi_ofi_neg_errno(rc);
    int status = err.err == FI_ECANCELED ? -ECANCELED : sampi_ofi_neg_errno(err.err);
    if (err.err != FI_ECANCELED && sampi_log_enabled(SAMPI_LOG_SETUP))
        sampi_log(SAMPI_LOG_SETUP, "ofi netdev: completion error: %s",
                  fi_strerror(err.err ? err.err : FI_EIO));
    complete(nd, err.op_context, status);
    return err.op_context ? 1 : 0;
}

static int handle_read(struct ofi_netdev *nd, ssize_t rc, const struct fi_cq_entry *entries)
{
    if (rc > 0) {
        for (ssize_t i = 0; i < rc; i++)
            complete(nd, entries[i].op_context, 0);
        return (int)rc;
    }
    if (rc == -FI_EAGAIN)
        return 0;
    if (rc == -FI_EAVAIL)
        return take_error(nd);
    return sampi_ofi_neg_errno(rc);
}

/* Read the CQ without blocking until it is empty (which also drives the
 * provider's progress).  Returns the number of requests completed. */
static int poll_cq(struct ofi_netdev *nd)
{
    struct fi_cq_entry entries[OFI_CQ_BATCH];
    int total = 0;
    for (;;) {
        ssize_t rc = fi_cq_read(nd->cq, entries, OFI_CQ_BATCH);
        int got = handle_read(nd, rc, entries);
        if (got < 0)
            return total ? total : got;
        if (got == 0)
            return total;
        total += got;
    }
}

/* Sleep in the provider until a completion arrives or timeout_ms passes. */
static int sleep_cq(struct ofi_netdev *nd, int timeout_ms)
{
    struct fi_cq_entry entries[OFI_CQ_BATCH];
    ssize_t rc = fi_cq_sread(nd->cq, entries, OFI_CQ_BATCH, NULL, timeout_ms);
    if (rc == -FI_ETIMEDOUT)
        return 0;
    int got = handle_read(nd, rc, entries);
    if (got > 0) {
        int more = poll_cq(nd);
        if (more > 0)
            got += more;
    }
    return got;
}

static unsigned long long text_hash(const char *s);

/* 1 when every rank of comm is on this host, 0 when not, or the wait's
 * negative errno.  Collective: the hashes of the processor names agree
 * (MPI_Comm_split_type would say the same, but has no deadline). */
static int one_host(MPI_Comm comm, struct sampi_waiter *w)
{
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    PMPI_Get_processor_name(host, &len);
    long long h = (long long)text_hash(host), v[2] = {h, -h}, out[2];
    int rc = sampi_waiter_allreduce(w, v, out, 2, MPI_LONG_LONG, MPI_MAX, comm);
    return rc ? rc : out[0] == -out[1];
}

static unsigned long long text_hash(const char *s)
{
    unsigned long long h = 1469598103934665603ULL;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h >> 2; /* fits a long long with room to negate */
}

/* This process's address under sampi_ofi_bind_base into out ("" when unset).
 * -ERANGE when D + rank passes .254: the address would leave the /24. */
static int bind_node(unsigned long base, char *out, size_t len)
{
    int wrank = 0;
    out[0] = '\0';
    if (!base)
        return 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if ((base & 0xff) + (unsigned long)wrank > 254)
        return -ERANGE;
    struct in_addr a = {.s_addr = htonl((uint32_t)(base + (unsigned long)wrank))};
    return inet_ntop(AF_INET, &a, out, (socklen_t)len) ? 0 : -EINVAL;
}

static struct fi_info *make_hints(const char *provider)
{
    struct fi_info *hints = sampi_ofi_hints(provider);
    if (!hints)
        return NULL;
    hints->caps = FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV;
    /* The request's impl area is a struct fi_context2, so providers that need
     * context space (psm2, verbs-based ones in production) can have it. */
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    /* No RMA of our own: these registration modes cost us nothing.  Not
     * FI_MR_LOCAL, so no provider asks for descriptors on sends. */
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    return hints;
}

static void ofi_close(struct sampi_netdev *base)
{
    struct ofi_netdev *nd = (struct ofi_netdev *)base;
    if (!nd)
        return;
    sampi_ofi_close_all(nd->ep, nd->av, nd->cq, NULL, nd->domain, nd->fabric, nd->info);
    for (int dir = 0; dir < DIR__COUNT; dir++) {
        while (nd->deferred[dir]) {
            struct deferred *d = nd->deferred[dir];
            nd->deferred[dir] = d->next;
            free(d);
        }
    }
    free(nd->peers);
    free(nd->orphans);
    free(nd);
}

/* A region left by a process that died without closing its endpoint.  shm
 * (libfabric 1.17) names an endpoint's region after the process and its
 * endpoint count, "fi_shm://PID:UID:N" (/dev/shm/PID:UID:N), and a process
 * killed by a signal, a timeout or a job manager leaves its regions behind.
 * PIDs are reused (pid_max is 32768 here), so a later process can get the
 * same PID, hence the same name; fi_enable then finds the old file, sees that
 * "its" owner (our own PID) is alive or that the file is not a region at all,
 * removes the file and fails with -FI_EBUSY.  Seen in this project's own test
 * run: 58 regions of 16 MiB left in /dev/shm by killed runs, and one of them
 * made "ofi open" fail on rank 0 with "fi_enable: Device or resource busy"
 * hours later.  A fresh endpoint takes the next name (N+1) and succeeds, so
 * open_local retries; a bounded number of times, since each stale name it
 * meets has been removed and a persistent -FI_EBUSY is another problem. */
#define OFI_STALE_ATTEMPTS 8

/* The endpoint, bound to the CQ and AV and enabled.  ST_NONE or the stage
 * that failed, with the provider's code in *rc. */
static enum ofi_stage open_endpoint(struct ofi_netdev *nd, int *rc)
{
    if ((*rc = fi_endpoint(nd->domain, nd->info, &nd->ep, NULL)))
        return ST_ENDPOINT;
    if ((*rc = fi_ep_bind(nd->ep, &nd->cq->fid, FI_TRANSMIT | FI_RECV)))
        return ST_BIND;
    if ((*rc = fi_ep_bind(nd->ep, &nd->av->fid, 0)))
        return ST_BIND;
    if ((*rc = fi_enable(nd->ep)))
        return ST_ENABLE;
    return ST_NONE;
}

/* Open everything local.  Returns 0, or the failing stage with *fi_err. */
static enum ofi_stage open_local(struct ofi_netdev *nd, char *name, size_t *namelen, int *fi_err)
{
    enum ofi_stage st = ST_GETINFO;
    int rc = 0;
    struct fi_info *hints = make_hints(nd->provider);
    if (!hints) {
        st = ST_NOMEM;
        rc = -FI_ENOMEM;
        goto fail;
    }
    const char *node = nd->node[0] ? nd->node : NULL;
    rc = fi_getinfo(OFI_API_VERSION, node, NULL, node ? FI_SOURCE : 0, hints, &nd->info);
    fi_freeinfo(hints);
    if (rc)
        goto fail;
    nd->max_msg = nd->info->ep_attr->max_msg_size;
    /* The provider's advertised queue depths: past them shm refuses a
     * receive with -FI_ENOMEM and rxm answers -FI_EAGAIN (the notes at the
     * top of this file); post() queues instead of asking.  shm's receive
     * queue also holds the unexpected messages of every peer, and once it is
     * full shm reads no message at all: SAMPI posts at most a quarter of it,
     * and keeps at most a quarter of the send queue in flight (a send above
     * 4 KiB is an unexpected message at its peer until matched), so that its
     * receives and two other ranks' unmatched sends fit. */
    nd->depth[DIR_SEND] = nd->info->tx_attr->size ? nd->info->tx_attr->size : SIZE_MAX;
    nd->depth[DIR_RECV] = nd->info->rx_attr->size ? nd->info->rx_attr->size : SIZE_MAX;
    if (strcmp(nd->info->fabric_attr->prov_name, "shm") == 0) {
        for (int dir = 0; dir < DIR__COUNT; dir++)
            if (nd->depth[dir] != SIZE_MAX && nd->depth[dir] >= 4)
                nd->depth[dir] /= 4;
    }

    st = ST_FABRIC;
    if ((rc = fi_fabric(nd->info->fabric_attr, &nd->fabric, NULL)))
        goto fail;
    st = ST_DOMAIN;
    if ((rc = fi_domain(nd->fabric, nd->info, &nd->domain, NULL)))
        goto fail;

    st = ST_CQ;
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
    if ((rc = sampi_ofi_cq_open(nd->domain, &cq_attr, &nd->cq, &nd->blocking)))
        goto fail;

    st = ST_AV;
    struct fi_av_attr av_attr = {.type = nd->info->domain_attr->av_type,
                                 .count = (size_t)nd->base.size};
    if ((rc = fi_av_open(nd->domain, &av_attr, &nd->av, NULL)))
        goto fail;

    for (int attempt = 1;; attempt++) {
        st = open_endpoint(nd, &rc);
        if (st != ST_ENABLE || rc != -FI_EBUSY || attempt == OFI_STALE_ATTEMPTS)
            break;
        /* A stale region held this endpoint's name (see above): shm has
         * removed it; the next endpoint takes the next name. */
        fi_close(&nd->ep->fid);
        nd->ep = NULL;
        sampi_log(SAMPI_LOG_INFO,
                  "ofi: fi_enable met a stale shared-memory region (%s), attempt %d of %d",
                  fi_strerror(-rc), attempt, OFI_STALE_ATTEMPTS);
    }
    if (st != ST_NONE)
        goto fail;
    st = ST_GETNAME;
    if ((rc = fi_getname(&nd->ep->fid, name, namelen)))
        goto fail;
    *fi_err = 0;
    return ST_NONE;
fail:
    *fi_err = rc < 0 ? -rc : rc;
    return st;
}

/* Agreement over comm: v[] reduced with MIN.  0 or the wait's errno. */
static int agree(MPI_Comm comm, struct sampi_waiter *w, long long *v, int n)
{
    long long in[8];
    memcpy(in, v, (size_t)n * sizeof(*v));
    return sampi_waiter_allreduce(w, in, v, n, MPI_LONG_LONG, MPI_MIN, comm);
}

/* A failed rank's key: lowest rank first, then its stage and error. */
static long long fail_key(int rank, enum ofi_stage st, int fi_err)
{
    return ((long long)rank << 32) | ((long long)st << 16) | (fi_err & 0xffff);
}

static void warn_failure(const struct ofi_netdev *nd, long long key)
{
    if (nd->base.rank != 0)
        return;
    int rank = (int)(key >> 32);
    enum ofi_stage st = (enum ofi_stage)((key >> 16) & 0xffff);
    int err = (int)(key & 0xffff);
    if (st >= ST__COUNT)
        st = ST_NONE;
    if (st == ST_PROVIDER_MISMATCH) {
        sampi_log_warn("ofi netdev unavailable: ranks asked for different providers (rank 0: '%s')",
                       nd->provider);
        return;
    }
    sampi_log_warn("ofi netdev (provider '%s') unavailable: %s failed on rank %d: %s", nd->provider,
                   stage_names[st], rank, err ? fi_strerror(err) : "no error code");
}

/* One step of open() agreed on: 0 when it succeeded on every rank; else the
 * failure with the lowest key is reported (by rank 0) and -ENODEV; an error
 * of the agreement itself comes back as it is. */
static int agree_step(MPI_Comm comm, struct sampi_waiter *w, const struct ofi_netdev *nd, int ok,
                      long long key)
{
    long long v[2] = {ok, ok ? LLONG_MAX : key};
    int rc = agree(comm, w, v, 2);
    if (rc)
        return rc;
    if (!v[0]) {
        warn_failure(nd, v[1]);
        return -ENODEV;
    }
    return 0;
}

static int ofi_open(MPI_Comm comm, struct sampi_waiter *w, struct sampi_netdev **out)
{
    struct ofi_netdev *nd = calloc(1, sizeof(*nd));
    char *names = NULL;
    char name[OFI_NAME_MAX];
    size_t namelen = sizeof(name);
    int rank = 0, size = 0, fi_err = 0, rc = -ENODEV;
    enum ofi_stage st = ST_NOMEM;

    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    /* Every rank makes the same collective calls whatever happens locally
     * (no memory, a provider named here but not on another rank): the
     * differences are caught by the agreement below, never by a hang. */
    char provider[SAMPI_CVAR_STRING_MAX] = "";
    sampi_cvar_text(SAMPI_CVAR_OFI_PROVIDER, provider, sizeof(provider));
    char bind[SAMPI_CVAR_STRING_MAX] = "", bind_err[256];
    unsigned long base = 0;
    sampi_cvar_text(SAMPI_CVAR_OFI_BIND_BASE, bind, sizeof(bind));
    if (sampi_ofi_bind_parse(bind, &base, bind_err, sizeof(bind_err)))
        base = 0; /* cannot happen: the value was validated when set */
    int local = one_host(comm, w);
    if (local < 0) {
        rc = local;
        goto fail;
    }
    if (nd)
        apply_env_defaults(provider);
    /* An address to bind means an IP provider, on one host too. */
    if (provider[0] == '\0')
        snprintf(provider, sizeof(provider), "%s", local && !base ? "shm" : "tcp;ofi_rxm");
    if (nd) {
        nd->base.ops = &ofi_ops;
        for (int dir = 0; dir < DIR__COUNT; dir++)
            nd->deferred_tail[dir] = &nd->deferred[dir];
        nd->base.rank = rank;
        nd->base.size = size;
        snprintf(nd->provider, sizeof(nd->provider), "%s", provider);
        nd->peers = calloc((size_t)size, sizeof(*nd->peers));
        if (!nd->peers)
            st = ST_NOMEM;
        else if (bind_node(base, nd->node, sizeof(nd->node)))
            st = ST_BIND_ADDR;
        else
            st = open_local(nd, name, &namelen, &fi_err);
    }

    /* Agree before exchanging anything: success everywhere, the longest
     * name, and the same provider on every rank. */
    long long h = (long long)text_hash(provider);
    long long v[5] = {st == ST_NONE, -(long long)namelen, h, -h,
                      st == ST_NONE ? LLONG_MAX : fail_key(rank, st, fi_err)};
    if ((rc = agree(comm, w, v, 5)))
        goto fail;
    rc = -ENODEV;
    if (v[0] && v[2] != -v[3]) {
        v[0] = 0;
        v[4] = fail_key(0, ST_PROVIDER_MISMATCH, 0);
    }
    if (!v[0]) {
        if (nd)
            warn_failure(nd, v[4]);
        else if (rank == 0)
            sampi_log_warn("ofi netdev unavailable: out of memory");
        goto fail;
    }

    size_t stride = (size_t)-v[1];
    names = calloc((size_t)size, stride);
    if ((rc = agree_step(comm, w, nd, names != NULL, fail_key(rank, ST_NOMEM, FI_ENOMEM))))
        goto fail;
    char mine[OFI_NAME_MAX];
    memset(mine, 0, sizeof(mine));
    memcpy(mine, name, namelen);
    if ((rc = sampi_waiter_allgather(w, mine, (int)stride, MPI_BYTE, names, comm)))
        goto fail;
    rc = -ENODEV;

    /* One address at a time: FI_ADDR_STR names (shm) are not fixed-size. */
    st = ST_NONE;
    fi_err = 0;
    for (int r = 0; r < size && st == ST_NONE; r++) {
        int n = fi_av_insert(nd->av, names + (size_t)r * stride, 1, &nd->peers[r], 0, NULL);
        if (n != 1) {
            st = ST_AV_INSERT;
            fi_err = n < 0 ? -n : FI_EINVAL;
        }
    }
    if ((rc = agree_step(comm, w, nd, st == ST_NONE, fail_key(rank, st, fi_err))))
        goto fail;
    free(names);
    sampi_log(SAMPI_LOG_SETUP,
              "ofi netdev: provider %s (%s), bound to %s, %s waits, max message %zu bytes, "
              "at most %zu sends and %zu receives at the provider",
              nd->info->fabric_attr->prov_name, nd->info->domain_attr->name,
              nd->node[0] ? nd->node : "the provider's choice",
              nd->blocking ? "blocking" : "polled", nd->max_msg, nd->depth[DIR_SEND],
              nd->depth[DIR_RECV]);
    *out = &nd->base;
    return 0;
fail:
    free(names);
    ofi_close(nd ? &nd->base : NULL);
    *out = NULL;
    return rc;
}

/* Hand one operation to the provider.  0: it took it; 1: not now, keep it
 * queued; a negative errno: refused for good.  Not now means that the
 * provider already holds depth[dir] operations of this direction (see
 * open_local()), or that it answered -FI_EAGAIN, or a resource error
 * (-FI_ENOMEM, -FI_ENOSPC) while operations of this direction are
 * outstanding, whose completions free room.  The same error with nothing of
 * this direction outstanding cannot clear by waiting (shm: its receive queue
 * is full of unexpected messages this receive does not match) and is the
 * request's error. */
static int try_issue(struct ofi_netdev *nd, int dir, void *buf, size_t len, int peer, uint64_t tag,
                     sampi_netdev_req_t *req)
{
    if (nd->outstanding[dir] >= nd->depth[dir])
        return 1;
    set_dir(req, dir);
    ssize_t rc = dir == DIR_SEND
                     ? fi_tsend(nd->ep, buf, len, NULL, nd->peers[peer], tag, &req->impl)
                     : fi_trecv(nd->ep, buf, len, NULL, nd->peers[peer], tag, 0, &req->impl);
    if (rc == 0) {
        nd->outstanding[dir]++;
        return 0;
    }
    if (rc == -FI_EAGAIN) {
        nd->refused = 1;
        return 1;
    }
    if ((rc == -FI_ENOMEM || rc == -FI_ENOSPC) && nd->outstanding[dir] > 0)
        return 1;
    return sampi_ofi_neg_errno(rc);
}

static int any_deferred(const struct ofi_netdev *nd)
{
    return nd->deferred[DIR_SEND] || nd->deferred[DIR_RECV];
}

/* Hand queued operations to the provider, oldest first in each direction,
 * while it takes them.  One it refuses for good completes with the error.
 * Returns how many requests that completed. */
static int flush_deferred(struct ofi_netdev *nd)
{
    int failed = 0;
    nd->refused = 0;
    for (int dir = 0; dir < DIR__COUNT; dir++) {
        while (nd->deferred[dir]) {
            struct deferred *d = nd->deferred[dir];
            int rc = try_issue(nd, dir, d->buf, d->len, d->peer, d->tag, d->req);
            if (rc > 0)
                break;
            if (rc < 0) {
                d->req->status = rc;
                d->req->done = 1;
                failed++;
            }
            nd->deferred[dir] = d->next;
            if (!nd->deferred[dir])
                nd->deferred_tail[dir] = &nd->deferred[dir];
            free(d);
        }
    }
    return failed;
}

/* Post one operation, or queue it when the provider cannot take it yet
 * (try_issue()): its queue is full until completions are read, or
 * (tcp;ofi_rxm) the connection to that peer is still being set up, which
 * needs the peer to drive its own progress.  A few rounds of progress come
 * first; beyond that wait() hands the operation over as room frees, so that
 * isend and irecv never block on a peer (the peer may be busy in an MPI call
 * that waits for us).  Sends and receives queue apart: a receive waiting for
 * room must not hold back the sends that let the peer complete its own
 * receives, and with one queue both ranks of an exchange of more segments
 * than the receive queue holds would wait for each other.  Within a
 * direction, once something is queued, later posts queue behind it, so that
 * the provider sees them in the caller's order (messages from one peer match
 * receives in posting order). */
static int post(struct ofi_netdev *nd, int dir, void *buf, size_t len, int peer, uint64_t tag,
                sampi_netdev_req_t *req)
{
    enum { PROGRESS_ROUNDS = 4 };
    int rc = 0;
    req->done = 0;
    req->status = 0;
    if (peer < 0 || peer >= nd->base.size) {
        rc = -EINVAL;
        goto fail;
    }
    if (len > nd->max_msg) {
        rc = -EMSGSIZE;
        goto fail;
    }
    for (int round = 0; !nd->deferred[dir] && round < PROGRESS_ROUNDS; round++) {
        rc = try_issue(nd, dir, buf, len, peer, tag, req);
        if (rc == 0)
            return 0;
        if (rc < 0)
            goto fail;
        int got = poll_cq(nd);
        if (got < 0) {
            rc = got;
            goto fail;
        }
    }
    struct deferred *d = malloc(sizeof(*d));
    if (!d) {
        rc = -ENOMEM;
        goto fail;
    }
    *d = (struct deferred){.req = req, .buf = buf, .len = len, .tag = tag, .peer = peer};
    *nd->deferred_tail[dir] = d;
    nd->deferred_tail[dir] = &d->next;
    return 0;
fail:
    return rc;
}

static int ofi_isend(struct sampi_netdev *base, const void *buf, size_t len, int peer, uint64_t tag,
                     sampi_netdev_req_t *req)
{
    return post((struct ofi_netdev *)base, DIR_SEND, (void *)buf, len, peer, tag, req);
}

static int ofi_irecv(struct sampi_netdev *base, void *buf, size_t len, int peer, uint64_t tag,
                     sampi_netdev_req_t *req)
{
    return post((struct ofi_netdev *)base, DIR_RECV, buf, len, peer, tag, req);
}

static int count_done(sampi_netdev_req_t *const *reqs, int n)
{
    int done = 0;
    for (int i = 0; i < n; i++)
        done += reqs[i]->done != 0;
    return done;
}

static int ofi_wait(struct sampi_netdev *base, sampi_netdev_req_t *const *reqs, int n,
                    int64_t deadline_ns)
{
    /* While the provider refuses a queued operation with -FI_EAGAIN, sleep
     * at most this long: the event that lets it through (a connection
     * completing) need not wake a CQ wait.  Operations queued for room only
     * need completions, which do wake it. */
    enum { REFUSED_SLEEP_MS = 1 };
    struct ofi_netdev *nd = (struct ofi_netdev *)base;
    int before = count_done(reqs, n), rc = 0;
    unsigned spins = 0;
    if (before == n)
        return 0;
    for (;;) {
        int got = any_deferred(nd) ? flush_deferred(nd) : 0;
        int polled = poll_cq(nd);
        if (polled < 0) {
            rc = polled;
            goto fail;
        }
        got += polled;
        if (got && count_done(reqs, n) > before)
            return 0;
        int64_t now = sampi_now_ns();
        if (now > deadline_ns) {
            rc = -ETIMEDOUT;
            goto fail;
        }
        if (got) {
            spins = 0;
            continue;
        }
        if (nd->blocking && sampi_wait_mode_now() == SAMPI_WAIT_BLOCK) {
            int ms = sampi_ofi_ms_until(deadline_ns, now);
            if (any_deferred(nd) && nd->refused && ms > REFUSED_SLEEP_MS)
                ms = REFUSED_SLEEP_MS;
            sampi_wait_count_sleep();
            got = sleep_cq(nd, ms);
            if (got < 0) {
                rc = got;
                goto fail;
            }
            if (got && count_done(reqs, n) > before)
                return 0;
        } else {
            sampi_wait_pause(&spins);
        }
    }
fail:
    return rc;
}

static void ofi_cancel(struct sampi_netdev *base, sampi_netdev_req_t *req)
{
    struct ofi_netdev *nd = (struct ofi_netdev *)base;
    if (req->done)
        return;
    for (int dir = 0; dir < DIR__COUNT; dir++) {
        for (struct deferred **p = &nd->deferred[dir]; *p; p = &(*p)->next) {
            if ((*p)->req != req)
                continue;
            /* Never reached the provider: nothing to cancel there, and the
             * operations queued behind it keep their order. */
            struct deferred *d = *p;
            *p = d->next;
            if (!*p)
                nd->deferred_tail[dir] = p;
            free(d);
            req->done = 1;
            req->status = -ECANCELED;
            return;
        }
    }
    /* Receives are cancelled at once (their FI_ECANCELED completion follows
     * on the next CQ read); a send already handed to the peer is not, and is
     * left to complete or to be flushed when the endpoint closes.  Either
     * way the request must not be reused until its completion was read, so
     * drain for a short while, bounded: the peer may be gone. */
    fi_cancel(&nd->ep->fid, &req->impl);
    sampi_netdev_req_t *one[1] = {req};
    int64_t deadline = sampi_now_ns() + 100 * 1000000LL;
    while (!req->done && ofi_wait(base, one, 1, deadline) == 0)
        ;
    if (req->done)
        return;
    /* Still at the provider: it keeps its room there until that late
     * completion is read. */
    if (nd->n_orphans == nd->cap_orphans) {
        size_t cap = nd->cap_orphans ? 2 * nd->cap_orphans : 8;
        struct orphan *grown = realloc(nd->orphans, cap * sizeof(*grown));
        if (grown) {
            nd->orphans = grown;
            nd->cap_orphans = cap;
        }
    }
    if (nd->n_orphans < nd->cap_orphans)
        nd->orphans[nd->n_orphans++] = (struct orphan){.ctx = &req->impl, .dir = dir_of(req)};
    req->done = 1;
    req->status = -ECANCELED;
}

static const struct sampi_netdev_ops ofi_ops = {
    .name = "ofi",
    .description = "libfabric RDM tagged messages (shm on one host, tcp;ofi_rxm across hosts)",
    .open = ofi_open,
    .close = ofi_close,
    .isend = ofi_isend,
    .irecv = ofi_irecv,
    .wait = ofi_wait,
    .cancel = ofi_cancel,
};

/* ------------------------------------------------------------ sampi_info */

/* Without MPI and without opening anything: whether libfabric offers
 * `provider` ("shm", "tcp;ofi_rxm", ...) with what the ofi netdev asks of it
 * (fi_getinfo with an open's hints).  0 and the fabric and domain an open
 * would use in detail, or a negative errno and the reason. */
static int ofi_probe(const char *provider, char *detail, size_t len)
{
    struct fi_info *hints = NULL, *info = NULL;
    int rc = -ENOMEM;
    char configured[SAMPI_CVAR_STRING_MAX] = "";
    /* The provider settings an open would apply, as the open would. */
    sampi_cvar_text(SAMPI_CVAR_OFI_PROVIDER, configured, sizeof(configured));
    apply_env_defaults(configured);
    snprintf(detail, len, "out of memory");
    if (!(hints = make_hints(provider)))
        goto fail;
    rc = fi_getinfo(OFI_API_VERSION, NULL, NULL, 0, hints, &info);
    if (rc) {
        snprintf(detail, len, "fi_getinfo: %s", fi_strerror(-rc));
        rc = sampi_ofi_neg_errno(rc);
        goto fail;
    }
    snprintf(detail, len, "fi_getinfo: fabric %s, domain %s", info->fabric_attr->name,
             info->domain_attr->name);
fail:
    if (info)
        fi_freeinfo(info);
    if (hints)
        fi_freeinfo(hints);
    return rc;
}

/* The version of the libfabric loaded ("1.17"), into buf. */
static const char *ofi_version(char *buf, size_t len)
{
    uint32_t v = fi_version();
    snprintf(buf, len, "%u.%u", FI_MAJOR(v), FI_MINOR(v));
    return buf;
}

/* The module's one exported symbol (module.h). */
SAMPI_MODULE_DEFINE_INFO("ofi", &ofi_ops, NULL, NULL, ofi_probe, ofi_version);
