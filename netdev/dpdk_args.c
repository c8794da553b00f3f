/*
 * dpdk_args.c - the DPDK EAL command line the `dpdk` datagram transport
 * builds from sampi_dpdk_eal_args and sampi_dpdk_vdev.  Pure (no DPDK, no
 * I/O), so that it is built and unit-tested on hosts without DPDK too.
 *
 * Example: args "" (the default), vdev "net_af_packet0,iface=sd%r", pid 42,
 * rank 3, cpu 1 give
 *   --no-huge -m 512 --no-pci --no-telemetry --file-prefix=sampi-42
 *   --log-level=warning --vdev=net_af_packet0,iface=sd3 -l 1
 */
#include "dgram_backend.h"

#include <errno.h>
#include <stdio.h>
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
