/*
 * dpdk_args.c - the DPDK EAL command line the `dpdk` datagram transport
 * builds from sampi_dpdk_eal_args and sampi_dpdk_vdev.  Pure (no DPDK, no
 * I/O), so that it is built and unit-tested on hosts without DPDK too.
 *
 * Example: args "" (the default), vdev "net_af_packet0,iface=sd%r", pid 42,
 * rank 3, cpu 1 give
 *   --no-huge -m 512 --no-pci --no-telemetry --file-prefix=sampi-42
 *   --log-level=warning --vdev=net_af_packet0,iface=sd3 -l 1
 *
 * It also sizes the af_packet PMD's mmap'ed rings (sampi_dpdk_af_packet_vdev)
 * for an MTU: with a 9000-byte MTU, 4 KiB pages and a 16 MiB ring, the vdev
 * gains ",framesz=16384,blocksz=16384,framecnt=1024"; at 1500,
 * ",framesz=2048,blocksz=4096,framecnt=8192".
 */
#include "dgram_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* No hugepages or PCI devices (af_packet and other virtual devices need
 * neither), a runtime directory of its own per process. */
static const char default_args[] =
    "--no-huge -m 512 --no-pci --no-telemetry --file-prefix=sampi-%p --log-level=warning";

/* Append `in` to out[*n..cap) with %p, %r and %% expanded. */
static int append_expanded(const char *in, long pid, int rank, char *out, size_t cap, size_t *n)
{
    for (const char *p = in; *p; p++) {
        char tmp[32] = {*p, '\0'};
        if (p[0] == '%' && (p[1] == 'p' || p[1] == 'r' || p[1] == '%')) {
            if (p[1] == 'p')
                snprintf(tmp, sizeof(tmp), "%ld", pid);
            else if (p[1] == 'r')
                snprintf(tmp, sizeof(tmp), "%d", rank);
            else
                tmp[0] = '%';
            p++;
        }
        size_t len = strlen(tmp);
        if (*n + len + 1 > cap)
            return -ENAMETOOLONG;
        memcpy(out + *n, tmp, len + 1);
        *n += len;
    }
    return 0;
}

static int append_text(const char *in, char *out, size_t cap, size_t *n)
{
    size_t len = strlen(in);
    if (*n + len + 1 > cap)
        return -ENAMETOOLONG;
    memcpy(out + *n, in, len + 1);
    *n += len;
    return 0;
}

/* Whether the command line already chooses lcores (-l, -lLIST, -c, -cMASK,
 * --lcores...). */
static int names_lcores(const char *text)
{
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "-l", 2) == 0 || strncmp(p, "-c", 2) == 0 || strncmp(p, "--lcores", 8) == 0)
            return 1;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
    return 0;
}

int sampi_dpdk_eal_cmdline(const char *args, const char *vdev, long pid, int rank, int cpu,
                           char *out, size_t cap)
{
    size_t n = 0;
    int rc = -ENAMETOOLONG;
    if (cap == 0)
        goto fail;
    out[0] = '\0';
    if ((rc = append_expanded(args && args[0] ? args : default_args, pid, rank, out, cap, &n)))
        goto fail;
    int choose_lcore = cpu >= 0 && !names_lcores(out);
    if (vdev && vdev[0]) {
        if ((rc = append_text(" --vdev=", out, cap, &n)) ||
            (rc = append_expanded(vdev, pid, rank, out, cap, &n)))
            goto fail;
    }
    if (choose_lcore) {
        char l[32];
        snprintf(l, sizeof(l), " -l %d", cpu);
        if ((rc = append_text(l, out, cap, &n)))
            goto fail;
    }
    return 0;
fail:
    if (cap)
        out[0] = '\0';
    return rc;
}

int sampi_dpdk_split_args(char *text, char **argv, int max)
{
    int argc = 0;
    if (max < 2)
        return -E2BIG;
    argv[argc++] = "sampi";
    for (char *p = text; *p;) {
        while (*p == ' ' || *p == '\t')
            *p++ = '\0';
        if (!*p)
            break;
        if (argc >= max - 1)
            return -E2BIG;
        argv[argc++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
    argv[argc] = NULL;
    return argc;
}

int sampi_dpdk_vdev_iface(const char *vdev, long pid, int rank, char *out, size_t cap)
{
    char text[512];
    size_t n = 0;
    if (!vdev || strncmp(vdev, "net_af_packet", 13) != 0 || cap == 0)
        return 0;
    if (append_expanded(vdev, pid, rank, text, sizeof(text), &n))
        return 0;
    /* "net_af_packetN,key=value,...": find the iface key. */
    for (char *p = strchr(text, ','); p; p = strchr(p + 1, ',')) {
        if (strncmp(p + 1, "iface=", 6) != 0)
            continue;
        const char *v = p + 7;
        size_t len = strcspn(v, ",");
        if (len == 0 || len >= cap)
            return 0;
        memcpy(out, v, len);
        out[len] = '\0';
        return 1;
    }
    return 0;
}

/* A TPACKET_V2 receive frame holds the kernel's header and sockaddr_ll, the
 * MAC header at offset 66 (TPACKET_ALIGN(52 + 16) - 14), then the packet:
 * an MTU-sized IP packet needs 66 + 14 + mtu bytes.  The PMD addresses frame
 * i at i * framesz from the start of the ring, while the kernel starts each
 * block afresh, so frames must tile blocks exactly; and the kernel allocates
 * a block as 2^order pages.  Both hold, with nothing wasted beyond the frame
 * itself, when frames are powers of two and a block is the larger of a frame
 * and a page. */
#define AFP_RX_OVERHEAD 80

/* The value of ",key=" in an af_packet vdev, 0 if absent, -1 if not a
 * positive number. */
static long vdev_key(const char *vdev, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = strchr(vdev, ','); p; p = strchr(p + 1, ',')) {
        if (strncmp(p + 1, key, klen) != 0 || p[1 + klen] != '=')
            continue;
        char *end;
        long v = strtol(p + 2 + klen, &end, 10);
        return v > 0 && v <= (1L << 30) && (*end == '\0' || *end == ',') ? v : -1;
    }
    return 0;
}

int sampi_dpdk_af_packet_vdev(const char *vdev, int mtu, size_t ring_bytes, long page, char *out,
                              size_t cap, struct sampi_dpdk_afp *geo)
{
    int rc = -EINVAL;
    if (cap == 0 || !vdev || page <= 0 || mtu <= 0)
        goto fail;
    rc = -ENAMETOOLONG;
    if (strlen(vdev) + 1 > cap)
        goto fail;
    strcpy(out, vdev);
    if (strncmp(vdev, "net_af_packet", 13) != 0)
        return 0;
    long fs = vdev_key(vdev, "framesz"), bs = vdev_key(vdev, "blocksz"),
         fc = vdev_key(vdev, "framecnt");
    rc = -EINVAL;
    if (fs < 0 || bs < 0 || fc < 0)
        goto fail;
    unsigned frame = (unsigned)fs, blk = (unsigned)bs;
    if (!frame)
        for (frame = 16; frame < (unsigned)mtu + AFP_RX_OVERHEAD; frame *= 2)
            ;
    if (!blk)
        for (blk = frame; blk % (unsigned)page; blk += frame)
            ;
    if (frame % 16 || blk % frame || blk % (unsigned)page) /* 16: TPACKET_ALIGNMENT */
        goto fail;
    unsigned per_block = blk / frame;
    size_t blocks = ring_bytes / blk ? ring_bytes / blk : 1;
    unsigned count = fc ? (unsigned)fc : (unsigned)(blocks * per_block);
    if (count % per_block)
        goto fail;
    char tail[96] = "";
    size_t n = 0;
    if (!fs)
        n += (size_t)snprintf(tail + n, sizeof(tail) - n, ",framesz=%u", frame);
    if (!bs)
        n += (size_t)snprintf(tail + n, sizeof(tail) - n, ",blocksz=%u", blk);
    if (!fc)
        snprintf(tail + n, sizeof(tail) - n, ",framecnt=%u", count);
    rc = -ENAMETOOLONG;
    if (strlen(out) + strlen(tail) + 1 > cap)
        goto fail;
    strcat(out, tail);
    geo->framesz = frame;
    geo->blocksz = blk;
    geo->framecnt = count;
    geo->max_mtu = frame > AFP_RX_OVERHEAD ? (int)(frame - AFP_RX_OVERHEAD) : 0;
    return 1;
fail:
    if (cap)
        out[0] = '\0';
    return rc;
}
