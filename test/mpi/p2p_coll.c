/*
 * p2p_coll.c - SAMPI's own collectives over point-to-point
 * (src/base/p2p_allreduce.h and the waiter's helpers, wait.h) on every
 * communicator size from 2 to the world's size (9 in p2p_coll.test):
 *   allreduce  the datatypes and ops SAMPI's callers use (and a few more),
 *              counts 0, 1, 3, 10, 100, equal to PMPI_Allreduce for
 *              integers and the same bits on every rank for floating point
 *              (NaN and -0.0 included under MAX);
 *   allgather  equal to PMPI_Allgather;
 *   barrier    returns;
 *   overlap    two exchanges of different tags in flight at once, progressed
 *              in opposite orders on odd and even ranks;
 *   sequence   600 helper calls in a row (the tag's sequence number wraps
 *              at 512), each checked.
 * All of it twice: with the direct exchange up to 8 ranks (the default),
 * then with recursive doubling on every size.
 * It links libsampi_core, not the interposer: MPI calls here are plain MPI.
 */
#include "config.h"
#include "mpitest.h"
#include "p2p_allreduce.h"
#include "wait.h"

#include <errno.h>
#include <math.h>

static struct mt_state st;

static void fill(void *buf, MPI_Datatype dt, int count, int rank, int salt)
{
    for (int i = 0; i < count; i++) {
        unsigned v = (unsigned)(rank * 7919 + i * 104729 + salt * 31) % 1000;
        if (dt == MPI_LONG_LONG)
            ((long long *)buf)[i] = (long long)v * 1000003LL - 400000000LL;
        else if (dt == MPI_INT)
            ((int *)buf)[i] = (int)v - 500;
        else if (dt == MPI_UNSIGNED)
            ((unsigned *)buf)[i] = v * 4000000u;
        else if (dt == MPI_UINT64_T)
            ((uint64_t *)buf)[i] = (uint64_t)v << 40 | (uint64_t)rank;
        else if (dt == MPI_BYTE)
            ((unsigned char *)buf)[i] = (unsigned char)(1u << ((rank + i) % 8));
        else if (dt == MPI_DOUBLE) {
            double d = ((double)v - 500.0) / 7.0;
            /* signed zeros and a NaN, where MAX's argument order shows */
            if (i % 11 == 3)
                d = rank % 2 ? 0.0 : -0.0;
            if (i % 13 == 5 && rank == 1)
                d = NAN;
            ((double *)buf)[i] = d;
        } else if (dt == MPI_FLOAT)
            ((float *)buf)[i] = ((float)v - 500.0f) / 3.0f;
    }
}

static const struct {
    MPI_Datatype dt;
    MPI_Op op;
    const char *name;
    int exact; /* equal to PMPI_Allreduce */
} kinds[] = {
    {MPI_LONG_LONG, MPI_MAX, "long long MAX", 1}, {MPI_LONG_LONG, MPI_MIN, "long long MIN", 1},
    {MPI_LONG_LONG, MPI_SUM, "long long SUM", 1}, {MPI_INT, MPI_MIN, "int MIN", 1},
    {MPI_UNSIGNED, MPI_MAX, "unsigned MAX", 1},   {MPI_UINT64_T, MPI_MAX, "uint64 MAX", 1},
    {MPI_BYTE, MPI_BOR, "byte BOR", 1},           {MPI_DOUBLE, MPI_SUM, "double SUM", 0},
    {MPI_DOUBLE, MPI_MAX, "double MAX", 0},       {MPI_FLOAT, MPI_SUM, "float SUM", 0},
};

static void waiter(struct sampi_waiter *w)
{
    sampi_waiter_init(w, "the test's exchange", NULL, NULL, NULL);
}

static void allreduce_cases(MPI_Comm comm, int n, int rank)
{
    static const int counts[] = {0, 1, 3, 10, 100};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            int count = counts[c], tsize;
            PMPI_Type_size(kinds[k].dt, &tsize);
            size_t bytes = (size_t)count * (size_t)tsize;
            char in[800], out[801], ref[800];
            fill(in, kinds[k].dt, count, rank, (int)c);
            memset(out, 0x5a, sizeof(out));
            struct sampi_waiter w;
            waiter(&w);
            int rc = sampi_waiter_allreduce(&w, in, out, count, kinds[k].dt, kinds[k].op, comm);
            if (rc)
                mt_fail(&st, "p=%d %s count %d: rc %d", n, kinds[k].name, count, rc);
            if ((unsigned char)out[bytes] != 0x5a)
                mt_fail(&st, "p=%d %s count %d: wrote past the result", n, kinds[k].name, count);
            PMPI_Allreduce(in, ref, count, kinds[k].dt, kinds[k].op, comm);
            if (kinds[k].exact && memcmp(out, ref, bytes))
                mt_fail(&st, "p=%d %s count %d: differs from PMPI_Allreduce", n, kinds[k].name,
                        count);
            if (kinds[k].dt == MPI_DOUBLE && kinds[k].op == MPI_SUM)
                for (int i = 0; i < count; i++) {
                    double a = ((double *)out)[i], b = ((double *)ref)[i];
                    if (!(fabs(a - b) <= 1e-9 * (1 + fabs(b))) && !(isnan(a) && isnan(b)))
                        mt_fail(&st, "p=%d double SUM [%d]: %g, PMPI %g", n, i, a, b);
                }
            char what[96];
            snprintf(what, sizeof(what), "p=%d %s count %d", n, kinds[k].name, count);
            mt_close_case(&st, comm, mt_hash(MT_HASH_SEED, out, bytes), what);
        }
}

static void allgather_cases(MPI_Comm comm, int n, int rank)
{
    static const struct {
        MPI_Datatype dt;
        int count;
    } g[] = {{MPI_DOUBLE, 2}, {MPI_BYTE, 5}, {MPI_DOUBLE, 1}, {MPI_INT, 0}};
    for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
        double in[2] = {rank + 0.25, -rank * 3.5};
        char out[9 * 16 + 1], ref[9 * 16];
        int tsize;
        PMPI_Type_size(g[k].dt, &tsize);
        size_t all = (size_t)n * (size_t)g[k].count * (size_t)tsize;
        memset(out, 0x5a, sizeof(out));
        struct sampi_waiter w;
        waiter(&w);
        int rc = sampi_waiter_allgather(&w, in, g[k].count, g[k].dt, out, comm);
        PMPI_Allgather(in, g[k].count, g[k].dt, ref, g[k].count, g[k].dt, comm);
        if (rc || memcmp(out, ref, all) || (unsigned char)out[all] != 0x5a)
            mt_fail(&st, "p=%d allgather %zu: rc %d or differs from PMPI_Allgather", n, k, rc);
        mt_close_case(&st, comm, mt_hash(MT_HASH_SEED, out, all), "allgather");
    }
    struct sampi_waiter w;
    waiter(&w);
    if (sampi_waiter_barrier(&w, comm))
        mt_fail(&st, "p=%d barrier failed", n);
    mt_close_case(&st, comm, 0, "barrier");
}

/* The waiter's poll hook drives the other exchange, as the owner's poll
 * drives the argument check while a rank waits for something else. */
static int drive(void *other)
{
    return sampi_p2p_allreduce_test(other, NULL) < 0 ? -EIO : 0;
}

/* Two exchanges of different tags in flight at once (the argument check
 * beside an agreement), waited for in opposite orders on odd and even
 * ranks: each rank advances the one it does not wait for only from its
 * waiter's poll hook, every SAMPI_WAIT_POLL_MS. */
static void overlap_case(MPI_Comm comm, int n, int rank)
{
    struct sampi_p2p_allreduce a, b;
    sampi_p2p_allreduce_init(&a);
    sampi_p2p_allreduce_init(&b);
    long long va[4] = {rank, -rank, rank * 3, 7}, vb[2] = {rank + 100, -(rank + 100)};
    int rc = sampi_p2p_allreduce_start(&a, va, 4, MPI_LONG_LONG, MPI_MAX, comm,
                                       SAMPI_P2P_TAG(SAMPI_P2P_SUB_CHECK, 0));
    rc = rc ? rc
            : sampi_p2p_allreduce_start(&b, vb, 2, MPI_LONG_LONG, MPI_SUM, comm,
                                        SAMPI_P2P_TAG(SAMPI_P2P_SUB_ALLREDUCE, 0));
    struct sampi_p2p_allreduce *first = rank % 2 ? &b : &a, *second = rank % 2 ? &a : &b;
    struct sampi_waiter w;
    sampi_waiter_init(&w, "the test's exchange", drive, NULL, second);
    if (!rc)
        rc = sampi_waiter_p2p(&w, first);
    waiter(&w);
    if (!rc)
        rc = sampi_waiter_p2p(&w, second);
    if (rc)
        mt_fail(&st, "p=%d overlap: rc %d", n, rc);
    else {
        const long long *ra = sampi_p2p_allreduce_result(&a), *rb = sampi_p2p_allreduce_result(&b);
        long long sum = (long long)n * (n - 1) / 2 + 100LL * n;
        if (ra[0] != n - 1 || ra[1] != 0 || ra[2] != 3 * (n - 1) || ra[3] != 7 || rb[0] != sum ||
            rb[1] != -sum)
            mt_fail(&st, "p=%d overlap: wrong results", n);
        /* complete: asking again answers 1 and changes nothing */
        if (sampi_p2p_allreduce_test(&a, NULL) != 1)
            mt_fail(&st, "p=%d overlap: a complete exchange is not complete", n);
    }
    sampi_p2p_allreduce_release(&a);
    sampi_p2p_allreduce_release(&b);
    mt_close_case(&st, comm, 0, "overlap");
}

static void sequence_case(MPI_Comm comm, int n, int rank)
{
    long long bad = 0;
    for (int i = 0; i < 600; i++) {
        long long v[2] = {rank + i, -(rank + i)}, out[2];
        struct sampi_waiter w;
        waiter(&w);
        if (sampi_waiter_allreduce(&w, v, out, 2, MPI_LONG_LONG, MPI_MAX, comm) ||
            out[0] != n - 1 + i || out[1] != -i)
            bad++;
    }
    if (bad)
        mt_fail(&st, "p=%d sequence: %lld of 600 calls wrong", n, bad);
    mt_close_case(&st, comm, 0, "sequence");
}

int main(int argc, char **argv)
{
    int size = mt_start(&st, "p2p_coll", &argc, &argv, 0);
    sampi_config_load();
    for (int pass = 0; pass < 2; pass++)
        for (int n = 2; n <= size; n++) {
            if (pass == 1 && n == 2)
                sampi_p2p_set_direct_max(1);
            MPI_Comm comm;
            PMPI_Comm_split(MPI_COMM_WORLD, st.rank < n ? 0 : MPI_UNDEFINED, st.rank, &comm);
            if (comm == MPI_COMM_NULL)
                continue;
            int rank;
            PMPI_Comm_rank(comm, &rank);
            double t0 = MPI_Wtime();
            allreduce_cases(comm, n, rank);
            allgather_cases(comm, n, rank);
            overlap_case(comm, n, rank);
            sequence_case(comm, n, rank);
            if (getenv("P2P_COLL_VERBOSE") && rank == 0)
                fprintf(stderr, "p2p_coll: %s p=%d in %.2f s\n", pass ? "doubling" : "direct", n,
                        MPI_Wtime() - t0);
            PMPI_Comm_free(&comm);
        }
    long failed = mt_summary(&st, 0, "", "cases");
    MPI_Finalize();
    return mt_exit_code(failed);
}
