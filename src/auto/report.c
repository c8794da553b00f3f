/*
 * report.c - the end-of-run report's sums and formatting (report.h).
 */
#include "report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sampi_report_acc_init(struct sampi_report_acc *acc, int n)
{
    memset(acc, 0, sizeof(*acc));
    if (n < 1)
        return -1;
    acc->rank = calloc((size_t)n, sizeof(*acc->rank));
    acc->scratch = calloc((size_t)n, sizeof(double));
    if (!acc->rank || !acc->scratch) {
        sampi_report_acc_free(acc);
        return -1;
    }
    acc->tot.n = n;
    acc->tot.span = 1;
    return 0;
}

void sampi_report_acc_free(struct sampi_report_acc *acc)
{
    free(acc->rank);
    free(acc->scratch);
    memset(acc, 0, sizeof(*acc));
}

int sampi_report_hist_bucket(double ns)
{
    if (!(ns > SAMPI_REPORT_HIST_BASE_NS))
        return 0;
    int b = (int)floor(SAMPI_REPORT_HIST_PER_OCTAVE * log2(ns / SAMPI_REPORT_HIST_BASE_NS));
    return b < 0 ? 0 : b >= SAMPI_REPORT_HIST ? SAMPI_REPORT_HIST - 1 : b;
}

double sampi_report_hist_value(int bucket)
{
    return SAMPI_REPORT_HIST_BASE_NS * exp2((bucket + 0.5) / SAMPI_REPORT_HIST_PER_OCTAVE);
}

double sampi_report_hist_quantile(const uint32_t *hist, double max_ns, double q)
{
    uint64_t count = 0;
    for (int b = 0; b < SAMPI_REPORT_HIST; b++)
        count += hist[b];
    if (!count)
        return 0;
    uint64_t want = (uint64_t)ceil(q * (double)count);
    want = want < 1 ? 1 : want > count ? count : want;
    uint64_t seen = 0;
    for (int b = 0; b < SAMPI_REPORT_HIST; b++) {
        seen += hist[b];
        if (seen >= want) {
            double v = sampi_report_hist_value(b);
            return v < max_ns ? v : max_ns;
        }
    }
    return max_ns;
}

int sampi_report_is_late(uint64_t last_calls, uint64_t late_calls, uint64_t tracked,
                         double median_ns, double top_median_ns)
{
    return (last_calls >= SAMPI_REPORT_LATE_MIN &&
            (double)last_calls >= SAMPI_REPORT_LAST_SHARE * (double)tracked) ||
           (late_calls >= SAMPI_REPORT_LATE_MIN &&
            (double)late_calls >= SAMPI_REPORT_LATE_SHARE * (double)tracked &&
            median_ns >= SAMPI_REPORT_LATE_RELATIVE * top_median_ns);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The k-th smallest of v[0..n) (0-based), reordering v: quickselect with
 * the middle element as pivot, linear on average (once per tracked call,
 * where sorting a communicator of 1024 ranks took most of the note). */
static double kth_of(double *v, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

double sampi_report_median(double *v, int n)
{
    double hi = kth_of(v, n, n / 2);
    if (n % 2)
        return hi;
    double lo = v[0]; /* the largest of the n/2 below the pivot's place */
    for (int i = 1; i < n / 2; i++)
        lo = v[i] > lo ? v[i] : lo;
    return (lo + hi) / 2;
}

/* The windows are full: each pair becomes one, twice as many calls each. */
static void merge_windows(struct sampi_report_acc *acc)
{
    struct sampi_report_totals *t = &acc->tot;
    for (int w = 0; w < SAMPI_REPORT_WINDOWS / 2; w++)
        t->window_calls[w] = t->window_calls[2 * w] + t->window_calls[2 * w + 1];
    memset(t->window_calls + SAMPI_REPORT_WINDOWS / 2, 0, sizeof(t->window_calls) / 2);
    for (int r = 0; r < t->n; r++) {
        double *s = acc->rank[r].window_ns;
        for (int w = 0; w < SAMPI_REPORT_WINDOWS / 2; w++)
            s[w] = s[2 * w] + s[2 * w + 1];
        memset(s + SAMPI_REPORT_WINDOWS / 2, 0, sizeof(double) * SAMPI_REPORT_WINDOWS / 2);
    }
    t->span *= 2;
}

void sampi_report_acc_note(struct sampi_report_acc *acc, const double *dur, size_t bytes)
{
    struct sampi_report_totals *t = &acc->tot;
    int n = t->n;
    if (n < 2 || !acc->rank)
        return;
    int first = -1, second = -1; /* shortest and second shortest: the last arrivals */
    for (int i = 0; i < n; i++) {
        if (!(dur[i] >= 0))
            return;
        acc->scratch[i] = dur[i];
        if (first < 0 || dur[i] < dur[first]) {
            second = first;
            first = i;
        } else if (second < 0 || dur[i] < dur[second]) {
            second = i;
        }
    }
    double med = sampi_report_median(acc->scratch, n);
    if (t->tracked >= t->span * SAMPI_REPORT_WINDOWS)
        merge_windows(acc);
    int w = (int)(t->tracked / t->span);
    t->tracked++;
    t->window_calls[w]++;
    int bucket = sampi_autosel_bucket(bytes);
    t->bucket_calls[bucket]++;
    t->bucket_bytes[bucket] += (double)bytes;
    double waited = 0;
    for (int i = 0; i < n; i++) {
        struct sampi_report_rank *r = &acc->rank[i];
        double late = med - dur[i];
        r->inside_ns += dur[i];
        r->waited_ns += dur[i] - dur[first];
        waited += dur[i] - dur[first];
        if (late > 0)
            r->window_ns[w] += late;
        if (late >= SAMPI_REPORT_LATE_NS) {
            r->late_calls++;
            r->late_sum_ns += late;
            r->late_max_ns = late > r->late_max_ns ? late : r->late_max_ns;
            r->hist[sampi_report_hist_bucket(late)]++;
        }
    }
    t->lost_ns += waited;
    if (dur[second] - dur[first] >= (double)SAMPI_LATE_THRESHOLD_NS) {
        t->with_last++;
        acc->rank[first].last_calls++;
        acc->rank[first].caused_ns += waited;
    }
}

void sampi_report_acc_degraded(struct sampi_report_acc *acc, int rank, double slowdown)
{
    struct sampi_report_totals *t = &acc->tot;
    int i = 0;
    while (i < t->ndegraded && t->degraded[i].rank != rank)
        i++;
    if (i == t->ndegraded) {
        if (i == SAMPI_REPORT_DEGRADED || !acc->rank)
            return;
        t->degraded[t->ndegraded++] = (struct sampi_report_degraded){.rank = rank};
    }
    struct sampi_report_degraded *d = &t->degraded[i];
    d->probes++;
    d->max_slowdown = slowdown > d->max_slowdown ? slowdown : d->max_slowdown;
}

void sampi_report_cells_from(const struct sampi_autosel *s, struct sampi_report_comm *rec)
{
    rec->h.ncells = 0;
    if (!s)
        return;
    for (int b = 0; b < SAMPI_AUTOSEL_BUCKETS; b++)
        for (int g = 0; g < SAMPI_REGIME__COUNT; g++) {
            const struct sampi_autosel_cell *c = sampi_autosel_cell(s, b, (enum sampi_regime)g);
            if (!c || !c->calls || rec->h.ncells >= SAMPI_REPORT_CELLS)
                continue;
            struct sampi_report_cell *o = &rec->h.cell[rec->h.ncells++];
            int next;
            double next_ns;
            *o = (struct sampi_report_cell){.bucket = b, .regime = g, .calls = c->calls};
            if (sampi_autosel_ranking(c, &o->choice, &o->choice_ns, &next, &next_ns))
                o->choice = -1;
            o->native_samples = c->arm[SAMPI_ALGO_NATIVE].n;
            o->native_ns = o->native_samples ? sampi_arm_median(&c->arm[SAMPI_ALGO_NATIVE]) : 0;
        }
}

/* A record's bytes, rounded up to 8 so that the next one's doubles are
 * aligned when records follow each other. */
static size_t packed_size(size_t n, size_t size)
{
    size_t k = sizeof(((struct sampi_report_comm *)0)->h) + n * sizeof(struct sampi_report_rank) +
               size * sizeof(int);
    return (k + 7) / 8 * 8;
}

size_t sampi_report_pack(const struct sampi_report_comm *rec, void *out)
{
    size_t n = rec->rank ? (size_t)rec->h.tot.n : 0, size = (size_t)rec->h.size;
    size_t need = packed_size(n, size);
    if (out) {
        memset((char *)out + need - 8, 0, 8); /* the padding */
        char *p = out;
        memcpy(p, &rec->h, sizeof(rec->h));
        if (!rec->rank)
            ((struct sampi_report_comm *)(void *)p)->h.tot.n = 0;
        p += sizeof(rec->h);
        if (n)
            memcpy(p, rec->rank, n * sizeof(*rec->rank));
        p += n * sizeof(*rec->rank);
        if (size)
            memcpy(p, rec->world_rank, size * sizeof(int));
    }
    return need;
}

size_t sampi_report_unpack(const void *buf, size_t len, struct sampi_report_comm *rec)
{
    if (len < sizeof(rec->h))
        return 0;
    memcpy(&rec->h, buf, sizeof(rec->h));
    if (rec->h.size < 1 || rec->h.tot.n < 0 || (rec->h.tot.n && rec->h.tot.n != rec->h.size) ||
        rec->h.ncells < 0 || rec->h.ncells > SAMPI_REPORT_CELLS)
        return 0;
    size_t n = (size_t)rec->h.tot.n, size = (size_t)rec->h.size;
    size_t need = packed_size(n, size);
    if (len < need)
        return 0;
    const char *p = (const char *)buf + sizeof(rec->h);
    rec->rank = n ? (struct sampi_report_rank *)(uintptr_t)p : NULL;
    rec->world_rank = (int *)(uintptr_t)(p + n * sizeof(*rec->rank));
    return need;
}

/* ---------------------------------------------------------------- text */

void sampi_report_printf(struct sampi_report_buf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int k = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->failed = 1;
            return;
        }
        if (b->p && (size_t)k < room) {
            b->len += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)k + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

void sampi_report_json_string(struct sampi_report_buf *b, const char *s)
{
    sampi_report_printf(b, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            sampi_report_printf(b, "\\%c", *c);
        else if (*c == '\n')
            sampi_report_printf(b, "\\n");
        else if (*c == '\t')
            sampi_report_printf(b, "\\t");
        else if (*c == '\r')
            sampi_report_printf(b, "\\r");
        else if (*c < 0x20 || *c == 0x7f)
            sampi_report_printf(b, "\\u%04x", *c);
        else
            sampi_report_printf(b, "%c", *c);
    }
    sampi_report_printf(b, "\"");
}

void sampi_report_buf_free(struct sampi_report_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* ---------------------------------------------------------------- summary */

static const char *host_of(const struct sampi_report_run *run, const struct sampi_report_comm *c,
                           int r)
{
    int w = c->world_rank ? c->world_rank[r] : -1;
    return w >= 0 && w < run->ranks && run->host[w] ? run->host[w] : "?";
}

static const char *node_of(const struct sampi_report_run *run, const struct sampi_report_comm *c,
                           int r, char *buf, size_t len)
{
    if (c->h.ranks_per_node > 0)
        snprintf(buf, len, "node%d", r / c->h.ranks_per_node);
    else
        snprintf(buf, len, "%s", host_of(run, c, r));
    return buf;
}

/* Ranks a and b of c on one node (no formatting: ranks_per_node asks n^2 times) */
static int node_eq(const struct sampi_report_run *run, const struct sampi_report_comm *c, int a,
                   int b)
{
    if (c->h.ranks_per_node > 0)
        return a / c->h.ranks_per_node == b / c->h.ranks_per_node;
    const char *x = host_of(run, c, a), *y = host_of(run, c, b);
    return x == y || strcmp(x, y) == 0;
}

static double median_lateness(const struct sampi_report_rank *k)
{
    return sampi_report_hist_quantile(k->hist, k->late_max_ns, 0.5);
}

/* The largest median lateness among c's ranks that meet a share of
 * sampi_report_is_late: the straggler the others are judged against. */
static double top_lateness(const struct sampi_report_comm *c)
{
    double top = 0;
    for (int i = 0; c->rank && i < c->h.size; i++) {
        const struct sampi_report_rank *k = &c->rank[i];
        double m = median_lateness(k);
        if (m > top && sampi_report_is_late(k->last_calls, k->late_calls, c->h.tot.tracked, m, 0))
            top = m;
    }
    return top;
}

/* `top`: top_lateness(c), computed once per communicator by the caller */
static int rank_late(const struct sampi_report_comm *c, int r, double top)
{
    if (!c->rank)
        return 0;
    const struct sampi_report_rank *k = &c->rank[r];
    return sampi_report_is_late(k->last_calls, k->late_calls, c->h.tot.tracked, median_lateness(k),
                                top);
}

/* Every rank of r's node (in c) is listed late. */
static int whole_node_late(const struct sampi_report_run *run, const struct sampi_report_comm *c,
                           int r, double top)
{
    for (int i = 0; i < c->h.size; i++)
        if (node_eq(run, c, i, r) && !rank_late(c, i, top))
            return 0;
    return 1;
}

/* The first rank of r's node in c (a node is named once). */
static int node_first(const struct sampi_report_run *run, const struct sampi_report_comm *c, int r)
{
    for (int i = 0; i < r; i++)
        if (node_eq(run, c, i, r))
            return 0;
    return 1;
}

static int ranks_per_node(const struct sampi_report_run *run, const struct sampi_report_comm *c)
{
    if (c->h.ranks_per_node > 0)
        return c->h.ranks_per_node < c->h.size ? c->h.ranks_per_node : c->h.size;
    int most = 0;
    for (int r = 0; r < c->h.size; r++) {
        int k = 0;
        for (int i = 0; i < c->h.size; i++)
            k += node_eq(run, c, i, r);
        most = k > most ? k : most;
    }
    return most;
}

static uint64_t calls_of(const struct sampi_report_comm *c)
{
    uint64_t n = 0;
    for (int a = 0; a < SAMPI_STATS_ALGOS_MAX; a++)
        n += c->h.calls[a];
    return n;
}

struct spread {
    double min, median, max;
};

static struct spread inside_spread(const struct sampi_report_comm *c)
{
    struct spread s = {0, 0, 0};
    int n = c->rank ? c->h.tot.n : 0;
    double *v = n ? malloc((size_t)n * sizeof(double)) : NULL;
    if (!v)
        return s;
    for (int r = 0; r < n; r++)
        v[r] = c->rank[r].inside_ns;
    s.median = median_of(v, n);
    s.min = v[0];
    s.max = v[n - 1];
    free(v);
    return s;
}

/* The degraded links seen (out: SAMPI_REPORT_DEGRADED + 1 entries): those
 * the probes found, and the one of the end if they missed it (no sums). */
static int degraded_of(const struct sampi_report_comm *c, struct sampi_report_degraded *out)
{
    int n = 0, end = c->h.degraded >= 0 && c->h.degraded < c->h.size ? c->h.degraded : -1;
    for (int i = 0; c->rank && i < c->h.tot.ndegraded && i < SAMPI_REPORT_DEGRADED; i++)
        if (c->h.tot.degraded[i].rank >= 0 && c->h.tot.degraded[i].rank < c->h.size)
            out[n++] = c->h.tot.degraded[i];
    int seen = 0;
    for (int i = 0; i < n; i++)
        seen |= out[i].rank == end;
    if (end >= 0 && !seen)
        out[n++] = (struct sampi_report_degraded){.rank = end, .max_slowdown = c->h.slowdown};
    return n;
}

/* The saving: native's median minus the winner's, times the cell's calls,
 * summed over the cells where both were measured.  *measured: cells that
 * count (native's own count, for 0); *unmeasured: cells whose winner is not
 * native and whose native arm has no sample; *unsettled: cells with no
 * winner yet. */
static double saved_ns(const struct sampi_report_comm *c, int *measured, int *unmeasured,
                       int *unsettled)
{
    double s = 0;
    *measured = *unmeasured = *unsettled = 0;
    if (calls_of(c) && calls_of(c) == c->h.calls[SAMPI_ALGO_NATIVE]) {
        *measured = -1; /* every call ran native: nothing saved, nothing to compare */
        return 0;
    }
    for (int i = 0; i < c->h.ncells; i++) {
        const struct sampi_report_cell *k = &c->h.cell[i];
        if (k->choice < 0) {
            (*unsettled)++;
            continue;
        }
        if (k->choice == SAMPI_ALGO_NATIVE) {
            (*measured)++;
            continue;
        }
        if (!k->native_samples) {
            (*unmeasured)++;
            continue;
        }
        (*measured)++;
        s += (k->native_ns - k->choice_ns) * (double)k->calls;
    }
    return s;
}

static const char *algo_name(int a)
{
    return a >= 0 && a < SAMPI_ALGO__COUNT ? sampi_algos[a].name : "none";
}

static const char *const saved_basis =
    "estimate: for each size bucket and regime where auto measured both, (native's median "
    "measured cost - the chosen algorithm's) x the calls auto decided there, 0 where it chose "
    "native; costs are from the last arrival to completion, over the last 8 measured calls of "
    "each";

static const char *const native_only =
    "every call ran Open MPI's own allreduce (native): SAMPI ran nothing of its own";

/* Why there is no saving figure (no cell counts). */
static const char *saved_why(const struct sampi_report_comm *c, int unmeasured)
{
    return !c->h.ncells ? "not measured: auto did not run on this communicator (a fixed "
                          "algorithm runs nothing to compare with)"
           : unmeasured ? "not measured: native was never measured where auto chose another "
                          "algorithm"
                        : "not measured: auto had not settled on a choice yet";
}

/* ---------------------------------------------------------------- text */

void sampi_report_format_text(struct sampi_report_buf *b, const struct sampi_report_run *run,
                              const struct sampi_report_comm *comms, int ncomms)
{
    int nodes = 0;
    for (int w = 0; w < run->ranks; w++) {
        int seen = 0;
        for (int v = 0; v < w && !seen; v++)
            seen = strcmp(run->host[v], run->host[w]) == 0;
        nodes += !seen;
    }
    sampi_report_printf(b, "SAMPI report\n");
    sampi_report_printf(b, "run: %d rank%s on %d host%s (", run->ranks, run->ranks == 1 ? "" : "s",
                        nodes, nodes == 1 ? "" : "s");
    for (int w = 0, k = 0; w < run->ranks; w++) {
        int seen = 0;
        for (int v = 0; v < w && !seen; v++)
            seen = strcmp(run->host[v], run->host[w]) == 0;
        if (!seen)
            sampi_report_printf(b, "%s%s", k++ ? " " : "", run->host[w]);
    }
    sampi_report_printf(b, "); %s\n", run->mpi_version);
    sampi_report_printf(b, "variables set:");
    for (int i = 0; i < run->nvars; i++)
        sampi_report_printf(b, " sampi_%s=%s", run->var_names[i], run->var_values[i]);
    sampi_report_printf(b, "%s\n", run->nvars ? "" : " none");
    sampi_report_printf(b,
                        "late rank: last in >= %.0f%% of the tracked calls, or >= %.1f ms after "
                        "the median rank in >= %.0f%% of them with a median >= %.0f%% of the "
                        "latest rank's (and in >= %d calls); lateness: after the median rank\n",
                        SAMPI_REPORT_LAST_SHARE * 100, SAMPI_REPORT_LATE_NS / 1e6,
                        SAMPI_REPORT_LATE_SHARE * 100, SAMPI_REPORT_LATE_RELATIVE * 100,
                        SAMPI_REPORT_LATE_MIN);
    for (int i = 0; i < ncomms; i++) {
        const struct sampi_report_comm *c = &comms[i];
        const struct sampi_report_totals *t = &c->h.tot;
        char node[256];
        uint64_t tracked = c->rank ? t->tracked : 0;
        sampi_report_printf(b, "\ncommunicator %llu: %d ranks, %d per node%s\n",
                            (unsigned long long)c->h.label, c->h.size, ranks_per_node(run, c),
                            c->h.ranks_per_node > 0 ? " (emulated nodes)" : "");
        sampi_report_printf(b, "  calls: of %llu calls, %llu tracked",
                            (unsigned long long)calls_of(c), (unsigned long long)tracked);
        if (c->h.nb_calls)
            sampi_report_printf(b, " (%llu of the calls nonblocking)",
                                (unsigned long long)c->h.nb_calls);
        sampi_report_printf(b, "; the arrival figures cover the tracked calls\n  ran:");
        for (int a = 0; a < SAMPI_ALGO__COUNT && a < SAMPI_STATS_ALGOS_MAX; a++)
            if (c->h.calls[a])
                sampi_report_printf(b, " %s %llu", algo_name(a), (unsigned long long)c->h.calls[a]);
        sampi_report_printf(b, "\n");
        for (int k = 0; c->rank && k < SAMPI_AUTOSEL_BUCKETS; k++)
            if (t->bucket_calls[k])
                sampi_report_printf(b, "  tracked calls up to 2^%d bytes: %llu, %.0f bytes\n", k,
                                    (unsigned long long)t->bucket_calls[k], t->bucket_bytes[k]);
        for (int k = 0; k < c->h.ncells; k++) {
            const struct sampi_report_cell *e = &c->h.cell[k];
            sampi_report_printf(b, "  auto, up to 2^%d bytes, %s: %llu calls, ", e->bucket,
                                sampi_regime_names[e->regime], (unsigned long long)e->calls);
            if (e->choice >= 0)
                sampi_report_printf(b, "runs %s (%.3f ms)", algo_name(e->choice),
                                    e->choice_ns / 1e6);
            else
                sampi_report_printf(b, "still exploring");
            if (e->native_samples)
                sampi_report_printf(b, ", native %.3f ms\n", e->native_ns / 1e6);
            else
                sampi_report_printf(b, ", native not measured\n");
        }
        if (!tracked) {
            sampi_report_printf(b, "  no tracked call: no arrival figures\n");
        } else {
            struct spread s = inside_spread(c);
            sampi_report_printf(b,
                                "  time inside tracked calls per rank: min %.3f ms, median %.3f "
                                "ms, max %.3f ms\n",
                                s.min / 1e6, s.median / 1e6, s.max / 1e6);
            sampi_report_printf(b, "  late ranks:");
            const double top = top_lateness(c);
            int any = 0;
            for (int r = 0; r < c->h.size; r++) {
                if (!rank_late(c, r, top))
                    continue;
                const struct sampi_report_rank *k = &c->rank[r];
                any = 1;
                sampi_report_printf(
                    b,
                    "\n    rank %d (world rank %d, %s): late in %llu of %llu tracked calls, last "
                    "in %llu; lateness median %.3f ms, p99 %.3f ms, max %.3f ms; the others "
                    "waited %.3f ms for it%s",
                    r, c->world_rank[r], node_of(run, c, r, node, sizeof(node)),
                    (unsigned long long)k->late_calls, (unsigned long long)tracked,
                    (unsigned long long)k->last_calls,
                    sampi_report_hist_quantile(k->hist, k->late_max_ns, 0.5) / 1e6,
                    sampi_report_hist_quantile(k->hist, k->late_max_ns, 0.99) / 1e6,
                    k->late_max_ns / 1e6, k->caused_ns / 1e6,
                    whole_node_late(run, c, r, top) ? "; its whole node was late" : "");
            }
            sampi_report_printf(b, "%s\n", any ? "" : " none");
            sampi_report_printf(b, "  late nodes:");
            any = 0;
            for (int r = 0; r < c->h.size; r++)
                if (rank_late(c, r, top) && whole_node_late(run, c, r, top) &&
                    node_first(run, c, r)) {
                    sampi_report_printf(b, " %s", node_of(run, c, r, node, sizeof(node)));
                    any = 1;
                }
            sampi_report_printf(b, "%s\n", any ? "" : " none");
            sampi_report_printf(b,
                                "  time lost waiting for the last arrival: %.3f ms (each rank's "
                                "time in a tracked call before its last rank arrived, summed)\n",
                                t->lost_ns / 1e6);
        }
        struct sampi_report_degraded deg[SAMPI_REPORT_DEGRADED + 1];
        int ndeg = degraded_of(c, deg);
        sampi_report_printf(b, "  degraded links:%s", ndeg ? "" : " none detected");
        for (int k = 0; k < ndeg; k++)
            sampi_report_printf(b,
                                "%s rank %d (world rank %d), up to %.2f times slower, "
                                "degraded at %u probe%s%s",
                                k ? ";" : "", deg[k].rank, c->world_rank[deg[k].rank],
                                deg[k].max_slowdown, deg[k].probes, deg[k].probes == 1 ? "" : "s",
                                deg[k].rank == c->h.degraded ? ", still at the end" : "");
        sampi_report_printf(b, "\n");
        int measured, unmeasured, unsettled;
        double saved = saved_ns(c, &measured, &unmeasured, &unsettled);
        if (measured < 0)
            sampi_report_printf(b, "  saved: nothing (%s)\n", native_only);
        else if (!measured)
            sampi_report_printf(b, "  saved: %s\n", saved_why(c, unmeasured));
        else
            sampi_report_printf(b, "  saved (estimate): %.3f ms over %d bucket%s%s; %s\n",
                                saved / 1e6, measured, measured == 1 ? "" : "s",
                                unmeasured ? ", others not measured" : "", saved_basis);
    }
}

/* ---------------------------------------------------------------- JSON */

static void json_ms(struct sampi_report_buf *b, const char *key, double ns, int comma)
{
    sampi_report_printf(b, "\"%s\": %.6f%s", key, isfinite(ns) ? ns / 1e6 : 0.0, comma ? ", " : "");
}

static void json_comm(struct sampi_report_buf *b, const struct sampi_report_run *run,
                      const struct sampi_report_comm *c)
{
    const struct sampi_report_totals *t = &c->h.tot;
    uint64_t tracked = c->rank ? t->tracked : 0;
    char node[256];
    sampi_report_printf(b,
                        "{\"label\": %llu, \"size\": %d, \"ranks_per_node\": %d, "
                        "\"emulated_nodes\": %s, \"calls\": %llu, \"tracked_calls\": %llu, "
                        "\"nonblocking_calls\": %llu, \"calls_by_algorithm\": {",
                        (unsigned long long)c->h.label, c->h.size, ranks_per_node(run, c),
                        c->h.ranks_per_node > 0 ? "true" : "false", (unsigned long long)calls_of(c),
                        (unsigned long long)tracked, (unsigned long long)c->h.nb_calls);
    for (int a = 0, k = 0; a < SAMPI_ALGO__COUNT && a < SAMPI_STATS_ALGOS_MAX; a++)
        if (c->h.calls[a])
            sampi_report_printf(b, "%s\"%s\": %llu", k++ ? ", " : "", algo_name(a),
                                (unsigned long long)c->h.calls[a]);
    sampi_report_printf(b, "}, \"tracked_by_size\": [");
    for (int k = 0, m = 0; c->rank && k < SAMPI_AUTOSEL_BUCKETS; k++)
        if (t->bucket_calls[k])
            sampi_report_printf(b, "%s{\"max_bytes\": %.0f, \"calls\": %llu, \"bytes\": %.0f}",
                                m++ ? ", " : "", exp2(k), (unsigned long long)t->bucket_calls[k],
                                t->bucket_bytes[k]);
    sampi_report_printf(b, "], \"auto\": [");
    for (int k = 0; k < c->h.ncells; k++) {
        const struct sampi_report_cell *e = &c->h.cell[k];
        sampi_report_printf(b,
                            "%s{\"max_bytes\": %.0f, \"regime\": \"%s\", \"calls\": %llu, "
                            "\"choice\": \"%s\", ",
                            k ? ", " : "", exp2(e->bucket), sampi_regime_names[e->regime],
                            (unsigned long long)e->calls, algo_name(e->choice));
        json_ms(b, "choice_median_ms", e->choice_ns, 1);
        sampi_report_printf(b, "\"native_samples\": %d, \"native_median_ms\": ", e->native_samples);
        if (e->native_samples)
            sampi_report_printf(b, "%.6f}", e->native_ns / 1e6);
        else
            sampi_report_printf(b, "null}");
    }
    sampi_report_printf(b, "], ");
    struct spread s = inside_spread(c);
    sampi_report_printf(b, "\"time_in_tracked_calls_ms\": {");
    json_ms(b, "min", s.min, 1);
    json_ms(b, "median", s.median, 1);
    json_ms(b, "max", s.max, 0);
    sampi_report_printf(b, "}, \"late_ranks\": [");
    const double top = top_lateness(c);
    for (int r = 0, m = 0; r < c->h.size; r++) {
        if (!rank_late(c, r, top))
            continue;
        const struct sampi_report_rank *k = &c->rank[r];
        sampi_report_printf(b, "%s{\"rank\": %d, \"world_rank\": %d, \"node\": ", m++ ? ", " : "",
                            r, c->world_rank[r]);
        sampi_report_json_string(b, node_of(run, c, r, node, sizeof(node)));
        sampi_report_printf(b, ", \"last_calls\": %llu, \"late_calls\": %llu, ",
                            (unsigned long long)k->last_calls, (unsigned long long)k->late_calls);
        json_ms(b, "lateness_median_ms", sampi_report_hist_quantile(k->hist, k->late_max_ns, 0.5),
                1);
        json_ms(b, "lateness_p99_ms", sampi_report_hist_quantile(k->hist, k->late_max_ns, 0.99), 1);
        json_ms(b, "lateness_max_ms", k->late_max_ns, 1);
        json_ms(b, "lateness_mean_ms", k->late_sum_ns / (double)k->late_calls, 1);
        json_ms(b, "caused_wait_ms", k->caused_ns, 1);
        sampi_report_printf(b, "\"whole_node_late\": %s}",
                            whole_node_late(run, c, r, top) ? "true" : "false");
    }
    sampi_report_printf(b, "], \"late_nodes\": [");
    for (int r = 0, m = 0; r < c->h.size; r++)
        if (rank_late(c, r, top) && whole_node_late(run, c, r, top) && node_first(run, c, r)) {
            sampi_report_printf(b, "%s", m++ ? ", " : "");
            sampi_report_json_string(b, node_of(run, c, r, node, sizeof(node)));
        }
    sampi_report_printf(b, "], \"degraded_links\": [");
    struct sampi_report_degraded deg[SAMPI_REPORT_DEGRADED + 1];
    int ndeg = degraded_of(c, deg);
    for (int k = 0; k < ndeg; k++)
        sampi_report_printf(b,
                            "%s{\"rank\": %d, \"world_rank\": %d, \"slowdown\": %.3f, "
                            "\"probes\": %u, \"at_end\": %s}",
                            k ? ", " : "", deg[k].rank, c->world_rank[deg[k].rank],
                            deg[k].max_slowdown, deg[k].probes,
                            deg[k].rank == c->h.degraded ? "true" : "false");
    sampi_report_printf(b, "], ");
    json_ms(b, "lost_waiting_ms", tracked ? t->lost_ns : 0, 1);
    int measured, unmeasured, unsettled;
    double saved = saved_ns(c, &measured, &unmeasured, &unsettled);
    sampi_report_printf(b, "\"saved\": {\"estimate_ms\": ");
    if (measured)
        sampi_report_printf(b, "%.6f, \"basis\": ", saved / 1e6);
    else
        sampi_report_printf(b, "null, \"basis\": ");
    sampi_report_json_string(b, measured < 0 ? native_only
                                : measured   ? saved_basis
                                             : saved_why(c, unmeasured));
    measured = measured < 0 ? 0 : measured;
    sampi_report_printf(b,
                        ", \"buckets_measured\": %d, \"buckets_unmeasured\": %d, "
                        "\"buckets_unsettled\": %d}, ",
                        measured, unmeasured, unsettled);
    sampi_report_printf(b, "\"lateness_windows\": {\"calls_per_window\": %llu, \"calls\": [",
                        (unsigned long long)(tracked ? t->span : 0));
    int nw = 0;
    for (int w = 0; tracked && w < SAMPI_REPORT_WINDOWS; w++)
        nw = t->window_calls[w] ? w + 1 : nw;
    for (int w = 0; w < nw; w++)
        sampi_report_printf(b, "%s%llu", w ? ", " : "", (unsigned long long)t->window_calls[w]);
    sampi_report_printf(b, "], \"ranks\": [");
    for (int r = 0; tracked && r < c->h.size; r++) {
        sampi_report_printf(b, "%s{\"rank\": %d, \"node\": ", r ? ", " : "", r);
        sampi_report_json_string(b, node_of(run, c, r, node, sizeof(node)));
        sampi_report_printf(b, ", \"mean_lateness_ms\": [");
        for (int w = 0; w < nw; w++)
            sampi_report_printf(b, "%s%.6f", w ? ", " : "",
                                t->window_calls[w]
                                    ? c->rank[r].window_ns[w] / (double)t->window_calls[w] / 1e6
                                    : 0.0);
        sampi_report_printf(b, "]}");
    }
    sampi_report_printf(b, "]}}");
}

void sampi_report_format_json(struct sampi_report_buf *b, const struct sampi_report_run *run,
                              const struct sampi_report_comm *comms, int ncomms)
{
    sampi_report_printf(b, "{\"sampi_report\": 1, \"run\": {\"ranks\": %d, \"hosts\": [",
                        run->ranks);
    int nodes = 0;
    for (int w = 0; w < run->ranks; w++) {
        int seen = 0;
        for (int v = 0; v < w && !seen; v++)
            seen = strcmp(run->host[v], run->host[w]) == 0;
        if (!seen) {
            sampi_report_printf(b, "%s", nodes++ ? ", " : "");
            sampi_report_json_string(b, run->host[w]);
        }
    }
    sampi_report_printf(b, "], \"nodes\": %d, \"world_rank_hosts\": [", nodes);
    for (int w = 0; w < run->ranks; w++) {
        sampi_report_printf(b, "%s", w ? ", " : "");
        sampi_report_json_string(b, run->host[w]);
    }
    sampi_report_printf(b, "], \"mpi_version\": ");
    sampi_report_json_string(b, run->mpi_version);
    sampi_report_printf(b, ", \"variables\": {");
    for (int i = 0; i < run->nvars; i++) {
        char name[300];
        snprintf(name, sizeof(name), "sampi_%s", run->var_names[i]);
        sampi_report_printf(b, "%s", i ? ", " : "");
        sampi_report_json_string(b, name);
        sampi_report_printf(b, ": ");
        sampi_report_json_string(b, run->var_values[i]);
    }
    sampi_report_printf(b, "}}, \"late_rule\": {");
    json_ms(b, "lateness_ms", SAMPI_REPORT_LATE_NS, 1);
    sampi_report_printf(b,
                        "\"late_share\": %.2f, \"last_share\": %.2f, \"min_calls\": %d, "
                        "\"relative\": %.2f}, \"communicators\": [",
                        SAMPI_REPORT_LATE_SHARE, SAMPI_REPORT_LAST_SHARE, SAMPI_REPORT_LATE_MIN,
                        SAMPI_REPORT_LATE_RELATIVE);
    for (int i = 0; i < ncomms; i++) {
        sampi_report_printf(b, "%s", i ? ",\n " : "\n ");
        json_comm(b, run, &comms[i]);
    }
    sampi_report_printf(b, "]}\n");
}
