/*
 * opti_hdr.c - optireduce's datagram header (layout in opti_hdr.h).
 *
 * Explicit byte-wise little-endian packing: the header's layout does not
 * depend on the compiler's struct padding or the host's byte order, and the
 * parser reads only bytes it has checked exist.
 */
#include "opti_hdr.h"

const char *const sampi_opti_verdict_names[SAMPI_OPTI_VERDICT__COUNT] = {
    [SAMPI_OPTI_OK] = "ok",
    [SAMPI_OPTI_TRUNCATED] = "truncated",
    [SAMPI_OPTI_OVERSIZED] = "oversized",
    [SAMPI_OPTI_BAD_MAGIC] = "bad-magic",
    [SAMPI_OPTI_BAD_VERSION] = "bad-version",
    [SAMPI_OPTI_BAD_FLAGS] = "bad-flags",
    [SAMPI_OPTI_WRONG_KEY] = "wrong-key",
    [SAMPI_OPTI_WRONG_COMM] = "wrong-comm",
    [SAMPI_OPTI_STALE] = "stale",
    [SAMPI_OPTI_FUTURE] = "future",
    [SAMPI_OPTI_WRONG_STAGE] = "wrong-stage",
    [SAMPI_OPTI_BAD_SRC] = "bad-src",
    [SAMPI_OPTI_BAD_FLOW] = "bad-flow",
    [SAMPI_OPTI_OUT_OF_RANGE] = "out-of-range",
};

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)get16(p) | ((uint32_t)get16(p + 2) << 16);
}

void sampi_opti_hdr_pack(const struct sampi_opti_hdr *h, void *out)
{
    uint8_t *p = out;
    put16(p + 0, SAMPI_OPTI_MAGIC);
    p[2] = SAMPI_OPTI_VERSION;
    p[3] = h->flags;
    put32(p + 4, h->job_key);
    put32(p + 8, h->comm_id);
    put32(p + 12, h->seq);
    put16(p + 16, h->src);
    put16(p + 18, h->nelem);
    put32(p + 20, h->elem_off);
    put32(p + 24, h->flow_nelem);
    put16(p + 28, h->t_est_100us);
    p[30] = h->incast_want;
    p[31] = h->loss_pm;
}

enum sampi_opti_verdict sampi_opti_hdr_parse(const void *buf, size_t len, struct sampi_opti_hdr *h)
{
    const uint8_t *p = buf;
    if (!buf || len < SAMPI_OPTI_HDR_BYTES)
        return SAMPI_OPTI_TRUNCATED;
    if (get16(p) != SAMPI_OPTI_MAGIC)
        return SAMPI_OPTI_BAD_MAGIC;
    h->version = p[2];
    if (h->version != SAMPI_OPTI_VERSION)
        return SAMPI_OPTI_BAD_VERSION;
    h->flags = p[3];
    if (h->flags & ~SAMPI_OPTI_F__ALL)
        return SAMPI_OPTI_BAD_FLAGS;
    h->job_key = get32(p + 4);
    h->comm_id = get32(p + 8);
    h->seq = get32(p + 12);
    h->src = get16(p + 16);
    h->nelem = get16(p + 18);
    h->elem_off = get32(p + 20);
    h->flow_nelem = get32(p + 24);
    h->t_est_100us = get16(p + 28);
    h->incast_want = p[30];
    h->loss_pm = p[31];
    size_t want = SAMPI_OPTI_HDR_BYTES + 4u * (size_t)h->nelem;
    if (len < want)
        return SAMPI_OPTI_TRUNCATED;
    if (len > want)
        return SAMPI_OPTI_OVERSIZED;
    /* 64-bit sum: elem_off + nelem cannot wrap */
    if (h->nelem == 0 || (uint64_t)h->elem_off + h->nelem > h->flow_nelem)
        return SAMPI_OPTI_OUT_OF_RANGE;
    return SAMPI_OPTI_OK;
}

enum sampi_opti_verdict sampi_opti_hdr_check(const struct sampi_opti_hdr *h,
                                             const struct sampi_opti_expect *e)
{
    if (h->job_key != e->job_key)
        return SAMPI_OPTI_WRONG_KEY;
    if (h->comm_id != e->comm_id)
        return SAMPI_OPTI_WRONG_COMM;
    /* serial-number comparison: the counter may wrap in a long job */
    int32_t d = (int32_t)(h->seq - e->seq);
    if (d < 0)
        return SAMPI_OPTI_STALE;
    if (d > 0)
        return SAMPI_OPTI_FUTURE;
    if (!(h->flags & SAMPI_OPTI_F_GATHER) != !e->gather)
        return SAMPI_OPTI_WRONG_STAGE;
    if ((int)h->src >= e->size || (int)h->src == e->self)
        return SAMPI_OPTI_BAD_SRC;
    if (!e->flow_nelem || h->flow_nelem != e->flow_nelem[h->src])
        return SAMPI_OPTI_BAD_FLOW;
    if (e->per_pkt == 0 || h->elem_off % e->per_pkt)
        return SAMPI_OPTI_OUT_OF_RANGE;
    uint32_t left = h->flow_nelem - h->elem_off; /* > 0: parse checked the range */
    if (h->nelem != (left < e->per_pkt ? left : e->per_pkt))
        return SAMPI_OPTI_OUT_OF_RANGE;
    return SAMPI_OPTI_OK;
}

enum sampi_opti_verdict sampi_opti_hdr_accept(const void *buf, size_t len,
                                              const struct sampi_opti_expect *e,
                                              struct sampi_opti_hdr *h)
{
    enum sampi_opti_verdict v = sampi_opti_hdr_parse(buf, len, h);
    return v != SAMPI_OPTI_OK ? v : sampi_opti_hdr_check(h, e);
}
