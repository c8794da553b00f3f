/*
 * dpdk.c - the `dpdk` datagram transport: UDP/IPv4 frames of our own over
 * one DPDK port (netdev/dgram.h).
 *
 * Process-wide, set up at the first open and torn down by the module's
 * finalize (sampi_module_finalize_all, from MPI_Finalize):
 *  - The EAL, initialised once from sampi_dpdk_eal_args (synthetic argv; %p
 *    and %r expanded so each rank has its own --file-prefix and interface),
 *    plus --vdev=sampi_dpdk_vdev and "-l CPU".  CPU is the PU sampi_pin
 *    gives the progress threads, else the last PU of the binding mpirun gave
 *    the process (hwloc_get_cpubind), so the lcore is inside it (sampi_pin
 *    never leaves it); rte_eal_init pins the calling thread to that lcore, and the
 *    thread's own affinity is restored afterwards, so the application's main
 *    thread keeps the binding it had.  The library installs no signal
 *    handler and never calls rte_exit: a failure is a return code, agreed
 *    across ranks, and named in one warning line.  The EAL cannot be
 *    initialised twice in a process, so a failure or a finalize is final.
 *  - One port (the first DPDK reports), one RX and one TX queue, one mbuf
 *    pool of sampi_dpdk_mbufs buffers, each big enough for one frame.
 *  - The link MTU: sampi_dpdk_mtu, or when that is 0 the MTU of the
 *    af_packet interface (/sys/class/net/IFACE/mtu), else 1500.  For the
 *    af_packet PMD, the vdev gains the ring geometry it does not set itself
 *    (framesz, blocksz, framecnt; dpdk_args.c): frames that hold an
 *    MTU-sized packet, and AFP_RING_BYTES of them.  The RX ring is where a
 *    burst waits while this rank is not scheduled; when it is full the
 *    kernel drops frames, and on two busy cores the PMD's default (512
 *    frames of 2 KiB) overflowed with 3 ranks.  Those drops are counted by
 *    the kernel (PACKET_STATISTICS), not by DPDK 22.11's af_packet stats, so
 *    the socket is found among the process's descriptors and its counters
 *    are logged at each close (sampi_verbose >= 2) with rte_eth_stats.
 *
 * Per instance (per communicator): a UDP port agreed by its ranks (every
 * rank proposes one above any it used, the maximum wins), the peers' MAC and
 * IPv4 addresses gathered with one allgather (no ARP, no address file), and
 * a ring of received mbufs.  Whoever polls the port (under one lock) sorts
 * what rx_burst returns into the instances' rings by UDP destination port;
 * frames that are not IPv4/UDP to our address and a known port are freed.
 * The sender's rank is found from its IPv4 source address.
 *
 * Frames: Ethernet II | IPv4 (20 bytes, DF, checksum in software) | UDP
 * (checksum 0) | the caller's bytes; a datagram is the link MTU less 28
 * bytes (1472 at 1500, 8972 at 9000), and the ranks of a communicator use
 * the smallest of their values (agreed at open), so no rank sends a frame
 * another cannot receive.
 *
 * Waiting polls rx_burst with one sampi_wait_pause turn between empty polls:
 * no pause with a core per rank, a yield on an oversubscribed node (so ranks
 * sharing two cores still progress), sleeps of up to 1 ms only in the block
 * wait mode (src/base/wait_mode.h).
 *
 * Tested over the af_packet PMD on veths joined by a bridge in a private
 * network namespace (test/mpi/dgram-netns.sh, test/mpi/dpdk.test).
 */
#define _GNU_SOURCE /* pthread_{get,set}affinity_np */
#include "dgram_backend.h"
#include "module.h"
#include "netdev.h"
#include "pin.h"
#include "sampi_internal.h"
#include "wait.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_udp.h>
#include <rte_version.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <hwloc.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const struct sampi_dgram_ops dpdk_ops; /* at the end */

#define IP_UDP_BYTES ((int)sizeof(struct rte_ipv4_hdr) + (int)sizeof(struct rte_udp_hdr))
#define HDRS_BYTES                                                                                 \
    (sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr))
#define MAX_INSTANCES 64
#define PORT_SPAN     4096
#define RX_BURST      32
#define RX_DESC       1024
#define TX_DESC       1024
#define INSTANCE_RING 4096 /* received mbufs an instance can hold unread */
#define MAX_EAL_ARGS  64
/* af_packet RX ring (and as much again for TX), unless sampi_dpdk_vdev sets
 * framecnt: 3 and 4 ranks on 2 busy cores lost frames with 1 MiB (the
 * PMD's default), none with 16 MiB (test/mpi/optireduce_dpdk.test). */
#define AFP_RING_BYTES ((size_t)16 << 20)
/* What a TPACKET_V2 frame holds before the packet (dpdk_args.c). */
#define AFP_TX_OFFSET 32

/* What every rank tells the others at open. */
struct dpdk_addr {
    struct rte_ether_addr mac;
    uint16_t pad;
    uint32_t ip; /* network order */
};

struct dpdk_dgram {
    struct sampi_dgram base;
    struct dpdk_addr *peers;
    uint16_t udp_port; /* network order */
    struct rte_ring *rxq;
    unsigned serial; /* agreed instance number */
};

enum dpdk_stage {
    ST_NONE,
    ST_NOMEM,
    ST_ARGS,
    ST_NO_IFACE,
    ST_EAL,
    ST_FINALIZED,
    ST_NO_PORT,
    ST_POOL,
    ST_CONFIGURE,
    ST_RXQ,
    ST_TXQ,
    ST_START,
    ST_IP,
    ST_MTU,
    ST_TOO_MANY,
    ST_RING,
    ST__COUNT,
};

static const char *const stage_names[ST__COUNT] = {
    [ST_NONE] = "nothing",
    [ST_NOMEM] = "memory allocation",
    [ST_ARGS] = "building the EAL arguments (sampi_dpdk_eal_args, sampi_dpdk_vdev)",
    [ST_NO_IFACE] = "finding the interface sampi_dpdk_vdev names for af_packet",
    [ST_EAL] = "rte_eal_init",
    [ST_FINALIZED] = "re-initialising DPDK after MPI_Finalize or a failed rte_eal_init",
    [ST_NO_PORT] =
        "finding a DPDK port (none was probed; is the interface in sampi_dpdk_vdev there?)",
    [ST_POOL] = "rte_pktmbuf_pool_create",
    [ST_CONFIGURE] = "rte_eth_dev_configure",
    [ST_RXQ] = "rte_eth_rx_queue_setup",
    [ST_TXQ] = "rte_eth_tx_queue_setup",
    [ST_START] = "rte_eth_dev_start",
    [ST_IP] = "parsing sampi_dpdk_ip_base (an IPv4 address)",
    [ST_MTU] = "sizing frames for the MTU (sampi_dpdk_mtu; framesz, blocksz, framecnt of "
               "sampi_dpdk_vdev)",
    [ST_TOO_MANY] = "finding a free instance slot (too many communicators use dpdk at once)",
    [ST_RING] = "rte_ring_create",
};

/* Process-wide state, under `lock` (also held around rx_burst and tx_burst). */
static struct {
    pthread_mutex_t lock;
    enum { EAL_NONE, EAL_READY, EAL_FAILED, EAL_DONE } eal;
    enum dpdk_stage fail_stage;
    int fail_err;
    uint16_t port;
    struct rte_mempool *pool;
    int mtu;       /* link MTU: IPv4 packets up to this size */
    int af_packet; /* the port is the af_packet PMD on `iface` */
    struct sampi_dpdk_afp afp;
    char iface[IF_NAMESIZE];
    int afp_fd; /* its socket, for PACKET_STATISTICS; -1 if not found */
    unsigned long long afp_rx, afp_drops, ring_full; /* cumulative */
    struct rte_ether_addr mac;
    uint32_t ip; /* network order */
    uint16_t ip_id;
    unsigned next_serial;
    struct dpdk_dgram *inst[MAX_INSTANCES];
    char eal_args[1024]; /* as passed, for the log */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The EAL's lcore: the PU sampi_pin gives SAMPI's progress threads (the
 * process's one place for SAMPI's own work), else the last PU of this
 * process's binding, or -1. */
static int binding_cpu(void)
{
    char why[200];
    int cpu = sampi_pin_progress_pu(why, sizeof(why));
    if (cpu >= 0)
        return cpu;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo))
        return -1;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set && hwloc_topology_load(topo) == 0 &&
        hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0)
        cpu = hwloc_bitmap_last(set);
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
    return cpu;
}

/* The MTU of `iface` from sysfs, or 0. */
static int iface_mtu(const char *iface)
{
    char path[64 + IF_NAMESIZE];
    int mtu = 0;
    snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", iface);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%d", &mtu) != 1)
            mtu = 0;
        fclose(f);
    }
    return mtu;
}

/* Build the EAL's argv in `text` (split in place) from the cvars and the
 * vdev with its af_packet ring sized for g.mtu; returns argc or -errno. */
static int build_args(char *text, size_t cap, char **argv, int world_rank)
{
    char args[SAMPI_CVAR_STRING_MAX], vdev[SAMPI_CVAR_STRING_MAX],
        sized[SAMPI_CVAR_STRING_MAX + 96];
    sampi_cvar_text(SAMPI_CVAR_DPDK_EAL_ARGS, args, sizeof(args));
    sampi_cvar_text(SAMPI_CVAR_DPDK_VDEV, vdev, sizeof(vdev));
    int rc = sampi_dpdk_af_packet_vdev(vdev, g.mtu, AFP_RING_BYTES, sysconf(_SC_PAGESIZE), sized,
                                       sizeof(sized), &g.afp);
    if (rc < 0)
        return rc;
    g.af_packet = rc;
    if (g.af_packet && g.mtu > g.afp.max_mtu)
        g.mtu = g.afp.max_mtu; /* a framesz set in sampi_dpdk_vdev bounds it */
    rc = sampi_dpdk_eal_cmdline(args, sized, (long)getpid(), world_rank, binding_cpu(), text, cap);
    if (rc)
        return rc;
    snprintf(g.eal_args, sizeof(g.eal_args), "%s", text);
    return sampi_dpdk_split_args(text, argv, MAX_EAL_ARGS);
}

/* The af_packet PMD's socket on `iface` among this process's descriptors,
 * or -1: its PACKET_STATISTICS count the frames the kernel dropped because
 * the RX ring was full, which DPDK 22.11's af_packet stats do not. */
static int find_packet_socket(const char *iface)
{
    unsigned idx = if_nametoindex(iface);
    DIR *d = idx ? opendir("/proc/self/fd") : NULL;
    int found = -1;
    if (!d)
        return -1;
    struct dirent *de;
    while (found < 0 && (de = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        int fd = atoi(de->d_name), domain = 0;
        socklen_t len = sizeof(domain);
        struct sockaddr_ll sll;
        socklen_t slen = sizeof(sll);
        if (fd == dirfd(d) || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
            domain != AF_PACKET || getsockname(fd, (struct sockaddr *)&sll, &slen) != 0 ||
            (unsigned)sll.sll_ifindex != idx)
            continue;
        found = fd;
    }
    closedir(d);
    return found;
}

/* Add the kernel's ring counters to the totals (reading resets them) and
 * log the totals with DPDK's port counters.  Under g.lock. */
static void log_ring_stats(const char *when)
{
    struct tpacket_stats ts;
    socklen_t len = sizeof(ts);
    if (g.afp_fd >= 0 && getsockopt(g.afp_fd, SOL_PACKET, PACKET_STATISTICS, &ts, &len) == 0) {
        /* tp_packets counts the dropped frames too */
        g.afp_rx += ts.tp_packets - ts.tp_drops;
        g.afp_drops += ts.tp_drops;
    }
    struct rte_eth_stats es;
    memset(&es, 0, sizeof(es));
    rte_eth_stats_get(g.port, &es);
    if (g.af_packet)
        sampi_log(SAMPI_LOG_SETUP,
                  "dpdk: %s: %s ring: %llu frames in, %llu dropped full%s; instance rings "
                  "full: %llu; port: %" PRIu64 " in, %" PRIu64 " out, %" PRIu64 " out errors",
                  when, g.iface, g.afp_rx, g.afp_drops, g.afp_fd < 0 ? " (socket not found)" : "",
                  g.ring_full, es.ipackets, es.opackets, es.oerrors);
    else
        sampi_log(SAMPI_LOG_SETUP,
                  "dpdk: %s: instance rings full: %llu; port: %" PRIu64 " in, %" PRIu64
                  " out, %" PRIu64 " missed, %" PRIu64 " in errors, %" PRIu64
                  " out errors, %" PRIu64 " no mbuf",
                  when, g.ring_full, es.ipackets, es.opackets, es.imissed, es.ierrors, es.oerrors,
                  es.rx_nombuf);
}

static enum dpdk_stage setup_port(int *err)
{
    enum dpdk_stage st = ST_NO_PORT;
    uint16_t port = RTE_MAX_ETHPORTS;
    uint16_t pid;
    RTE_ETH_FOREACH_DEV(pid)
    {
        port = pid;
        break;
    }
    if (port == RTE_MAX_ETHPORTS) {
        *err = ENODEV;
        return st;
    }
    g.port = port;
    int socket = rte_eth_dev_socket_id(port);
    if (socket < 0)
        socket = (int)rte_socket_id();
    st = ST_POOL;
    unsigned n = (unsigned)sampi_cvar_int(SAMPI_CVAR_DPDK_MBUFS);
    char name[RTE_MEMPOOL_NAMESIZE];
    snprintf(name, sizeof(name), "sampi_dg_%u", (unsigned)port);
    /* One frame per mbuf: the af_packet PMD refuses a pool whose buffers
     * are smaller than its frames (less their header). */
    size_t room = (size_t)RTE_ETHER_HDR_LEN + (size_t)g.mtu;
    if (g.af_packet && room < g.afp.framesz - AFP_TX_OFFSET)
        room = g.afp.framesz - AFP_TX_OFFSET;
    if (room < RTE_MBUF_DEFAULT_DATAROOM)
        room = RTE_MBUF_DEFAULT_DATAROOM;
    room += RTE_PKTMBUF_HEADROOM;
    if (room > UINT16_MAX) {
        *err = EINVAL;
        goto out;
    }
    g.pool = rte_pktmbuf_pool_create(name, n, 256, 0, (uint16_t)room, socket);
    if (!g.pool)
        goto fail;
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof(conf));
    /* A NIC is told the MTU; af_packet takes what the kernel interface
     * passes and reports a fixed 1518-byte limit that would refuse it. */
    if (!g.af_packet && g.mtu != RTE_ETHER_MTU)
        conf.rxmode.mtu = (uint32_t)g.mtu;
    st = ST_CONFIGURE;
    if ((*err = -rte_eth_dev_configure(port, 1, 1, &conf)) != 0)
        goto out;
    uint16_t nrx = RX_DESC, ntx = TX_DESC;
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
    st = ST_RXQ;
    if ((*err = -rte_eth_rx_queue_setup(port, 0, nrx, (unsigned)socket, NULL, g.pool)) != 0)
        goto out;
    st = ST_TXQ;
    if ((*err = -rte_eth_tx_queue_setup(port, 0, ntx, (unsigned)socket, NULL)) != 0)
        goto out;
    st = ST_START;
    if ((*err = -rte_eth_dev_start(port)) != 0)
        goto out;
    /* Peers' frames carry our MAC, but the bridge may flood others' too. */
    rte_eth_promiscuous_disable(port);
    rte_eth_macaddr_get(port, &g.mac);
    *err = 0;
    if (g.af_packet)
        g.afp_fd = find_packet_socket(g.iface);
    return ST_NONE;
fail:
    *err = rte_errno;
out:
    return st;
}

/* rte_eal_cleanup leaves the primary process's runtime directory
 * (/var/run/dpdk/<file-prefix>: config, fbarray files) behind; with a prefix
 * per process they would pile up, one directory per rank and run. */
static void remove_runtime_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char path[PATH_MAX];
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* rte_eal_cleanup, and the runtime directory with it. */
static void eal_shutdown(void)
{
    char dir[PATH_MAX] = "";
    if (rte_eal_process_type() == RTE_PROC_PRIMARY)
        snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
    rte_eal_cleanup();
    if (dir[0])
        remove_runtime_dir(dir);
}

/* Bring the EAL and the port up once per process.  Under g.lock. */
static enum dpdk_stage process_setup(int world_rank, int *err)
{
    if (g.eal == EAL_READY)
        return ST_NONE;
    if (g.eal != EAL_NONE) {
        *err = g.fail_err;
        return g.eal == EAL_DONE ? ST_FINALIZED : g.fail_stage;
    }
    char text[1024];
    char *argv[MAX_EAL_ARGS];
    enum dpdk_stage st = ST_ARGS;
    int final = 0; /* failures before rte_eal_init leave a later open free to retry */
    char vdev[SAMPI_CVAR_STRING_MAX];
    sampi_cvar_text(SAMPI_CVAR_DPDK_VDEV, vdev, sizeof(vdev));
    int has_iface =
        sampi_dpdk_vdev_iface(vdev, (long)getpid(), world_rank, g.iface, sizeof(g.iface));
    g.mtu = (int)sampi_cvar_int(SAMPI_CVAR_DPDK_MTU);
    if (g.mtu == 0 && has_iface)
        g.mtu = iface_mtu(g.iface);
    if (g.mtu == 0)
        g.mtu = RTE_ETHER_MTU;
    g.afp_fd = -1;
    int argc = build_args(text, sizeof(text), argv, world_rank);
    if (argc < 0) {
        *err = -argc;
        goto fail;
    }
    st = ST_MTU;
    if (g.mtu <= IP_UDP_BYTES + 64) {
        *err = EINVAL;
        goto fail;
    }
    /* An af_packet interface that does not exist fails the probe; say so
     * before starting the EAL, whose failure is final for the process. */
    st = ST_NO_IFACE;
    if (has_iface && if_nametoindex(g.iface) == 0) {
        *err = ENODEV;
        size_t n = strlen(g.eal_args);
        snprintf(g.eal_args + n, sizeof(g.eal_args) - n, " (no interface %s here)", g.iface);
        goto fail;
    }
    char ipb[SAMPI_CVAR_STRING_MAX];
    struct in_addr base;
    sampi_cvar_text(SAMPI_CVAR_DPDK_IP_BASE, ipb, sizeof(ipb));
    st = ST_IP;
    if (inet_pton(AF_INET, ipb, &base) != 1) {
        *err = EINVAL;
        goto fail;
    }
    g.ip = htonl(ntohl(base.s_addr) + (uint32_t)world_rank);

    /* rte_eal_init pins the calling thread to the main lcore: keep ours. */
    cpu_set_t mine;
    int have_mask = pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine) == 0;
    st = ST_EAL;
    final = 1;
    int64_t t0 = sampi_now_ns();
    int rc = rte_eal_init(argc, argv);
    int eal_err = rte_errno;
    if (have_mask)
        pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine);
    if (rc < 0) {
        *err = eal_err ? eal_err : EINVAL;
        goto fail;
    }
    st = setup_port(err);
    if (st != ST_NONE) {
        eal_shutdown();
        goto fail;
    }
    g.eal = EAL_READY;
    sampi_log(SAMPI_LOG_SETUP,
              "dpdk: EAL and port up in %.0f ms (%s), port %u, MAC " RTE_ETHER_ADDR_PRT_FMT
              ", link MTU %d",
              (sampi_now_ns() - t0) / 1e6, g.eal_args, (unsigned)g.port,
              RTE_ETHER_ADDR_BYTES(&g.mac), g.mtu);
    return ST_NONE;
fail:
    if (final) {
        g.eal = EAL_FAILED;
        g.fail_stage = st;
        g.fail_err = *err;
    }
    return st;
}

static void dpdk_close(struct sampi_dgram *base)
{
    struct dpdk_dgram *dg = (struct dpdk_dgram *)base;
    if (!dg)
        return;
    pthread_mutex_lock(&g.lock);
    int registered = 0;
    for (int i = 0; i < MAX_INSTANCES; i++)
        if (g.inst[i] == dg) {
            g.inst[i] = NULL;
            registered = 1;
        }
    if (registered && g.eal == EAL_READY)
        log_ring_stats("close");
    pthread_mutex_unlock(&g.lock);
    if (dg->rxq) {
        void *m;
        while (rte_ring_dequeue(dg->rxq, &m) == 0)
            rte_pktmbuf_free(m);
        rte_ring_free(dg->rxq);
    }
    free(dg->peers);
    free(dg);
}

/* The module's finalize (sampi_module_finalize_all, from MPI_Finalize). */
static void dpdk_finalize(void)
{
    pthread_mutex_lock(&g.lock);
    if (g.eal == EAL_READY) {
        log_ring_stats("finalize");
        rte_eth_dev_stop(g.port);
        rte_eth_dev_close(g.port);
        rte_mempool_free(g.pool);
        g.pool = NULL;
        eal_shutdown();
    }
    if (g.eal != EAL_NONE)
        g.eal = EAL_DONE;
    pthread_mutex_unlock(&g.lock);
}

static void warn_failure(int my_rank, const struct sampi_dgram_vote *v)
{
    if (my_rank != 0)
        return;
    int st = v->fail_stage > ST_NONE && v->fail_stage < ST__COUNT ? v->fail_stage : ST_NONE;
    sampi_log_warn("dpdk datagram transport unavailable: %s failed on rank %d: %s "
                   "(EAL arguments on rank 0: '%s')",
                   stage_names[st], v->fail_rank,
                   v->fail_err ? rte_strerror(v->fail_err) : "no error code",
                   g.eal_args[0] ? g.eal_args : "not built");
}

static int dpdk_open(MPI_Comm comm, struct sampi_waiter *w, struct sampi_dgram **out)
{
    struct dpdk_dgram *dg = calloc(1, sizeof(*dg));
    struct dpdk_addr *addrs = NULL;
    int rank = 0, size = 0, world = 0, err = ENOMEM, wrc = 0; /* wrc: a wait that failed */
    enum dpdk_stage st = ST_NOMEM;

    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world);
    pthread_mutex_lock(&g.lock);
    if (dg) {
        dg->base.ops = &dpdk_ops;
        dg->base.rank = rank;
        dg->base.size = size;
        dg->peers = calloc((size_t)size, sizeof(*dg->peers));
        addrs = dg->peers;
        st = addrs ? process_setup(world, &err) : ST_NOMEM;
    }
    /* Taken, not just read: a second communicator opening from another
     * thread meanwhile proposes another number.  (Two processes that open
     * two communicators in opposite orders can still agree on one number
     * for both; the second ring then fails to be created under the same
     * name, and that open fails cleanly on all its ranks.) */
    unsigned proposal = g.next_serial++;
    pthread_mutex_unlock(&g.lock);

    /* Success everywhere, and the instance number: the largest proposal. */
    struct sampi_dgram_vote v;
    if ((wrc = sampi_dgram_vote(comm, w, rank, st, err, proposal, &v)))
        goto fail;
    if (!v.all_ok) {
        warn_failure(rank, &v);
        goto fail;
    }
    dg->serial = (unsigned)v.max;
    dg->udp_port = htons(
        (uint16_t)(sampi_cvar_int(SAMPI_CVAR_DPDK_UDP_PORT) + (long long)(dg->serial % PORT_SPAN)));

    struct dpdk_addr me = {.mac = g.mac, .ip = g.ip};
    if ((wrc = sampi_waiter_allgather(w, &me, (int)sizeof(me), MPI_BYTE, addrs, comm)))
        goto fail;

    /* Register for the agreed port. */
    char name[RTE_RING_NAMESIZE];
    snprintf(name, sizeof(name), "sampi_dg_%u", dg->serial);
    st = ST_RING;
    err = 0;
    dg->rxq = rte_ring_create(name, INSTANCE_RING, SOCKET_ID_ANY, 0);
    if (!dg->rxq)
        err = rte_errno;
    pthread_mutex_lock(&g.lock);
    if (dg->rxq) {
        st = ST_TOO_MANY;
        for (int i = 0; i < MAX_INSTANCES; i++)
            if (!g.inst[i]) {
                g.inst[i] = dg;
                st = ST_NONE;
                break;
            }
    }
    if (g.next_serial <= dg->serial)
        g.next_serial = dg->serial + 1;
    int my_mtu = g.mtu;
    pthread_mutex_unlock(&g.lock);
    /* The datagram size: the smallest link MTU of the ranks (the largest
     * negated proposal), so every frame fits every receiver's ring. */
    if ((wrc = sampi_dgram_vote(comm, w, rank, st, err, -(long long)my_mtu, &v)))
        goto fail;
    if (!v.all_ok) {
        warn_failure(rank, &v);
        goto fail;
    }
    dg->base.mtu = (size_t)(-v.max - IP_UDP_BYTES);
    sampi_log(SAMPI_LOG_SETUP,
              "dpdk: instance %u on UDP port %u, %d ranks, datagrams of %zu bytes (link MTU %d "
              "here, %lld agreed), polled waits",
              dg->serial, (unsigned)ntohs(dg->udp_port), size, dg->base.mtu, my_mtu, -v.max);
    *out = &dg->base;
    return 0;
fail:
    dpdk_close(dg ? &dg->base : NULL);
    *out = NULL;
    return wrc ? wrc : -ENODEV;
}

static int dpdk_send(struct sampi_dgram *base, int peer, const void *buf, size_t len)
{
    struct dpdk_dgram *dg = (struct dpdk_dgram *)base;
    int bad = sampi_dgram_check_send(base, peer, len);
    if (bad)
        return bad;
    struct rte_mbuf *m = rte_pktmbuf_alloc(g.pool);
    if (!m)
        return -EAGAIN; /* every buffer is in a queue: the same remedy as a full ring */
    char *p = rte_pktmbuf_append(m, (uint16_t)(HDRS_BYTES + len));
    if (!p) {
        rte_pktmbuf_free(m);
        return -EMSGSIZE;
    }
    struct rte_ether_hdr *eth = (struct rte_ether_hdr *)p;
    struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
    struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
    rte_ether_addr_copy(&dg->peers[peer].mac, &eth->dst_addr);
    rte_ether_addr_copy(&g.mac, &eth->src_addr);
    eth->ether_type = htons(RTE_ETHER_TYPE_IPV4);
    memset(ip, 0, sizeof(*ip));
    ip->version_ihl = RTE_IPV4_VHL_DEF;
    ip->total_length = htons((uint16_t)(sizeof(*ip) + sizeof(*udp) + len));
    ip->fragment_offset = htons(RTE_IPV4_HDR_DF_FLAG);
    ip->time_to_live = 64;
    ip->next_proto_id = IPPROTO_UDP;
    ip->src_addr = g.ip;
    ip->dst_addr = dg->peers[peer].ip;
    udp->src_port = dg->udp_port;
    udp->dst_port = dg->udp_port;
    udp->dgram_len = htons((uint16_t)(sizeof(*udp) + len));
    udp->dgram_cksum = 0;
    memcpy(udp + 1, buf, len);
    pthread_mutex_lock(&g.lock);
    ip->packet_id = htons(g.ip_id++);
    ip->hdr_checksum = rte_ipv4_cksum(ip);
    uint16_t sent = rte_eth_tx_burst(g.port, 0, &m, 1);
    pthread_mutex_unlock(&g.lock);
    if (sent == 0) {
        rte_pktmbuf_free(m);
        return -EAGAIN;
    }
    return 0;
}

/* The UDP header of a frame for us, or NULL. */
static const struct rte_udp_hdr *udp_of(const struct rte_mbuf *m, const struct rte_ipv4_hdr **ipp)
{
    if (rte_pktmbuf_data_len(m) < HDRS_BYTES)
        return NULL;
    const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
    const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
    if (eth->ether_type != htons(RTE_ETHER_TYPE_IPV4) || ip->version_ihl != RTE_IPV4_VHL_DEF ||
        ip->next_proto_id != IPPROTO_UDP || ip->dst_addr != g.ip)
        return NULL;
    const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);
    size_t ulen = ntohs(udp->dgram_len);
    if (ulen < sizeof(*udp) || sizeof(*eth) + sizeof(*ip) + ulen > rte_pktmbuf_data_len(m))
        return NULL;
    *ipp = ip;
    return udp;
}

/* Poll the port once and sort what came into the instances' rings.  Under
 * g.lock.  Returns how many frames went to some instance. */
static int poll_port(void)
{
    struct rte_mbuf *pkts[RX_BURST];
    uint16_t n = rte_eth_rx_burst(g.port, 0, pkts, RX_BURST);
    int kept = 0;
    for (uint16_t i = 0; i < n; i++) {
        const struct rte_ipv4_hdr *ip;
        const struct rte_udp_hdr *udp = udp_of(pkts[i], &ip);
        struct dpdk_dgram *to = NULL;
        for (int k = 0; udp && k < MAX_INSTANCES && !to; k++)
            if (g.inst[k] && g.inst[k]->udp_port == udp->dst_port)
                to = g.inst[k];
        if (to && rte_ring_enqueue(to->rxq, pkts[i]) == 0) {
            kept++;
            continue;
        }
        if (to)
            g.ring_full++;
        rte_pktmbuf_free(pkts[i]);
    }
    return kept;
}

static int rank_of(const struct dpdk_dgram *dg, uint32_t ip)
{
    for (int r = 0; r < dg->base.size; r++)
        if (dg->peers[r].ip == ip && r != dg->base.rank)
            return r;
    return -1;
}

static ssize_t dpdk_recv(struct sampi_dgram *base, void *buf, size_t cap, int *peer,
                         int64_t deadline_ns)
{
    struct dpdk_dgram *dg = (struct dpdk_dgram *)base;
    unsigned spins = 0;
    *peer = -1;
    for (;;) {
        void *obj;
        while (rte_ring_dequeue(dg->rxq, &obj) == 0) {
            struct rte_mbuf *m = obj;
            const struct rte_ipv4_hdr *ip;
            const struct rte_udp_hdr *udp = udp_of(m, &ip);
            int from = udp ? rank_of(dg, ip->src_addr) : -1;
            if (from < 0) {
                rte_pktmbuf_free(m); /* not from a rank of this communicator */
                continue;
            }
            size_t len = ntohs(udp->dgram_len) - sizeof(*udp);
            ssize_t rc = len <= cap ? (ssize_t)len : -EMSGSIZE;
            if (len <= cap)
                memcpy(buf, udp + 1, len);
            rte_pktmbuf_free(m);
            *peer = from;
            return rc;
        }
        pthread_mutex_lock(&g.lock);
        int got = g.eal == EAL_READY ? poll_port() : -1;
        pthread_mutex_unlock(&g.lock);
        if (got < 0)
            return -ESHUTDOWN;
        if (got > 0) {
            spins = 0;
            continue;
        }
        if (sampi_now_ns() >= deadline_ns)
            return -ETIMEDOUT;
        sampi_wait_pause(&spins);
    }
}

/* ------------------------------------------------------------ sampi_info */

/* What can be told without starting the EAL (which a process can do only
 * once): the DPDK loaded, and for an af_packet vdev whether its interface
 * exists here (for rank 0) and whether this process may open raw sockets. */
static int dpdk_probe(char *detail, size_t len)
{
    char vdev[SAMPI_CVAR_STRING_MAX], iface[IF_NAMESIZE + 16];
    sampi_cvar_text(SAMPI_CVAR_DPDK_VDEV, vdev, sizeof(vdev));
    if (!sampi_dpdk_vdev_iface(vdev, (long)getpid(), 0, iface, sizeof(iface))) {
        snprintf(detail, len, "%s; device '%s' not checked before the EAL starts", rte_version(),
                 vdev[0] ? vdev : "from sampi_dpdk_eal_args");
        return 1;
    }
    if (if_nametoindex(iface) == 0) {
        snprintf(detail, len, "%s; no interface %s here for af_packet", rte_version(), iface);
        return -ENODEV;
    }
    int fd = socket(AF_PACKET, SOCK_RAW, 0);
    if (fd < 0) {
        int e = errno;
        snprintf(detail, len, "%s; af_packet on %s: %s (needs CAP_NET_RAW)", rte_version(), iface,
                 strerror(e));
        return -e;
    }
    close(fd);
    snprintf(detail, len, "%s; af_packet on %s, MTU %d", rte_version(), iface, iface_mtu(iface));
    return 0;
}

static const struct sampi_dgram_ops dpdk_ops = {
    .name = "dpdk",
    .description = "UDP/IPv4 frames over a DPDK port (EAL: sampi_dpdk_eal_args, sampi_dpdk_vdev)",
    .open = dpdk_open,
    .close = dpdk_close,
    .send = dpdk_send,
    .recv = dpdk_recv,
    .probe = dpdk_probe,
};

/* The module's one exported symbol (module.h). */
SAMPI_MODULE_DEFINE("dpdk", NULL, &dpdk_ops, dpdk_finalize);
