/*
 * optireduce_check.c - `optireduce` end to end, run by optireduce.test with
 * SAMPI_ALGORITHM=optireduce and the settings of each case in the environment.
 *
 *   optireduce_check exact            no fault injected, and the run's
 *       settings make loss impossible short of a stall of many seconds (the
 *       early timeout off, a fixed stage bound of tens of seconds): every
 *       rank's result is the exact sum (or average) within 1e-5 relative L2
 *       error, for counts below and above the shard, block and packet sizes,
 *       in place and not; nothing counted lost; MPI_DOUBLE and MPI_MAX calls
 *       (which optireduce does not take) are exact.
 *   optireduce_check bounded          the same calls under settings where a
 *       busy machine can make data late (a calibrated bound, the early
 *       timeout): optireduce's documented contract, not exactness.  Each
 *       call's error stays within the bound its reported loss allows (below),
 *       and a call that reports nothing lost is exact.
 *   optireduce_check loss P [same]    the injector drops datagrams with
 *       probability P: summed over ranks, the bytes optireduce reports lost
 *       are at least the payload bytes the injector dropped (data that a
 *       stalled sender delivered past the stage bound is lost too, and
 *       reported), the relative L2 error stays within the bound of what was
 *       reported; with `same`, every rank holds identical bits (consistency
 *       modes).
 *   optireduce_check late P           the injector holds P of the datagrams
 *       back for longer than the stage bound: stages end at the hard bound,
 *       the held datagrams count as lost, and when they finally arrive (in a
 *       later call) they are refused as stale; the error stays within the
 *       bound of what was reported.
 *
 * The error bound of a call: with q the fraction of the bytes the call moved
 * (2 (p-1) n 4 over all ranks and both stages) that the ranks reported lost,
 * the relative L2 error is at most 3 sqrt(p q).  A lost stage-2 packet of k
 * elements costs one rank sqrt(k/n) (the worst case: that rank's copy of the
 * sum is zero there), and p q >= k / 2n, so the bound holds with a factor
 * 2 to spare; a lost stage-1 packet costs less.  Nothing about the machine's
 * load enters: only what optireduce itself reported.
 *
 * The reference sum is computed in double from the same generator on every
 * rank, so no reduction under test is needed to check one.
 */
#include "comm.h"
#include "dgram_fault.h"
#include "mpitest.h"
#include "optireduce.h"

#include <math.h>

static float value(int rank, size_t i)
{
    uint64_t x = (uint64_t)rank * 0x9E3779B97F4A7C15ull + i * 0xD1B54A32D192ED03ull + 1;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return (float)((double)(x % 2000001) / 1000000.0 - 1.0);
}

/* Relative L2 error of got against the exact sum of every rank's values. */
static double rel_err(const float *got, size_t count, int size, double scale)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < count; i++) {
        double s = 0;
        for (int r = 0; r < size; r++)
            s += value(r, i);
        s *= scale;
        num += (got[i] - s) * (got[i] - s);
        den += s * s;
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static uint64_t counter(MPI_Comm comm, enum sampi_opti_counter k)
{
    struct sampi_comm *c = NULL;
    return sampi_comm_get(comm, 0, &c) == 0
               ? sampi_optireduce_counter(sampi_comm_algo_state(c, SAMPI_ALGO_OPTIREDUCE), k)
               : 0;
}

static uint64_t lost_bytes(void)
{
    return counter(MPI_COMM_WORLD, SAMPI_OPTI_C_LOST1) +
           counter(MPI_COMM_WORLD, SAMPI_OPTI_C_LOST2);
}

/* The bound on a call's relative L2 error given what every rank reported
 * lost in it (see the top of the file); `before` is this rank's lost_bytes()
 * before the call.  Collective.  *q_out: the fraction lost. */
static double loss_bound(uint64_t before, size_t n, int size, double *q_out)
{
    unsigned long long mine = lost_bytes() - before, all = 0;
    PMPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    double q = (double)all / (2.0 * (size - 1) * (double)n * sizeof(float));
    if (q_out)
        *q_out = q;
    return 3 * sqrt(size * q) + 1e-5;
}

/* exact: strict (loss impossible under the run's settings); bounded: the
 * approximate contract (loss possible on a busy machine, and reported). */
static void run_exact(struct mt_state *mt, int size, double scale, int bounded)
{
    static const size_t counts[] = {1, 3, 7, 255, 256, 257, 1000, 4099, 65539, 300007};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        for (int inplace = 0; inplace < 2; inplace++) {
            size_t n = counts[ci];
            float *in = mt_malloc(n * sizeof(float)), *out = mt_malloc(n * sizeof(float));
            for (size_t i = 0; i < n; i++)
                in[i] = out[i] = value(mt->rank, i);
            uint64_t before = lost_bytes();
            int rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, (int)n, MPI_FLOAT, MPI_SUM,
                                   MPI_COMM_WORLD);
            double e = rel_err(out, n, size, scale), q = 0;
            double bound = bounded ? loss_bound(before, n, size, &q) : 1e-5;
            if (rc != MPI_SUCCESS || !(e <= bound))
                mt_fail(mt,
                        "count %zu inplace %d: rc %d, relative L2 error %.3g above %.3g (%.3g%% "
                        "reported lost)",
                        n, inplace, rc, e, bound, 100 * q);
            mt_close_case(mt, MPI_COMM_WORLD, 0,
                          bounded ? "error within the reported loss" : "exact");
            free(in);
            free(out);
        }
    }
    uint64_t lost = lost_bytes();
    uint64_t calls = counter(MPI_COMM_WORLD, SAMPI_OPTI_C_CALLS);
    if ((lost && !bounded) || calls == 0)
        mt_fail(mt, "without faults: %llu bytes counted lost over %llu optireduce calls",
                (unsigned long long)lost, (unsigned long long)calls);
    if (bounded && mt->rank == 0 && lost)
        printf("optireduce_check: [rank 0] %llu bytes lost to lateness, reported\n",
               (unsigned long long)lost);
    mt_close_case(mt, MPI_COMM_WORLD, 0, bounded ? "optireduce ran" : "no loss counted");

    /* calls optireduce does not take run exactly elsewhere */
    size_t n = 1001;
    double *d = mt_malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        d[i] = mt->rank + (double)i;
    MPI_Allreduce(MPI_IN_PLACE, d, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; i++)
        if (d[i] != size * (size - 1) / 2.0 + (double)i * size) {
            mt_fail(mt, "MPI_DOUBLE sum wrong at %zu: %g", i, d[i]);
            break;
        }
    float *f = mt_malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        f[i] = value(mt->rank, i);
    MPI_Allreduce(MPI_IN_PLACE, f, (int)n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; i++) {
        float m = value(0, i);
        for (int r = 1; r < size; r++)
            m = fmaxf(m, value(r, i));
        if (f[i] != m) {
            mt_fail(mt, "MPI_MAX wrong at %zu", i);
            break;
        }
    }
    mt_close_case(mt, MPI_COMM_WORLD, 0, "fallbacks");
    free(d);
    free(f);
}

/* Iteration `it` of a lossy run: a fresh in-place float sum over
 * MPI_COMM_WORLD whose error must stay within what optireduce reported lost
 * (loss_bound).  Returns the relative L2 error. */
static double lossy_call(struct mt_state *mt, float *out, size_t n, int size, int it)
{
    for (size_t i = 0; i < n; i++)
        out[i] = value(mt->rank, i);
    uint64_t before = lost_bytes();
    int rc = MPI_Allreduce(MPI_IN_PLACE, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double e = rel_err(out, n, size, 1.0), q = 0;
    double bound = loss_bound(before, n, size, &q);
    if (rc != MPI_SUCCESS || !(e <= bound))
        mt_fail(mt, "iteration %d: rc %d, relative L2 error %.4g above %.4g (%.3g%% reported lost)",
                it, rc, e, bound, 100 * q);
    return e;
}

static void run_loss(struct mt_state *mt, int size, double p, int same)
{
    const size_t n = 200003;
    const int iters = 6;
    float *out = mt_malloc(n * sizeof(float));
    double worst = 0;
    for (int it = 0; it < iters; it++) {
        double e = lossy_call(mt, out, n, size, it);
        worst = e > worst ? e : worst;
        mt_close_case(mt, MPI_COMM_WORLD, same ? mt_hash(MT_HASH_SEED, out, n * 4) : 0,
                      same ? "identical under loss" : "error bound");
    }
    struct sampi_comm *c = NULL;
    struct sampi_fault_counts fc = {0};
    sampi_comm_get(MPI_COMM_WORLD, 0, &c);
    int have = c && sampi_optireduce_fault_counts(sampi_comm_algo_state(c, SAMPI_ALGO_OPTIREDUCE),
                                                  &fc) == 0;
    unsigned long long v[3] = {counter(MPI_COMM_WORLD, SAMPI_OPTI_C_LOST1) +
                                   counter(MPI_COMM_WORLD, SAMPI_OPTI_C_LOST2),
                               fc.dropped_bytes - 32 * fc.dropped, (unsigned long long)!have};
    printf("optireduce_check: [rank %d] lost %llu+%llu, dropped %llu, stale %llu, bad %llu, "
           "hard %llu+%llu, early %llu+%llu\n",
           mt->rank, (unsigned long long)counter(MPI_COMM_WORLD, SAMPI_OPTI_C_LOST1),
           (unsigned long long)counter(MPI_COMM_WORLD, SAMPI_OPTI_C_LOST2), v[1],
           (unsigned long long)counter(MPI_COMM_WORLD, SAMPI_OPTI_C_STALE_PKTS),
           (unsigned long long)counter(MPI_COMM_WORLD, SAMPI_OPTI_C_BAD_PKTS),
           (unsigned long long)counter(MPI_COMM_WORLD, SAMPI_OPTI_C_END1_HARD),
           (unsigned long long)counter(MPI_COMM_WORLD, SAMPI_OPTI_C_END2_HARD),
           (unsigned long long)counter(MPI_COMM_WORLD, SAMPI_OPTI_C_END1_EARLY),
           (unsigned long long)counter(MPI_COMM_WORLD, SAMPI_OPTI_C_END2_EARLY));
    unsigned long long tot[3];
    PMPI_Allreduce(v, tot, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (mt->rank == 0) {
        printf("optireduce_check: p=%g lost %llu bytes, injector dropped %llu payload bytes, "
               "worst relative L2 error %.4g\n",
               p, tot[0], tot[1], worst);
        if (tot[2])
            mt_fail(mt, "no fault injector on the datagram path");
        else if (tot[0] < tot[1] || tot[1] == 0)
            mt_fail(mt, "reported lost bytes %llu below the injected drops %llu (or none)", tot[0],
                    tot[1]);
    }
    mt_close_case(mt, MPI_COMM_WORLD, 0, "drop accounting");
    free(out);
}

static void run_late(struct mt_state *mt, int size, double p)
{
    const size_t n = 100003;
    float *out = mt_malloc(n * sizeof(float));
    for (int it = 0; it < 8; it++) {
        lossy_call(mt, out, n, size, it);
        mt_close_case(mt, MPI_COMM_WORLD, 0, "error bound under delay");
    }
    struct sampi_comm *c = NULL;
    struct sampi_fault_counts fc = {0};
    sampi_comm_get(MPI_COMM_WORLD, 0, &c);
    sampi_optireduce_fault_counts(sampi_comm_algo_state(c, SAMPI_ALGO_OPTIREDUCE), &fc);
    unsigned long long v[4] = {counter(MPI_COMM_WORLD, SAMPI_OPTI_C_END1_HARD) +
                                   counter(MPI_COMM_WORLD, SAMPI_OPTI_C_END2_HARD),
                               counter(MPI_COMM_WORLD, SAMPI_OPTI_C_STALE_PKTS),
                               counter(MPI_COMM_WORLD, SAMPI_OPTI_C_LOST1) +
                                   counter(MPI_COMM_WORLD, SAMPI_OPTI_C_LOST2),
                               fc.delayed};
    unsigned long long tot[4];
    PMPI_Allreduce(v, tot, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (mt->rank == 0) {
        printf("optireduce_check: late p=%g: %llu hard timeouts, %llu stale datagrams refused, "
               "%llu bytes lost, %llu datagrams delayed\n",
               p, tot[0], tot[1], tot[2], tot[3]);
        if (!tot[0] || !tot[1] || !tot[2] || !tot[3])
            mt_fail(mt, "expected hard timeouts, stale datagrams, losses and delays, all non-zero");
    }
    mt_close_case(mt, MPI_COMM_WORLD, 0, "delay accounting");
    free(out);
}

int main(int argc, char **argv)
{
    struct mt_state mt;
    int size;
    MPI_Init(&argc, &argv);
    mt_init(&mt, "optireduce_check");
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *avg = getenv("SAMPI_OPTIREDUCE_AVERAGE");
    double scale = avg && atoi(avg) ? 1.0 / size : 1.0;
    if (argc >= 2 && strcmp(argv[1], "exact") == 0)
        run_exact(&mt, size, scale, 0);
    else if (argc >= 2 && strcmp(argv[1], "bounded") == 0)
        run_exact(&mt, size, scale, 1);
    else if (argc >= 3 && strcmp(argv[1], "loss") == 0)
        run_loss(&mt, size, atof(argv[2]), argc >= 4 && strcmp(argv[3], "same") == 0);
    else if (argc >= 3 && strcmp(argv[1], "late") == 0)
        run_late(&mt, size, atof(argv[2]));
    else if (mt.rank == 0)
        mt_fail(&mt, "usage: optireduce_check exact | bounded | loss P [same] | late P");
    long cases, failed;
    mt_totals(&mt, &cases, &failed);
    if (mt.rank == 0)
        printf("optireduce_check: np=%d %s: %ld cases, %ld failed\n", size, argc > 1 ? argv[1] : "",
               cases, failed);
    MPI_Finalize();
    return mt_exit_code(failed);
}
