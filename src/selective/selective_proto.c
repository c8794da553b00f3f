/*
 * selective_proto.c - encoding and checking of the selective-reduce messages
 * (see selective_proto.h for the layout).
 *
 * Encoding runs the same checks as decoding so that a controller bug shows up
 * where it happens, not as a refused message on a worker.
 */
#include "selective_proto.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* Fixed part of each message after the header, by type; GROUP adds 12 bytes
 * per member. */
static const size_t body_size[SAMPI_SP__TYPES] = {
    [SAMPI_SP_READY] = 4 + 8 + 8 + 8 + 8 + 8,
    [SAMPI_SP_GROUP] = 8 + 4 + 8 + 4,
    [SAMPI_SP_DONE] = 8 + 4 + 8 + 8,
    [SAMPI_SP_STOP] = 4,
    [SAMPI_SP_PING] = 0,
    [SAMPI_SP_ERROR] = 4 + 8,
};

static const char *const type_names[SAMPI_SP__TYPES] = {
    [SAMPI_SP_READY] = "READY", [SAMPI_SP_GROUP] = "GROUP", [SAMPI_SP_DONE] = "DONE",
    [SAMPI_SP_STOP] = "STOP",   [SAMPI_SP_PING] = "PING",   [SAMPI_SP_ERROR] = "ERROR",
};

/* A generous bound on any time or bandwidth: catches garbage, not policy. */
#define SANE_MAX 1e9

const char *sampi_sp_type_name(int type)
{
    return type > 0 && type < SAMPI_SP__TYPES ? type_names[type] : "?";
}

size_t sampi_sp_group_size(int m)
{
    return SAMPI_SP_HEADER + body_size[SAMPI_SP_GROUP] + (size_t)(m > 0 ? m : 0) * 12;
}

/* ------------------------------------------------------------ byte order */

struct cursor {
    unsigned char *p;
    const unsigned char *r;
};

static void put_u64(struct cursor *c, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        *c->p++ = (unsigned char)(v >> (8 * i));
}

static void put_u32(struct cursor *c, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        *c->p++ = (unsigned char)(v >> (8 * i));
}

static void put_f64(struct cursor *c, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof(v));
    put_u64(c, v);
}

static uint64_t get_u64(struct cursor *c)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)*c->r++ << (8 * i);
    return v;
}

static uint32_t get_u32(struct cursor *c)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)*c->r++ << (8 * i);
    return v;
}

static double get_f64(struct cursor *c)
{
    uint64_t v = get_u64(c);
    double d;
    memcpy(&d, &v, sizeof(d));
    return d;
}

/* ------------------------------------------------------------ field checks */

static int rank_ok(int32_t r, int n)
{
    return r >= 0 && r < n;
}

static int finite_in(double x, double lo, double hi)
{
    return isfinite(x) && x >= lo && x <= hi;
}

static int check(const struct sampi_sp_msg *m, int n)
{
    switch (m->type) {
    case SAMPI_SP_READY: {
        const struct sampi_sp_ready *r = &m->u.ready;
        if (!rank_ok(r->rank, n) || r->iteration < 0 || r->seq == 0 ||
            !finite_in(r->t_compute, -SANE_MAX, SANE_MAX) || !finite_in(r->bw_gbps, 0, SANE_MAX))
            return -ERANGE;
        return 0;
    }
    case SAMPI_SP_GROUP: {
        const struct sampi_sp_group *g = &m->u.group;
        if (g->m < 1 || g->m > n || g->iter_after < 0 ||
            (g->kind != SAMPI_SP_KIND_PARTIAL && g->kind != SAMPI_SP_KIND_FULL))
            return -ERANGE;
        double sum = 0;
        for (int i = 0; i < g->m; i++) {
            if (!rank_ok(g->members[i], n) || (i > 0 && g->members[i] <= g->members[i - 1]) ||
                !finite_in(g->weights[i], 0, 1))
                return -ERANGE;
            sum += g->weights[i];
        }
        return fabs(sum - 1) <= SAMPI_SP_WEIGHT_EPS ? 0 : -ERANGE;
    }
    case SAMPI_SP_DONE: {
        const struct sampi_sp_done *d = &m->u.done;
        if (!rank_ok(d->rank, n) || !finite_in(d->seconds, 0, SANE_MAX) ||
            !finite_in(d->bw_gbps, 0, SANE_MAX))
            return -ERANGE;
        return 0;
    }
    case SAMPI_SP_STOP:
        return rank_ok(m->u.rank, n) ? 0 : -ERANGE;
    case SAMPI_SP_PING:
        return 0;
    case SAMPI_SP_ERROR:
        return m->u.error.code > 0 ? 0 : -ERANGE;
    default:
        return -EPROTO;
    }
}

/* ------------------------------------------------------------ encode */

long sampi_sp_encode(const struct sampi_sp_msg *m, int n, unsigned char *buf, size_t cap)
{
    int rc = check(m, n);
    if (rc)
        return -EINVAL;
    size_t len = m->type == SAMPI_SP_GROUP ? sampi_sp_group_size(m->u.group.m)
                                           : SAMPI_SP_HEADER + body_size[m->type];
    if (len > cap)
        return -ENOSPC;
    struct cursor c = {.p = buf};
    *c.p++ = 'S';
    *c.p++ = 'R';
    *c.p++ = SAMPI_SP_VERSION;
    *c.p++ = (unsigned char)m->type;
    put_u32(&c, (uint32_t)len);
    switch (m->type) {
    case SAMPI_SP_READY:
        put_u32(&c, (uint32_t)m->u.ready.rank);
        put_u64(&c, (uint64_t)m->u.ready.iteration);
        put_f64(&c, m->u.ready.t_compute);
        put_f64(&c, m->u.ready.bw_gbps);
        put_u64(&c, m->u.ready.seq);
        put_u64(&c, m->u.ready.bytes);
        break;
    case SAMPI_SP_GROUP:
        put_u64(&c, m->u.group.id);
        put_u32(&c, (uint32_t)m->u.group.kind);
        put_u64(&c, (uint64_t)m->u.group.iter_after);
        put_u32(&c, (uint32_t)m->u.group.m);
        for (int i = 0; i < m->u.group.m; i++)
            put_u32(&c, (uint32_t)m->u.group.members[i]);
        for (int i = 0; i < m->u.group.m; i++)
            put_f64(&c, m->u.group.weights[i]);
        break;
    case SAMPI_SP_DONE:
        put_u64(&c, m->u.done.id);
        put_u32(&c, (uint32_t)m->u.done.rank);
        put_f64(&c, m->u.done.seconds);
        put_f64(&c, m->u.done.bw_gbps);
        break;
    case SAMPI_SP_STOP:
        put_u32(&c, (uint32_t)m->u.rank);
        break;
    case SAMPI_SP_ERROR:
        put_u32(&c, (uint32_t)m->u.error.code);
        put_u64(&c, m->u.error.seq);
        break;
    default:
        break;
    }
    return (long)len;
}

/* ------------------------------------------------------------ decode */

int sampi_sp_peek_type(const unsigned char *buf, size_t len)
{
    if (len < SAMPI_SP_HEADER || buf[0] != 'S' || buf[1] != 'R')
        return -EBADMSG;
    struct cursor c = {.r = buf + 4};
    if (get_u32(&c) != len)
        return -EBADMSG;
    if (buf[2] != SAMPI_SP_VERSION)
        return -EPROTONOSUPPORT;
    int type = buf[3];
    if (type <= 0 || type >= SAMPI_SP__TYPES)
        return -EPROTO;
    return type;
}

int sampi_sp_decode(const unsigned char *buf, size_t len, int n, struct sampi_sp_msg *m)
{
    int type = sampi_sp_peek_type(buf, len);
    if (type < 0)
        return type;
    struct cursor c = {.r = buf + SAMPI_SP_HEADER};
    m->type = (enum sampi_sp_type)type;
    size_t want = SAMPI_SP_HEADER + body_size[type];
    if (type == SAMPI_SP_GROUP) {
        if (len < want)
            return -EPROTO;
        struct cursor h = {.r = buf + SAMPI_SP_HEADER + 20};
        uint32_t mm = get_u32(&h);
        if (mm < 1 || mm > (uint32_t)n || mm > SAMPI_SP_MAX_GROUP)
            return -ERANGE;
        want = sampi_sp_group_size((int)mm);
    }
    if (len != want)
        return -EPROTO;
    switch (type) {
    case SAMPI_SP_READY:
        m->u.ready.rank = (int32_t)get_u32(&c);
        m->u.ready.iteration = (int64_t)get_u64(&c);
        m->u.ready.t_compute = get_f64(&c);
        m->u.ready.bw_gbps = get_f64(&c);
        m->u.ready.seq = get_u64(&c);
        m->u.ready.bytes = get_u64(&c);
        break;
    case SAMPI_SP_GROUP: {
        struct sampi_sp_group *g = &m->u.group;
        g->id = get_u64(&c);
        g->kind = (int32_t)get_u32(&c);
        g->iter_after = (int64_t)get_u64(&c);
        g->m = (int32_t)get_u32(&c);
        if (g->m > g->capacity || !g->members || !g->weights)
            return -ENOSPC;
        for (int i = 0; i < g->m; i++)
            g->members[i] = (int32_t)get_u32(&c);
        for (int i = 0; i < g->m; i++)
            g->weights[i] = get_f64(&c);
        break;
    }
    case SAMPI_SP_DONE:
        m->u.done.id = get_u64(&c);
        m->u.done.rank = (int32_t)get_u32(&c);
        m->u.done.seconds = get_f64(&c);
        m->u.done.bw_gbps = get_f64(&c);
        break;
    case SAMPI_SP_STOP:
        m->u.rank = (int32_t)get_u32(&c);
        break;
    case SAMPI_SP_ERROR:
        m->u.error.code = (int32_t)get_u32(&c);
        m->u.error.seq = get_u64(&c);
        break;
    default:
        break;
    }
    return check(m, n);
}

const char *sampi_sp_strerror(int e)
{
    static const struct {
        int err;
        const char *text;
    } table[] = {
        {EBADMSG, "not a selective-reduce message (bad magic or length field)"},
        {EPROTONOSUPPORT, "another protocol version"},
        {EPROTO, "unknown message type, or a length that does not fit its type"},
        {ERANGE, "a field out of range"},
        {ENOSPC, "group larger than the receiver's capacity"},
        {EINVAL, "invalid message"},
        {EALREADY, "report out of order (repeated, or while already queued or syncing)"},
        {ESRCH, "report from a worker that has stopped"},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].err == -e || table[i].err == e)
            return table[i].text;
    return "unknown error";
}
