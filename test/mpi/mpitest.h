/*
 * mpitest.h - helpers shared by the MPI integration programs in test/mpi.
 *
 * Header-only (static inline) so each program is one translation unit and
 * links nothing beyond MPI and SAMPI.  Everything that must not itself be
 * under test calls PMPI_* directly: a helper that went through SAMPI's
 * MPI_Allreduce could hide the very bug it is meant to expose.
 *
 * Conventions: a failed check is recorded, never fatal (the other ranks must
 * keep participating); the first MT_MAX_REPORTS failures of each rank are
 * printed with their parameters; a program exits non-zero when any rank
 * failed.  Only impossible-to-continue conditions (out of memory, MPI_Init
 * failing) abort.
 */
#ifndef SAMPI_MPITEST_H
#define SAMPI_MPITEST_H

#include <mpi.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Failure lines each rank prints; MPITEST_MAX_REPORTS overrides it when
 * debugging a run with many failures. */
#define MT_MAX_REPORTS 20

struct mt_state {
    const char *prog;
    int rank;     /* in MPI_COMM_WORLD */
    long cases;   /* cases this rank counted (it was rank 0 of their comm) */
    long failed;  /* of those, cases that failed on some rank */
    int reported; /* failure lines this rank printed */
    int max_reports;
    int local_bad; /* this rank saw a failure in the current case */
};

static inline void mt_init(struct mt_state *st, const char *prog)
{
    memset(st, 0, sizeof *st);
    st->prog = prog;
    const char *env = getenv("MPITEST_MAX_REPORTS");
    st->max_reports = env ? atoi(env) : MT_MAX_REPORTS;
    PMPI_Comm_rank(MPI_COMM_WORLD, &st->rank);
}

/* The start of a program: MPI_Init (and MPI_T when `mpit`, for the programs
 * that read or write SAMPI's variables), then mt_init.  Returns the size of
 * MPI_COMM_WORLD; st->rank is the rank in it. */
static inline int mt_start(struct mt_state *st, const char *prog, int *argc, char ***argv, int mpit)
{
    int provided, size;
    MPI_Init(argc, argv);
    if (mpit)
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    mt_init(st, prog);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

/* Record a failure seen by this rank in the current case and print it while
 * under the per-rank limit.  Lines go to stdout, flushed, so that the test
 * log keeps them in order with the summary. */
static inline void mt_fail(struct mt_state *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void mt_fail(struct mt_state *st, const char *fmt, ...)
{
    st->local_bad = 1;
    if (st->reported >= st->max_reports)
        return;
    st->reported++;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("%s: [rank %d] FAIL %s\n", st->prog, st->rank, line);
    fflush(stdout);
}

/* FNV-1a style, a 64-bit word at a time (a byte at a time for the tail):
 * any differing byte changes it, and it keeps up with 2^22-element buffers. */
static inline uint64_t mt_hash(uint64_t h, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        h = (h ^ w) * UINT64_C(0x100000001b3);
        h ^= h >> 29;
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

#define MT_HASH_SEED UINT64_C(0xcbf29ce484222325)

/*
 * Close one case on `comm`: all ranks learn whether any rank failed and
 * whether `hash` (of the result) is the same everywhere.  One PMPI_Allreduce
 * of MAX over {h, ~h, bad} gives max(h), ~min(h) and any(bad) at once.
 * The case is counted once, by rank 0 of `comm`, so that mt_totals over
 * MPI_COMM_WORLD counts each case on each communicator exactly once.
 * Returns 1 when the case passed on every rank of `comm`.
 */
static inline int mt_close_case(struct mt_state *st, MPI_Comm comm, uint64_t hash, const char *what)
{
    uint64_t in[3] = {hash, ~hash, (uint64_t)st->local_bad}, out[3];
    int crank;
    PMPI_Allreduce(in, out, 3, MPI_UINT64_T, MPI_MAX, comm);
    PMPI_Comm_rank(comm, &crank);
    int identical = out[0] == ~out[1];
    if (!identical && crank == 0)
        mt_fail(st, "%s: result differs between ranks (hash min %016llx max %016llx)", what,
                (unsigned long long)~out[1], (unsigned long long)out[0]);
    int ok = identical && out[2] == 0;
    if (crank == 0) {
        st->cases++;
        st->failed += !ok;
    }
    st->local_bad = 0;
    return ok;
}

/*
 * The same for up to MT_BATCH_MAX cases at once, closed with one
 * PMPI_Allreduce: a loop that runs many short cases on one communicator
 * pays one agreement per batch instead of one per case (on a loaded,
 * oversubscribed machine every collective costs scheduler time slices).
 * mt_batch_add records the current case (this rank's verdict and result
 * hash); mt_batch_close agrees on all of them and counts them as
 * mt_close_case would.
 */
#define MT_BATCH_MAX 16

struct mt_batch {
    int n;
    uint64_t hash[MT_BATCH_MAX];
    int bad[MT_BATCH_MAX];
    char what[MT_BATCH_MAX][320];
};

static inline void mt_batch_close(struct mt_state *st, struct mt_batch *b, MPI_Comm comm);

static inline void mt_batch_add(struct mt_state *st, struct mt_batch *b, MPI_Comm comm,
                                uint64_t hash, const char *what)
{
    if (b->n == MT_BATCH_MAX)
        mt_batch_close(st, b, comm);
    b->hash[b->n] = hash;
    b->bad[b->n] = st->local_bad;
    snprintf(b->what[b->n], sizeof b->what[b->n], "%s", what);
    b->n++;
    st->local_bad = 0;
}

static inline void mt_batch_close(struct mt_state *st, struct mt_batch *b, MPI_Comm comm)
{
    uint64_t in[3 * MT_BATCH_MAX], out[3 * MT_BATCH_MAX];
    int crank;
    for (int i = 0; i < b->n; i++) {
        in[3 * i] = b->hash[i];
        in[3 * i + 1] = ~b->hash[i];
        in[3 * i + 2] = (uint64_t)b->bad[i];
    }
    if (b->n)
        PMPI_Allreduce(in, out, 3 * b->n, MPI_UINT64_T, MPI_MAX, comm);
    PMPI_Comm_rank(comm, &crank);
    for (int i = 0; i < b->n; i++) {
        int identical = out[3 * i] == ~out[3 * i + 1];
        if (!identical && crank == 0) {
            mt_fail(st, "%s: result differs between ranks (hash min %016llx max %016llx)",
                    b->what[i], (unsigned long long)~out[3 * i + 1],
                    (unsigned long long)out[3 * i]);
            st->local_bad = 0;
        }
        if (crank == 0) {
            st->cases++;
            st->failed += !(identical && out[3 * i + 2] == 0);
        }
    }
    b->n = 0;
}

/* Totals over MPI_COMM_WORLD for the summary line, on every rank: each
 * rank's exit code comes from them (an allreduce, not a reduce to rank 0,
 * whose result would be valid on the root only).  A failure a rank recorded
 * but never closed (st->local_bad) counts too. */
static inline void mt_totals(const struct mt_state *st, long *cases, long *failed)
{
    long in[2] = {st->cases, st->failed + (st->local_bad != 0)}, out[2];
    PMPI_Allreduce(in, out, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    *cases = out[0];
    *failed = out[1];
}

/* The summary line the test scripts look for, from rank 0 after mt_totals:
 * "PROG: np=NP, N cases, M failed" (`what` names the unit: "cases",
 * "checks"; `np` 0 leaves out "np=NP" and `sep`, which follows it).
 * Returns the failures, the same on every rank. */
static inline long mt_summary(const struct mt_state *st, int np, const char *sep, const char *what)
{
    long cases, failed;
    mt_totals(st, &cases, &failed);
    if (st->rank == 0) {
        if (np > 0)
            printf("%s: np=%d%s%ld %s, %ld failed\n", st->prog, np, sep, cases, what, failed);
        else
            printf("%s: %ld %s, %ld failed\n", st->prog, cases, what, failed);
        fflush(stdout);
    }
    return failed;
}

/* The exit status every rank agrees on: 0 when `local_failed` is 0 on every
 * rank of MPI_COMM_WORLD.  For programs that count failures per rank. */
static inline int mt_agreed_exit(long local_failed)
{
    long any = local_failed != 0, all = 0;
    PMPI_Allreduce(&any, &all, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    return all ? 1 : 0;
}

/* Print one PASS/FAIL line (rank 0 only) for a named check agreed on by all
 * ranks of MPI_COMM_WORLD; returns the agreed result. */
static inline int mt_verdict(struct mt_state *st, const char *name, int local_ok)
{
    int ok;
    PMPI_Allreduce(&local_ok, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (st->rank == 0) {
        st->cases++;
        st->failed += !ok;
        printf("%s %s\n", ok ? "PASS" : "FAIL", name);
        fflush(stdout);
    }
    return ok;
}

static inline void *mt_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static inline int mt_has_flag(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], flag) == 0)
            return 1;
    return 0;
}

/* The value after `opt` ("--netdev ofi"), or `dflt`. */
static inline const char *mt_option(int argc, char **argv, const char *opt, const char *dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], opt) == 0)
            return argv[i + 1];
    return dflt;
}

/* Exit status of a test program: 0 when every case passed everywhere. */
static inline int mt_exit_code(long failed)
{
    return failed == 0 ? 0 : 1;
}

#endif
