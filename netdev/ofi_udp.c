/*
 * ofi_udp.c - the `ofi-udp` datagram transport: libfabric FI_EP_DGRAM on the
 * `udp` provider, for hosts without DPDK (netdev/dgram.h).
 *
 * The provider is one nonblocking UDP socket per endpoint.  What shapes this
 * file (libfabric 1.17's prov/udp, checked here):
 *  - fi_getinfo lists the udp provider once per interface, eth0 first.  The
 *    endpoint is bound to sampi_ofi_udp_addr (127.0.0.1 by default) by
 *    passing it as the node with FI_SOURCE, and only the entry whose source
 *    address is exactly that one is used: a datagram never leaves through
 *    another interface by accident.
 *  - max_msg_size and inject_size are both 1472 (a 1500-byte MTU less IPv4
 *    and UDP headers) whatever the interface, but the provider checks
 *    neither: send is a sendto and receive a recvmsg into the posted buffer,
 *    of any length.  Per-datagram costs dominate on loopback (1.4 KiB
 *    datagrams made optireduce 40x slower than ring at 16 MiB), so the
 *    datagram size is the MTU of the interface that owns the address less
 *    the IPv4 and UDP headers (65507 on lo: no fragmentation anywhere),
 *    tried once at open with a datagram to itself, and agreed as the
 *    smallest across ranks; sampi_ofi_udp_mtu overrides it.
 *  - send() is fi_inject: one sendto, no completion to reap, and
 *    -FI_EAGAIN when the socket's send buffer is full.
 *  - A receive completes only when its CQ is read: each read makes one
 *    recvmsg into the oldest posted buffer.  The provider cannot cancel a
 *    posted receive, so the caller's buffer is never posted (a receive that
 *    timed out would be written into later); a ring of datagram-sized slots
 *    is posted instead and each datagram is copied out once.
 *  - With FI_SOURCE the CQ should report the sender's AV index
 *    (fi_cq_readfrom; addresses are inserted in rank order into an
 *    FI_AV_TABLE, so the index is the rank).  In 1.17 it mostly does not:
 *    here only the first datagram of a run resolved, every later one came
 *    back FI_ADDR_NOTAVAIL (the provider receives the source into an
 *    uninitialised struct sockaddr_in6 on its stack; the AV lookup
 *    apparently compares bytes the kernel did not write).  Each datagram
 *    therefore starts with 4 bytes of ours: the sender's rank and a tag
 *    agreed at open.  The tag rejects datagrams meant for an earlier
 *    instance whose port this one reuses; a source address that the CQ does
 *    resolve must agree with the rank carried, or the datagram is dropped.
 *    The mtu offered is the provider's less those 4 bytes.
 *  - Datagrams wait in the kernel socket buffer until read, and Linux's
 *    default (208 KiB) is small: 8 ranks each sending 256 datagrams of 1.4 KiB
 *    to every other rank at once lost 75% of them with it, none with 4 MiB
 *    (test/mpi/dgram_pingpong --window 256).  The provider exposes no socket
 *    option, so the socket is found by its bound name and given
 *    sampi_ofi_udp_rcvbuf bytes (SO_RCVBUFFORCE as root, else capped by
 *    net.core.rmem_max).
 *  - Waiting follows the wait mode (src/base/wait_mode.h): poll and yield
 *    read the CQ between sampi_wait_pause turns; block sleeps in
 *    fi_cq_sreadfrom (the CQ's FD wait set holds the socket), so a rank
 *    waiting for a late peer uses no CPU.  sread's timeout is in whole
 *    milliseconds, rounded up: recv() may return up to 1 ms after its
 *    deadline in block mode.
 */
#include "ofi_util.h"
#include "dgram_backend.h"
#include "module.h"
#include "netdev.h"
#include "sampi_internal.h"
#include "wait.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static const struct sampi_dgram_ops udp_ops; /* at the end */

#define UDP_API_VERSION FI_VERSION(1, 10)
#define UDP_NAME_MAX    128   /* fi_getname: a struct sockaddr_in here */
#define UDP_RX_SLOTS    64    /* posted receive buffers; the kernel buffer holds the rest */
#define UDP_WIRE_BYTES  4     /* struct wire */
#define UDP_IP_HEADERS  28    /* IPv4 (20) and UDP (8) headers */
#define UDP_MAX_PAYLOAD 65507 /* 65535 less the IPv4 and UDP headers */
#define UDP_CHECK_MS    2000  /* how long the self-check waits for its datagram */

/* What this backend puts in front of the caller's bytes (network order). */
struct wire {
    uint16_t src; /* sender's rank */
    uint16_t tag; /* instance tag agreed at open */
};
_Static_assert(sizeof(struct wire) == UDP_WIRE_BYTES, "struct wire is packed");

/* Opens in this process: the proposals from which instance tags are agreed. */
static _Atomic unsigned open_count;

struct rx_slot {
    unsigned char *buf;
};

struct udp_dgram {
    struct sampi_dgram base;
    struct fi_info *info; /* the entry used, detached from fi_getinfo's list */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *rx_cq, *tx_cq;
    struct fid_av *av;
    struct fid_ep *ep;
    fi_addr_t *peers; /* rank -> AV address */
    int table_order;  /* peers[r] == r for every r: the AV index is the rank */
    int blocking;     /* rx_cq has an FD wait object for fi_cq_sreadfrom (block mode) */
    int rcvbuf;       /* the socket's receive buffer after set-up, 0 if unknown */
    uint16_t tag;     /* agreed instance tag (struct wire) */
    size_t wire_mtu;  /* largest datagram sent, our header included */
    size_t prov_mtu;  /* the provider's advertised limit */
    unsigned char *txbuf;
    struct rx_slot slots[UDP_RX_SLOTS];
    unsigned char *slab;
    char addr[SAMPI_CVAR_STRING_MAX];
};

enum udp_stage {
    ST_NONE,
    ST_NOMEM,
    ST_ADDR,
    ST_GETINFO,
    ST_NO_DOMAIN,
    ST_FABRIC,
    ST_DOMAIN,
    ST_CQ,
    ST_AV,
    ST_ENDPOINT,
    ST_BIND,
    ST_ENABLE,
    ST_POST,
    ST_GETNAME,
    ST_AV_INSERT,
    ST__COUNT,
};

static const char *const stage_names[ST__COUNT] = {
    [ST_NONE] = "nothing",
    [ST_NOMEM] = "memory allocation",
    [ST_ADDR] = "parsing sampi_ofi_udp_addr (an IPv4 address)",
    [ST_GETINFO] = "fi_getinfo",
    [ST_NO_DOMAIN] = "finding a udp domain bound to that address",
    [ST_FABRIC] = "fi_fabric",
    [ST_DOMAIN] = "fi_domain",
    [ST_CQ] = "fi_cq_open",
    [ST_AV] = "fi_av_open",
    [ST_ENDPOINT] = "fi_endpoint",
    [ST_BIND] = "fi_ep_bind",
    [ST_ENABLE] = "fi_enable",
    [ST_POST] = "posting receive buffers",
    [ST_GETNAME] = "fi_getname",
    [ST_AV_INSERT] = "fi_av_insert",
};

static void udp_close(struct sampi_dgram *base)
{
    struct udp_dgram *dg = (struct udp_dgram *)base;
    if (!dg)
        return;
    /* Our receive slots die with the endpoint, closed first. */
    sampi_ofi_close_all(dg->ep, dg->av, dg->rx_cq, dg->tx_cq, dg->domain, dg->fabric, dg->info);
    free(dg->slab);
    free(dg->txbuf);
    free(dg->peers);
    free(dg);
}

static struct fi_info *make_hints(void)
{
    struct fi_info *hints = sampi_ofi_hints("udp");
    if (!hints)
        return NULL;
    hints->caps = FI_MSG | FI_SEND | FI_RECV | FI_SOURCE;
    hints->mode = 0;
    hints->addr_format = FI_SOCKADDR_IN;
    hints->ep_attr->type = FI_EP_DGRAM;
    return hints;
}

/* The entry of `list` whose endpoint would be bound to exactly `want`, unlinked
 * from the list (which the caller frees), or NULL. */
static struct fi_info *take_entry(struct fi_info **list, const struct in_addr *want)
{
    for (struct fi_info **p = list; *p; p = &(*p)->next) {
        const struct sockaddr_in *sa = (*p)->src_addr;
        if (!sa || (*p)->src_addrlen < sizeof(*sa) || sa->sin_family != AF_INET ||
            sa->sin_addr.s_addr != want->s_addr)
            continue;
        struct fi_info *hit = *p;
        *p = hit->next;
        hit->next = NULL;
        return hit;
    }
    return NULL;
}

/* Give the endpoint's socket a larger receive buffer.  libfabric offers no
 * option for it, so the socket is found among the process's descriptors by
 * its bound address (the port makes it unique on this host).  Returns the
 * buffer size the kernel reports afterwards, or 0 when the socket was not
 * found. */
static int grow_rcvbuf(const struct sockaddr_in *name, long long want)
{
    int got = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);
        if (*end || end == de->d_name || fd == dirfd(d))
            continue;
        struct sockaddr_in sa;
        socklen_t len = sizeof(sa);
        int type = 0;
        socklen_t tlen = sizeof(type);
        if (getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &tlen) || type != SOCK_DGRAM)
            continue;
        if (getsockname((int)fd, (struct sockaddr *)&sa, &len) || len < sizeof(sa) ||
            sa.sin_family != AF_INET || sa.sin_port != name->sin_port ||
            sa.sin_addr.s_addr != name->sin_addr.s_addr)
            continue;
        if (want > 0) {
            int v = want > INT_MAX / 2 ? INT_MAX / 2 : (int)want; /* the kernel doubles it */
            if (setsockopt((int)fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
                setsockopt((int)fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
        }
        socklen_t glen = sizeof(got);
        if (getsockopt((int)fd, SOL_SOCKET, SO_RCVBUF, &got, &glen))
            got = 0;
        break;
    }
    closedir(d);
    return got;
}

/* The MTU of the interface that owns `addr`, or 0 when none does. */
static int iface_mtu(const struct in_addr *addr)
{
    struct ifaddrs *list = NULL;
    int mtu = 0;
    if (getifaddrs(&list))
        return 0;
    for (struct ifaddrs *i = list; i && !mtu; i = i->ifa_next) {
        const struct sockaddr_in *sa = (const struct sockaddr_in *)i->ifa_addr;
        if (!sa || sa->sin_family != AF_INET || sa->sin_addr.s_addr != addr->s_addr)
            continue;
        struct ifreq req;
        memset(&req, 0, sizeof(req));
        snprintf(req.ifr_name, sizeof(req.ifr_name), "%s", i->ifa_name);
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &req) == 0)
            mtu = req.ifr_mtu;
        if (fd >= 0)
            close(fd);
    }
    freeifaddrs(list);
    return mtu;
}

/* The datagram size to use, our header included: sampi_ofi_udp_mtu, or the
 * bound interface's MTU less the IP headers, or the provider's limit. */
static size_t wanted_mtu(const struct in_addr *addr, size_t prov_mtu)
{
    long long set = sampi_cvar_int(SAMPI_CVAR_OFI_UDP_MTU);
    if (set > 0)
        return (size_t)set;
    int ifmtu = iface_mtu(addr);
    if (ifmtu <= UDP_IP_HEADERS)
        return prov_mtu;
    size_t m = (size_t)ifmtu - UDP_IP_HEADERS;
    return m > UDP_MAX_PAYLOAD ? UDP_MAX_PAYLOAD : m;
}

static int post_slot(struct udp_dgram *dg, struct rx_slot *s)
{
    ssize_t rc = fi_recv(dg->ep, s->buf, dg->wire_mtu, NULL, FI_ADDR_UNSPEC, s);
    return rc ? sampi_ofi_neg_errno(rc) : 0;
}

/* Open everything local.  ST_NONE, or the failing stage and *fi_err. */
static enum udp_stage open_local(struct udp_dgram *dg, char *name, size_t *namelen, int *fi_err)
{
    enum udp_stage st = ST_ADDR;
    struct fi_info *hints = NULL, *list = NULL;
    struct in_addr want;
    int rc = 0;
    if (inet_pton(AF_INET, dg->addr, &want) != 1) {
        rc = -FI_EINVAL;
        goto fail;
    }
    st = ST_NOMEM;
    if (!(hints = make_hints())) {
        rc = -FI_ENOMEM;
        goto fail;
    }
    st = ST_GETINFO;
    /* Port 0: the kernel picks a free one; fi_getname tells it. */
    if ((rc = fi_getinfo(UDP_API_VERSION, dg->addr, "0", FI_SOURCE, hints, &list)))
        goto fail;
    st = ST_NO_DOMAIN;
    if (!(dg->info = take_entry(&list, &want))) {
        rc = -FI_ENODATA;
        goto fail;
    }
    dg->prov_mtu = dg->info->ep_attr->max_msg_size;
    if (dg->info->tx_attr->inject_size < dg->prov_mtu)
        dg->prov_mtu = dg->info->tx_attr->inject_size;
    dg->wire_mtu = wanted_mtu(&want, dg->prov_mtu);
    if (dg->wire_mtu <= UDP_WIRE_BYTES) {
        rc = -FI_EMSGSIZE;
        goto fail;
    }
    dg->base.mtu = dg->wire_mtu - UDP_WIRE_BYTES;

    st = ST_FABRIC;
    if ((rc = fi_fabric(dg->info->fabric_attr, &dg->fabric, NULL)))
        goto fail;
    st = ST_DOMAIN;
    if ((rc = fi_domain(dg->fabric, dg->info, &dg->domain, NULL)))
        goto fail;

    st = ST_CQ;
    struct fi_cq_attr rx_attr = {.format = FI_CQ_FORMAT_MSG, .size = UDP_RX_SLOTS};
    if ((rc = sampi_ofi_cq_open(dg->domain, &rx_attr, &dg->rx_cq, &dg->blocking)))
        goto fail;
    /* Injected sends write no completion, but the provider will not enable
     * an endpoint without a transmit CQ. */
    struct fi_cq_attr tx_attr = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};
    if ((rc = fi_cq_open(dg->domain, &tx_attr, &dg->tx_cq, NULL)))
        goto fail;

    st = ST_AV;
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .count = (size_t)dg->base.size};
    if ((rc = fi_av_open(dg->domain, &av_attr, &dg->av, NULL)))
        goto fail;

    st = ST_ENDPOINT;
    if ((rc = fi_endpoint(dg->domain, dg->info, &dg->ep, NULL)))
        goto fail;
    st = ST_BIND;
    if ((rc = fi_ep_bind(dg->ep, &dg->rx_cq->fid, FI_RECV)) ||
        (rc = fi_ep_bind(dg->ep, &dg->tx_cq->fid, FI_TRANSMIT)) ||
        (rc = fi_ep_bind(dg->ep, &dg->av->fid, 0)))
        goto fail;
    st = ST_ENABLE;
    if ((rc = fi_enable(dg->ep)))
        goto fail;

    st = ST_NOMEM;
    dg->slab = malloc(UDP_RX_SLOTS * dg->wire_mtu);
    dg->txbuf = malloc(dg->wire_mtu);
    if (!dg->slab || !dg->txbuf) {
        rc = -FI_ENOMEM;
        goto fail;
    }
    st = ST_POST;
    for (int i = 0; i < UDP_RX_SLOTS; i++) {
        dg->slots[i].buf = dg->slab + (size_t)i * dg->wire_mtu;
        if ((rc = post_slot(dg, &dg->slots[i])))
            goto fail;
    }
    st = ST_GETNAME;
    if ((rc = fi_getname(&dg->ep->fid, name, namelen)))
        goto fail;
    if (*namelen >= sizeof(struct sockaddr_in))
        dg->rcvbuf = grow_rcvbuf((const struct sockaddr_in *)name,
                                 sampi_cvar_int(SAMPI_CVAR_OFI_UDP_RCVBUF));
    fi_freeinfo(hints);
    fi_freeinfo(list);
    *fi_err = 0;
    return ST_NONE;
fail:
    if (hints)
        fi_freeinfo(hints);
    if (list)
        fi_freeinfo(list);
    *fi_err = rc < 0 ? -rc : rc;
    return st;
}

/* One read of the receive CQ: what fi_cq_readfrom returned when it found a
 * completion (or an error to read), else, before the deadline, after waiting
 * as the wait mode says (sleeping in fi_cq_sreadfrom in block mode, one
 * sampi_wait_pause turn otherwise); -FI_ETIMEDOUT once the deadline passed. */
static ssize_t next_completion(struct udp_dgram *dg, struct fi_cq_msg_entry *e, fi_addr_t *src,
                               int64_t deadline_ns, unsigned *spins)
{
    ssize_t rc = fi_cq_readfrom(dg->rx_cq, e, 1, src);
    if (rc != -FI_EAGAIN)
        return rc;
    int64_t now = sampi_now_ns();
    if (now >= deadline_ns)
        return -FI_ETIMEDOUT;
    if (!dg->blocking || sampi_wait_mode_now() != SAMPI_WAIT_BLOCK) {
        sampi_wait_pause(spins);
        return rc;
    }
    *src = FI_ADDR_NOTAVAIL;
    sampi_wait_count_sleep();
    return fi_cq_sreadfrom(dg->rx_cq, e, 1, src, NULL, sampi_ofi_ms_until(deadline_ns, now));
}

/* A datagram of wire_mtu bytes sent to this endpoint comes back whole: the
 * provider advertises less than the socket carries, so a larger size is
 * tried once before it is used.  Run inside open, before the ranks' last
 * agreement, so no peer's datagram can be in flight yet; anything else that
 * arrives (a stale datagram for an earlier user of this port) is dropped. */
static int self_check(struct udp_dgram *dg)
{
    struct wire w = {htons((uint16_t)dg->base.rank), htons(dg->tag)};
    memset(dg->txbuf, 0xA5, dg->wire_mtu);
    memcpy(dg->txbuf, &w, sizeof(w));
    ssize_t rc;
    unsigned spins = 0;
    int tries = 0;
    while ((rc = fi_inject(dg->ep, dg->txbuf, dg->wire_mtu, dg->peers[dg->base.rank])) ==
               -FI_EAGAIN &&
           ++tries < 1000)
        sampi_wait_pause(&spins);
    if (rc)
        return 0;
    int64_t deadline = sampi_now_ns() + (int64_t)UDP_CHECK_MS * 1000000;
    spins = 0;
    while (sampi_now_ns() < deadline) {
        struct fi_cq_msg_entry e;
        fi_addr_t src = FI_ADDR_NOTAVAIL;
        rc = next_completion(dg, &e, &src, deadline, &spins);
        if (rc == -FI_EAGAIN || rc == -FI_ETIMEDOUT)
            continue;
        if (rc != 1)
            return 0;
        struct rx_slot *slot = e.op_context;
        int same = e.len == dg->wire_mtu && memcmp(slot->buf, dg->txbuf, dg->wire_mtu) == 0;
        if (post_slot(dg, slot))
            return 0;
        if (same)
            return 1;
    }
    return 0;
}

static void warn_failure(int my_rank, const char *addr, const struct sampi_dgram_vote *v)
{
    if (my_rank != 0)
        return;
    int st = v->fail_stage > ST_NONE && v->fail_stage < ST__COUNT ? v->fail_stage : ST_NONE;
    sampi_log_warn("ofi-udp datagram transport unavailable: %s failed on rank %d (address "
                   "'%s' on rank 0): %s",
                   stage_names[st], v->fail_rank, addr,
                   v->fail_err ? fi_strerror(v->fail_err) : "no error code");
}

static int udp_open(MPI_Comm comm, struct sampi_waiter *w, struct sampi_dgram **out)
{
    struct udp_dgram *dg = calloc(1, sizeof(*dg));
    char *names = NULL;
    char name[UDP_NAME_MAX];
    size_t namelen = sizeof(name);
    int rank = 0, size = 0, fi_err = FI_ENOMEM, wrc = 0; /* wrc: a wait that failed */
    enum udp_stage st = ST_NOMEM;
    char addr[SAMPI_CVAR_STRING_MAX] = "";

    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    sampi_cvar_text(SAMPI_CVAR_OFI_UDP_ADDR, addr, sizeof(addr));
    memset(name, 0, sizeof(name));
    /* Every rank makes the same collective calls whatever happens locally;
     * differences show up in the agreement, never as a hang. */
    if (dg) {
        dg->base.ops = &udp_ops;
        dg->base.rank = rank;
        dg->base.size = size;
        snprintf(dg->addr, sizeof(dg->addr), "%s", addr);
        dg->peers = calloc((size_t)size, sizeof(*dg->peers));
        names = calloc((size_t)size, UDP_NAME_MAX);
        st = dg->peers && names ? open_local(dg, name, &namelen, &fi_err) : ST_NOMEM;
    }
    struct sampi_dgram_vote v;
    if ((wrc = sampi_dgram_vote(comm, w, rank, st, fi_err, ++open_count & 0xffff, &v)))
        goto fail;
    if (!v.all_ok) {
        warn_failure(rank, addr, &v);
        goto fail;
    }
    if ((wrc = sampi_waiter_allgather(w, name, UDP_NAME_MAX, MPI_BYTE, names, comm)))
        goto fail;

    dg->tag = (uint16_t)v.max;
    st = ST_NONE;
    fi_err = 0;
    dg->table_order = 1;
    for (int r = 0; r < size && st == ST_NONE; r++) {
        int n = fi_av_insert(dg->av, names + (size_t)r * UDP_NAME_MAX, 1, &dg->peers[r], 0, NULL);
        if (n != 1) {
            st = ST_AV_INSERT;
            fi_err = n < 0 ? -n : FI_EINVAL;
        }
        dg->table_order &= dg->peers[r] == (fi_addr_t)r;
    }
    if (st == ST_NONE && dg->wire_mtu > dg->prov_mtu && !self_check(dg)) {
        sampi_log(SAMPI_LOG_SETUP,
                  "ofi-udp: a %zu-byte datagram did not reach this rank; using %zu", dg->wire_mtu,
                  dg->prov_mtu);
        dg->wire_mtu = dg->prov_mtu;
    }
    if ((wrc = sampi_dgram_vote(comm, w, rank, st, fi_err, 0, &v)))
        goto fail;
    if (!v.all_ok) {
        warn_failure(rank, addr, &v);
        goto fail;
    }
    /* the algorithm cuts its data by the mtu: every rank uses the smallest */
    unsigned long long mine = dg->wire_mtu, agreed = 0;
    if ((wrc = sampi_waiter_allreduce(w, &mine, &agreed, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm)))
        goto fail;
    dg->wire_mtu = (size_t)agreed; /* never above the slots' size */
    dg->base.mtu = dg->wire_mtu - UDP_WIRE_BYTES;
    free(names);
    sampi_log(SAMPI_LOG_SETUP,
              "ofi-udp: domain %s, %s, mtu %zu, %s waits, socket receive buffer %d bytes",
              dg->info->domain_attr->name, dg->addr, dg->base.mtu,
              dg->blocking ? "blocking" : "polled", dg->rcvbuf);
    *out = &dg->base;
    return 0;
fail:
    free(names);
    udp_close(dg ? &dg->base : NULL);
    *out = NULL;
    return wrc ? wrc : -ENODEV;
}

static int udp_send(struct sampi_dgram *base, int peer, const void *buf, size_t len)
{
    struct udp_dgram *dg = (struct udp_dgram *)base;
    int bad = sampi_dgram_check_send(base, peer, len);
    if (bad)
        return bad;
    struct wire w = {htons((uint16_t)base->rank), htons(dg->tag)};
    memcpy(dg->txbuf, &w, sizeof(w));
    memcpy(dg->txbuf + sizeof(w), buf, len);
    ssize_t rc = fi_inject(dg->ep, dg->txbuf, len + sizeof(w), dg->peers[peer]);
    if (rc == -FI_EAGAIN)
        return -EAGAIN;
    return rc ? sampi_ofi_neg_errno(rc) : 0;
}

static int rank_of(const struct udp_dgram *dg, fi_addr_t src)
{
    if (src == FI_ADDR_NOTAVAIL || src == FI_ADDR_UNSPEC)
        return -1;
    if (dg->table_order)
        return src < (fi_addr_t)dg->base.size ? (int)src : -1;
    for (int r = 0; r < dg->base.size; r++)
        if (dg->peers[r] == src)
            return r;
    return -1;
}

/* What one CQ read gave: 1 and the datagram's length in *len (copied to buf,
 * its slot posted again), 0 when nothing usable was there (a foreign or
 * malformed datagram is dropped), or a negative errno. */
static int take(struct udp_dgram *dg, ssize_t rc, const struct fi_cq_msg_entry *e, fi_addr_t src,
                void *buf, size_t cap, int *peer, ssize_t *len)
{
    if (rc == -FI_EAGAIN || rc == -FI_ETIMEDOUT || rc == 0)
        return 0;
    if (rc == -FI_EAVAIL) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof(err));
        if (fi_cq_readerr(dg->rx_cq, &err, 0) < 0)
            return -EIO;
        if (err.op_context) {
            int prc = post_slot(dg, err.op_context);
            if (prc)
                return prc;
        }
        if (sampi_log_enabled(SAMPI_LOG_SETUP))
            sampi_log(SAMPI_LOG_SETUP, "ofi-udp: receive error: %s",
                      fi_strerror(err.err ? err.err : FI_EIO));
        return 0; /* that datagram is lost; the caller keeps waiting */
    }
    if (rc < 0)
        return sampi_ofi_neg_errno(rc);
    struct rx_slot *s = e->op_context;
    struct wire w;
    int from = -1, usable = e->len >= sizeof(w);
    if (usable) {
        memcpy(&w, s->buf, sizeof(w));
        from = ntohs(w.src);
        int said = rank_of(dg, src);
        usable = ntohs(w.tag) == dg->tag && from < dg->base.size && from != dg->base.rank &&
                 (said < 0 || said == from);
    }
    if (usable) {
        size_t n = e->len - sizeof(w);
        *len = n <= cap ? (ssize_t)n : -EMSGSIZE;
        if (n <= cap)
            memcpy(buf, s->buf + sizeof(w), n);
        *peer = from;
    }
    int prc = post_slot(dg, s);
    return prc ? prc : usable;
}

static ssize_t udp_recv(struct sampi_dgram *base, void *buf, size_t cap, int *peer,
                        int64_t deadline_ns)
{
    struct udp_dgram *dg = (struct udp_dgram *)base;
    unsigned spins = 0;
    ssize_t len = 0;
    *peer = -1;
    for (;;) {
        struct fi_cq_msg_entry e;
        fi_addr_t src = FI_ADDR_NOTAVAIL;
        ssize_t rc = next_completion(dg, &e, &src, deadline_ns, &spins);
        int got = take(dg, rc, &e, src, buf, cap, peer, &len);
        if (got)
            return got < 0 ? got : len;
        if (sampi_now_ns() >= deadline_ns)
            return -ETIMEDOUT;
    }
}

/* ------------------------------------------------------------ sampi_info */

static int udp_probe(char *detail, size_t len)
{
    struct fi_info *hints = NULL, *list = NULL, *entry = NULL;
    char addr[SAMPI_CVAR_STRING_MAX] = "";
    struct in_addr want;
    int rc = -EINVAL;
    sampi_cvar_text(SAMPI_CVAR_OFI_UDP_ADDR, addr, sizeof(addr));
    snprintf(detail, len, "sampi_ofi_udp_addr '%s' is not an IPv4 address", addr);
    if (inet_pton(AF_INET, addr, &want) != 1)
        goto fail;
    /* fi_getinfo answers for any address; binding needs one of ours. */
    rc = -EADDRNOTAVAIL;
    snprintf(detail, len, "no interface here has sampi_ofi_udp_addr %s", addr);
    if (iface_mtu(&want) == 0)
        goto fail;
    rc = -ENOMEM;
    snprintf(detail, len, "out of memory");
    if (!(hints = make_hints()))
        goto fail;
    if ((rc = fi_getinfo(UDP_API_VERSION, addr, "0", FI_SOURCE, hints, &list))) {
        snprintf(detail, len, "fi_getinfo on %s: %s", addr, fi_strerror(-rc));
        rc = sampi_ofi_neg_errno(rc);
        goto fail;
    }
    rc = -ENODEV;
    snprintf(detail, len, "no udp domain bound to %s", addr);
    if (!(entry = take_entry(&list, &want)))
        goto fail;
    size_t prov_mtu = entry->ep_attr->max_msg_size;
    if (entry->tx_attr->inject_size < prov_mtu)
        prov_mtu = entry->tx_attr->inject_size;
    snprintf(detail, len, "fi_getinfo: udp on %s, datagrams of up to %zu bytes", addr,
             wanted_mtu(&want, prov_mtu));
    rc = 0;
fail:
    if (entry)
        fi_freeinfo(entry);
    if (list)
        fi_freeinfo(list);
    if (hints)
        fi_freeinfo(hints);
    return rc;
}

static const struct sampi_dgram_ops udp_ops = {
    .name = "ofi-udp",
    .description = "libfabric FI_EP_DGRAM on the udp provider (address: sampi_ofi_udp_addr)",
    .open = udp_open,
    .close = udp_close,
    .send = udp_send,
    .recv = udp_recv,
    .probe = udp_probe,
};

/* The module's one exported symbol (module.h). */
SAMPI_MODULE_DEFINE("ofi-udp", NULL, &udp_ops, NULL);
