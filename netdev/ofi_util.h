/*
 * ofi_util.h - small helpers both libfabric backends (ofi.c, tagged RDM, and
 * ofi_udp.c, datagrams) use.  Header-only: each is a few lines.
 */
#ifndef SAMPI_OFI_UTIL_H
#define SAMPI_OFI_UTIL_H

#include <errno.h>
#include <limits.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <stdint.h>
#include <sys/types.h>

/* A libfabric return code as a negative errno: FI_E* values below 256 are
 * the system's errno values; the rest (FI_EAVAIL, ...) have none and become
 * EIO, except FI_ETRUNC, which is a message too large for its buffer. */
static inline int sampi_ofi_neg_errno(ssize_t fi_rc)
{
    int e = (int)(fi_rc < 0 ? -fi_rc : fi_rc);
    if (e == FI_ETRUNC)
        return -EMSGSIZE;
    return e > 0 && e < 256 ? -e : -EIO;
}

static inline void sampi_ofi_close_fid(struct fid *fid)
{
    if (fid)
        fi_close(fid);
}

/* Milliseconds from now to deadline_ns (both CLOCK_MONOTONIC), rounded up so
 * that a blocking read never wakes before the deadline; 0 once passed. */
static inline int sampi_ofi_ms_until(int64_t deadline_ns, int64_t now)
{
    int64_t left = deadline_ns - now;
    if (left <= 0)
        return 0;
    int64_t ms = (left + 999999) / 1000000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

#endif
