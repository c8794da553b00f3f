/*
 * dgram_pingpong.c - the datagram transport contract (netdev/dgram.h),
 * checked on each backend.
 *
 *   dgram_pingpong [--bench | --bench-only] [--rounds N] [--window W] [backend ...]
 *
 * Backends are names from sampi_dgram_names ("ofi-udp", "dpdk"); the
 * default is "ofi-udp".  Each is a module, found by the library's loader
 * (sampi_module_path, which the test scripts point at the build tree).
 * For each one, opened on MPI_COMM_WORLD with sampi_dgram_open:
 *   open      every rank gets an instance, rank and size right, mtu >= 64;
 *   args      send to itself or to a rank out of range gives -EINVAL, one byte
 *             over the mtu gives -EMSGSIZE;
 *   timeout   recv with nothing in flight returns -ETIMEDOUT no earlier than
 *             its deadline (and not seconds later); a deadline already past
 *             returns at once;
 *   exchange  N rounds; in each, every rank sends W datagrams to every other
 *             rank and receives until it has (size-1)*W of them.  Each
 *             datagram carries (round, source, destination, index, length) and
 *             a payload derived from them; lengths sweep 16 bytes .. mtu,
 *             both ends included.  The receiver checks the length recv
 *             returned, the peer it reported, the destination, every payload
 *             byte, and that no datagram arrives twice.  Datagrams that never
 *             came are counted as lost (see below);
 *   isolation two instances open at once (on MPI_COMM_WORLD and on a
 *             duplicate): what is sent on one never comes out of the other.
 * Loss: a datagram transport may lose datagrams; here, on loopback with a
 * window of W per peer and a 4 MiB socket buffer, none should be lost, so
 * the exchange check fails on any loss and prints how many were lost from
 * whom.  Corruption, a wrong peer or a duplicate is always a failure.
 *
 * --bench (ranks 0 and 1, the others idle): round-trip latency of 64-byte and
 * mtu-byte datagrams (median of 2000), and a one-way stream of mtu-byte
 * datagrams from 0 to 1 with a credit every W datagrams: datagrams/s, MB/s of
 * payload, and how many were lost.  Timings, not assertions.
 *
 * It links libsampi_core, not the interposer: MPI calls here are plain MPI.
 */
#include "config.h"
#include "dgram.h"
#include "log.h"
#include "module.h"
#include "mpitest.h"
#include "netdev.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC       0x44475054u /* 'DGPT' */
#define WAIT_NS     (5 * 1000000000LL)
#define HDR_BYTES   ((int)sizeof(struct dhdr))
#define MAX_REPORTS 5

static struct mt_state st;

struct dhdr {
    uint32_t magic;
    uint32_t round;
    uint16_t src, dst;
    uint32_t index;
    uint32_t len;
};

/* The length of datagram `index` in a round: sweeps HDR_BYTES .. mtu and
 * hits both ends. */
static size_t length_of(uint32_t index, uint32_t round, size_t mtu)
{
    size_t span = mtu - (size_t)HDR_BYTES + 1;
    if (index == 0)
        return mtu;
    if (index == 1)
        return (size_t)HDR_BYTES;
    return (size_t)HDR_BYTES + ((size_t)index * 7919u + round * 104729u) % span;
}

static unsigned char byte_at(const struct dhdr *h, size_t i)
{
    return (unsigned char)(i * 31u + h->src * 7u + h->dst * 13u + h->index * 5u + h->round);
}

static void fill(unsigned char *buf, uint32_t round, int src, int dst, uint32_t index, size_t len)
{
    struct dhdr h = {MAGIC, round, (uint16_t)src, (uint16_t)dst, index, (uint32_t)len};
    memcpy(buf, &h, sizeof(h));
    for (size_t i = sizeof(h); i < len; i++)
        buf[i] = byte_at(&h, i);
}

static int verdict(const char *backend, const char *what, int ok)
{
    char name[128];
    snprintf(name, sizeof(name), "%s %s", backend, what);
    return mt_verdict(&st, name, ok);
}

static int check_args(struct sampi_dgram *dg, unsigned char *buf)
{
    int ok = 1;
    int rc = dg->ops->send(dg, dg->rank, buf, 16);
    if (rc != -EINVAL) {
        mt_fail(&st, "send to self returned %d, expected -EINVAL", rc);
        ok = 0;
    }
    rc = dg->ops->send(dg, dg->size, buf, 16);
    if (rc != -EINVAL) {
        mt_fail(&st, "send to rank %d (= size) returned %d, expected -EINVAL", dg->size, rc);
        ok = 0;
    }
    rc = dg->ops->send(dg, -1, buf, 16);
    if (rc != -EINVAL) {
        mt_fail(&st, "send to rank -1 returned %d, expected -EINVAL", rc);
        ok = 0;
    }
    rc = dg->ops->send(dg, (dg->rank + 1) % dg->size, buf, dg->mtu + 1);
    if (rc != -EMSGSIZE) {
        mt_fail(&st, "send of mtu+1 = %zu bytes returned %d, expected -EMSGSIZE", dg->mtu + 1, rc);
        ok = 0;
    }
    return ok;
}

static int check_timeout(struct sampi_dgram *dg, unsigned char *buf)
{
    int ok = 1, peer = 0;
    PMPI_Barrier(MPI_COMM_WORLD); /* nobody sends during this check */
    int64_t t0 = sampi_now_ns();
    ssize_t rc = dg->ops->recv(dg, buf, dg->mtu, &peer, t0 - 1);
    int64_t t1 = sampi_now_ns();
    if (rc != -ETIMEDOUT || t1 - t0 > 50 * 1000000LL) {
        mt_fail(&st,
                "recv with a past deadline returned %zd after %.1f ms, expected -ETIMEDOUT "
                "at once",
                rc, (t1 - t0) / 1e6);
        ok = 0;
    }
    const int64_t wait = 30 * 1000000LL;
    t0 = sampi_now_ns();
    rc = dg->ops->recv(dg, buf, dg->mtu, &peer, t0 + wait);
    t1 = sampi_now_ns();
    /* 2 s of slack: this machine is shared and oversubscribed. */
    if (rc != -ETIMEDOUT || t1 - t0 < wait || t1 - t0 > wait + 2000000000LL) {
        mt_fail(&st, "recv with a 30 ms deadline returned %zd after %.1f ms", rc, (t1 - t0) / 1e6);
        ok = 0;
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    return ok;
}

/* Send with retries while the transmit queue is full. */
static int send_retry(struct sampi_dgram *dg, int peer, const void *buf, size_t len)
{
    unsigned spins = 0;
    int64_t deadline = sampi_now_ns() + WAIT_NS;
    for (;;) {
        int rc = dg->ops->send(dg, peer, buf, len);
        if (rc != -EAGAIN || sampi_now_ns() > deadline)
            return rc;
        sampi_wait_pause(&spins);
    }
}

/* One rank's view of the exchange. */
struct tally {
    long received, lost, bad, dup, late;
};

static void check_one(struct sampi_dgram *dg, const unsigned char *buf, ssize_t len, int peer,
                      uint32_t round, int window, unsigned char *seen, struct tally *t)
{
    struct dhdr h;
    if (len < HDR_BYTES) {
        if (t->bad++ < MAX_REPORTS)
            mt_fail(&st, "round %u: datagram of %zd bytes from %d, shorter than a header", round,
                    len, peer);
        return;
    }
    memcpy(&h, buf, sizeof(h));
    if (h.magic == MAGIC && h.round < round) {
        t->late++; /* a datagram of an earlier round: counted lost there */
        return;
    }
    const char *why = NULL;
    if (h.magic != MAGIC || h.round != round)
        why = "bad magic or round";
    else if (h.dst != dg->rank)
        why = "addressed to another rank";
    else if (h.src >= dg->size || h.src == dg->rank || (int)h.src != peer)
        why = "source differs from the peer recv reported";
    else if (h.index >= (uint32_t)window)
        why = "index out of range";
    else if (h.len != (uint32_t)len || (size_t)len != length_of(h.index, round, dg->mtu))
        why = "length differs from what was sent";
    if (!why) {
        for (size_t i = sizeof(h); i < (size_t)len; i++)
            if (buf[i] != byte_at(&h, i)) {
                why = "payload corrupted";
                break;
            }
    }
    if (why) {
        if (t->bad++ < MAX_REPORTS)
            mt_fail(&st,
                    "round %u: datagram (magic %08x round %u src %u dst %u index %u len %u), "
                    "%zd bytes, recv said peer %d: %s",
                    round, h.magic, h.round, h.src, h.dst, h.index, h.len, len, peer, why);
        return;
    }
    unsigned char *bit = &seen[(size_t)h.src * (size_t)window + h.index];
    if (*bit) {
        if (t->dup++ < MAX_REPORTS)
            mt_fail(&st, "round %u: datagram %u from %u arrived twice", round, h.index, h.src);
        return;
    }
    *bit = 1;
    t->received++;
}

static int check_exchange(struct sampi_dgram *dg, unsigned char *buf, int rounds, int window)
{
    int n = dg->size, me = dg->rank;
    unsigned char *seen = mt_malloc((size_t)n * (size_t)window);
    struct tally t = {0};
    long expected_total = 0, send_errors = 0;
    for (uint32_t round = 1; round <= (uint32_t)rounds; round++) {
        memset(seen, 0, (size_t)n * (size_t)window);
        /* Interleave destinations so every receiver sees every source at once. */
        for (int i = 0; i < window; i++) {
            for (int k = 1; k < n; k++) {
                int dst = (me + k) % n;
                size_t len = length_of((uint32_t)i, round, dg->mtu);
                fill(buf, round, me, dst, (uint32_t)i, len);
                int rc = send_retry(dg, dst, buf, len);
                if (rc && send_errors++ < MAX_REPORTS)
                    mt_fail(&st, "round %u: send of %zu bytes to %d returned %d", round, len, dst,
                            rc);
            }
        }
        long want = (long)(n - 1) * window, got = 0;
        expected_total += want;
        int64_t deadline = sampi_now_ns() + WAIT_NS;
        while (got < want) {
            int peer = -2;
            ssize_t len = dg->ops->recv(dg, buf, dg->mtu, &peer, deadline);
            if (len == -ETIMEDOUT)
                break;
            if (len < 0) {
                mt_fail(&st, "round %u: recv returned %zd", round, len);
                t.bad++;
                break;
            }
            long before = t.received;
            check_one(dg, buf, len, peer, round, window, seen, &t);
            got += t.received - before;
        }
        if (got < want) {
            t.lost += want - got;
            for (int s = 0; s < n; s++) {
                if (s == me)
                    continue;
                int missing = 0;
                for (int i = 0; i < window; i++)
                    missing += !seen[(size_t)s * (size_t)window + (size_t)i];
                if (missing)
                    mt_fail(&st, "round %u: %d of %d datagrams from rank %d never arrived", round,
                            missing, window, s);
            }
        }
        /* Next round starts when everybody is done with this one, so that a
         * round's datagrams are never taken for the next one's. */
        PMPI_Barrier(MPI_COMM_WORLD);
    }
    long mine[6] = {expected_total, t.received, t.lost, t.bad, t.dup, send_errors}, sum[6];
    PMPI_Allreduce(mine, sum, 6, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (st.rank == 0) {
        printf("%s exchange: %d ranks, %d rounds, window %d per peer: %ld datagrams expected, "
               "%ld received intact, %ld lost, %ld bad, %ld duplicates, %ld send errors\n",
               dg->ops->name, n, rounds, window, sum[0], sum[1], sum[2], sum[3], sum[4], sum[5]);
        fflush(stdout);
    }
    free(seen);
    return t.lost == 0 && t.bad == 0 && t.dup == 0 && send_errors == 0;
}

static int check_isolation(const struct sampi_dgram_ops *ops, struct sampi_dgram *a,
                           unsigned char *buf)
{
    MPI_Comm dup;
    struct sampi_dgram *b = NULL;
    int ok = 1;
    PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int rc = ops->open(dup, NULL, &b);
    if (rc || !b) {
        mt_fail(&st, "second instance: open returned %d", rc);
        ok = 0;
        goto out;
    }
    int peer = (a->rank + 1) % a->size;
    fill(buf, 777, a->rank, peer, 0, 64);
    if ((rc = send_retry(a, peer, buf, 64))) {
        mt_fail(&st, "send on the first instance returned %d", rc);
        ok = 0;
    }
    ssize_t len = b->ops->recv(b, buf, b->mtu, &peer, sampi_now_ns() + 100 * 1000000LL);
    if (len != -ETIMEDOUT) {
        mt_fail(&st, "the second instance received %zd (peer %d): datagrams crossed instances", len,
                peer);
        ok = 0;
    }
    len = a->ops->recv(a, buf, a->mtu, &peer, sampi_now_ns() + WAIT_NS);
    if (len != 64 || peer != (a->rank + a->size - 1) % a->size) {
        mt_fail(&st, "the first instance received %zd from %d, expected 64 from %d", len, peer,
                (a->rank + a->size - 1) % a->size);
        ok = 0;
    }
    ops->close(b);
out:
    PMPI_Comm_free(&dup);
    return ok;
}

/* ------------------------------------------------------------------ bench */

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static void bench_latency(struct sampi_dgram *dg, unsigned char *buf, size_t len)
{
    enum { ITERS = 2000, WARM = 100 };
    int64_t *rtt = mt_malloc(sizeof(int64_t) * ITERS);
    int n = 0, lost = 0, peer;
    memset(buf, 0x5a, len);
    PMPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < ITERS + WARM && dg->rank < 2; i++) {
        if (dg->rank == 0) {
            int64_t t0 = sampi_now_ns();
            send_retry(dg, 1, buf, len);
            ssize_t got = dg->ops->recv(dg, buf, dg->mtu, &peer, t0 + 200 * 1000000LL);
            if (got != (ssize_t)len) {
                lost++;
                continue;
            }
            if (i >= WARM)
                rtt[n++] = sampi_now_ns() - t0;
        } else {
            ssize_t got = dg->ops->recv(dg, buf, dg->mtu, &peer, sampi_now_ns() + 250 * 1000000LL);
            if (got > 0)
                send_retry(dg, 0, buf, (size_t)got);
        }
    }
    if (dg->rank == 0 && n > 0) {
        qsort(rtt, (size_t)n, sizeof(*rtt), cmp_i64);
        printf("bench %s latency %zu B: round trip median %.1f us, p99 %.1f us (%d samples, %d "
               "lost)\n",
               dg->ops->name, len, rtt[n / 2] / 1e3, rtt[(n * 99) / 100] / 1e3, n, lost);
        printf("{\"bench\":\"dgram_rtt\",\"backend\":\"%s\",\"bytes\":%zu,\"median_us\":%.2f,"
               "\"p99_us\":%.2f,\"lost\":%d}\n",
               dg->ops->name, len, rtt[n / 2] / 1e3, rtt[(n * 99) / 100] / 1e3, lost);
        fflush(stdout);
    }
    /* Drain a reply that came after its round trip timed out. */
    while (dg->rank < 2 && dg->ops->recv(dg, buf, dg->mtu, &peer, sampi_now_ns() + 20000000LL) > 0)
        ;
    free(rtt);
    PMPI_Barrier(MPI_COMM_WORLD);
}

/* One-way stream 0 -> 1 of `count` mtu-sized datagrams; 1 returns a credit
 * datagram after every `window` it receives, 0 keeps at most 2 windows in
 * flight (and gives up waiting for a credit after 20 ms, counting a stall). */
static void bench_stream(struct sampi_dgram *dg, unsigned char *buf, long count, int window)
{
    long received = 0, stalls = 0;
    int peer;
    size_t len = dg->mtu;
    PMPI_Barrier(MPI_COMM_WORLD);
    int64_t t0 = sampi_now_ns();
    if (dg->rank == 0) {
        long inflight = 0;
        memset(buf, 0xa5, len);
        for (long i = 0; i < count; i++) {
            while (inflight >= 2L * window) {
                ssize_t got =
                    dg->ops->recv(dg, buf + len, dg->mtu, &peer, sampi_now_ns() + 20 * 1000000LL);
                if (got == 1)
                    inflight -= window;
                else if (got == -ETIMEDOUT) {
                    stalls++;
                    inflight = 0;
                }
            }
            memcpy(buf, &i, sizeof(i));
            send_retry(dg, 1, buf, len);
            inflight++;
        }
        const long end = -1;
        memcpy(buf, &end, sizeof(end));
        for (int k = 0; k < 8; k++)
            send_retry(dg, 1, buf, len); /* end marker, sent a few times */
    } else if (dg->rank == 1) {
        long since = 0;
        for (;;) {
            ssize_t got = dg->ops->recv(dg, buf, dg->mtu, &peer, sampi_now_ns() + 2000000000LL);
            if (got < (ssize_t)sizeof(long))
                break;
            long idx;
            memcpy(&idx, buf, sizeof(idx));
            if (idx < 0)
                break;
            received++;
            if (++since == window) {
                since = 0;
                unsigned char c = 1;
                send_retry(dg, 0, &c, 1);
            }
        }
    }
    int64_t t1 = sampi_now_ns();
    long r = received;
    PMPI_Bcast(&r, 1, MPI_LONG, 1, MPI_COMM_WORLD);
    if (dg->rank == 0) {
        double s = (t1 - t0) / 1e9;
        printf("bench %s stream %zu B x %ld, window %d: %.0f datagrams/s, %.1f MB/s, %ld lost, %ld "
               "credit stalls\n",
               dg->ops->name, len, count, window, r / s, r * (double)len / s / 1e6, count - r,
               stalls);
        printf("{\"bench\":\"dgram_stream\",\"backend\":\"%s\",\"bytes\":%zu,\"count\":%ld,"
               "\"window\":%d,\"pps\":%.0f,\"MBps\":%.2f,\"lost\":%ld}\n",
               dg->ops->name, len, count, window, r / s, r * (double)len / s / 1e6, count - r);
        fflush(stdout);
    }
    /* Drain stray credits and end markers. */
    while (dg->rank < 2 && dg->ops->recv(dg, buf, dg->mtu, &peer, sampi_now_ns() + 20000000LL) > 0)
        ;
    PMPI_Barrier(MPI_COMM_WORLD);
}

/* ------------------------------------------------------------------ main */

static void run_backend(const char *name, int checks, int bench, int rounds, int window)
{
    struct sampi_dgram *dg = NULL;
    /* loads the module on every rank, agrees, then opens (collective) */
    int rc = sampi_dgram_open(MPI_COMM_WORLD, NULL, name, &dg);
    const struct sampi_dgram_ops *ops = dg ? dg->ops : NULL;
    int ok = rc == 0 && dg && dg->rank == st.rank && dg->mtu >= 64;
    int size;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    ok = ok && dg->size == size;
    if (!ok)
        mt_fail(&st, "%s: open returned %d (instance %p, mtu %zu)", name, rc, (void *)dg,
                dg ? dg->mtu : 0);
    if (!verdict(name, "open", ok)) {
        if (dg)
            ops->close(dg);
        return;
    }
    if (st.rank == 0) {
        printf("%s: mtu %zu bytes\n", name, dg->mtu);
        fflush(stdout);
    }
    unsigned char *buf = mt_malloc(2 * dg->mtu + 64);
    if (checks && size >= 2) {
        verdict(name, "args", check_args(dg, buf));
        verdict(name, "timeout", check_timeout(dg, buf));
        verdict(name, "exchange", check_exchange(dg, buf, rounds, window));
        verdict(name, "isolation", check_isolation(ops, dg, buf));
    }
    if (bench && size >= 2) {
        bench_latency(dg, buf, 64);
        bench_latency(dg, buf, dg->mtu);
        bench_stream(dg, buf, 200000, window);
    }
    free(buf);
    ops->close(dg);
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    sampi_config_load();
    mt_init(&st, "dgram_pingpong");
    sampi_log_set_rank(st.rank);
    int bench_only = mt_has_flag(argc, argv, "--bench-only");
    int bench = bench_only || mt_has_flag(argc, argv, "--bench");
    int rounds = atoi(mt_option(argc, argv, "--rounds", "20"));
    int window = atoi(mt_option(argc, argv, "--window", "32"));
    if (rounds < 1)
        rounds = 1;
    if (window < 2)
        window = 2;

    int nb = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') {
            if (strcmp(argv[i], "--rounds") == 0 || strcmp(argv[i], "--window") == 0)
                i++;
            continue;
        }
        run_backend(argv[i], !bench_only, bench, rounds, window);
        nb++;
    }
    if (nb == 0)
        run_backend("ofi-udp", !bench_only, bench, rounds, window);

    sampi_module_finalize_all(); /* what MPI_Finalize does in the library: rte_eal_cleanup */
    long failed = mt_summary(&st, 0, "", "checks");
    MPI_Finalize();
    return mt_exit_code(failed);
}
