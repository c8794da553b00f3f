/*
 * faults.c - what SAMPI does when ranks are late, silent or disagree, run by
 * faults.test.  Each case is one PASS/FAIL line agreed by every rank, and
 * asserts the outcome on every rank (the error class each call returned, the
 * result where it succeeded, that nothing was written past a buffer); the job
 * itself must end, which the test's time limit checks.
 *
 *   straggler   a rank 4 stall-warning periods late: the warning is printed
 *               (faults.test reads it), every rank's result is exact, no error;
 *   open-late   a rank 1.5 s late to the call that opens a communicator's
 *               data path (after a native call joined it), with a 0.3 s
 *               stall warning: the others' warning names that rank (the
 *               open's waits are collectives; faults.test reads the line);
 *   silent      a joined communicator, a hard limit, rank X never calls: the
 *               others' call returns MPI_ERR_OTHER after at least the limit;
 *               their next call returns it at once (no data moved); X, whose
 *               own limit is ten minutes, enters the call later and returns
 *               it too, learning from the others' notices; a fresh
 *               communicator then works on every rank;
 *   first-call  the same where X misses the communicator's very first call;
 *   tracked     the same for a tracked call (tracking switched on for it);
 *   diverge     after a first call, rank 0 switches its algorithm (rhd) and
 *               the others do not (ring): every rank returns the same error
 *               class, nothing is written past the buffers (and the ASan build
 *               runs this too); the next call returns the revoked error;
 *   count       rank 0 passes N, the others N+1: every rank returns
 *               MPI_ERR_COUNT, nothing is written past the buffers, and the
 *               next call fails cleanly (the revoked error, at once);
 *   bogus       sampi_comm_set_algorithm(comm, "bogus") returns MPI_ERR_ARG
 *               (faults.test checks the one line listing the accepted names);
 *   freed       sampi_comm_set_algorithm on a freed communicator returns
 *               MPI_ERR_COMM instead of crashing;
 *   opti-setup  `silent` for the call that sets optireduce up on a joined
 *               communicator (its agreements and its datagram path);
 *   opti-call   `silent` for an optireduce call after two that succeeded.
 *               The opti-* cases run only when named: they need optireduce's
 *               datagram path on loopback (faults.test sets it up);
 *   inflight    ring, 4 MiB, rank 0 passes MPI_SUM and the others MPI_MAX,
 *               with rank 1 stalled inside the call before its data moves
 *               (faults.test sets sampi_debug_stall): rank 0 learns of the
 *               mismatch while its first segments for rank 1 are posted.
 *               Every rank returns MPI_ERR_OP and unmaps both buffers at
 *               once; memory mapped again there keeps what it was given
 *               while the job goes on communicating, and no rank reads a
 *               buffer its peer unmapped (Open MPI fails a call that does).
 *               Run only when named;
 *   auto-count  under auto, rank 0 passes 1 element (a call auto hands to
 *               Open MPI) and the others 512 Ki (4 MiB, SAMPI's data path
 *               or Open MPI, as auto decides): with sampi_check_native
 *               (faults.test sets it) every rank returns MPI_ERR_COUNT
 *               instead of hanging.  Run only when named;
 *   auto-diverge  rank 0 forces ring, the others stay on auto for a small
 *               call (native): every rank returns MPI_ERR_OTHER.  Run only
 *               when named, with sampi_check_native.
 *
 * Usage: faults [CASE...] (default: all but the opti-* cases).  Timing enters only as lower bounds
 * that cannot fail on a busy machine (a timed-out call waited at least the
 * limit) and as "at once" checks with a margin of seconds for calls that move
 * no data.
 */
#include "mpitest.h"
#include "sampi.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define N        65536 /* doubles: 512 KiB, below the default tracking size */
#define GUARD    64
#define LIMIT_MS 2000
#define LONG_MS  600000

static struct mt_state st;
static int rank, size;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Write a numeric control variable through MPI_T on this rank only, in the
 * datatype the variable declares (MPI_INT or MPI_UNSIGNED_LONG_LONG). */
static int set_cvar(const char *name, long long value)
{
    int idx, n, rc, verbosity, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum et;
    MPI_T_cvar_handle h;
    char nm[128], desc[8];
    int nlen = sizeof(nm), dlen = sizeof(desc);
    if ((rc = MPI_T_cvar_get_index(name, &idx)) != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_T_cvar_get_info(idx, nm, &nlen, &verbosity, &dt, &et, desc, &dlen, &bind,
                                  &scope)) != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_T_cvar_handle_alloc(idx, NULL, &h, &n)) != MPI_SUCCESS)
        return rc;
    int i = (int)value;
    unsigned long long u = (unsigned long long)value;
    rc = MPI_T_cvar_write(h, dt == MPI_INT ? (const void *)&i : (const void *)&u);
    MPI_T_cvar_handle_free(&h);
    if (rc != MPI_SUCCESS)
        mt_fail(&st, "cannot write %s", name);
    return rc;
}

static void set_limit(int ms)
{
    set_cvar("sampi_timeout_ms", ms);
}

static MPI_Comm fresh_comm(const char *algorithm)
{
    MPI_Comm comm;
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (algorithm)
        sampi_comm_set_algorithm(comm, algorithm);
    return comm;
}

static int class_of(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        PMPI_Error_class(rc, &cls);
    return cls;
}

/* Element i of a buffer of MPI_DOUBLE or MPI_FLOAT. */
static double get(const void *buf, MPI_Datatype dt, int i)
{
    return dt == MPI_FLOAT ? ((const float *)buf)[i] : ((const double *)buf)[i];
}

static void put(void *buf, MPI_Datatype dt, int i, double v)
{
    if (dt == MPI_FLOAT)
        ((float *)buf)[i] = (float)v;
    else
        ((double *)buf)[i] = v;
}

/* One in-place sum of n elements of dt (MPI_DOUBLE or MPI_FLOAT) on comm
 * (the buffer holds n + GUARD with a sentinel tail).  Returns the error
 * class; on success checks the result, exactly for doubles and within float
 * rounding for floats (optireduce's transform adds some); always checks the
 * guard.  *ms: how long the call took. */
static int call_as(MPI_Comm comm, int n, MPI_Datatype dt, const char *what, double *ms)
{
    size_t esize = dt == MPI_FLOAT ? sizeof(float) : sizeof(double);
    void *buf = mt_malloc((size_t)(n + GUARD) * esize);
    int crank, csize;
    PMPI_Comm_rank(comm, &crank);
    PMPI_Comm_size(comm, &csize);
    for (int i = 0; i < n; i++)
        put(buf, dt, i, (double)(crank + 1) * (double)(i % 97 + 1));
    for (int i = n; i < n + GUARD; i++)
        put(buf, dt, i, -12345.0);
    double t0 = now_ms();
    int cls = class_of(MPI_Allreduce(MPI_IN_PLACE, buf, n, dt, MPI_SUM, comm));
    if (ms)
        *ms = now_ms() - t0;
    double ranks = (double)csize * (csize + 1) / 2, tol = dt == MPI_FLOAT ? 1e-3 : 0;
    for (int i = 0; cls == MPI_SUCCESS && i < n; i++) {
        double want = ranks * (double)(i % 97 + 1), got = get(buf, dt, i);
        if (got - want > tol * want || want - got > tol * want) {
            mt_fail(&st, "%s: element %d = %g, want %g", what, i, got, want);
            break;
        }
    }
    for (int i = n; i < n + GUARD; i++)
        if (get(buf, dt, i) != -12345.0) {
            mt_fail(&st, "%s: written past the buffer at element %d", what, i);
            break;
        }
    free(buf);
    return cls;
}

static int call(MPI_Comm comm, int n, const char *what, double *ms)
{
    return call_as(comm, n, MPI_DOUBLE, what, ms);
}

/* One PASS/FAIL line agreed by every rank, then a clean slate. */
static void verdict(const char *name)
{
    mt_verdict(&st, name, !st.local_bad);
    st.local_bad = 0;
}

static void expect_class(const char *what, int got, int want)
{
    if (got != want)
        mt_fail(&st, "%s: error class %d, want %d", what, got, want);
}

/* The fresh-communicator part of every failure case: a new communicator
 * works on every rank, exactly. */
static void fresh_works(const char *label)
{
    MPI_Comm comm = fresh_comm("ring");
    char what[96];
    snprintf(what, sizeof(what), "%s: a fresh communicator", label);
    expect_class(what, call(comm, N, what, NULL), MPI_SUCCESS);
    PMPI_Comm_free(&comm);
}

static void case_straggler(void)
{
    MPI_Comm comm = fresh_comm("ring");
    set_cvar("sampi_stall_warn_ms", 300);
    expect_class("straggler: warm-up", call(comm, N, "straggler: warm-up", NULL), MPI_SUCCESS);
    if (rank == size - 1)
        sleep_ms(1500);
    expect_class("straggler: late call", call(comm, N, "straggler: late call", NULL), MPI_SUCCESS);
    set_cvar("sampi_stall_warn_ms", 120000);
    PMPI_Comm_free(&comm);
    verdict("straggler: 1.5 s late with a 0.3 s stall warning: exact, no error");
}

static void case_open_late(void)
{
    MPI_Comm comm = fresh_comm("native");
    expect_class("open-late: warm-up", call(comm, N, "open-late: warm-up", NULL), MPI_SUCCESS);
    sampi_comm_set_algorithm(comm, "ring");
    set_cvar("sampi_stall_warn_ms", 300);
    if (rank == size - 1)
        sleep_ms(1500);
    expect_class("open-late: the call that opens the data path",
                 call(comm, N, "open-late: the call that opens the data path", NULL), MPI_SUCCESS);
    set_cvar("sampi_stall_warn_ms", 120000);
    PMPI_Comm_free(&comm);
    verdict("open-late: a rank late to the data path's opening: named, exact, no error");
}

/* Rank `x` stays out of the next call on comm (n elements of dt); the others
 * must give up after the limit, then fail at once; x, with a ten-minute
 * limit of its own, learns from them. */
static void silent_rank(const char *label, MPI_Comm comm, int n, MPI_Datatype dt, int x)
{
    char what[128];
    double ms = 0;
    set_limit(rank == x ? LONG_MS : LIMIT_MS);
    int err = MPI_ERR_OTHER;
    if (rank != x) {
        snprintf(what, sizeof(what), "%s: the call rank %d misses", label, x);
        expect_class(what, call_as(comm, n, dt, what, &ms), err);
        if (ms < 0.9 * LIMIT_MS)
            mt_fail(&st, "%s: gave up after %.0f ms, before the %d ms limit", what, ms, LIMIT_MS);
        snprintf(what, sizeof(what), "%s: the next call", label);
        expect_class(what, call_as(comm, n, dt, what, &ms), err);
        if (ms > LIMIT_MS / 2)
            mt_fail(&st, "%s: took %.0f ms: not at once", what, ms);
    }
    /* x arrives when the others have given up */
    PMPI_Barrier(MPI_COMM_WORLD);
    if (rank == x) {
        snprintf(what, sizeof(what), "%s: the late rank's call", label);
        expect_class(what, call_as(comm, n, dt, what, &ms), err);
        if (ms > LONG_MS / 2)
            mt_fail(&st, "%s: took %.0f ms", what, ms);
    }
    set_limit(0);
    MPI_Comm_free(&comm);
    fresh_works(label);
}

static void case_silent(void)
{
    MPI_Comm comm = fresh_comm("ring");
    expect_class("silent: warm-up", call(comm, N, "silent: warm-up", NULL), MPI_SUCCESS);
    silent_rank("silent", comm, N, MPI_DOUBLE, size - 1);
    verdict("silent: a rank that never arrives, limit 2 s: every rank MPI_ERR_OTHER");
}

static void case_first_call(void)
{
    MPI_Comm comm = fresh_comm("ring");
    silent_rank("first-call", comm, N, MPI_DOUBLE, 0);
    verdict("first-call: a rank that misses the first call: every rank MPI_ERR_OTHER");
}

static void case_tracked(void)
{
    if (size < 3) {
        verdict("tracked: not run below 3 ranks (calls are tracked on 3 or more)");
        return;
    }
    set_cvar("sampi_tracker_min_bytes", 65536);
    MPI_Comm comm = fresh_comm("ring");
    for (int i = 0; i < 4; i++)
        expect_class("tracked: warm-up", call(comm, N, "tracked: warm-up", NULL), MPI_SUCCESS);
    silent_rank("tracked", comm, N, MPI_DOUBLE, 1);
    set_cvar("sampi_tracker_min_bytes", 1 << 20);
    verdict("tracked: a rank that misses a tracked call: every rank MPI_ERR_OTHER");
}

/* A mismatch the argument check finds: every rank returns `want`; the next
 * call returns the revoked error (class MPI_ERR_OTHER) at once. */
static void after_mismatch(const char *label, MPI_Comm comm)
{
    char what[96];
    double ms = 0;
    snprintf(what, sizeof(what), "%s: the next call", label);
    expect_class(what, call(comm, N, what, &ms), MPI_ERR_OTHER);
    if (ms > 60000)
        mt_fail(&st, "%s: took %.0f ms: not at once", what, ms);
    MPI_Comm_free(&comm);
    fresh_works(label);
}

static void case_diverge(void)
{
    MPI_Comm comm = fresh_comm("ring");
    expect_class("diverge: warm-up", call(comm, N, "diverge: warm-up", NULL), MPI_SUCCESS);
    if (rank == 0)
        sampi_comm_set_algorithm(comm, "rhd");
    expect_class("diverge: rank 0 on rhd, the others on ring",
                 call(comm, N, "diverge: the diverging call", NULL), MPI_ERR_OTHER);
    after_mismatch("diverge", comm);
    verdict("diverge: ranks on different algorithms: every rank MPI_ERR_OTHER, no corruption");
}

static void case_count(void)
{
    MPI_Comm comm = fresh_comm("rhd");
    expect_class("count: warm-up", call(comm, 1000, "count: warm-up", NULL), MPI_SUCCESS);
    expect_class("count: rank 0 passes 1000, the others 1001",
                 call(comm, rank == 0 ? 1000 : 1001, "count: the mismatched call", NULL),
                 MPI_ERR_COUNT);
    after_mismatch("count", comm);
    verdict("count: mismatched counts: every rank MPI_ERR_COUNT, then a clean failure");
}

static void case_bogus(void)
{
    MPI_Comm comm = fresh_comm(NULL);
    int cls = class_of(sampi_comm_set_algorithm(comm, "bogus"));
    expect_class("bogus: sampi_comm_set_algorithm(\"bogus\")", cls, MPI_ERR_ARG);
    PMPI_Comm_free(&comm);
    verdict("bogus: an unknown algorithm name: MPI_ERR_ARG");
}

static void case_freed(void)
{
    MPI_Comm comm = fresh_comm(NULL), stale = comm;
    MPI_Comm_free(&comm);
    int cls = class_of(sampi_comm_set_algorithm(stale, "ring"));
    expect_class("freed: sampi_comm_set_algorithm on a freed communicator", cls, MPI_ERR_COMM);
    verdict("freed: a freed communicator: MPI_ERR_COMM, no crash");
}

/* optireduce's own agreements wait like every other exchange: rank 0 misses
 * the call that sets optireduce up on a communicator already joined (ring
 * before), so its set-up meets the silent rank. */
static void case_opti_setup(void)
{
    MPI_Comm comm = fresh_comm("ring");
    expect_class("opti-setup: warm-up", call(comm, N, "opti-setup: warm-up", NULL), MPI_SUCCESS);
    sampi_comm_set_algorithm(comm, "optireduce");
    silent_rank("opti-setup", comm, N, MPI_FLOAT, 0);
    verdict("opti-setup: a rank that misses optireduce's set-up: every rank MPI_ERR_OTHER");
}

static void case_opti_call(void)
{
    MPI_Comm comm = fresh_comm("optireduce");
    for (int i = 0; i < 2; i++)
        expect_class("opti-call: warm-up", call_as(comm, N, MPI_FLOAT, "opti-call: warm-up", NULL),
                     MPI_SUCCESS);
    silent_rank("opti-call", comm, N, MPI_FLOAT, size - 1);
    verdict("opti-call: a rank that misses an optireduce call: every rank MPI_ERR_OTHER");
}

static void *map_bytes(size_t bytes, void *where)
{
    void *p = mmap(where, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("faults: mmap");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void case_inflight(void)
{
    enum { FLOATS = 1 << 20 };
    const size_t bytes = FLOATS * sizeof(float);
    MPI_Comm comm = fresh_comm("ring");
    expect_class("inflight: warm-up", call(comm, N, "inflight: warm-up", NULL), MPI_SUCCESS);
    float *in = map_bytes(bytes, NULL), *out = map_bytes(bytes, NULL);
    for (int i = 0; i < FLOATS; i++)
        in[i] = (float)(rank + i % 7);
    int cls =
        class_of(MPI_Allreduce(in, out, FLOATS, MPI_FLOAT, rank == 0 ? MPI_SUM : MPI_MAX, comm));
    munmap(in, bytes);
    munmap(out, bytes);
    expect_class("inflight: rank 0 MPI_SUM, the others MPI_MAX", cls, MPI_ERR_OP);
    /* the job goes on while nothing is mapped there: a transfer still
     * reading or writing a buffer faults (EFAULT in the peer's single-copy
     * read, or SIGSEGV in this rank's own progress) */
    for (int i = 0; i < 3; i++) {
        fresh_works("inflight");
        PMPI_Barrier(MPI_COMM_WORLD);
    }
    sleep_ms(700); /* longer than the stall: the stalled rank ran on meanwhile */
    /* then whatever comes to live there must keep its values */
    unsigned char *again[2] = {map_bytes(bytes, in), map_bytes(bytes, out)};
    for (int b = 0; b < 2; b++)
        memset(again[b], 0x5a + b, bytes);
    fresh_works("inflight");
    PMPI_Barrier(MPI_COMM_WORLD);
    for (int b = 0; b < 2; b++) {
        for (size_t i = 0; i < bytes; i++)
            if (again[b][i] != 0x5a + b) {
                mt_fail(&st, "inflight: memory mapped where a buffer was changed at byte %zu", i);
                break;
            }
        munmap(again[b], bytes);
    }
    MPI_Comm_free(&comm);
    verdict("inflight: an error return leaves nothing in flight on the buffers");
}

static void case_auto_count(void)
{
    MPI_Comm comm = fresh_comm("auto");
    expect_class("auto-count: warm-up", call(comm, 8, "auto-count: warm-up", NULL), MPI_SUCCESS);
    expect_class("auto-count: rank 0 passes 1 element, the others 512 Ki",
                 call(comm, rank == 0 ? 1 : 1 << 19, "auto-count: the mismatched call", NULL),
                 MPI_ERR_COUNT);
    after_mismatch("auto-count", comm);
    verdict("auto-count: counts on both sides of auto's boundary: every rank MPI_ERR_COUNT");
}

static void case_auto_diverge(void)
{
    MPI_Comm comm = fresh_comm("auto");
    expect_class("auto-diverge: warm-up", call(comm, 8, "auto-diverge: warm-up", NULL),
                 MPI_SUCCESS);
    if (rank == 0)
        sampi_comm_set_algorithm(comm, "ring");
    expect_class("auto-diverge: rank 0 on ring, the others on auto",
                 call(comm, 8, "auto-diverge: the diverging call", NULL), MPI_ERR_OTHER);
    after_mismatch("auto-diverge", comm);
    verdict("auto-diverge: one rank forced to ring, the others auto: every rank MPI_ERR_OTHER");
}

/* hier's stages run on communicators of its own, parts of the caller's:
 * the same failures inside them end the same way on every rank (run with
 * SAMPI_HIER_RANKS_PER_NODE grouping the ranks into nodes). */
static void case_hier_silent(void)
{
    MPI_Comm comm = fresh_comm("hier");
    expect_class("hier-silent: warm-up", call(comm, N, "hier-silent: warm-up", NULL), MPI_SUCCESS);
    silent_rank("hier-silent", comm, N, MPI_DOUBLE, size - 1);
    verdict("hier-silent: a rank that never arrives at a hier call: every rank MPI_ERR_OTHER");
}

static void case_hier_count(void)
{
    MPI_Comm comm = fresh_comm("hier");
    expect_class("hier-count: warm-up", call(comm, 1000, "hier-count: warm-up", NULL), MPI_SUCCESS);
    expect_class(
        "hier-count: the last rank passes 1000, the others 1001",
        call(comm, rank == size - 1 ? 1000 : 1001, "hier-count: the mismatched call", NULL),
        MPI_ERR_COUNT);
    after_mismatch("hier-count", comm);
    verdict("hier-count: mismatched counts under hier: every rank MPI_ERR_COUNT");
}

static void case_hier_diverge(void)
{
    /* rank 0 makes hier's sub-communicators alone: the check must stop it first */
    MPI_Comm comm = fresh_comm("ring");
    expect_class("hier-diverge: warm-up", call(comm, N, "hier-diverge: warm-up", NULL),
                 MPI_SUCCESS);
    if (rank == 0)
        sampi_comm_set_algorithm(comm, "hier");
    expect_class("hier-diverge: rank 0 on hier, the others on ring",
                 call(comm, N, "hier-diverge: the diverging call", NULL), MPI_ERR_OTHER);
    after_mismatch("hier-diverge", comm);
    verdict("hier-diverge: rank 0 alone on hier: every rank MPI_ERR_OTHER, no hang");
}

static const struct {
    const char *name;
    void (*run)(void);
    int named; /* run only when named */
} cases[] = {
    {"straggler", case_straggler, 0},
    {"open-late", case_open_late, 0},
    {"silent", case_silent, 0},
    {"first-call", case_first_call, 0},
    {"tracked", case_tracked, 0},
    {"diverge", case_diverge, 0},
    {"count", case_count, 0},
    {"bogus", case_bogus, 0},
    {"freed", case_freed, 0},
    {"opti-setup", case_opti_setup, 1},
    {"opti-call", case_opti_call, 1},
    {"inflight", case_inflight, 1},
    {"auto-count", case_auto_count, 1},
    {"auto-diverge", case_auto_diverge, 1},
    {"hier-silent", case_hier_silent, 1},
    {"hier-count", case_hier_count, 1},
    {"hier-diverge", case_hier_diverge, 1},
};

int main(int argc, char **argv)
{
    size = mt_start(&st, "faults", &argc, &argv, 1);
    rank = st.rank;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int wanted = argc < 2 && !cases[i].named;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], cases[i].name) == 0;
        if (wanted)
            cases[i].run();
    }
    long failed = mt_summary(&st, size, ", ", "cases");
    MPI_T_finalize();
    MPI_Finalize();
    return mt_exit_code(failed);
}
