/*
 * stragglar_arrivals.c - `stragglar` under every arrival order.
 *
 * StragglAR assumes the rank SAMPI_STRAGGLAR_RANK arrives last; its result
 * must not depend on whether that holds.  With `stragglar` forced on a
 * duplicate of MPI_COMM_WORLD (at least 3 ranks) this runs:
 *   - fixed patterns: the straggler late, the straggler early (everyone else
 *     late), nobody late, another rank late, two other ranks late; each over
 *     int SUM, double SUM, double MAX and int64 MIN, several counts (n-1, a
 *     prime, one large enough for many segments) and in-place or not;
 *   - a loop of --iters calls (default 1000) with random 0-2 ms delays per
 *     rank and random counts, drawn from a seed every rank shares so that all
 *     agree on who sleeps, checking every call.
 * Every result is compared with PMPI_Allreduce on the same inputs (integers
 * exactly, doubles within a reassociation bound), must be bit-identical on all
 * ranks, and sampi_comm_last_algorithm must say "stragglar".
 *
 * Usage: stragglar_arrivals [--iters N]
 */
#include "mpitest.h"
#include "sampi.h"

#include <float.h>
#include <math.h>
#include <time.h>

enum kind { K_INT_SUM, K_DOUBLE_SUM, K_DOUBLE_MAX, K_I64_MIN, K_COUNT };

static const char *const kind_names[K_COUNT] = {"int SUM", "double SUM", "double MAX", "int64 MIN"};

struct run {
    struct mt_state st;
    MPI_Comm comm;
    int rank, size, straggler;
    size_t cap; /* elements the buffers hold */
    void *send, *recv, *ref;
    double *absin, *abssum;
};

static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000.0) * 1e6)};
    nanosleep(&ts, NULL);
}

static MPI_Datatype dtype_of(enum kind k)
{
    return k == K_INT_SUM ? MPI_INT : k == K_I64_MIN ? MPI_INT64_T : MPI_DOUBLE;
}

static MPI_Op op_of(enum kind k)
{
    return k == K_DOUBLE_MAX ? MPI_MAX : k == K_I64_MIN ? MPI_MIN : MPI_SUM;
}

static size_t size_of(enum kind k)
{
    return k == K_INT_SUM ? sizeof(int) : 8;
}

/* Mixed signs and magnitudes, so a double SUM depends on the order. */
static void fill(struct run *R, enum kind k, size_t count, uint64_t seed)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix64(seed ^ (uint64_t)i << 20 ^ (uint64_t)R->rank);
        switch (k) {
        case K_INT_SUM:
            ((int *)R->send)[i] = (int)(h % 2000001) - 1000000;
            break;
        case K_I64_MIN:
            ((int64_t *)R->send)[i] = (int64_t)h;
            break;
        default: {
            double v = ((double)(h % 1000003) - 500000.0) * ldexp(1.0, (int)(h >> 40) % 40 - 20);
            ((double *)R->send)[i] = v;
            R->absin[i] = fabs(v);
        }
        }
    }
}

/* One call of `stragglar` with this rank sleeping `delay_ms` first, checked
 * against PMPI_Allreduce. */
static void one_call(struct run *R, enum kind k, size_t count, int inplace, double delay_ms,
                     uint64_t seed, const char *what)
{
    size_t bytes = count * size_of(k);
    fill(R, k, count, seed);
    PMPI_Allreduce(R->send, R->ref, (int)count, dtype_of(k), op_of(k), R->comm);
    if (k == K_DOUBLE_SUM)
        PMPI_Allreduce(R->absin, R->abssum, (int)count, MPI_DOUBLE, MPI_SUM, R->comm);
    if (inplace)
        memcpy(R->recv, R->send, bytes);

    sleep_ms(delay_ms);
    int rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : R->send, R->recv, (int)count, dtype_of(k),
                           op_of(k), R->comm);
    if (rc != MPI_SUCCESS)
        mt_fail(&R->st, "%s: MPI_Allreduce returned %d", what, rc);
    const char *ran = sampi_comm_last_algorithm(R->comm);
    if (ran == NULL || strcmp(ran, "stragglar") != 0)
        mt_fail(&R->st, "%s: ran '%s', expected 'stragglar'", what, ran ? ran : "(null)");

    if (k != K_DOUBLE_SUM) {
        if (memcmp(R->recv, R->ref, bytes) != 0)
            mt_fail(&R->st, "%s: result differs from PMPI_Allreduce", what);
    } else {
        const double *got = R->recv, *ref = R->ref;
        /* any order of n additions is within (n-1) eps sum|x| of the exact sum */
        for (size_t i = 0; i < count; i++) {
            double bound = 2.0 * R->size * DBL_EPSILON * R->abssum[i];
            if (!(fabs(got[i] - ref[i]) <= bound)) {
                mt_fail(&R->st, "%s: element %zu: got %.17g expected %.17g (bound %g)", what, i,
                        got[i], ref[i], bound);
                break;
            }
        }
    }
    mt_close_case(&R->st, R->comm, mt_hash(MT_HASH_SEED, R->recv, bytes), what);
}

/* The fixed arrival patterns: ms of delay for `rank` in pattern `p`. */
enum { P_STRAGGLER_LATE, P_STRAGGLER_EARLY, P_NOBODY, P_OTHER_LATE, P_TWO_LATE, P_COUNT };
static const char *const pattern_names[P_COUNT] = {
    "straggler late", "straggler early", "nobody late", "another rank late", "two ranks late"};

static double pattern_delay(const struct run *R, int p, int rank)
{
    int s = R->straggler, other = (s + 1) % R->size, other2 = (s + 2) % R->size;
    switch (p) {
    case P_STRAGGLER_LATE:
        return rank == s ? 20 : 0;
    case P_STRAGGLER_EARLY:
        return rank == s ? 0 : 10;
    case P_OTHER_LATE:
        return rank == other ? 15 : 0;
    case P_TWO_LATE:
        return rank == other ? 10 : rank == other2 ? 20 : 0;
    default:
        return 0;
    }
}

static void run_patterns(struct run *R)
{
    size_t counts[] = {(size_t)R->size - 1, 1009, 200003};
    for (int p = 0; p < P_COUNT; p++)
        for (int k = 0; k < K_COUNT; k++)
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                int inplace = (int)((p + k + c) % 2);
                char what[256];
                snprintf(what, sizeof what,
                         "np=%d straggler=%d pattern='%s' %s count=%zu inplace=%d", R->size,
                         R->straggler, pattern_names[p], kind_names[k], counts[c], inplace);
                one_call(R, (enum kind)k, counts[c], inplace, pattern_delay(R, p, R->rank),
                         (uint64_t)(p * 131 + k * 17) + c, what);
            }
}

/* Random arrivals: per call and rank a delay of 0 (half the time) or up to
 * 2 ms, and a count from n-1 to a few thousand, from a shared seed. */
static void run_random(struct run *R, long iters)
{
    for (long it = 0; it < iters; it++) {
        uint64_t h = mix64(UINT64_C(0x5a3d1) ^ (uint64_t)it);
        uint64_t d = mix64(h ^ (uint64_t)R->rank << 32);
        double delay = d % 2 ? (double)((d >> 8) % 2001) / 1000.0 : 0.0;
        size_t count = (size_t)R->size - 1 + (size_t)(h % 4000);
        enum kind k = (enum kind)((h >> 20) % K_COUNT);
        int inplace = (int)((h >> 24) % 2);
        char what[256];
        snprintf(what, sizeof what, "np=%d straggler=%d random call %ld %s count=%zu inplace=%d",
                 R->size, R->straggler, it, kind_names[k], count, inplace);
        one_call(R, k, count, inplace, delay, h, what);
    }
}

int main(int argc, char **argv)
{
    struct run R = {0};
    MPI_Init(&argc, &argv);
    mt_init(&R.st, "stragglar_arrivals");
    long iters = atol(mt_option(argc, argv, "--iters", "1000"));
    PMPI_Comm_dup(MPI_COMM_WORLD, &R.comm);
    PMPI_Comm_set_errhandler(R.comm, MPI_ERRORS_RETURN);
    PMPI_Comm_rank(R.comm, &R.rank);
    PMPI_Comm_size(R.comm, &R.size);
    const char *env = getenv("SAMPI_STRAGGLAR_RANK");
    R.straggler = env ? atoi(env) : -1;
    if (R.size < 3 || R.straggler < 0 || R.straggler >= R.size) {
        if (R.rank == 0)
            printf("stragglar_arrivals: needs np >= 3 and SAMPI_STRAGGLAR_RANK in [0, np)\n");
        MPI_Finalize();
        return 1;
    }
    int rc = sampi_comm_set_algorithm(R.comm, "stragglar");
    if (rc != MPI_SUCCESS)
        mt_fail(&R.st, "sampi_comm_set_algorithm(stragglar) returned %d", rc);

    R.cap = 200003;
    R.send = mt_malloc(R.cap * 8);
    R.recv = mt_malloc(R.cap * 8);
    R.ref = mt_malloc(R.cap * 8);
    R.absin = mt_malloc(R.cap * sizeof(double));
    R.abssum = mt_malloc(R.cap * sizeof(double));

    double t0 = MPI_Wtime();
    run_patterns(&R);
    double t1 = MPI_Wtime();
    run_random(&R, iters);
    double t2 = MPI_Wtime();

    long cases, failed;
    mt_totals(&R.st, &cases, &failed);
    if (R.rank == 0)
        printf("stragglar_arrivals: np=%d straggler=%d iters=%ld: %ld cases, %ld failed "
               "(patterns %.1f s, random %.1f s)\n",
               R.size, R.straggler, iters, cases, failed, t1 - t0, t2 - t1);
    free(R.send);
    free(R.recv);
    free(R.ref);
    free(R.absin);
    free(R.abssum);
    PMPI_Comm_free(&R.comm);
    MPI_Finalize();
    return mt_exit_code(failed);
}
