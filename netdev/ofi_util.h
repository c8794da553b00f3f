/*
 * ofi_util.h - small helpers both libfabric backends (ofi.c, tagged RDM, and
 * ofi_udp.c, datagrams) use.  Header-only: each is a few lines.
 */
#ifndef SAMPI_OFI_UTIL_H
#define SAMPI_OFI_UTIL_H

#include "wait_mode.h"

#include <errno.h>
#include <limits.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

/* Closes what an open made, each part possibly NULL, in the order libfabric
 * needs: the endpoint first (it stops using the CQs and AV bound to it, and
 * its posted receives die with it), the fabric last; then frees the info. */
static inline void sampi_ofi_close_all(struct fid_ep *ep, struct fid_av *av, struct fid_cq *cq,
                                       struct fid_cq *cq2, struct fid_domain *domain,
                                       struct fid_fabric *fabric, struct fi_info *info)
{
    sampi_ofi_close_fid(ep ? &ep->fid : NULL);
    sampi_ofi_close_fid(av ? &av->fid : NULL);
    sampi_ofi_close_fid(cq ? &cq->fid : NULL);
    sampi_ofi_close_fid(cq2 ? &cq2->fid : NULL);
    sampi_ofi_close_fid(domain ? &domain->fid : NULL);
    sampi_ofi_close_fid(fabric ? &fabric->fid : NULL);
    if (info)
        fi_freeinfo(info);
}

/* fi_cq_open with a wait object that sleeps (FI_WAIT_FD) in the block wait
 * mode, FI_WAIT_NONE otherwise (polled as the mode says); a provider without
 * one (shm) gets FI_WAIT_NONE.  fi_cq_open's code; *blocking says whether
 * waits on it can sleep in the kernel. */
static inline int sampi_ofi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
                                    struct fid_cq **cq, int *blocking)
{
    attr->wait_obj = sampi_wait_mode_now() == SAMPI_WAIT_BLOCK ? FI_WAIT_FD : FI_WAIT_NONE;
    int rc = fi_cq_open(domain, attr, cq, NULL);
    if (rc == -FI_ENOSYS || rc == -FI_EINVAL || rc == -FI_EOPNOTSUPP) {
        attr->wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(domain, attr, cq, NULL);
    }
    *blocking = attr->wait_obj == FI_WAIT_FD;
    return rc;
}

/* fi_allocinfo's hints for `provider`, with the threading both backends
 * ask for (FI_THREAD_DOMAIN: each instance serialises its own calls); the
 * caller adds the capabilities.  NULL when out of memory. */
static inline struct fi_info *sampi_ofi_hints(const char *provider)
{
    struct fi_info *hints = fi_allocinfo();
    if (!hints)
        return NULL;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup(provider);
    if (!hints->fabric_attr->prov_name) {
        fi_freeinfo(hints);
        return NULL;
    }
    return hints;
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
