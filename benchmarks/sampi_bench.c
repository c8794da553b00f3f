/*
 * sampi_bench.c - MPI_Allreduce benchmark with OSU-compatible options that runs
 * several SAMPI algorithms side by side and can make one rank late.
 *
 * Every entry of --algos gets its own duplicate of MPI_COMM_WORLD, configured
 * through sampi.h.  The entries run interleaved inside one iteration loop, so
 * on a shared, noisy machine every algorithm sees the same background load and
 * the ratios between them stay meaningful even when absolute times drift.
 *
 * The loop only records the entry and exit time of every call on every rank;
 * the timestamps are gathered to rank 0 afterwards and all metrics are
 * computed there (see compute_entry).  Several metrics compare timestamps of
 * different ranks, so they need one clock for all ranks: see choose_clock().
 *
 * The program's own bookkeeping (agreeing on errors and exit codes) uses
 * PMPI_Allreduce so that it never goes through the library under test.
 *
 * --nonblocking measures MPI_Iallreduce as osu_iallreduce does, in two
 * phases per size, each the same interleaved loop: first the pure
 * communication time (post, then wait at once), then post, compute for that
 * long on the clock, wait; how much of the call the compute hid is the
 * overlap (see compute_overlap).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include <mpi.h>

#include "config.h"
#include "sampi.h"

enum { BENCH_OK = 0, BENCH_FAILED = 1, BENCH_USAGE = 2 };

/* osu_allreduce's defaults: sizes above LARGE_MESSAGE_SIZE bytes use the
 * smaller iteration and warm-up counts. */
#define LARGE_MESSAGE_SIZE 8192
#define ITERS_SMALL        1000
#define ITERS_LARGE        100
#define WARMUP_SMALL       100
#define WARMUP_LARGE       10
#define DEFAULT_MIN_BYTES  4
#define DEFAULT_MAX_BYTES  ((size_t)1 << 20)
#define DEFAULT_ALGOS      "native,auto"
#define MAX_ITERS          1000000

#define MAX_ENTRIES 16
#define NAME_LEN    64
/* Distinct algorithm names remembered (and counted) per (size, entry): enough
 * for every exact algorithm auto may run, without storing one name per call. */
#define MAX_RAN 8
/* Validation checks that this many bytes past the result stay untouched. */
#define GUARD_BYTES 64
#define GUARD_FILL  0xA5
/* Page alignment keeps buffer placement identical from size to size. */
#define BUF_ALIGN 4096

/* ------------------------------------------------------------ datatypes */

struct dtype {
    const char *name;     /* spelling accepted by -T */
    const char *mpi_name; /* for the header */
    MPI_Datatype mpi;
    size_t size;
    /* Sums stay exact integers below this, whatever the addition order. */
    double max_exact;
    void (*store)(void *buf, size_t i, double v);
    double (*load)(const void *buf, size_t i);
};

#define DTYPE_ACCESSORS(tag, ctype)                                                                \
    static void store_##tag(void *buf, size_t i, double v)                                         \
    {                                                                                              \
        ((ctype *)buf)[i] = (ctype)v;                                                              \
    }                                                                                              \
    static double load_##tag(const void *buf, size_t i)                                            \
    {                                                                                              \
        return (double)((const ctype *)buf)[i];                                                    \
    }

DTYPE_ACCESSORS(float, float)
DTYPE_ACCESSORS(double, double)
DTYPE_ACCESSORS(int, int)
DTYPE_ACCESSORS(schar, signed char)

/* "char" is MPI_SIGNED_CHAR: MPI defines MPI_SUM on the signed and unsigned
 * char types but not on MPI_CHAR, which SAMPI therefore hands to Open MPI. */
static const struct dtype dtypes[] = {
    {"float", "MPI_FLOAT", MPI_FLOAT, sizeof(float), 16777216.0, store_float, load_float},
    {"double", "MPI_DOUBLE", MPI_DOUBLE, sizeof(double), 9007199254740992.0, store_double,
     load_double},
    {"int", "MPI_INT", MPI_INT, sizeof(int), 2147483647.0, store_int, load_int},
    {"char", "MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, 1, 127.0, store_schar, load_schar},
};
#define NDTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

/* ------------------------------------------------------------ configuration */

struct entry_spec {
    char spec[2 * NAME_LEN]; /* as given: NAME or NAME@NETDEV */
    char algo[NAME_LEN];
    char netdev[NAME_LEN]; /* "" when the entry keeps the process-wide data path */
};

struct config {
    size_t min_bytes, max_bytes;
    int iters, warmup; /* -1: osu_allreduce's default for each size */
    bool full, check, tail, json, inplace, help, version;
    const struct dtype *dt;
    struct entry_spec specs[MAX_ENTRIES];
    int nspecs;
    int straggler;   /* -1: nobody is late */
    double delay_ms; /* < 0: not given */
    bool spin;       /* --straggle-by spin: the straggler computes instead of sleeping */
    /* --straggle-pattern: 0 the same delay every call; JITTER a delay drawn
     * in [0, D]; PHASES late for `phase` calls, then on time for as many */
    enum { PATTERN_CONSTANT, PATTERN_JITTER, PATTERN_PHASES } pattern;
    int phase;
    char pattern_name[32]; /* as given, for the JSON */
    /* --net-tail: a network tail emulated for the reliable entries */
    double tail_pct;      /* < 0: off */
    double tail_delay_ms; /* how late a late datagram is */
    size_t tail_dgram;    /* bytes per datagram */
    bool samples;         /* --samples: every timed call's last-arrival time in JSON */
    bool nonblocking;     /* --nonblocking: MPI_Iallreduce + MPI_Wait, then with compute */
    bool test_compute;    /* --test-during-compute: MPI_Test during the compute phase */
    double compute_ms;    /* --compute-ms: the compute phase's length; < 0: the pure call's */
    /* --compute-pu: the PUs the program's thread is bound to after MPI_Init
     * (0 PUs: left as mpirun bound it) */
    cpu_set_t compute_pus;
    int ncompute_pus;
};

static char opt_error[256];

static int fail_opt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(opt_error, sizeof(opt_error), fmt, ap);
    va_end(ap);
    return -1;
}

/* A byte count with an optional k, M or G suffix (powers of 1024). */
static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    int shift = 0;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    }
    if (*end != '\0' || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

static int parse_int(const char *s, long min, long max, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

/* osu_allreduce's -m: "MAX", "MIN:MAX" or "MIN:". */
static int opt_sizes(struct config *cfg, const char *arg)
{
    const char *colon = strchr(arg, ':');
    char min_text[32];

    if (!colon) {
        if (parse_bytes(arg, &cfg->max_bytes))
            return fail_opt("-m: '%s' is not a size (bytes, optionally with k, M or G)", arg);
        return 0;
    }
    if ((size_t)(colon - arg) >= sizeof(min_text))
        return fail_opt("-m: '%s' is not [MIN:]MAX", arg);
    memcpy(min_text, arg, (size_t)(colon - arg));
    min_text[colon - arg] = '\0';
    if (min_text[0] && parse_bytes(min_text, &cfg->min_bytes))
        return fail_opt("-m: '%s' is not a size (bytes, optionally with k, M or G)", min_text);
    if (colon[1] && parse_bytes(colon + 1, &cfg->max_bytes))
        return fail_opt("-m: '%s' is not a size (bytes, optionally with k, M or G)", colon + 1);
    return 0;
}

static int opt_iters(struct config *cfg, const char *arg)
{
    if (parse_int(arg, 1, MAX_ITERS, &cfg->iters))
        return fail_opt("-i: '%s' is not an iteration count (1..%d)", arg, MAX_ITERS);
    return 0;
}

static int opt_warmup(struct config *cfg, const char *arg)
{
    if (parse_int(arg, 0, MAX_ITERS, &cfg->warmup))
        return fail_opt("-x: '%s' is not a warm-up count (0..%d)", arg, MAX_ITERS);
    return 0;
}

static int opt_type(struct config *cfg, const char *arg)
{
    /* osu_allreduce spells the types mpi_float, mpi_int, mpi_char. */
    const char *name = strncmp(arg, "mpi_", 4) == 0 ? arg + 4 : arg;

    for (size_t i = 0; i < NDTYPES; i++) {
        if (strcmp(name, dtypes[i].name) == 0) {
            cfg->dt = &dtypes[i];
            return 0;
        }
    }
    return fail_opt("-T: unknown datatype '%s' (accepted: float, double, int, char)", arg);
}

static int parse_entry(struct entry_spec *es, const char *text, size_t len)
{
    const char *at = memchr(text, '@', len);
    size_t alen = at ? (size_t)(at - text) : len;
    size_t nlen = at ? len - alen - 1 : 0;

    if (len >= sizeof(es->spec) || alen >= sizeof(es->algo) || nlen >= sizeof(es->netdev))
        return fail_opt("--algos: entry '%.*s' is too long", (int)len, text);
    if (alen == 0 || (at && nlen == 0))
        return fail_opt("--algos: entry '%.*s' must be NAME or NAME@NETDEV", (int)len, text);
    memcpy(es->spec, text, len);
    es->spec[len] = '\0';
    memcpy(es->algo, text, alen);
    es->algo[alen] = '\0';
    memcpy(es->netdev, at ? at + 1 : "", nlen);
    es->netdev[nlen] = '\0';
    return 0;
}

static int opt_algos(struct config *cfg, const char *arg)
{
    const char *p = arg;

    cfg->nspecs = 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (cfg->nspecs == MAX_ENTRIES)
            return fail_opt("--algos: at most %d entries", MAX_ENTRIES);
        if (parse_entry(&cfg->specs[cfg->nspecs], p, len))
            return -1;
        cfg->nspecs++;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

static int opt_straggler(struct config *cfg, const char *arg)
{
    if (parse_int(arg, 0, INT_MAX, &cfg->straggler))
        return fail_opt("--straggler: '%s' is not a rank", arg);
    return 0;
}

/* A whole-string time in milliseconds, 0 to an hour, into *ms: 0 or -1. */
static int parse_ms(const char *arg, double *ms)
{
    char *end;

    errno = 0;
    *ms = strtod(arg, &end);
    return errno || end == arg || *end != '\0' || !(*ms >= 0) || *ms > 3.6e6 ? -1 : 0;
}

static int opt_delay(struct config *cfg, const char *arg)
{
    if (parse_ms(arg, &cfg->delay_ms))
        return fail_opt("--delay-ms: '%s' is not a delay in milliseconds (0..3600000)", arg);
    return 0;
}

static int opt_compute_ms(struct config *cfg, const char *arg)
{
    if (parse_ms(arg, &cfg->compute_ms))
        return fail_opt("--compute-ms: '%s' is not a time in milliseconds (0..3600000)", arg);
    return 0;
}

/* --compute-pu LIST: operating-system PU numbers such as 0 or 0,2-3. */
static int opt_compute_pu(struct config *cfg, const char *arg)
{
    const char *s = arg;

    CPU_ZERO(&cfg->compute_pus);
    for (;;) {
        int lo, hi;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || end == s || v < 0 || v >= CPU_SETSIZE)
            break;
        lo = hi = (int)v;
        if (*end == '-') {
            s = end + 1;
            v = strtol(s, &end, 10);
            if (errno || end == s || v < lo || v >= CPU_SETSIZE)
                break;
            hi = (int)v;
        }
        for (int pu = lo; pu <= hi; pu++)
            CPU_SET(pu, &cfg->compute_pus);
        if (*end == '\0') {
            cfg->ncompute_pus = CPU_COUNT(&cfg->compute_pus);
            return 0;
        }
        if (*end != ',')
            break;
        s = end + 1;
    }
    return fail_opt("--compute-pu: '%s' is not a list of PU numbers such as 0 or 0,2-3 (each "
                    "below %d)",
                    arg, CPU_SETSIZE);
}

static int opt_straggle_by(struct config *cfg, const char *arg)
{
    if (strcmp(arg, "sleep") && strcmp(arg, "spin"))
        return fail_opt("--straggle-by: '%s' is not sleep or spin", arg);
    cfg->spin = strcmp(arg, "spin") == 0;
    return 0;
}

/* --straggle-pattern constant | jitter | phases:N */
static int opt_straggle_pattern(struct config *cfg, const char *arg)
{
    if (strcmp(arg, "constant") == 0)
        cfg->pattern = PATTERN_CONSTANT;
    else if (strcmp(arg, "jitter") == 0)
        cfg->pattern = PATTERN_JITTER;
    else if (strncmp(arg, "phases:", 7) == 0 && !parse_int(arg + 7, 1, 1000000, &cfg->phase))
        cfg->pattern = PATTERN_PHASES;
    else
        return fail_opt("--straggle-pattern: '%s' is not constant, jitter or phases:N (N calls "
                        "late, N on time; 1 <= N <= 1000000)",
                        arg);
    snprintf(cfg->pattern_name, sizeof(cfg->pattern_name), "%s", arg);
    return 0;
}

/* --net-tail PCT:MS[:DGRAM]: PCT percent of the datagrams a rank receives are
 * MS milliseconds late; datagrams of DGRAM bytes (default 64 KiB, optireduce's
 * on loopback and in the testbed). */
static int opt_net_tail(struct config *cfg, const char *arg)
{
    char *end;
    const char *ms;
    size_t dgram = (size_t)64 << 10;

    errno = 0;
    cfg->tail_pct = strtod(arg, &end);
    if (errno || end == arg || *end != ':' || !(cfg->tail_pct >= 0) || cfg->tail_pct > 100)
        goto bad;
    ms = end + 1;
    cfg->tail_delay_ms = strtod(ms, &end);
    if (errno || end == ms || !(cfg->tail_delay_ms >= 0) || cfg->tail_delay_ms > 3.6e6)
        goto bad;
    if (*end == ':' && (parse_bytes(end + 1, &dgram) || dgram == 0))
        goto bad;
    if (*end != ':' && *end != '\0')
        goto bad;
    cfg->tail_dgram = dgram;
    return 0;
bad:
    cfg->tail_pct = -1;
    return fail_opt("--net-tail: '%s' is not PCT:MS[:DGRAM_BYTES] (percent 0..100, "
                    "milliseconds, bytes)",
                    arg);
}

/* One row per option: adding an option is adding a row (and, for options with
 * an argument, its parser).  Flags set the bool at `flag` instead. */
struct option_row {
    const char *lname;
    char sname; /* 0: long option only */
    const char *argname;
    int (*apply)(struct config *cfg, const char *arg);
    size_t flag;
    const char *help;
};

#define FLAG(member) NULL, offsetof(struct config, member)

static const struct option_row option_rows[] = {
    {"message-size", 'm', "[MIN:]MAX", opt_sizes, 0,
     "message sizes in bytes, powers of two from MIN to MAX; k, M, G suffixes "
     "(default 4:1M)"},
    {"iterations", 'i', "ITER", opt_iters, 0,
     "timed iterations per size (default 1000 up to 8 KiB, 100 above)"},
    {"warmup", 'x', "WARMUP", opt_warmup, 0,
     "untimed warm-up iterations per size (default 100 up to 8 KiB, 10 above)"},
    {"full", 'f', NULL, FLAG(full), "also print min and max latency over ranks, and iterations"},
    {"validation", 'c', NULL, FLAG(check),
     "check every result element on every rank (separate untimed calls)"},
    {"tail-lat", 'z', NULL, FLAG(tail), "also print P50, P90, P99 tail latency (OSU definition)"},
    {"type", 'T', "TYPE", opt_type, 0, "datatype: float (default), double, int, char"},
    {"inplace", 'l', NULL, FLAG(inplace), "use MPI_IN_PLACE (validation then checks both forms)"},
    {"algos", 0, "LIST", opt_algos, 0,
     "comma-separated entries NAME or NAME@NETDEV, run interleaved (default native,auto)"},
    {"straggler", 0, "RANK", opt_straggler, 0, "this rank is late before every call"},
    {"delay-ms", 0, "D", opt_delay, 0, "how late the straggler is, in milliseconds"},
    {"straggle-by", 0, "HOW", opt_straggle_by, 0,
     "sleep (default: gives its core away) or spin (computes, as with a core per rank)"},
    {"straggle-pattern", 0, "PAT", opt_straggle_pattern, 0,
     "constant (default), jitter (delay uniform in [0, D], seeded) or phases:N (N calls late, N "
     "on time)"},
    {"net-tail", 0, "PCT:MS[:DGRAM]", opt_net_tail, 0,
     "emulate a network tail for reliable entries: PCT% of datagrams MS late"},
    {"samples", 0, NULL, FLAG(samples),
     "with --json, add every timed call's last-arrival time (for CDFs)"},
    {"nonblocking", 'N', NULL, FLAG(nonblocking),
     "time MPI_Iallreduce + MPI_Wait, then its overlap with compute (osu_iallreduce)"},
    {"test-during-compute", 0, NULL, FLAG(test_compute),
     "with --nonblocking, MPI_Test every tenth of the compute phase (osu_iallreduce -t)"},
    {"compute-ms", 0, "MS", opt_compute_ms, 0,
     "with --nonblocking, compute MS per call instead of the call's own mean time"},
    {"compute-pu", 0, "LIST", opt_compute_pu, 0,
     "bind the program's thread to these PUs (e.g. 0 or 0,2-3), leaving others to progress "
     "threads"},
    {"json", 0, NULL, FLAG(json), "print one JSON object per (size, entry) on stdout"},
    {"version", 'v', NULL, FLAG(version), "print the SAMPI version and exit"},
    {"help", 'h', NULL, FLAG(help), "print this help and exit"},
};
#define NOPTIONS (sizeof(option_rows) / sizeof(option_rows[0]))
/* getopt_long value for a long-only row: past every short option character. */
#define LONG_ONLY_BASE 256

static void print_usage(FILE *f)
{
    fprintf(f, "Usage: sampi_bench [OPTION]...\n"
               "MPI_Allreduce latency and straggler benchmark (osu_allreduce options, "
               "plus SAMPI's).\n\n");
    for (size_t i = 0; i < NOPTIONS; i++) {
        const struct option_row *o = &option_rows[i];
        char left[64];
        int n = o->sname ? snprintf(left, sizeof(left), "-%c, --%s", o->sname, o->lname)
                         : snprintf(left, sizeof(left), "    --%s", o->lname);
        if (o->argname)
            snprintf(left + n, sizeof(left) - (size_t)n, " %s", o->argname);
        fprintf(f, "  %-30s %s\n", left, o->help);
    }
    fprintf(f, "\nExit status: 0 success, 1 validation or run failure, 2 bad options.\n"
               "See sampi_bench(1).\n");
}

static void config_defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->min_bytes = DEFAULT_MIN_BYTES;
    cfg->max_bytes = DEFAULT_MAX_BYTES;
    cfg->iters = -1;
    cfg->warmup = -1;
    cfg->dt = &dtypes[0];
    cfg->straggler = -1;
    cfg->delay_ms = -1;
    cfg->tail_pct = -1;
    cfg->compute_ms = -1;
    opt_algos(cfg, DEFAULT_ALGOS);
}

static int apply_row(struct config *cfg, const struct option_row *o, const char *arg)
{
    if (o->apply)
        return o->apply(cfg, arg);
    *(bool *)((char *)cfg + o->flag) = true;
    return 0;
}

static const struct option_row *find_row(int val)
{
    for (size_t i = 0; i < NOPTIONS; i++) {
        if (val == (option_rows[i].sname ? option_rows[i].sname : LONG_ONLY_BASE + (int)i))
            return &option_rows[i];
    }
    return NULL;
}

/* The getopt tables are built from option_rows so the rows stay the only list. */
static int parse_options(int argc, char **argv, struct config *cfg)
{
    struct option longopts[NOPTIONS + 1];
    char shortopts[2 * NOPTIONS + 2] = ":";
    size_t ns = 1;

    for (size_t i = 0; i < NOPTIONS; i++) {
        const struct option_row *o = &option_rows[i];
        int val = o->sname ? o->sname : LONG_ONLY_BASE + (int)i;
        longopts[i] =
            (struct option){o->lname, o->argname ? required_argument : no_argument, NULL, val};
        if (o->sname) {
            shortopts[ns++] = o->sname;
            if (o->argname)
                shortopts[ns++] = ':';
        }
    }
    longopts[NOPTIONS] = (struct option){NULL, 0, NULL, 0};
    shortopts[ns] = '\0';

    opterr = 0; /* every rank parses; only rank 0 may speak */
    for (;;) {
        int c = getopt_long(argc, argv, shortopts, longopts, NULL);
        const struct option_row *o;
        if (c == -1)
            break;
        if (c == ':')
            return fail_opt("option '%s' needs an argument", argv[optind - 1]);
        o = c == '?' ? NULL : find_row(c);
        if (!o && optopt > 0 && optopt < LONG_ONLY_BASE)
            return fail_opt("unknown option '-%c'", optopt);
        if (!o)
            return fail_opt("unknown option '%s'", argv[optind - 1]);
        if (apply_row(cfg, o, optarg))
            return -1;
    }
    if (optind < argc)
        return fail_opt("unexpected argument '%s'", argv[optind]);
    return 0;
}

/* Checks that need the whole command line or the job size. */
static int check_config(const struct config *cfg, int np)
{
    if (cfg->min_bytes == 0)
        return fail_opt("-m: sizes start at 1 byte");
    if (cfg->min_bytes > cfg->max_bytes)
        return fail_opt("-m: MIN %zu is larger than MAX %zu", cfg->min_bytes, cfg->max_bytes);
    if (cfg->max_bytes / cfg->dt->size > INT_MAX)
        return fail_opt("-m: %zu bytes of %s is more than INT_MAX elements", cfg->max_bytes,
                        cfg->dt->name);
    if ((cfg->straggler >= 0) != (cfg->delay_ms >= 0))
        return fail_opt("--straggler and --delay-ms go together");
    if (cfg->straggler < 0 && (cfg->spin || cfg->pattern_name[0]))
        return fail_opt("--straggle-by and --straggle-pattern need --straggler");
    if (cfg->straggler >= np)
        return fail_opt("--straggler %d: there are only %d ranks", cfg->straggler, np);
    if (cfg->test_compute && !cfg->nonblocking)
        return fail_opt("--test-during-compute needs --nonblocking");
    if (cfg->compute_ms >= 0 && !cfg->nonblocking)
        return fail_opt("--compute-ms needs --nonblocking");
    /* The hold models a completion that cannot come earlier; after MPI_Wait
     * it would also delay what the compute phase should have hidden. */
    if (cfg->tail_pct >= 0 && cfg->nonblocking)
        return fail_opt("--net-tail is not emulated with --nonblocking");
    return 0;
}

/* ------------------------------------------------------------ run state */

/* The MPI calls an entry makes: through SAMPI, or Open MPI's directly. */
struct mpi_fns {
    int (*allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
    int (*iallreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
    int (*wait)(MPI_Request *, MPI_Status *);
    int (*test)(MPI_Request *, int *, MPI_Status *);
};

static const struct mpi_fns via_sampi = {MPI_Allreduce, MPI_Iallreduce, MPI_Wait, MPI_Test};
static const struct mpi_fns via_pmpi = {PMPI_Allreduce, PMPI_Iallreduce, PMPI_Wait, PMPI_Test};

struct entry {
    const struct entry_spec *spec;
    MPI_Comm comm;
    /* "pmpi": call PMPI_Allreduce directly, bypassing SAMPI entirely, to
     * measure what the interposition itself costs next to `native` */
    bool direct;
    const struct mpi_fns *fns; /* via_pmpi when direct */
    /* --net-tail applies: every algorithm but optireduce, whose datagrams
     * meet their faults in the library (sampi_optireduce_fault) */
    bool tail;
    uint64_t tail_rng; /* the same seed on every entry: the same late calls */
    bool announced;
    char last_report[2 * NAME_LEN]; /* "ran@netdev" last reported, to warn once per change */
    /* auto entries: what auto's performance variables say, read after every
     * call on rank 0, outside the timed window (see note_auto) */
    bool pv_ok;
    MPI_T_pvar_handle pv_choice, pv_regime, pv_explorations;
    int pv_nchoice;
    int *pv_buf;
    /* Reset for every size. */
    const char *ran[MAX_RAN];
    int ran_calls[MAX_RAN];
    int nran;
    int errors;
    int first_error;
    int calls;                       /* calls of this size so far, warm-up included */
    int unconverged;                 /* the last of them after which auto had no choice */
    int auto_choice, auto_regime;    /* after the last call; -1 unknown */
    unsigned long long expl0, expl1; /* sampi_comm_auto_explorations before and after */
};

struct call_mode;

struct bench {
    struct config cfg;
    int rank, np;
    struct entry ent[MAX_ENTRIES];
    int nent;
    int native;                   /* index of the entry named plain "native", or -1 */
    const struct call_mode *mode; /* blocking, or --nonblocking's post and wait */
    double (*now)(void);
    const char *clock_name;
    FILE *info; /* header and notes: stdout with the table, stderr with --json */
    bool mpit;  /* MPI_T initialised for performance variables: auto entries, --nonblocking */
    MPI_T_pvar_session session;
    char algo_names[32][NAME_LEN]; /* sampi_algorithm's enum: value -> name ("" unknown) */
    /* --nonblocking, rank 0: who moves the calls, and sampi_nb_native, the
     * calls left to Open MPI's own nonblocking allreduce (see went_to_ompi) */
    const char *progress; /* "thread", "calls"; NULL unknown */
    bool nb_ok;
    MPI_T_pvar_handle pv_nb_native;
    unsigned long long nb_native_seen;
    bool table_started;
    int status;
};

static bool is_root(const struct bench *b)
{
    return b->rank == 0;
}

/* Harness agreement, outside the library under test. */
static int agree_max(int v)
{
    int out;
    PMPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

static int agree_min(int v)
{
    int out;
    PMPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return out;
}

/* ------------------------------------------------------------ clock */

/* On one host CLOCK_MONOTONIC is one clock for every process.  MPI_Wtime is
 * not: Open MPI 4.1 measures it from a per-process origin. */
static double now_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_wtime(void)
{
    return MPI_Wtime();
}

/* Across hosts only MPI_Wtime can be common, and only when the implementation
 * says so through MPI_WTIME_IS_GLOBAL; otherwise the cross-rank metrics are
 * off by the hosts' clock offsets and the user is told. */
static void choose_clock(struct bench *b)
{
    MPI_Comm node;
    int node_size, flag, *global;

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);

    b->now = now_monotonic;
    b->clock_name = "monotonic";
    if (node_size == b->np)
        return;
    if (flag && *global) {
        b->now = now_wtime;
        b->clock_name = "mpi_wtime";
        return;
    }
    b->clock_name = "monotonic-per-host";
    if (is_root(b))
        fprintf(stderr, "sampi_bench: warning: ranks span several hosts and MPI_WTIME_IS_GLOBAL is "
                        "false: call_*, last_arrival_*, busbw and ratio compare unsynchronised "
                        "clocks\n");
}

/* ------------------------------------------------------------ entries */

static void append_name(char *out, size_t len, const char *name)
{
    size_t used = strlen(out);
    snprintf(out + used, len - used, "%s%s", used ? ", " : "", name);
}

/* The library's own MPI_T enum is the authoritative list (the same registry
 * feeds sampi_info and sampi(7)).  0 when it answered. */
static int mpit_enum_names(const char *cvar, char *out, size_t len)
{
    char name[NAME_LEN], desc[256];
    int provided, idx, verbosity, bind, scope, count = 0, rc = -1;
    int name_len = sizeof(name), desc_len = sizeof(desc);
    MPI_Datatype type;
    MPI_T_enum et = MPI_T_ENUM_NULL;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return -1;
    if (MPI_T_cvar_get_index(cvar, &idx) != MPI_SUCCESS ||
        MPI_T_cvar_get_info(idx, name, &name_len, &verbosity, &type, &et, desc, &desc_len, &bind,
                            &scope) != MPI_SUCCESS ||
        et == MPI_T_ENUM_NULL)
        goto out;
    name_len = sizeof(name);
    if (MPI_T_enum_get_info(et, &count, name, &name_len) != MPI_SUCCESS || count <= 0)
        goto out;
    out[0] = '\0';
    for (int i = 0; i < count; i++) {
        int value;
        name_len = sizeof(name);
        if (MPI_T_enum_get_item(et, i, &value, name, &name_len) != MPI_SUCCESS)
            goto out;
        append_name(out, len, name);
    }
    rc = 0;
out:
    MPI_T_finalize();
    return rc;
}

/* Without MPI_T, ask the setter about every item of the variable's own list
 * (sampi_algo_names, sampi_netdev_names: config.h, made from the algorithm
 * and netdev tables), on a scratch communicator that never runs a
 * collective.  Only rank 0 gets here,
 * so the scratch communicator is a duplicate of MPI_COMM_SELF. */
static void probe_names(const char *const *known, int (*set)(MPI_Comm, const char *), char *out,
                        size_t len)
{
    MPI_Comm scratch;

    MPI_Comm_dup(MPI_COMM_SELF, &scratch);
    MPI_Comm_set_errhandler(scratch, MPI_ERRORS_RETURN);
    out[0] = '\0';
    for (; *known; known++) {
        if (set(scratch, *known) == MPI_SUCCESS)
            append_name(out, len, *known);
    }
    MPI_Comm_free(&scratch);
}

enum setup_what { SETUP_ALGORITHM, SETUP_NETDEV };

static void report_setup_error(const struct entry_spec *es, enum setup_what what, int rc)
{
    const char *value = what == SETUP_ALGORITHM ? es->algo : es->netdev;
    const char *noun = what == SETUP_ALGORITHM ? "algorithm" : "netdev";
    char names[512], err[MPI_MAX_ERROR_STRING];
    int err_len;

    if (rc != MPI_ERR_ARG && rc != MPI_SUCCESS) {
        MPI_Error_string(rc, err, &err_len);
        fprintf(stderr, "sampi_bench: --algos entry '%s': cannot set %s '%s': %s\n", es->spec, noun,
                value, err);
        return;
    }
    if (mpit_enum_names(what == SETUP_ALGORITHM ? "sampi_algorithm" : "sampi_netdev", names,
                        sizeof(names)))
        probe_names(what == SETUP_ALGORITHM ? sampi_algo_names : sampi_netdev_names,
                    what == SETUP_ALGORITHM ? sampi_comm_set_algorithm : sampi_comm_set_netdev,
                    names, sizeof(names));
    fprintf(stderr, "sampi_bench: --algos entry '%s': unknown %s '%s' (accepted: %s)\n", es->spec,
            noun, value, names);
}

/* Every entry gets its own communicator so that per-communicator state in the
 * library (algorithm, data path, straggler history) never mixes.  Errors are
 * agreed on before anyone continues, so a bad name cannot leave ranks behind. */
static int setup_entries(struct bench *b)
{
    int first_bad = INT_MAX, rc = MPI_SUCCESS, bad;

    b->nent = b->cfg.nspecs;
    b->native = -1;
    for (int i = 0; i < b->nent; i++) {
        struct entry *e = &b->ent[i];
        e->spec = &b->cfg.specs[i];
        MPI_Comm_dup(MPI_COMM_WORLD, &e->comm);
        /* A rejected name must come back as a code, not abort the job. */
        MPI_Comm_set_errhandler(e->comm, MPI_ERRORS_RETURN);
        if (b->native < 0 && strcmp(e->spec->algo, "native") == 0 && !e->spec->netdev[0])
            b->native = i;
        e->direct = strcmp(e->spec->algo, "pmpi") == 0 && !e->spec->netdev[0];
        e->fns = e->direct ? &via_pmpi : &via_sampi;
        e->tail = b->cfg.tail_pct >= 0 && strcmp(e->spec->algo, "optireduce") != 0;
        if (first_bad != INT_MAX || e->direct)
            continue;
        rc = sampi_comm_set_algorithm(e->comm, e->spec->algo);
        if (rc != MPI_SUCCESS) {
            first_bad = 2 * i + SETUP_ALGORITHM;
            continue;
        }
        if (e->spec->netdev[0]) {
            rc = sampi_comm_set_netdev(e->comm, e->spec->netdev);
            if (rc != MPI_SUCCESS)
                first_bad = 2 * i + SETUP_NETDEV;
        }
    }
    bad = agree_min(first_bad);
    if (bad == INT_MAX)
        return 0;
    if (is_root(b)) {
        /* rc is rank 0's answer for its own first failure; when only another
         * rank refused, MPI_ERR_ARG still names the accepted values. */
        int code = bad == first_bad ? rc : MPI_ERR_ARG;
        report_setup_error(&b->cfg.specs[bad / 2], (enum setup_what)(bad % 2), code);
    }
    return -1;
}

/* ------------------------------------------------------------ auto's pvars */

/* For an auto entry, rank 0 reads the library's performance variables
 * (sampi(7), AUTO) after every call, outside the timed window: how many calls
 * auto took before it had a choice, what it chose, in which regime, and how
 * often it explored.  Without them (another library, an older SAMPI) the JSON
 * keys say null. */
static bool is_auto(const struct entry *e)
{
    return strcmp(e->spec->algo, "auto") == 0 && !e->direct;
}

static int pvar_handle(struct bench *b, const char *name, int cls, MPI_Comm comm,
                       MPI_T_pvar_handle *h, int *count)
{
    int idx;

    if (MPI_T_pvar_get_index(name, cls, &idx) != MPI_SUCCESS ||
        MPI_T_pvar_handle_alloc(b->session, idx, &comm, h, count) != MPI_SUCCESS) {
        *h = MPI_T_PVAR_HANDLE_NULL;
        return -1;
    }
    return 0;
}

/* sampi_comm_auto_choice holds algorithm ids: their names are the items of
 * the sampi_algorithm control variable's enum. */
static void load_algo_names(struct bench *b)
{
    char name[NAME_LEN], desc[256];
    int idx, verbosity, bind, scope, count = 0;
    int name_len = sizeof(name), desc_len = sizeof(desc);
    MPI_Datatype type;
    MPI_T_enum et = MPI_T_ENUM_NULL;

    if (MPI_T_cvar_get_index("sampi_algorithm", &idx) != MPI_SUCCESS ||
        MPI_T_cvar_get_info(idx, name, &name_len, &verbosity, &type, &et, desc, &desc_len, &bind,
                            &scope) != MPI_SUCCESS ||
        et == MPI_T_ENUM_NULL)
        return;
    name_len = sizeof(name);
    if (MPI_T_enum_get_info(et, &count, name, &name_len) != MPI_SUCCESS)
        return;
    for (int i = 0; i < count; i++) {
        int value;
        name_len = sizeof(name);
        if (MPI_T_enum_get_item(et, i, &value, name, &name_len) == MPI_SUCCESS && value >= 0 &&
            value < (int)(sizeof(b->algo_names) / sizeof(b->algo_names[0])))
            snprintf(b->algo_names[value], NAME_LEN, "%s", name);
    }
}

static void setup_auto_pvars(struct bench *b)
{
    int n;

    load_algo_names(b);
    for (int i = 0; i < b->nent; i++) {
        struct entry *e = &b->ent[i];
        if (!is_auto(e) ||
            pvar_handle(b, "sampi_comm_auto_choice", MPI_T_PVAR_CLASS_GENERIC, e->comm,
                        &e->pv_choice, &e->pv_nchoice) ||
            e->pv_nchoice <= 0 || !(e->pv_buf = calloc((size_t)e->pv_nchoice, sizeof(int))) ||
            pvar_handle(b, "sampi_comm_auto_regime", MPI_T_PVAR_CLASS_GENERIC, e->comm,
                        &e->pv_regime, &n) ||
            pvar_handle(b, "sampi_comm_auto_explorations", MPI_T_PVAR_CLASS_COUNTER, e->comm,
                        &e->pv_explorations, &n))
            continue;
        e->pv_ok = true;
    }
}

/* --nonblocking: who moves the calls (sampi_progress_mode, agreed at
 * MPI_Init, so read once) and the counter that says a call went to Open
 * MPI's own MPI_Iallreduce, which sampi_comm_last_algorithm cannot say: it
 * names the last algorithm SAMPI ran. */
static void setup_nb_pvars(struct bench *b)
{
    static const char *const modes[] = {NULL, "thread", "calls"};
    MPI_T_pvar_handle h;
    int n, mode = 0;

    if (pvar_handle(b, "sampi_progress_mode", MPI_T_PVAR_CLASS_GENERIC, MPI_COMM_WORLD, &h, &n) ==
        0) {
        if (MPI_T_pvar_read(b->session, h, &mode) == MPI_SUCCESS && mode > 0 && mode < 3)
            b->progress = modes[mode];
        MPI_T_pvar_handle_free(b->session, &h);
    }
    /* A session counter: it counts from its start. */
    b->nb_ok = pvar_handle(b, "sampi_nb_native", MPI_T_PVAR_CLASS_COUNTER, MPI_COMM_WORLD,
                           &b->pv_nb_native, &n) == 0 &&
               MPI_T_pvar_start(b->session, b->pv_nb_native) == MPI_SUCCESS &&
               MPI_T_pvar_read(b->session, b->pv_nb_native, &b->nb_native_seen) == MPI_SUCCESS;
}

/* Rank 0 reads SAMPI's performance variables for auto entries and for
 * --nonblocking; without them the JSON says null. */
static void setup_pvars(struct bench *b)
{
    int provided;
    bool any = b->cfg.nonblocking;

    b->pv_nb_native = MPI_T_PVAR_HANDLE_NULL;
    for (int i = 0; i < b->nent; i++) {
        b->ent[i].pv_choice = b->ent[i].pv_regime = b->ent[i].pv_explorations =
            MPI_T_PVAR_HANDLE_NULL;
        any = any || is_auto(&b->ent[i]);
    }
    if (!is_root(b) || !any || MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    b->mpit = true;
    if (MPI_T_pvar_session_create(&b->session) != MPI_SUCCESS) {
        b->session = MPI_T_PVAR_SESSION_NULL;
        return;
    }
    setup_auto_pvars(b);
    if (b->cfg.nonblocking)
        setup_nb_pvars(b);
}

/* After a call with --nonblocking (rank 0): whether Open MPI's own
 * nonblocking allreduce ran it, that is sampi_nb_native rose. */
static bool went_to_ompi(struct bench *b)
{
    unsigned long long v;

    if (!b->nb_ok || MPI_T_pvar_read(b->session, b->pv_nb_native, &v) != MPI_SUCCESS)
        return false;
    if (v == b->nb_native_seen)
        return false;
    b->nb_native_seen = v;
    return true;
}

static void free_pvars(struct bench *b)
{
    if (b->mpit && b->session != MPI_T_PVAR_SESSION_NULL &&
        b->pv_nb_native != MPI_T_PVAR_HANDLE_NULL)
        MPI_T_pvar_handle_free(b->session, &b->pv_nb_native);
    b->nb_ok = false;
    for (int i = 0; i < b->nent; i++) {
        struct entry *e = &b->ent[i];
        MPI_T_pvar_handle *h[] = {&e->pv_choice, &e->pv_regime, &e->pv_explorations};
        for (size_t k = 0; b->mpit && b->session != MPI_T_PVAR_SESSION_NULL && k < 3; k++)
            if (*h[k] != MPI_T_PVAR_HANDLE_NULL)
                MPI_T_pvar_handle_free(b->session, h[k]);
        free(e->pv_buf);
        e->pv_buf = NULL;
        e->pv_ok = false;
    }
    if (b->mpit && b->session != MPI_T_PVAR_SESSION_NULL)
        MPI_T_pvar_session_free(&b->session);
    if (b->mpit)
        MPI_T_finalize();
    b->mpit = false;
}

static unsigned long long read_explorations(struct bench *b, struct entry *e)
{
    unsigned long long v = 0;

    if (e->pv_ok && MPI_T_pvar_read(b->session, e->pv_explorations, &v) != MPI_SUCCESS)
        e->pv_ok = false;
    return v;
}

/* After every call of an auto entry (rank 0): auto's bucket for this size
 * (element b holds calls of up to 2^b bytes) has a choice in the current
 * regime once that regime's cell has converged. */
static void note_auto(struct bench *b, struct entry *e, size_t nbytes)
{
    int bucket = 0, regime = -1;

    if (!e->pv_ok)
        return;
    while (bucket < e->pv_nchoice - 1 && ((size_t)1 << bucket) < nbytes)
        bucket++;
    e->calls++;
    if (MPI_T_pvar_read(b->session, e->pv_choice, e->pv_buf) != MPI_SUCCESS ||
        MPI_T_pvar_read(b->session, e->pv_regime, &regime) != MPI_SUCCESS) {
        e->pv_ok = false;
        return;
    }
    e->expl1 = read_explorations(b, e);
    e->auto_choice = e->pv_buf[bucket];
    e->auto_regime = regime;
    if (e->auto_choice < 0)
        e->unconverged = e->calls;
}

static void free_entries(struct bench *b)
{
    free_pvars(b);
    for (int i = 0; i < b->nent; i++) {
        if (b->ent[i].comm != MPI_COMM_NULL)
            MPI_Comm_free(&b->ent[i].comm);
    }
}

static void reset_entry_counters(struct bench *b, struct entry *e)
{
    e->nran = 0;
    e->errors = 0;
    e->first_error = MPI_SUCCESS;
    e->calls = e->unconverged = 0;
    e->auto_choice = e->auto_regime = -1;
    e->expl0 = e->expl1 = read_explorations(b, e);
}

static void note_error(struct entry *e, int rc)
{
    if (rc != MPI_SUCCESS && e->errors++ == 0)
        e->first_error = rc;
}

/* After each timed call: which algorithm ran, so that a silent fallback or a
 * switch shows.  Cheap enough to do between the timestamps of two calls.
 * ompi: the call went to Open MPI's own nonblocking allreduce (libnbc). */
static void note_ran(struct entry *e, bool ompi)
{
    const char *ran = e->direct ? "pmpi" : ompi ? "libnbc" : sampi_comm_last_algorithm(e->comm);

    for (int i = 0; i < e->nran; i++) {
        if (e->ran[i] == ran || strcmp(e->ran[i], ran) == 0) {
            e->ran_calls[i]++;
            return;
        }
    }
    if (e->nran < MAX_RAN) {
        e->ran_calls[e->nran] = 1;
        e->ran[e->nran++] = ran;
    }
}

/* ------------------------------------------------------------ buffers and data */

struct buffers {
    void *send, *recv;
    size_t count;  /* elements */
    size_t nbytes; /* count * datatype size: bytes actually reduced */
};

static void free_buffers(struct buffers *bufs)
{
    free(bufs->send);
    free(bufs->recv);
    bufs->send = bufs->recv = NULL;
}

/* Agreed across ranks: a rank that cannot allocate must not leave the others
 * waiting in the first collective. */
static int alloc_buffers(struct bench *b, size_t bytes, struct buffers *bufs)
{
    bool ok;

    bufs->count = bytes / b->cfg.dt->size;
    bufs->nbytes = bufs->count * b->cfg.dt->size;
    bufs->send = bufs->recv = NULL;
    ok = posix_memalign(&bufs->send, BUF_ALIGN, bufs->nbytes + 1) == 0 &&
         posix_memalign(&bufs->recv, BUF_ALIGN, bufs->nbytes + GUARD_BYTES) == 0;
    if (agree_min(ok) == 0) {
        if (!ok)
            fprintf(stderr, "sampi_bench: rank %d: cannot allocate 2 x %zu bytes\n", b->rank,
                    bytes);
        free_buffers(bufs);
        return -1;
    }
    return 0;
}

/* Small integers whose sums over all ranks stay exactly representable in the
 * datatype, so the result is bit-exact whatever order an algorithm adds in and
 * validation compares with ==.  Element i of rank r is (r + i) % mod + 1; when
 * even 1 per rank would overflow (char on many ranks), one rank per element
 * contributes 1. */
struct pattern {
    unsigned mod;
    double expected[8]; /* sum over ranks for i % mod */
};

static void pattern_init(const struct bench *b, struct pattern *p)
{
    double m = floor(b->cfg.dt->max_exact / b->np);

    p->mod = m >= 8 ? 8 : (unsigned)m;
    for (unsigned k = 0; k < p->mod; k++) {
        p->expected[k] = 0;
        for (int r = 0; r < b->np; r++)
            p->expected[k] += (double)((r + k) % p->mod + 1);
    }
}

static double pattern_value(const struct pattern *p, int np, int rank, size_t i)
{
    if (p->mod == 0)
        return (int)(i % (size_t)np) == rank ? 1 : 0;
    return (double)(((size_t)rank + i) % p->mod + 1);
}

static double pattern_expected(const struct pattern *p, size_t i)
{
    return p->mod == 0 ? 1 : p->expected[i % p->mod];
}

static void pattern_fill(const struct bench *b, const struct pattern *p, void *buf, size_t count)
{
    for (size_t i = 0; i < count; i++)
        b->cfg.dt->store(buf, i, pattern_value(p, b->np, b->rank, i));
}

/* ------------------------------------------------------------ timed loop */

/* splitmix64, a pure function of x: the jitter of call i is the same on
 * every rank and in every run. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* How late the straggler is before call i of a size (warm-up included), in
 * ms: every entry of iteration i gets the same delay. */
static double delay_of(const struct config *cfg, int i)
{
    switch (cfg->pattern) {
    case PATTERN_JITTER:
        return cfg->delay_ms * (double)(mix64((uint64_t)i) >> 11) / 9007199254740992.0;
    case PATTERN_PHASES:
        return (i / cfg->phase) % 2 == 0 ? cfg->delay_ms : 0;
    default:
        return cfg->delay_ms;
    }
}

/* "every call", "every call, by a delay drawn in [0, D]", ... */
static const char *pattern_text(const struct config *cfg)
{
    static char text[96];
    switch (cfg->pattern) {
    case PATTERN_JITTER:
        return "every call, by a delay drawn uniformly in [0, D] (the same sequence on every rank)";
    case PATTERN_PHASES:
        snprintf(text, sizeof(text), "%d calls in a row, then on time for %d, and so on",
                 cfg->phase, cfg->phase);
        return text;
    default:
        return "every call";
    }
}

static void straggle(const struct bench *b, int i)
{
    double ms = delay_of(&b->cfg, i);
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(fmod(ms, 1000) * 1e6)};

    /* By default a sleep, not a spin: on a shared core a spinning straggler
     * would steal the cycles the other ranks need to make progress.  With a
     * core per rank a real straggler computes, and its core stays awake: a
     * core idle for milliseconds wakes up cold (p = 2, one rank per core,
     * 1 MiB: native took 3-5x longer after a 2 ms sleep, 1.4x after a
     * 2 ms spin), which --straggle-by spin leaves out. */
    if (b->cfg.spin) {
        struct timespec now, end;
        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += ts.tv_sec;
        end.tv_nsec += ts.tv_nsec;
        if (end.tv_nsec >= 1000000000L) {
            end.tv_sec++;
            end.tv_nsec -= 1000000000L;
        }
        do
            clock_gettime(CLOCK_MONOTONIC, &now);
        while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
        return;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

/* The injector's generator (splitmix64, as netdev/dgram_fault.c draws): a
 * uniform draw in (0, 1]. */
static double tail_unit(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 1.0) / 9007199254740992.0;
}

/* --net-tail for a reliable entry: the call cannot end on this rank before
 * the latest of the k datagrams it receives (2(p-1)/p of the message, the
 * bandwidth-optimal share) has arrived.  Each is late with probability q, by
 * the same fixed delay, so the call ends that much later when any one is:
 * probability 1 - (1 - q)^k, one draw.  This is benchmarks/tail-table's
 * emulation (sampi_tail_bench.c): this kernel has no netem, and a reliable
 * transport's own retransmissions are not reached by the datagram fault
 * injector. */
static void tail_hold(const struct bench *b, struct entry *e, size_t nbytes)
{
    double q = b->cfg.tail_pct / 100.0, share = 2.0 * (b->np - 1) / b->np * (double)nbytes;
    double k = ceil(share / (double)b->cfg.tail_dgram), ms = b->cfg.tail_delay_ms;

    if (q <= 0 || ms <= 0 || k < 1 || tail_unit(&e->tail_rng) > 1 - pow(1 - q, k))
        return;
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(fmod(ms, 1000) * 1e6)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

/* ------------------------------------------------------------ one call */

struct call {
    const void *send;
    void *recv;
    int count;
    MPI_Datatype dt;
};

/* How a call is made: MPI_Allreduce, or with --nonblocking osu_iallreduce's
 * pure communication, posted and waited for at once.  0 or an MPI error. */
struct call_mode {
    const char *name; /* in messages */
    int (*run)(const struct entry *e, const struct call *c);
};

static int call_blocking(const struct entry *e, const struct call *c)
{
    return e->fns->allreduce(c->send, c->recv, c->count, c->dt, MPI_SUM, e->comm);
}

static int call_post_wait(const struct entry *e, const struct call *c)
{
    MPI_Request req;
    int rc = e->fns->iallreduce(c->send, c->recv, c->count, c->dt, MPI_SUM, e->comm, &req);

    return rc != MPI_SUCCESS ? rc : e->fns->wait(&req, MPI_STATUS_IGNORE);
}

/* Indexed by cfg.nonblocking. */
static const struct call_mode call_modes[] = {
    {"MPI_Allreduce", call_blocking},
    {"MPI_Iallreduce", call_post_wait},
};

/* --test-during-compute tests at every tenth of the compute phase but the
 * last, which MPI_Wait follows at once. */
#define TEST_SLICES 10

/* The compute phase of an overlapped call: a busy loop on the clock for
 * secs, with no MPI call, the stand-in for the work the call should hide.
 * With test, MPI_Test at every tenth of it, as osu_iallreduce -t does, until
 * the request completes; time inside MPI_Test is communication, not
 * computing, and is left out of the result, as osu_iallreduce leaves it out
 * of its compute time.  Returns the seconds computed; *tests counts the
 * MPI_Test calls, *rc takes the first error. */
static double compute_phase(const struct entry *e, MPI_Request *req, double secs, bool test,
                            int *tests, int *rc)
{
    double start = now_monotonic(), end = start + secs, in_test = 0, t;
    int done = !test, k = 1;

    *tests = 0;
    while ((t = now_monotonic()) < end) {
        if (done || k >= TEST_SLICES || t < start + secs * k / TEST_SLICES)
            continue;
        int r = e->fns->test(req, &done, MPI_STATUS_IGNORE);
        in_test += now_monotonic() - t;
        (*tests)++;
        k++;
        if (r != MPI_SUCCESS && *rc == MPI_SUCCESS)
            *rc = r;
        done = done || r != MPI_SUCCESS;
    }
    return t - start - in_test;
}

/* What one overlapped call records, per rank: OV_COMPUTED is the end of
 * the compute phase, from which an on-time rank waits for the others. */
enum { OV_POST, OV_DONE, OV_COMPUTE, OV_TESTS, OV_COMPUTED, OV_WIDTH };

/* One overlapped call: post, compute for compute_s, wait.  0 or the first
 * MPI error. */
static int call_overlapped(const struct bench *b, const struct entry *e, const struct call *c,
                           double compute_s, double *rec)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int tests = 0, rc;
    bool posted;

    rec[OV_POST] = b->now();
    rc = e->fns->iallreduce(c->send, c->recv, c->count, c->dt, MPI_SUM, e->comm, &req);
    posted = rc == MPI_SUCCESS;
    /* After a failed post there is no request, but the rank still computes:
     * its compute time stays comparable. */
    rec[OV_COMPUTE] = compute_phase(e, &req, compute_s, b->cfg.test_compute && posted, &tests, &rc);
    rec[OV_COMPUTED] = b->now();
    /* A request that MPI_Test completed, or freed on an error, is NULL now. */
    if (posted && req != MPI_REQUEST_NULL) {
        int w = e->fns->wait(&req, MPI_STATUS_IGNORE);
        rc = rc != MPI_SUCCESS ? rc : w;
    }
    rec[OV_DONE] = b->now();
    rec[OV_TESTS] = tests;
    return rc;
}

/* ------------------------------------------------------------ timed loop */

/* A timed loop: what every call of it does.  call records `width` doubles
 * at rec (timed or not) and returns 0 or an MPI error. */
struct phase {
    int width;
    int (*call)(struct bench *b, struct entry *e, const struct phase *ph, bool timed, double *rec);
    struct call args;
    const double *compute_s; /* overlap: each entry's compute phase, in seconds */
    size_t nbytes;
};

/* Pure communication (or the blocking call): rec = {entry, exit} time. */
static int phase_pure(struct bench *b, struct entry *e, const struct phase *ph, bool timed,
                      double *rec)
{
    int rc;

    rec[0] = b->now();
    rc = b->mode->run(e, &ph->args);
    /* Timed calls only: a library that adapts cannot see the held
     * time anyway, and warm-up is for it to adapt. */
    if (e->tail && timed)
        tail_hold(b, e, ph->nbytes);
    rec[1] = b->now();
    return rc;
}

static int phase_overlap(struct bench *b, struct entry *e, const struct phase *ph, bool timed,
                         double *rec)
{
    (void)timed;
    return call_overlapped(b, e, &ph->args, ph->compute_s[e - b->ent], rec);
}

/* stamps[width * (entry * iters + i) + k]: what ph->call recorded for timed
 * iteration i of the entry. */
static void run_timed(struct bench *b, const struct phase *ph, int warmup, int iters,
                      double *stamps)
{
    bool late = b->rank == b->cfg.straggler;
    double scratch[OV_WIDTH];

    for (int k = 0; k < b->nent; k++)
        b->ent[k].tail_rng = 0x5A3D1E0000000000ull + (uint64_t)b->rank * 0x2545F4914F6CDD1Dull;
    went_to_ompi(b); /* the calls before this loop are not its own */
    for (int i = 0; i < warmup + iters; i++) {
        for (int k = 0; k < b->nent; k++) {
            /* Rotating the first entry keeps any advantage of running first
             * after the previous entry from always landing on one algorithm. */
            int ei = (i + k) % b->nent;
            struct entry *e = &b->ent[ei];
            bool timed = i >= warmup;
            double *rec = timed ? &stamps[(size_t)ph->width *
                                          ((size_t)ei * (size_t)iters + (size_t)(i - warmup))]
                                : scratch;
            bool ompi;

            MPI_Barrier(e->comm);
            /* Warm-up calls are late too, so a library that adapts to a
             * straggler has done so before the timed calls start.  With
             * --nonblocking the straggler posts late. */
            if (late)
                straggle(b, i);
            note_error(e, ph->call(b, e, ph, timed, rec));
            ompi = went_to_ompi(b);
            note_auto(b, e, ph->nbytes);
            if (timed)
                note_ran(e, ompi);
        }
    }
}

/* ------------------------------------------------------------ validation */

/* One untimed call, made as the timed ones are (MPI_Iallreduce and MPI_Wait
 * with --nonblocking); 0 when every element and the guard bytes are right on
 * this rank.  The first wrong element is reported by the rank that saw it. */
static int validate_call(struct bench *b, struct entry *e, const struct pattern *p,
                         const struct buffers *bufs, bool inplace, size_t bytes)
{
    const struct dtype *dt = b->cfg.dt;
    const char *form = inplace ? "in-place" : "out-of-place";
    unsigned char *guard = (unsigned char *)bufs->recv + bufs->nbytes;
    struct call c = {inplace ? MPI_IN_PLACE : bufs->send, bufs->recv, (int)bufs->count, dt->mpi};
    int rc;

    memset(bufs->recv, GUARD_FILL, bufs->nbytes + GUARD_BYTES);
    pattern_fill(b, p, inplace ? bufs->recv : bufs->send, bufs->count);
    rc = b->mode->run(e, &c);
    if (rc != MPI_SUCCESS) {
        char err[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, err, &len);
        fprintf(stderr, "sampi_bench: rank %d: %s, %zu bytes, %s: %s failed: %s\n", b->rank,
                e->spec->spec, bytes, form, b->mode->name, err);
        return 1;
    }
    for (size_t i = 0; i < bufs->count; i++) {
        double got = dt->load(bufs->recv, i), want = pattern_expected(p, i);
        if (got != want) {
            fprintf(stderr,
                    "sampi_bench: rank %d: %s, %zu bytes, %s: element %zu is %g, expected %g\n",
                    b->rank, e->spec->spec, bytes, form, i, got, want);
            return 1;
        }
    }
    for (size_t i = 0; i < GUARD_BYTES; i++) {
        if (guard[i] != GUARD_FILL) {
            fprintf(stderr,
                    "sampi_bench: rank %d: %s, %zu bytes, %s: wrote past the result "
                    "(byte %zu after element %zu)\n",
                    b->rank, e->spec->spec, bytes, form, i, bufs->count);
            return 1;
        }
    }
    return 0;
}

/* failures[e] at rank 0: how many ranks saw a wrong result for entry e. */
static void validate_all(struct bench *b, const struct buffers *bufs, size_t bytes, int *failures)
{
    int local[MAX_ENTRIES];
    struct pattern p;

    pattern_init(b, &p);
    for (int ei = 0; ei < b->nent; ei++) {
        local[ei] = validate_call(b, &b->ent[ei], &p, bufs, false, bytes);
        if (b->cfg.inplace)
            local[ei] |= validate_call(b, &b->ent[ei], &p, bufs, true, bytes);
    }
    MPI_Reduce(local, failures, b->nent, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
}

/* ------------------------------------------------------------ metrics */

struct result {
    const char *algo, *netdev, *datatype, *op, *clock;
    char ran[MAX_RAN * NAME_LEN];
    const struct entry *ent;                     /* for ran_calls */
    const char *auto_choice, *auto_regime;       /* NULL: not an auto entry, or unknown */
    long long auto_converged, auto_explorations; /* -1: idem */
    int np, iters, warmup, straggler, errors;
    long long bytes, count;
    bool inplace;
    int validated; /* -1: not checked */
    double delay_ms;
    const char *straggle_by;        /* NULL: no straggler */
    const char *straggle_pattern;   /* NULL: no straggler */
    double tail_pct, tail_delay_ms; /* NaN: no --net-tail */
    bool tail_emulated;
    double avg, min, max;
    double call_p50, call_p99, last_p50, last_p99;
    double last_p25, last_p75, last_mean;
    double tail_p50, tail_p90, tail_p99;
    double busbw, ratio; /* NaN: not defined */
    bool nonblocking;
    const char *progress;                     /* NULL: blocking, or unknown */
    double compute, overall, overlap, ntests; /* NaN: blocking */
    double after_compute;                     /* NaN: blocking, or every rank is the straggler */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double percentile(const double *sorted, int n, double pct)
{
    int idx = (int)ceil(pct / 100.0 * n) - 1;

    if (n == 0)
        return NAN;
    return sorted[idx < 0 ? 0 : idx >= n ? n - 1 : idx];
}

static double sorted_percentile(double *v, int n, double pct)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return percentile(v, n, pct);
}

/* Everything at rank 0 from all[((r * nent + e) * iters + i) * 2 + {0,1}].
 * last[i] (last arrival to completion, us) is kept for the ratios. */
static void compute_entry(const struct bench *b, const double *all, int ei, int iters,
                          struct result *res, double *last, double *work)
{
    double *call = work, *avg = work + iters, *rank_sum = work + 2 * iters;
    size_t per_rank = 2 * (size_t)b->nent * (size_t)iters;

    for (int r = 0; r < b->np; r++)
        rank_sum[r] = 0;
    for (int i = 0; i < iters; i++) {
        double first_in = INFINITY, last_in = -INFINITY, last_out = -INFINITY, first_call = 0;
        double sum = 0;
        for (int r = 0; r < b->np; r++) {
            const double *s = &all[r * per_rank + 2 * ((size_t)ei * (size_t)iters + (size_t)i)];
            double lat = (s[1] - s[0]) * 1e6;
            if (s[0] < first_in) {
                first_in = s[0];
                first_call = lat;
            }
            last_in = fmax(last_in, s[0]);
            last_out = fmax(last_out, s[1]);
            sum += lat;
            rank_sum[r] += lat;
        }
        call[i] = first_call;
        last[i] = (last_out - last_in) * 1e6;
        avg[i] = sum / b->np;
    }

    res->avg = 0;
    res->min = INFINITY;
    res->max = -INFINITY;
    for (int r = 0; r < b->np; r++) {
        double mean = rank_sum[r] / iters;
        res->avg += mean / b->np;
        res->min = fmin(res->min, mean);
        res->max = fmax(res->max, mean);
    }
    res->call_p50 = sorted_percentile(call, iters, 50);
    res->call_p99 = percentile(call, iters, 99);
    res->tail_p50 = sorted_percentile(avg, iters, 50);
    res->tail_p90 = percentile(avg, iters, 90);
    res->tail_p99 = percentile(avg, iters, 99);
    memcpy(call, last, (size_t)iters * sizeof(*last));
    res->last_p50 = sorted_percentile(call, iters, 50);
    res->last_p99 = percentile(call, iters, 99);
    res->last_p25 = percentile(call, iters, 25);
    res->last_p75 = percentile(call, iters, 75);
    res->last_mean = 0;
    for (int i = 0; i < iters; i++)
        res->last_mean += last[i] / iters;
    /* osu-style bus bandwidth, from the part of the call the algorithm owns. */
    res->busbw = res->last_p50 > 0 ? (double)res->count * (double)b->cfg.dt->size / res->last_p50 *
                                         2.0 * (b->np - 1) / b->np
                                   : NAN;
}

/* The mean time of entry ei's calls over all ranks and timed iterations, in
 * seconds, from the gathered {entry, exit} stamps: osu's average latency,
 * the mean of every rank's mean (each rank makes as many calls). */
static double mean_call_s(const struct bench *b, const double *all, int ei, int iters)
{
    size_t per_rank = 2 * (size_t)b->nent * (size_t)iters;
    double sum = 0;

    for (int r = 0; r < b->np; r++) {
        for (int i = 0; i < iters; i++) {
            const double *s = &all[r * per_rank + 2 * ((size_t)ei * (size_t)iters + (size_t)i)];
            sum += s[1] - s[0];
        }
    }
    return sum / ((double)b->np * iters);
}

/* osu_iallreduce's numbers from the overlap phase's OV_WIDTH records, each a
 * mean over ranks and timed calls: the compute time, the overall time (post
 * to completion) and the share of the pure communication time (res->avg, the
 * same kind of mean) that the compute hid:
 * max(0, 100 (1 - (overall - compute) / pure)). */
static void compute_overlap(const struct bench *b, const double *all, int ei, int iters,
                            struct result *res)
{
    size_t per_rank = OV_WIDTH * (size_t)b->nent * (size_t)iters;
    double overall = 0, compute = 0, tests = 0, after = 0, n = (double)b->np * iters, nafter = 0;

    for (int r = 0; r < b->np; r++) {
        for (int i = 0; i < iters; i++) {
            const double *s =
                &all[r * per_rank + OV_WIDTH * ((size_t)ei * (size_t)iters + (size_t)i)];
            overall += s[OV_DONE] - s[OV_POST];
            compute += s[OV_COMPUTE];
            tests += s[OV_TESTS];
            if (r != b->cfg.straggler) {
                after += s[OV_DONE] - s[OV_COMPUTED];
                nafter++;
            }
        }
    }
    res->overall = overall / n * 1e6;
    res->compute = compute / n * 1e6;
    res->ntests = tests / n;
    res->after_compute = nafter > 0 ? after / nafter * 1e6 : NAN;
    res->overlap =
        res->avg > 0 ? fmax(0, 100 * (1 - (res->overall - res->compute) / res->avg)) : NAN;
}

static double median_ratio(const double *last, const double *native, int iters, double *work)
{
    int n = 0;

    for (int i = 0; i < iters; i++) {
        if (native[i] > 0)
            work[n++] = last[i] / native[i];
    }
    return sorted_percentile(work, n, 50);
}

static void describe_ran(const struct entry *e, char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < e->nran; i++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", i ? "+" : "", e->ran[i]);
    }
    if (!out[0])
        snprintf(out, len, "none");
}

static void result_init(const struct bench *b, const struct entry *e, size_t bytes,
                        const struct buffers *bufs, int iters, int warmup, struct result *res)
{
    memset(res, 0, sizeof(*res));
    res->algo = e->spec->spec;
    describe_ran(e, res->ran, sizeof(res->ran));
    res->netdev = sampi_comm_netdev(e->comm);
    res->datatype = b->cfg.dt->name;
    res->op = "sum";
    res->clock = b->clock_name;
    res->np = b->np;
    res->bytes = (long long)bytes;
    res->count = (long long)bufs->count;
    res->inplace = b->cfg.inplace;
    res->iters = iters;
    res->warmup = warmup;
    res->straggler = b->cfg.straggler;
    res->delay_ms = b->cfg.straggler >= 0 ? b->cfg.delay_ms : NAN;
    res->straggle_by = b->cfg.straggler < 0 ? NULL : b->cfg.spin ? "spin" : "sleep";
    res->straggle_pattern = b->cfg.straggler < 0     ? NULL
                            : b->cfg.pattern_name[0] ? b->cfg.pattern_name
                                                     : "constant";
    res->tail_pct = b->cfg.tail_pct >= 0 ? b->cfg.tail_pct : NAN;
    res->tail_delay_ms = b->cfg.tail_pct >= 0 ? b->cfg.tail_delay_ms : NAN;
    res->tail_emulated = e->tail;
    res->validated = -1;
    res->ratio = NAN;
    res->nonblocking = b->cfg.nonblocking;
    res->progress = b->cfg.nonblocking ? b->progress : NULL;
    res->compute = res->overall = res->overlap = res->ntests = res->after_compute = NAN;
    res->ent = e;
    res->auto_converged = res->auto_explorations = -1;
    if (e->pv_ok) {
        static const char *const regimes[] = {"none", "straggler", "degraded"};
        int nnames = (int)(sizeof(b->algo_names) / sizeof(b->algo_names[0]));
        if (e->auto_choice >= 0) {
            res->auto_converged = e->unconverged + 1;
            res->auto_choice = e->auto_choice < nnames && b->algo_names[e->auto_choice][0]
                                   ? b->algo_names[e->auto_choice]
                                   : NULL;
        }
        if (e->auto_regime >= 0 && e->auto_regime < 3)
            res->auto_regime = regimes[e->auto_regime];
        res->auto_explorations = (long long)(e->expl1 - e->expl0);
    }
}

/* ------------------------------------------------------------ output */

enum field_kind {
    F_STR,
    F_CHARS,
    F_INT,
    F_RANK,
    F_LL,
    F_BOOL,
    F_TRI,
    F_DBL,
    F_OPTSTR,
    F_OPTLL,
    F_RANCALLS
};

enum field_show {
    SHOW_JSON = 0, /* JSON only */
    SHOW_ALWAYS = 1,
    SHOW_FULL = 2,
    SHOW_TAIL = 4,
    SHOW_CHECK = 8,
    SHOW_NB = 16,
};

/* One row per reported quantity: its JSON key, its table column (if any) and
 * where it lives in struct result.  JSON keys come in this order. */
struct field {
    const char *key;
    const char *head;
    int width;
    enum field_kind kind;
    size_t off;
    unsigned show;
};

#define R(member) offsetof(struct result, member)

static const struct field fields[] = {
    {"bytes", "# Size", 11, F_LL, R(bytes), SHOW_ALWAYS},
    {"algo", "Algorithm", 16, F_STR, R(algo), SHOW_ALWAYS},
    {"ran", "Ran", 12, F_CHARS, R(ran), SHOW_ALWAYS},
    {"netdev", "Netdev", 8, F_STR, R(netdev), SHOW_ALWAYS},
    {"np", NULL, 0, F_INT, R(np), SHOW_JSON},
    {"count", NULL, 0, F_LL, R(count), SHOW_JSON},
    {"datatype", NULL, 0, F_STR, R(datatype), SHOW_JSON},
    {"op", NULL, 0, F_STR, R(op), SHOW_JSON},
    {"inplace", NULL, 0, F_BOOL, R(inplace), SHOW_JSON},
    {"avg_latency_us", "Avg Latency(us)", 17, F_DBL, R(avg), SHOW_ALWAYS},
    {"min_latency_us", "Min Latency(us)", 17, F_DBL, R(min), SHOW_FULL},
    {"max_latency_us", "Max Latency(us)", 17, F_DBL, R(max), SHOW_FULL},
    {"iters", "Iterations", 12, F_INT, R(iters), SHOW_FULL},
    {"warmup", NULL, 0, F_INT, R(warmup), SHOW_JSON},
    {"tail_p50_us", "P50 Tail Lat(us)", 18, F_DBL, R(tail_p50), SHOW_TAIL},
    {"tail_p90_us", "P90 Tail Lat(us)", 18, F_DBL, R(tail_p90), SHOW_TAIL},
    {"tail_p99_us", "P99 Tail Lat(us)", 18, F_DBL, R(tail_p99), SHOW_TAIL},
    {"call_p50_us", "Call P50(us)", 14, F_DBL, R(call_p50), SHOW_ALWAYS},
    {"call_p99_us", "Call P99(us)", 14, F_DBL, R(call_p99), SHOW_ALWAYS},
    {"last_arrival_p50_us", "Last P50(us)", 14, F_DBL, R(last_p50), SHOW_ALWAYS},
    {"last_arrival_p99_us", "Last P99(us)", 14, F_DBL, R(last_p99), SHOW_ALWAYS},
    {"last_arrival_p25_us", NULL, 0, F_DBL, R(last_p25), SHOW_JSON},
    {"last_arrival_p75_us", NULL, 0, F_DBL, R(last_p75), SHOW_JSON},
    {"last_arrival_mean_us", NULL, 0, F_DBL, R(last_mean), SHOW_JSON},
    {"busbw_MBps", "Busbw(MB/s)", 13, F_DBL, R(busbw), SHOW_ALWAYS},
    {"ratio_vs_native", "vs native", 11, F_DBL, R(ratio), SHOW_ALWAYS},
    {"nonblocking", NULL, 0, F_BOOL, R(nonblocking), SHOW_JSON},
    {"progress", NULL, 0, F_OPTSTR, R(progress), SHOW_JSON},
    {"compute_us", "Compute(us)", 13, F_DBL, R(compute), SHOW_NB},
    {"overall_us", "Overall(us)", 13, F_DBL, R(overall), SHOW_NB},
    {"overlap_pct", "Overlap(%)", 12, F_DBL, R(overlap), SHOW_NB},
    {"test_calls", NULL, 0, F_DBL, R(ntests), SHOW_JSON},
    {"after_compute_us", NULL, 0, F_DBL, R(after_compute), SHOW_JSON},
    {"validated", "Validation", 12, F_TRI, R(validated), SHOW_CHECK},
    {"errors", NULL, 0, F_INT, R(errors), SHOW_JSON},
    {"straggler", NULL, 0, F_RANK, R(straggler), SHOW_JSON},
    {"delay_ms", NULL, 0, F_DBL, R(delay_ms), SHOW_JSON},
    {"straggle_by", NULL, 0, F_OPTSTR, R(straggle_by), SHOW_JSON},
    {"straggle_pattern", NULL, 0, F_OPTSTR, R(straggle_pattern), SHOW_JSON},
    {"net_tail_pct", NULL, 0, F_DBL, R(tail_pct), SHOW_JSON},
    {"net_tail_delay_ms", NULL, 0, F_DBL, R(tail_delay_ms), SHOW_JSON},
    {"net_tail_emulated", NULL, 0, F_BOOL, R(tail_emulated), SHOW_JSON},
    {"clock", NULL, 0, F_STR, R(clock), SHOW_JSON},
    {"ran_calls", NULL, 0, F_RANCALLS, R(ent), SHOW_JSON},
    {"auto_choice", NULL, 0, F_OPTSTR, R(auto_choice), SHOW_JSON},
    {"auto_regime", NULL, 0, F_OPTSTR, R(auto_regime), SHOW_JSON},
    {"auto_converged_calls", NULL, 0, F_OPTLL, R(auto_converged), SHOW_JSON},
    {"auto_explorations", NULL, 0, F_OPTLL, R(auto_explorations), SHOW_JSON},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static bool field_shown(const struct bench *b, const struct field *f)
{
    unsigned on = SHOW_ALWAYS | (b->cfg.full ? SHOW_FULL : 0) | (b->cfg.tail ? SHOW_TAIL : 0) |
                  (b->cfg.check ? SHOW_CHECK : 0) | (b->cfg.nonblocking ? SHOW_NB : 0);

    return (f->show & on) != 0;
}

static const void *field_ptr(const struct result *res, const struct field *f)
{
    return (const char *)res + f->off;
}

static const char *field_text(const struct result *res, const struct field *f)
{
    const void *p = field_ptr(res, f);
    return f->kind == F_CHARS ? (const char *)p : *(const char *const *)p;
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void json_value(FILE *out, const struct result *res, const struct field *f)
{
    const void *p = field_ptr(res, f);

    switch (f->kind) {
    case F_STR:
    case F_CHARS:
        json_string(out, field_text(res, f));
        break;
    case F_INT:
        fprintf(out, "%d", *(const int *)p);
        break;
    case F_RANK:
        if (*(const int *)p < 0)
            fputs("null", out);
        else
            fprintf(out, "%d", *(const int *)p);
        break;
    case F_LL:
        fprintf(out, "%lld", *(const long long *)p);
        break;
    case F_BOOL:
        fputs(*(const bool *)p ? "true" : "false", out);
        break;
    case F_TRI:
        fputs(*(const int *)p < 0 ? "null" : *(const int *)p ? "true" : "false", out);
        break;
    case F_DBL:
        if (isfinite(*(const double *)p))
            fprintf(out, "%.3f", *(const double *)p);
        else
            fputs("null", out);
        break;
    case F_OPTSTR:
        if (*(const char *const *)p)
            json_string(out, *(const char *const *)p);
        else
            fputs("null", out);
        break;
    case F_OPTLL:
        if (*(const long long *)p >= 0)
            fprintf(out, "%lld", *(const long long *)p);
        else
            fputs("null", out);
        break;
    case F_RANCALLS: {
        const struct entry *e = *(const struct entry *const *)p;
        fputc('{', out);
        for (int i = 0; i < e->nran; i++) {
            if (i)
                fputc(',', out);
            json_string(out, e->ran[i]);
            fprintf(out, ":%d", e->ran_calls[i]);
        }
        fputc('}', out);
        break;
    }
    }
}

/* samples: the last-arrival times of the timed calls in call order (us), or
 * NULL. */
static void print_json(const struct result *res, const double *samples)
{
    for (size_t i = 0; i < NFIELDS; i++) {
        fputs(i ? "," : "{", stdout);
        json_string(stdout, fields[i].key);
        fputc(':', stdout);
        json_value(stdout, res, &fields[i]);
    }
    if (samples) {
        fputs(",\"last_arrival_us\":[", stdout);
        for (int i = 0; i < res->iters; i++)
            fprintf(stdout, "%s%.1f", i ? "," : "", samples[i]);
        fputc(']', stdout);
    }
    fputs("}\n", stdout);
}

static void print_table_header(const struct bench *b)
{
    for (size_t i = 0; i < NFIELDS; i++) {
        const struct field *f = &fields[i];
        if (!f->head || !field_shown(b, f))
            continue;
        if (f->kind == F_STR || f->kind == F_CHARS || i == 0)
            printf("%-*s", f->width, f->head);
        else
            printf("%*s", f->width, f->head);
    }
    putchar('\n');
}

static void print_table_row(const struct bench *b, const struct result *res)
{
    for (size_t i = 0; i < NFIELDS; i++) {
        const struct field *f = &fields[i];
        const void *p = field_ptr(res, f);
        if (!f->head || !field_shown(b, f))
            continue;
        switch (f->kind) {
        case F_STR:
        case F_CHARS:
            /* Never truncate a name (it is the point of the column); a long
             * one shifts the rest of the row but keeps a separating blank. */
            printf("%-*s ", f->width - 1, field_text(res, f));
            break;
        case F_LL:
            printf(i == 0 ? "%-*lld" : "%*lld", f->width, *(const long long *)p);
            break;
        case F_INT:
        case F_RANK:
            printf("%*d", f->width, *(const int *)p);
            break;
        case F_BOOL:
            printf("%*s", f->width, *(const bool *)p ? "yes" : "no");
            break;
        case F_TRI:
            printf("%*s", f->width, *(const int *)p < 0 ? "-" : *(const int *)p ? "Pass" : "Fail");
            break;
        case F_DBL:
            if (isfinite(*(const double *)p))
                printf("%*.2f", f->width, *(const double *)p);
            else
                printf("%*s", f->width, "-");
            break;
        case F_OPTSTR:
        case F_OPTLL:
        case F_RANCALLS:
            break; /* JSON only */
        }
    }
    putchar('\n');
}

static void print_header(const struct bench *b)
{
    FILE *f = b->info;

    fprintf(f, "# SAMPI Allreduce Benchmark (sampi_bench, SAMPI %s)\n", sampi_version());
    fprintf(f, "# np %d, datatype %s (%s), op MPI_SUM, %s\n", b->np, b->cfg.dt->name,
            b->cfg.dt->mpi_name, b->cfg.inplace ? "MPI_IN_PLACE" : "out-of-place");
    fprintf(f, "# entries, interleaved, one communicator each:");
    for (int i = 0; i < b->nent; i++)
        fprintf(f, " %s", b->ent[i].spec->spec);
    fputc('\n', f);
    if (b->cfg.straggler >= 0)
        fprintf(f, "# straggler: rank %d %s %.3f ms before %s\n", b->cfg.straggler,
                b->cfg.spin ? "spins" : "sleeps", b->cfg.delay_ms, pattern_text(&b->cfg));
    else
        fprintf(f, "# straggler: none\n");
    if (b->cfg.tail_pct >= 0)
        fprintf(f,
                "# network tail (emulated, timed calls of reliable entries): %g%% of the "
                "%zu-byte datagrams a rank receives are %.3f ms late%s\n",
                b->cfg.tail_pct, b->cfg.tail_dgram, b->cfg.tail_delay_ms,
                getenv("SAMPI_OPTIREDUCE_FAULT") ? "; optireduce: SAMPI_OPTIREDUCE_FAULT" : "");
    if (b->cfg.nonblocking) {
        char how_long[64] = "the entry's Avg Latency";
        if (b->cfg.compute_ms >= 0)
            snprintf(how_long, sizeof(how_long), "%g ms", b->cfg.compute_ms);
        fprintf(f,
                "# nonblocking (progress %s): the latency columns are the pure communication, "
                "MPI_Iallreduce then MPI_Wait at once; Overall = MPI_Iallreduce, compute for %s, "
                "MPI_Wait%s\n",
                b->progress ? b->progress : "unknown", how_long,
                b->cfg.test_compute ? ", with MPI_Test every tenth of the compute" : "");
    }
    fprintf(f,
            "# clock: %s; Call = call time of the first rank to arrive, Last = last "
            "arrival to completion\n",
            strcmp(b->clock_name, "mpi_wtime") == 0 ? "MPI_Wtime (MPI_WTIME_IS_GLOBAL)"
                                                    : "CLOCK_MONOTONIC");
    fflush(f);
}

/* Makes a silent fallback visible: what ran on each entry's first size, and a
 * warning whenever a forced algorithm or data path is not what ran. */
static void report_ran(struct bench *b, struct entry *e, const struct result *res)
{
    const struct entry_spec *es = e->spec;
    char now[sizeof(e->last_report)];

    if (!e->announced) {
        fprintf(b->info, "# %s: ran %s on netdev %s (at %lld bytes)\n", es->spec, res->ran,
                res->netdev, res->bytes);
        e->announced = true;
    }
    snprintf(now, sizeof(now), "%s@%s", res->ran, res->netdev);
    if (strcmp(now, e->last_report) == 0)
        return;
    snprintf(e->last_report, sizeof(e->last_report), "%s", now);
    if (strcmp(es->algo, "auto") != 0 && strcmp(res->ran, es->algo) != 0)
        fprintf(stderr, "sampi_bench: warning: %s at %lld bytes: asked for algorithm %s, ran %s\n",
                es->spec, res->bytes, es->algo, res->ran);
    if (es->netdev[0] && strcmp(es->netdev, "auto") != 0 && strcmp(res->netdev, es->netdev) != 0)
        fprintf(stderr, "sampi_bench: warning: %s at %lld bytes: asked for netdev %s, got %s\n",
                es->spec, res->bytes, es->netdev, res->netdev);
}

static void report_errors(const struct bench *b, const struct entry *e, size_t bytes, int count)
{
    char err[MPI_MAX_ERROR_STRING] = "on other ranks";
    int len;

    if (e->first_error != MPI_SUCCESS)
        MPI_Error_string(e->first_error, err, &len);
    fprintf(stderr, "sampi_bench: %s at %zu bytes: %d %s calls failed (%s)\n", e->spec->spec, bytes,
            count, b->mode->name, err);
}

/* ------------------------------------------------------------ one size */

static void default_counts(const struct bench *b, size_t bytes, int *iters, int *warmup)
{
    bool large = bytes > LARGE_MESSAGE_SIZE;

    *iters = b->cfg.iters > 0 ? b->cfg.iters : large ? ITERS_LARGE : ITERS_SMALL;
    *warmup = b->cfg.warmup >= 0 ? b->cfg.warmup : large ? WARMUP_LARGE : WARMUP_SMALL;
}

/* Rank 0: metrics for every entry of one size, then print them.  oall: the
 * overlap phase's records with --nonblocking, else NULL. */
static void report_size(struct bench *b, const double *all, const double *oall, size_t bytes,
                        const struct buffers *bufs, int iters, int warmup, const int *errors,
                        const int *failures)
{
    struct result res[MAX_ENTRIES];
    double *last = malloc((size_t)b->nent * (size_t)iters * sizeof(double));
    double *work = malloc(((size_t)2 * (size_t)iters + (size_t)b->np) * sizeof(double));

    if (!last || !work) {
        fprintf(stderr, "sampi_bench: out of memory computing the metrics\n");
        b->status = BENCH_FAILED;
        goto out;
    }
    for (int ei = 0; ei < b->nent; ei++) {
        result_init(b, &b->ent[ei], bytes, bufs, iters, warmup, &res[ei]);
        compute_entry(b, all, ei, iters, &res[ei], last + (size_t)ei * (size_t)iters, work);
        if (oall)
            compute_overlap(b, oall, ei, iters, &res[ei]);
        res[ei].errors = errors[ei];
        if (b->cfg.check)
            res[ei].validated = failures[ei] == 0 && errors[ei] == 0;
    }
    for (int ei = 0; b->native >= 0 && ei < b->nent; ei++)
        res[ei].ratio = median_ratio(last + (size_t)ei * (size_t)iters,
                                     last + (size_t)b->native * (size_t)iters, iters, work);
    for (int ei = 0; ei < b->nent; ei++)
        report_ran(b, &b->ent[ei], &res[ei]);
    /* After the first what-ran notes, so that they sit above the table. */
    if (!b->cfg.json && !b->table_started) {
        print_table_header(b);
        b->table_started = true;
    }
    for (int ei = 0; ei < b->nent; ei++) {
        if (errors[ei])
            report_errors(b, &b->ent[ei], bytes, errors[ei]);
        if (res[ei].validated == 0 || errors[ei])
            b->status = BENCH_FAILED;
        if (b->cfg.json)
            print_json(&res[ei], b->cfg.samples ? last + (size_t)ei * (size_t)iters : NULL);
        else
            print_table_row(b, &res[ei]);
    }
    fflush(stdout);
    fflush(stderr);
out:
    free(last);
    free(work);
}

/* One phase's records: this rank's, and every rank's at rank 0. */
struct stamps {
    double *mine, *all;
    size_t per_rank;
};

static void free_stamps(struct stamps *st)
{
    free(st->mine);
    free(st->all);
    st->mine = st->all = NULL;
}

/* false when this rank could not allocate. */
static bool alloc_stamps(const struct bench *b, struct stamps *st, int width, int iters)
{
    st->per_rank = (size_t)width * (size_t)b->nent * (size_t)iters;
    st->mine = malloc(st->per_rank * sizeof(double));
    st->all = is_root(b) ? malloc(st->per_rank * (size_t)b->np * sizeof(double)) : NULL;
    return st->mine && (!is_root(b) || st->all);
}

static void gather_stamps(struct stamps *st)
{
    MPI_Gather(st->mine, (int)st->per_rank, MPI_DOUBLE, st->all, (int)st->per_rank, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
}

/* --nonblocking's second phase: every rank computes, in each call of an
 * entry, for the entry's mean pure communication time, which rank 0 found in
 * the first phase's stamps (pure->all) and sends to all, so that every rank
 * computes alike and the compute stands for the same work everywhere; or,
 * with --compute-ms, for that time whatever the call costs. */
static void run_overlap(struct bench *b, struct phase *ph, const struct stamps *pure, int warmup,
                        int iters, struct stamps *ov)
{
    double compute_s[MAX_ENTRIES];

    for (int ei = 0; is_root(b) && ei < b->nent; ei++)
        compute_s[ei] =
            b->cfg.compute_ms >= 0 ? b->cfg.compute_ms / 1e3 : mean_call_s(b, pure->all, ei, iters);
    PMPI_Bcast(compute_s, b->nent, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    ph->width = OV_WIDTH;
    ph->call = phase_overlap;
    ph->compute_s = compute_s;
    run_timed(b, ph, warmup, iters, ov->mine);
    ph->compute_s = NULL;
    gather_stamps(ov);
}

static int run_size(struct bench *b, size_t bytes)
{
    struct buffers bufs;
    struct pattern p;
    struct phase ph;
    struct stamps pure = {0}, ov = {0};
    int iters, warmup, rc = 0;
    int local_err[MAX_ENTRIES], errors[MAX_ENTRIES] = {0}, failures[MAX_ENTRIES] = {0};
    bool ok;

    default_counts(b, bytes, &iters, &warmup);
    if (alloc_buffers(b, bytes, &bufs))
        return -1;
    ok = alloc_stamps(b, &pure, 2, iters) &&
         (!b->cfg.nonblocking || alloc_stamps(b, &ov, OV_WIDTH, iters));
    if (agree_min(ok) == 0) {
        if (!ok)
            fprintf(stderr, "sampi_bench: rank %d: cannot allocate the timestamps\n", b->rank);
        rc = -1;
        goto out;
    }

    /* Timed in-place calls reduce zeros: repeated in-place sums of anything
     * else would overflow within a few iterations. */
    pattern_init(b, &p);
    pattern_fill(b, &p, bufs.send, bufs.count);
    memset(bufs.recv, 0, bufs.nbytes + GUARD_BYTES);
    for (int ei = 0; ei < b->nent; ei++)
        reset_entry_counters(b, &b->ent[ei]);
    ph = (struct phase){.width = 2,
                        .call = phase_pure,
                        .args = {b->cfg.inplace ? MPI_IN_PLACE : bufs.send, bufs.recv,
                                 (int)bufs.count, b->cfg.dt->mpi},
                        .nbytes = bufs.nbytes};
    run_timed(b, &ph, warmup, iters, pure.mine);
    gather_stamps(&pure);
    if (b->cfg.nonblocking)
        run_overlap(b, &ph, &pure, warmup, iters, &ov);

    if (b->cfg.check)
        validate_all(b, &bufs, bytes, failures);
    for (int ei = 0; ei < b->nent; ei++)
        local_err[ei] = b->ent[ei].errors;
    MPI_Reduce(local_err, errors, b->nent, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (is_root(b))
        report_size(b, pure.all, ov.all, bytes, &bufs, iters, warmup, errors, failures);
out:
    free_stamps(&pure);
    free_stamps(&ov);
    free_buffers(&bufs);
    return rc;
}

/* ------------------------------------------------------------ main */

static int run(struct bench *b, int argc, char **argv)
{
    config_defaults(&b->cfg);
    if (parse_options(argc, argv, &b->cfg) == 0 && !b->cfg.help && !b->cfg.version)
        check_config(&b->cfg, b->np);
    if (opt_error[0]) {
        if (is_root(b))
            fprintf(stderr, "sampi_bench: %s (try -h)\n", opt_error);
        return BENCH_USAGE;
    }
    if (b->cfg.help || b->cfg.version) {
        if (is_root(b) && b->cfg.help)
            print_usage(stdout);
        else if (is_root(b))
            printf("sampi_bench (SAMPI) %s\n", sampi_version());
        return BENCH_OK;
    }
    /* after MPI_Init, so that SAMPI read the binding mpirun gave (sampi_pin
     * chooses the progress threads' PU inside it); every rank stops if one
     * cannot bind */
    if (b->cfg.ncompute_pus) {
        int bad = sched_setaffinity(0, sizeof(b->cfg.compute_pus), &b->cfg.compute_pus) ? errno : 0;
        int any = 0;
        if (bad)
            fprintf(stderr, "sampi_bench: rank %d: --compute-pu: cannot bind to those PUs: %s\n",
                    b->rank, strerror(bad));
        PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any)
            return BENCH_USAGE;
    }
    b->mode = &call_modes[b->cfg.nonblocking];
    /* A failed nonblocking call's error goes to MPI_COMM_WORLD's handler, not
     * to its communicator's (sampi(7) NONBLOCKING): returned, it is counted
     * and reported as a blocking call's is, instead of aborting the job. */
    if (b->cfg.nonblocking)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (setup_entries(b))
        return BENCH_USAGE;
    setup_pvars(b);
    b->info = b->cfg.json ? stderr : stdout;
    choose_clock(b);
    if (is_root(b))
        print_header(b);
    for (size_t bytes = b->cfg.min_bytes; bytes <= b->cfg.max_bytes; bytes *= 2) {
        if (run_size(b, bytes)) {
            b->status = BENCH_FAILED;
            break;
        }
        if (bytes > SIZE_MAX / 2)
            break;
    }
    return b->status;
}

int main(int argc, char **argv)
{
    static struct bench b = {.status = BENCH_OK};
    int status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.np);
    for (int i = 0; i < MAX_ENTRIES; i++)
        b.ent[i].comm = MPI_COMM_NULL;

    status = agree_max(run(&b, argc, argv));
    free_entries(&b);
    MPI_Finalize();
    return status;
}
