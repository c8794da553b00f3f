/*
 * dgram_backend.h - what the datagram backends (ofi_udp.c, dpdk.c) share;
 * callers of the transport use dgram.h only.
 */
#ifndef SAMPI_DGRAM_BACKEND_H
#define SAMPI_DGRAM_BACKEND_H

#include "dgram.h"

/* What one collective vote of open() learned. */
struct sampi_dgram_vote {
    int all_ok;    /* every rank reported stage 0 */
    int fail_rank; /* the lowest rank that failed, and where and why */
    int fail_stage;
    int fail_err;  /* positive errno (or provider error), 0 if none */
    long long max; /* the largest proposal */
};

/* One allreduce over comm, waited for through w (NULL: blocking): each rank
 * reports its stage (0 = success) and error, and a proposal (instance tags,
 * ports) of which the largest wins.  0, or the wait's negative errno (-EIO
 * when MPI itself failed). */
int sampi_dgram_vote(MPI_Comm comm, struct sampi_waiter *w, int rank, int stage, int err,
                     long long proposal, struct sampi_dgram_vote *out);

/* 0 when send(dg, peer, .., len) may go ahead: -EINVAL for itself or a rank
 * outside the communicator, -EMSGSIZE above the mtu. */
int sampi_dgram_check_send(const struct sampi_dgram *dg, int peer, size_t len);

/* The EAL command line of the `dpdk` backend (dpdk_args.c): `args`, or the
 * built-in default when empty, then " --vdev=VDEV" when vdev is not empty,
 * then " -l CPU" when cpu >= 0 and the arguments choose no lcores; %p is
 * replaced by pid, %r by rank and %% by %.  0, or -ENAMETOOLONG when it
 * does not fit in cap bytes. */
int sampi_dpdk_eal_cmdline(const char *args, const char *vdev, long pid, int rank, int cpu,
                           char *out, size_t cap);
/* Split `text` in place at blanks into argv[1..] after argv[0] = "sampi",
 * NULL-terminated: argc, or -E2BIG when more than max - 1 entries (the NULL
 * included) would be needed. */
int sampi_dpdk_split_args(char *text, char **argv, int max);
/* When `vdev` is an af_packet device ("net_af_packet...,iface=NAME,..."),
 * 1 and NAME (%p and %r expanded) in out; 0 otherwise. */
int sampi_dpdk_vdev_iface(const char *vdev, long pid, int rank, char *out, size_t cap);

/* The af_packet PMD's ring geometry (dpdk_args.c). */
struct sampi_dpdk_afp {
    unsigned framesz;  /* bytes per frame slot */
    unsigned blocksz;  /* bytes per block, a multiple of framesz and of the page */
    unsigned framecnt; /* frames in the RX ring (and in the TX ring) */
    int max_mtu;       /* the largest IP packet a receive frame holds whole */
};
/* Copy `vdev` to out.  When it is an af_packet device, append whichever of
 * framesz, blocksz and framecnt it does not set: frames of a power of two
 * bytes that hold an MTU-sized packet, blocks of one frame or one page, and
 * about ring_bytes of frames; fill *geo and return 1.  0 for another device
 * (out = vdev); -EINVAL for values the PMD cannot use (blocksz not a multiple
 * of framesz and of the page, framecnt not a multiple of the frames per
 * block), -ENAMETOOLONG when out is too small. */
int sampi_dpdk_af_packet_vdev(const char *vdev, int mtu, size_t ring_bytes, long page, char *out,
                              size_t cap, struct sampi_dpdk_afp *geo);

#endif
