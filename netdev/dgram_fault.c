/*
 * dgram_fault.c - the fault-injection decorator (dgram_fault.h).
 *
 * Held datagrams live in a binary min-heap keyed by release time; recv()
 * waits on the inner transport only until the earliest release, so a held
 * datagram is delivered on time while others keep flowing.
 */
#include "dgram_fault.h"
#include "netdev.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HELD_MAX 65536

struct held {
    int64_t release_ns;
    int peer;
    size_t len;
    void *data;
};

struct fault_dg {
    struct sampi_dgram base;
    struct sampi_dgram *inner;
    struct sampi_fault_cfg cfg;
    uint64_t rng;
    int bypass;
    int retrying; /* the last send returned -EAGAIN: the next is its retry */
    struct held *heap;
    size_t nheld, cap;
    struct sampi_fault_counts counts;
};

static const struct sampi_dgram_ops fault_ops;

static uint64_t next_u64(uint64_t *s)
{
    uint64_t x = (*s += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

double sampi_fault_unit(uint64_t *s)
{
    return ((next_u64(s) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

static int parse_time(const char *v, int64_t *ns)
{
    char *end;
    double x = strtod(v, &end);
    static const struct {
        const char *suffix;
        double ns;
    } units[] = {{"", 1e3}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    if (end == v || x < 0 || !isfinite(x))
        return -EINVAL;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(end, units[i].suffix) == 0) {
            *ns = (int64_t)(x * units[i].ns);
            return 0;
        }
    return -EINVAL;
}

static int parse_prob(const char *v, double *p)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0 && x <= 1))
        return -EINVAL;
    *p = x;
    return 0;
}

int sampi_fault_parse(const char *text, struct sampi_fault_cfg *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->max_ns = 10000000000LL;
    cfg->seed = 1;
    char buf[256];
    if (!text || !*text)
        return 0;
    if (strlen(text) >= sizeof(buf))
        goto fail;
    strcpy(buf, text);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            goto fail;
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        int rc = -EINVAL;
        char *end;
        if (!strcmp(k, "drop"))
            rc = parse_prob(v, &cfg->drop);
        else if (!strcmp(k, "late"))
            rc = parse_prob(v, &cfg->late);
        else if (!strcmp(k, "delay"))
            rc = parse_time(v, &cfg->delay_ns);
        else if (!strcmp(k, "max"))
            rc = parse_time(v, &cfg->max_ns);
        else if (!strcmp(k, "pareto")) {
            cfg->pareto = strtod(v, &end);
            rc = end != v && !*end && cfg->pareto > 0 && isfinite(cfg->pareto) ? 0 : -EINVAL;
        } else if (!strcmp(k, "seed")) {
            cfg->seed = strtoull(v, &end, 0);
            rc = end != v && !*end ? 0 : -EINVAL;
        }
        if (rc)
            goto fail;
    }
    return 0;
fail:
    snprintf(err, errlen,
             "sampi_optireduce_fault: cannot parse '%s' (expected comma-separated drop=P, "
             "late=P, delay=T, pareto=A, max=T, seed=N; P in [0,1], T like 500us, 5ms)",
             text);
    memset(cfg, 0, sizeof(*cfg));
    return -EINVAL;
}

int sampi_fault_active(const struct sampi_fault_cfg *cfg)
{
    return cfg->drop > 0 || (cfg->late > 0 && cfg->delay_ns > 0);
}

int64_t sampi_fault_delay_ns(const struct sampi_fault_cfg *cfg, double u)
{
    double d = (double)cfg->delay_ns;
    if (cfg->pareto > 0)
        d *= pow(u, -1.0 / cfg->pareto) - 1.0;
    return d > (double)cfg->max_ns ? cfg->max_ns : (int64_t)d;
}

static void heap_swap(struct held *a, struct held *b)
{
    struct held t = *a;
    *a = *b;
    *b = t;
}

static void heap_push(struct fault_dg *f, struct held h)
{
    size_t i = f->nheld++;
    f->heap[i] = h;
    while (i && f->heap[(i - 1) / 2].release_ns > f->heap[i].release_ns) {
        heap_swap(&f->heap[(i - 1) / 2], &f->heap[i]);
        i = (i - 1) / 2;
    }
}

static struct held heap_pop(struct fault_dg *f)
{
    struct held top = f->heap[0];
    f->heap[0] = f->heap[--f->nheld];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < f->nheld && f->heap[l].release_ns < f->heap[m].release_ns)
            m = l;
        if (r < f->nheld && f->heap[r].release_ns < f->heap[m].release_ns)
            m = r;
        if (m == i)
            break;
        heap_swap(&f->heap[i], &f->heap[m]);
        i = m;
    }
    return top;
}

static int fault_send(struct sampi_dgram *dg, int peer, const void *buf, size_t len)
{
    struct fault_dg *f = (struct fault_dg *)dg;
    /* One decision per datagram: a sender held back by a full queue retries
     * the same datagram (dgram.h), and a fresh draw per attempt would drop
     * 1 - (1-p)^attempts of them (18% instead of 1% under a 1 Gbit/s cap). */
    if (!f->bypass && !f->retrying && f->cfg.drop > 0 && sampi_fault_unit(&f->rng) <= f->cfg.drop) {
        f->counts.sent++;
        f->counts.dropped++;
        f->counts.dropped_bytes += len;
        return 0;
    }
    int rc = f->inner->ops->send(f->inner, peer, buf, len);
    f->retrying = rc == -EAGAIN;
    if (rc == 0)
        f->counts.sent++;
    return rc;
}

/* Hold a copy of buf[0..len); 0, or -ENOMEM (then it is delivered now). */
static int hold(struct fault_dg *f, const void *buf, size_t len, int peer, int64_t release)
{
    if (f->nheld == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 256;
        if (cap > HELD_MAX)
            return -ENOMEM;
        struct held *h = realloc(f->heap, cap * sizeof(*h));
        if (!h)
            return -ENOMEM;
        f->heap = h;
        f->cap = cap;
    }
    void *copy = malloc(len ? len : 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, buf, len);
    heap_push(f, (struct held){release, peer, len, copy});
    return 0;
}

static ssize_t fault_recv(struct sampi_dgram *dg, void *buf, size_t cap, int *peer,
                          int64_t deadline_ns)
{
    struct fault_dg *f = (struct fault_dg *)dg;
    for (;;) {
        int64_t now = sampi_now_ns();
        if (f->nheld && f->heap[0].release_ns <= now) {
            struct held h = heap_pop(f);
            size_t n = h.len < cap ? h.len : cap;
            memcpy(buf, h.data, n);
            free(h.data);
            *peer = h.peer;
            return (ssize_t)n;
        }
        int64_t until = deadline_ns;
        if (f->nheld && f->heap[0].release_ns < until)
            until = f->heap[0].release_ns;
        ssize_t r = f->inner->ops->recv(f->inner, buf, cap, peer, until);
        if (r == -ETIMEDOUT) {
            if (sampi_now_ns() >= deadline_ns &&
                !(f->nheld && f->heap[0].release_ns <= deadline_ns))
                return r;
            continue;
        }
        if (r < 0 || f->bypass || f->cfg.late <= 0 || f->cfg.delay_ns <= 0 ||
            sampi_fault_unit(&f->rng) > f->cfg.late)
            return r;
        int64_t d = sampi_fault_delay_ns(&f->cfg, sampi_fault_unit(&f->rng));
        if (d <= 0 || hold(f, buf, (size_t)r, *peer, sampi_now_ns() + d))
            return r;
        f->counts.delayed++;
        f->counts.delay_ns += (uint64_t)d;
        if (deadline_ns <= now && !(f->nheld && f->heap[0].release_ns <= sampi_now_ns()))
            return -ETIMEDOUT; /* a poll: do not wait for the next datagram */
    }
}

static void fault_close(struct sampi_dgram *dg)
{
    struct fault_dg *f = (struct fault_dg *)dg;
    while (f->nheld)
        free(heap_pop(f).data);
    free(f->heap);
    f->inner->ops->close(f->inner);
    free(f);
}

static int fault_open(MPI_Comm comm, struct sampi_waiter *w, struct sampi_dgram **out)
{
    (void)comm;
    (void)w;
    *out = NULL;
    return -ENOTSUP; /* a decorator is made by sampi_dgram_fault_wrap */
}

static const struct sampi_dgram_ops fault_ops = {
    .name = "fault",
    .description = "fault injection: drops and delays datagrams of the wrapped transport",
    .open = fault_open,
    .close = fault_close,
    .send = fault_send,
    .recv = fault_recv,
};

int sampi_dgram_fault_wrap(struct sampi_dgram *inner, const struct sampi_fault_cfg *cfg,
                           struct sampi_dgram **out)
{
    struct fault_dg *f = calloc(1, sizeof(*f));
    *out = NULL;
    if (!f)
        return -ENOMEM;
    f->base = *inner;
    f->base.ops = &fault_ops;
    f->inner = inner;
    f->cfg = *cfg;
    /* hashed, so that neighbouring seeds (or ranks) are unrelated streams */
    uint64_t t = cfg->seed;
    t = next_u64(&t) ^ ((uint64_t)inner->rank << 32 | 0x5bd1e995u);
    f->rng = next_u64(&t);
    *out = &f->base;
    return 0;
}

int sampi_dgram_fault_counts(struct sampi_dgram *dg, struct sampi_fault_counts *out)
{
    if (!dg || dg->ops != &fault_ops)
        return -EINVAL;
    *out = ((struct fault_dg *)dg)->counts;
    return 0;
}

void sampi_dgram_fault_bypass(struct sampi_dgram *dg, int on)
{
    if (dg && dg->ops == &fault_ops)
        ((struct fault_dg *)dg)->bypass = on;
}
