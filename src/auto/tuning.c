/*
 * tuning.c - the tuning file (tuning.h).
 */
#include "tuning.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file this large is not a tuning file (one line per size, bucket and
 * regime is a few hundred kilobytes at most); reading on would only hide a
 * wrong path such as /dev/zero. */
#define MAX_FILE_BYTES ((size_t)16 << 20)
#define MAX_BYTES      ((uint64_t)1 << (SAMPI_AUTOSEL_BUCKETS - 1))
#define SHOW           40 /* characters of a bad field quoted in a message */

/* ------------------------------------------------------------ the table */

void sampi_tuning_init(struct sampi_tuning *t)
{
    memset(t, 0, sizeof(*t));
}

void sampi_tuning_free(struct sampi_tuning *t)
{
    free(t->e);
    sampi_tuning_init(t);
}

static int auto_algo(int id)
{
    return id >= 0 && id < SAMPI_ALGO__COUNT && (sampi_algos[id].caps & SAMPI_CAP_AUTO);
}

static int valid_cost(double ns)
{
    return isfinite(ns) && ns >= 0 && ns < SAMPI_TUNING_COST_MAX_US * 1e3;
}

static int valid_entry(const struct sampi_tuning_entry *e)
{
    if (e->ranks < 1 || e->bucket < 0 || e->bucket >= SAMPI_AUTOSEL_BUCKETS || (int)e->regime < 0 ||
        e->regime >= SAMPI_REGIME__COUNT || !auto_algo(e->algo) || !valid_cost(e->cost_ns))
        return 0;
    if (e->next == -1)
        return 1;
    return auto_algo(e->next) && e->next != e->algo && valid_cost(e->next_ns);
}

static int key_cmp(const struct sampi_tuning_entry *a, int ranks, int bucket,
                   enum sampi_regime regime)
{
    if (a->ranks != ranks)
        return a->ranks < ranks ? -1 : 1;
    if (a->bucket != bucket)
        return a->bucket < bucket ? -1 : 1;
    if (a->regime != regime)
        return a->regime < regime ? -1 : 1;
    return 0;
}

/* The index of the key, or where it would go; *found says which. */
static size_t find(const struct sampi_tuning *t, int ranks, int bucket, enum sampi_regime regime,
                   int *found)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(&t->e[mid], ranks, bucket, regime);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

/* Store a valid entry.  keep_more: an existing entry with more samples
 * stays (merging selectors); otherwise e replaces it (a later line). */
static int store(struct sampi_tuning *t, const struct sampi_tuning_entry *e, int keep_more)
{
    int found;
    size_t i = find(t, e->ranks, e->bucket, e->regime, &found);
    if (found) {
        if (!keep_more || e->samples >= t->e[i].samples)
            t->e[i] = *e;
        return 0;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        struct sampi_tuning_entry *ne = realloc(t->e, cap * sizeof(*ne));
        if (!ne)
            return -ENOMEM;
        t->e = ne;
        t->cap = cap;
    }
    memmove(&t->e[i + 1], &t->e[i], (t->n - i) * sizeof(*e));
    t->e[i] = *e;
    t->n++;
    return 0;
}

int sampi_tuning_put(struct sampi_tuning *t, const struct sampi_tuning_entry *e)
{
    if (!valid_entry(e))
        return -EINVAL;
    struct sampi_tuning_entry c = *e;
    if (c.next == -1)
        c.next_ns = 0; /* so that equal tables compare equal field by field */
    return store(t, &c, 1);
}

const struct sampi_tuning_entry *sampi_tuning_get(const struct sampi_tuning *t, int ranks,
                                                  int bucket, enum sampi_regime regime)
{
    int found;
    size_t i = find(t, ranks, bucket, regime, &found);
    return found ? &t->e[i] : NULL;
}

/* A cost as the file writes it: whole tenths of a microsecond.  Format and
 * hash both use this, so that what is written is what is hashed. */
static int64_t tenths_us(double ns)
{
    return (int64_t)llround(ns / 100.0);
}

/* ------------------------------------------------------------ hashes */

#define FNV_OFFSET 14695981039346656037ull
#define FNV_PRIME  1099511628211ull

static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

/* Little-endian whatever the host, so a hash is the same everywhere. */
static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return fnv_bytes(h, b, sizeof(b));
}

uint64_t sampi_tuning_layout(int world_size, int local_size, const char *cpu_model, int cores)
{
    /* Hashing text, not a struct: no padding, no byte order, and a user can
     * recompute it with any FNV-1a tool. */
    char s[96];
    int n =
        snprintf(s, sizeof(s), "world=%d local=%d cores=%d cpu=", world_size, local_size, cores);
    uint64_t h = fnv_bytes(FNV_OFFSET, s, n > 0 ? (size_t)n : 0);
    return cpu_model ? fnv_bytes(h, cpu_model, strlen(cpu_model)) : h;
}

uint64_t sampi_tuning_hash(const struct sampi_tuning *t)
{
    uint64_t h = fnv_u64(FNV_OFFSET, t->n);
    for (size_t i = 0; i < t->n; i++) {
        const struct sampi_tuning_entry *e = &t->e[i];
        h = fnv_u64(h, (uint64_t)(int64_t)e->ranks);
        h = fnv_u64(h, (uint64_t)(int64_t)e->bucket);
        h = fnv_u64(h, (uint64_t)(int64_t)e->regime);
        h = fnv_u64(h, (uint64_t)(int64_t)e->algo);
        h = fnv_u64(h, (uint64_t)tenths_us(e->cost_ns));
        h = fnv_u64(h, (uint64_t)(int64_t)e->next);
        h = fnv_u64(h, e->next >= 0 ? (uint64_t)tenths_us(e->next_ns) : 0);
        h = fnv_u64(h, e->samples);
    }
    return h;
}

/* ------------------------------------------------------------ facts */

static int env_int(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < 1 || x > INT_MAX)
        return 0;
    return (int)x;
}

static void trim_copy(char *dst, size_t len, const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    if (n >= len)
        n = len - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static void read_cpu_model(char *dst, size_t len, const char *path)
{
    dst[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    static const char key[] = "model name";
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, key, sizeof(key) - 1) != 0)
            continue;
        const char *p = line + sizeof(key) - 1;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != ':')
            continue; /* "model name2" or the like: not the key */
        trim_copy(dst, len, p + 1);
        break;
    }
    free(line);
    fclose(f);
}

void sampi_tuning_facts(struct sampi_tuning_facts *f, const char *cpuinfo)
{
    memset(f, 0, sizeof(*f));
    f->world_size = env_int("OMPI_COMM_WORLD_SIZE");
    f->local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    f->cores = cores > 0 && cores <= INT_MAX ? (int)cores : 0;
    read_cpu_model(f->cpu_model, sizeof(f->cpu_model), cpuinfo ? cpuinfo : "/proc/cpuinfo");
}

uint64_t sampi_tuning_layout_here(void)
{
    struct sampi_tuning_facts f;
    sampi_tuning_facts(&f, NULL);
    return sampi_tuning_layout(f.world_size, f.local_size, f.cpu_model, f.cores);
}

/* ------------------------------------------------------------ selectors */

int sampi_tuning_seed(const struct sampi_tuning *t, int ranks, struct sampi_autosel *s)
{
    int seeded = 0, found;
    for (size_t i = find(t, ranks, 0, 0, &found); i < t->n && t->e[i].ranks == ranks; i++) {
        const struct sampi_tuning_entry *e = &t->e[i];
        /* recheck 0: the first re-check comes early (RECHECK_MIN calls), the
         * cheapest way to notice that the machine changed since the file
         * was written; when it did not, the period doubles as usual */
        int rc = sampi_autosel_seed(s, e->bucket, e->regime, e->algo, e->cost_ns, 0);
        if (rc < 0)
            return rc;
        seeded++;
    }
    return seeded;
}

void sampi_tuning_collect(struct sampi_tuning *t, int ranks, const struct sampi_autosel *s)
{
    for (int b = 0; b < SAMPI_AUTOSEL_BUCKETS; b++) {
        for (int r = 0; r < SAMPI_REGIME__COUNT; r++) {
            const struct sampi_autosel_cell *c = sampi_autosel_cell(s, b, (enum sampi_regime)r);
            struct sampi_tuning_entry e = {.ranks = ranks, .bucket = b, .regime = r};
            /* a cell exploring again (a re-check, drift) keeps its winner so
             * far; a cell that never converged has none and is left out */
            if (!c || c->choice < 0 || c->measured == 0 ||
                sampi_autosel_ranking(c, &e.algo, &e.cost_ns, &e.next, &e.next_ns) < 0)
                continue;
            e.samples = c->measured;
            if (e.next >= 0 && !auto_algo(e.next)) {
                e.next = -1;
                e.next_ns = 0;
            }
            (void)sampi_tuning_put(t, &e);
        }
    }
}

/* ------------------------------------------------------------ format */

struct text {
    char *p;
    size_t n, cap;
    int oom;
};

static void addf(struct text *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(struct text *x, const char *fmt, ...)
{
    for (;;) {
        if (x->oom)
            return;
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(x->p ? x->p + x->n : NULL, x->p ? x->cap - x->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            x->oom = 1;
            return;
        }
        if (x->p && (size_t)k < x->cap - x->n) {
            x->n += (size_t)k;
            return;
        }
        size_t cap = x->cap ? x->cap : 1024;
        while (cap < x->n + (size_t)k + 1)
            cap *= 2;
        char *np = realloc(x->p, cap);
        if (!np) {
            x->oom = 1;
            return;
        }
        x->p = np;
        x->cap = cap;
    }
}

/* "812.4": integers only, so the decimal point is a point in any locale
 * the application may have set. */
static void cost_text(char *buf, size_t len, double ns)
{
    int64_t q = tenths_us(ns);
    snprintf(buf, len, "%" PRId64 ".%d", q / 10, (int)(q % 10));
}

int sampi_tuning_format(const struct sampi_tuning *t, char **text)
{
    struct text x = {0};
    int rc = 0;
    *text = NULL;
    addf(&x, "# SAMPI tuning file, format %d\n", SAMPI_TUNING_FORMAT);
    if (t->has_layout)
        addf(&x, "layout %016" PRIx64 "   # the machine/job layout it was learned on\n", t->layout);
    addf(&x, "# ranks  bytes     regime     algorithm  cost_us   next    next_cost_us  samples\n");
    for (size_t i = 0; i < t->n; i++) {
        const struct sampi_tuning_entry *e = &t->e[i];
        if (!valid_entry(e)) {
            rc = -EINVAL;
            goto fail;
        }
        char cost[32], next_cost[32];
        cost_text(cost, sizeof(cost), e->cost_ns);
        if (e->next >= 0)
            cost_text(next_cost, sizeof(next_cost), e->next_ns);
        else
            strcpy(next_cost, "-");
        addf(&x, "%-8d %-9" PRIu64 " %-10s %-10s %-9s %-7s %-13s %" PRIu64 "\n", e->ranks,
             (uint64_t)1 << e->bucket, sampi_regime_names[e->regime], sampi_algos[e->algo].name,
             cost, e->next >= 0 ? sampi_algos[e->next].name : "-", next_cost, e->samples);
    }
    if (x.oom) {
        rc = -ENOMEM;
        goto fail;
    }
    *text = x.p;
    return 0;
fail:
    free(x.p);
    return rc;
}

/* ------------------------------------------------------------ parse */

struct tok {
    const char *s;
    size_t n;
};

static int tok_is(struct tok k, const char *s)
{
    return strlen(s) == k.n && memcmp(k.s, s, k.n) == 0;
}

/* Digits only (no sign, no blanks: strtoull would take both), at most max. */
static int parse_uint(struct tok k, uint64_t max, uint64_t *v)
{
    uint64_t x = 0;
    if (k.n == 0)
        return -1;
    for (size_t i = 0; i < k.n; i++) {
        if (k.s[i] < '0' || k.s[i] > '9')
            return -1;
        unsigned d = (unsigned)(k.s[i] - '0');
        if (x > (max - d) / 10)
            return -1;
        x = 10 * x + d;
    }
    *v = x;
    return 0;
}

/* DIGITS[.DIGITS] microseconds, read by hand: strtod follows LC_NUMERIC,
 * which the application owns. */
static int parse_cost(struct tok k, double *ns)
{
    size_t i = 0;
    double whole = 0;
    uint64_t frac = 0, scale = 1;
    while (i < k.n && k.s[i] >= '0' && k.s[i] <= '9')
        whole = 10 * whole + (k.s[i++] - '0');
    if (i == 0)
        return -1;
    if (i < k.n) {
        if (k.s[i++] != '.' || i == k.n)
            return -1;
        for (; i < k.n; i++) {
            if (k.s[i] < '0' || k.s[i] > '9')
                return -1;
            if (scale < 1000000000000000ull) { /* digits beyond 15 change nothing */
                frac = 10 * frac + (uint64_t)(k.s[i] - '0');
                scale *= 10;
            }
        }
    }
    double us = whole + (double)frac / (double)scale;
    if (!(us < SAMPI_TUNING_COST_MAX_US))
        return -1;
    *ns = us * 1e3;
    return 0;
}

static int parse_hex(struct tok k, uint64_t *v)
{
    uint64_t x = 0;
    if (k.n == 0 || k.n > 16)
        return -1;
    for (size_t i = 0; i < k.n; i++) {
        char c = k.s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        x = x << 4 | (uint64_t)d;
    }
    *v = x;
    return 0;
}

static int parse_algo(struct tok k)
{
    for (int a = 0; a < SAMPI_ALGO__COUNT; a++)
        if (auto_algo(a) && tok_is(k, sampi_algos[a].name))
            return a;
    return -1;
}

/* "native, ring, rhd, stragglar, optcc", from the table, so that a new
 * algorithm shows up in the messages by itself. */
static const char *auto_names(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int a = 0; a < SAMPI_ALGO__COUNT; a++)
        if (auto_algo(a) && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", sampi_algos[a].name);
    return buf;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#define TOK(k) (int)((k).n < SHOW ? (k).n : SHOW), (k).s
#define FIELDS 8

/* One line without its newline.  *layout_line: the line of the layout seen
 * so far (0: none). */
static int parse_line(const char *s, size_t len, int line, struct sampi_tuning *t, int *layout_line,
                      char *err, size_t errlen)
{
    struct tok k[FIELDS + 1];
    int nk = 0;
    char names[128];
    for (size_t i = 0; i < len && s[i] != '#';) {
        if (strchr(" \t\r\v\f", s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && s[j] != '#' && !strchr(" \t\r\v\f", s[j]))
            j++;
        if (nk <= FIELDS)
            k[nk] = (struct tok){s + i, j - i};
        nk++;
        i = j;
    }
    if (nk == 0)
        return 0;

    if (tok_is(k[0], "layout")) {
        if (nk != 2) {
            seterr(err, errlen, "line %d: 'layout' takes one value (the hexadecimal signature)",
                   line);
            return -EINVAL;
        }
        if (*layout_line) {
            seterr(err, errlen, "line %d: a second layout line (the first is line %d)", line,
                   *layout_line);
            return -EINVAL;
        }
        if (parse_hex(k[1], &t->layout) < 0) {
            seterr(err, errlen, "line %d: layout '%.*s' is not 1 to 16 hexadecimal digits", line,
                   TOK(k[1]));
            return -EINVAL;
        }
        t->has_layout = 1;
        *layout_line = line;
        return 0;
    }
    if (k[0].s[0] < '0' || k[0].s[0] > '9') {
        seterr(err, errlen,
               "line %d: '%.*s' is neither 'layout' nor an entry (which starts with a "
               "communicator size)",
               line, TOK(k[0]));
        return -EINVAL;
    }
    if (nk != FIELDS) {
        seterr(err, errlen,
               "line %d: an entry has 8 fields (ranks bytes regime algorithm cost_us next "
               "next_cost_us samples), this line %d",
               line, nk);
        return -EINVAL;
    }

    struct sampi_tuning_entry e = {0};
    uint64_t v;
    if (parse_uint(k[0], INT_MAX, &v) < 0 || v < 1) {
        seterr(err, errlen, "line %d: ranks '%.*s' is not a communicator size (1 to %d)", line,
               TOK(k[0]), INT_MAX);
        return -EINVAL;
    }
    e.ranks = (int)v;
    if (parse_uint(k[1], MAX_BYTES, &v) < 0 || v < 1) {
        seterr(err, errlen, "line %d: bytes '%.*s' is not a byte count from 1 to %" PRIu64, line,
               TOK(k[1]), MAX_BYTES);
        return -EINVAL;
    }
    e.bucket = sampi_autosel_bucket((size_t)v);
    int r;
    for (r = 0; r < SAMPI_REGIME__COUNT && !tok_is(k[2], sampi_regime_names[r]); r++)
        ;
    if (r == SAMPI_REGIME__COUNT) {
        seterr(err, errlen, "line %d: regime '%.*s' is not one of none, straggler, degraded", line,
               TOK(k[2]));
        return -EINVAL;
    }
    e.regime = (enum sampi_regime)r;
    if ((e.algo = parse_algo(k[3])) < 0) {
        seterr(err, errlen, "line %d: '%.*s' is not an algorithm auto may choose (%s)", line,
               TOK(k[3]), auto_names(names, sizeof(names)));
        return -EINVAL;
    }
    if (parse_cost(k[4], &e.cost_ns) < 0) {
        seterr(err, errlen,
               "line %d: cost_us '%.*s' is not a number of microseconds (digits, a point and "
               "digits, below 10^12)",
               line, TOK(k[4]));
        return -EINVAL;
    }
    if (tok_is(k[5], "-") != tok_is(k[6], "-")) {
        seterr(err, errlen,
               "line %d: next '%.*s' and next_cost_us '%.*s': both are '-' (no runner-up) or "
               "neither",
               line, TOK(k[5]), TOK(k[6]));
        return -EINVAL;
    }
    e.next = -1;
    if (!tok_is(k[5], "-")) {
        if ((e.next = parse_algo(k[5])) < 0) {
            seterr(err, errlen,
                   "line %d: next '%.*s' is not an algorithm auto may choose (%s) nor '-'", line,
                   TOK(k[5]), auto_names(names, sizeof(names)));
            return -EINVAL;
        }
        if (e.next == e.algo) {
            seterr(err, errlen, "line %d: next '%.*s' is the algorithm itself", line, TOK(k[5]));
            return -EINVAL;
        }
        if (parse_cost(k[6], &e.next_ns) < 0) {
            seterr(err, errlen,
                   "line %d: next_cost_us '%.*s' is not a number of microseconds (digits, a "
                   "point and digits, below 10^12)",
                   line, TOK(k[6]));
            return -EINVAL;
        }
    }
    if (parse_uint(k[7], UINT64_MAX, &e.samples) < 0) {
        seterr(err, errlen, "line %d: samples '%.*s' is not a whole number", line, TOK(k[7]));
        return -EINVAL;
    }
    if (store(t, &e, 0) < 0) {
        seterr(err, errlen, "line %d: out of memory", line);
        return -ENOMEM;
    }
    return 0;
}

int sampi_tuning_parse(const char *text, struct sampi_tuning *t, char *err, size_t errlen)
{
    struct sampi_tuning nt;
    int rc = 0, line = 0, layout_line = 0;
    sampi_tuning_init(&nt);
    seterr(err, errlen, "%s", "");
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        rc = parse_line(p, len, ++line, &nt, &layout_line, err, errlen);
        if (rc < 0)
            goto fail;
        p += len + (eol != NULL);
    }
    sampi_tuning_free(t);
    *t = nt;
    return 0;
fail:
    sampi_tuning_free(&nt);
    sampi_tuning_free(t);
    return rc;
}

/* ------------------------------------------------------------ files */

/* Opened without blocking, and kept only when it is a regular file: a FIFO
 * named by mistake would otherwise block every rank in open() at start-up
 * (and a character device such as /dev/zero read on without end).  A
 * stream, or NULL with errno set (ENODEV: not a regular file). */
static FILE *open_regular(const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return NULL;
    int e = fstat(fd, &st) < 0 ? errno : S_ISREG(st.st_mode) ? 0 : ENODEV;
    if (e) {
        close(fd);
        errno = e;
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

/* The whole file as a string.  0, -ENOENT, -ENODEV (not a regular file),
 * -EFBIG (over MAX_FILE_BYTES), -EINVAL (a NUL byte: not text, and the
 * parser would stop there), or another -errno. */
static int read_text(const char *path, char **text)
{
    int rc = 0;
    size_t n = 0, cap = 4096;
    char *buf = NULL;
    FILE *f = open_regular(path);
    *text = NULL;
    if (!f)
        return -errno;
    if (!(buf = malloc(cap))) {
        rc = -ENOMEM;
        goto fail;
    }
    for (;;) {
        if (cap - n < 2) {
            if (cap >= MAX_FILE_BYTES) {
                rc = -EFBIG;
                goto fail;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                rc = -ENOMEM;
                goto fail;
            }
            buf = nb;
            cap *= 2;
        }
        errno = 0;
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                rc = errno ? -errno : -EIO; /* EISDIR says more than EIO */
                goto fail;
            }
            break;
        }
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        rc = -EINVAL;
        goto fail;
    }
    fclose(f);
    *text = buf;
    return 0;
fail:
    free(buf);
    fclose(f);
    return rc;
}

int sampi_tuning_load(const char *path, uint64_t layout, struct sampi_tuning *t)
{
    char *text = NULL, err[256];
    sampi_tuning_free(t);
    int rc = read_text(path, &text);
    if (rc == -ENOENT)
        return 0;
    if (rc == -EINVAL) {
        sampi_log_warn("tuning file '%s' is not text (it holds a NUL byte); ignored, auto "
                       "learns from scratch",
                       path);
        goto fail;
    }
    if (rc == -ENODEV) {
        sampi_log_warn("tuning file '%s' is not a regular file; ignored, auto learns from "
                       "scratch",
                       path);
        goto fail;
    }
    if (rc == -EFBIG) {
        sampi_log_warn("tuning file '%s' is larger than %zu MiB, the most a tuning file may "
                       "hold; ignored, auto learns from scratch",
                       path, MAX_FILE_BYTES >> 20);
        goto fail;
    }
    if (rc < 0) {
        sampi_log_warn("tuning file '%s' cannot be read (%s); ignored, auto learns from scratch",
                       path, strerror(-rc));
        goto fail;
    }
    rc = sampi_tuning_parse(text, t, err, sizeof(err));
    if (rc < 0) {
        sampi_log_warn("tuning file '%s': %s; ignored, auto learns from scratch", path, err);
        goto fail;
    }
    if (t->has_layout && t->layout != layout) {
        sampi_log_warn("tuning file '%s' was learned on layout %016" PRIx64
                       ", this job's layout is %016" PRIx64 "; ignored, auto learns from scratch",
                       path, t->layout, layout);
        rc = -ESTALE;
        goto fail;
    }
    free(text);
    return 0;
fail:
    sampi_tuning_free(t);
    free(text);
    return rc;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int sampi_tuning_may_write_beside(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
           access(dir, W_OK) == 0;
}

int sampi_tuning_save(const char *path, const struct sampi_tuning *t)
{
    char *text = NULL, *tmp = NULL, host[64];
    const char *step = "cannot format it";
    int fd = -1, created = 0, rc;
    if ((rc = sampi_tuning_format(t, &text)) < 0)
        goto fail;
    if (gethostname(host, sizeof(host)) < 0)
        strcpy(host, "host");
    host[sizeof(host) - 1] = '\0';
    size_t len = strlen(path) + strlen(host) + 32;
    step = "out of memory";
    if (!(tmp = malloc(len))) {
        rc = -ENOMEM;
        goto fail;
    }
    snprintf(tmp, len, "%s.tmp.%s.%ld", path, host, (long)getpid());
    step = "cannot create the temporary file";
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) {
        /* only this process writes this name: what is there is left over
         * from a process that died with the same pid */
        unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    }
    if (fd < 0) {
        rc = -errno;
        goto fail;
    }
    created = 1;
    step = "cannot write the temporary file";
    if ((rc = write_all(fd, text, strlen(text))) < 0)
        goto fail;
    /* on disk before the rename, or a crash could leave an empty file under
     * the real name */
    if (fsync(fd) < 0) {
        rc = -errno;
        goto fail;
    }
    int cfd = fd;
    fd = -1;
    if (close(cfd) < 0) {
        rc = -errno;
        goto fail;
    }
    step = "cannot rename the temporary file over it";
    if (rename(tmp, path) < 0) {
        rc = -errno;
        goto fail;
    }
    free(tmp);
    free(text);
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    if (created)
        unlink(tmp);
    sampi_log_warn("tuning file '%s' not saved: %s (%s)", path, step, strerror(-rc));
    free(tmp);
    free(text);
    return rc;
}
