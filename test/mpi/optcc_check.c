/*
 * optcc_check.c - `optcc` with every rank as the degraded one.
 *
 * On a duplicate of MPI_COMM_WORLD (at least 3 ranks) with `optcc` forced,
 * for every degraded rank z and every slowdown l in {1, 1.5, 2, 3} (set
 * through the MPI_T control variable sampi_optcc_slowdown, the same on every
 * rank, so l < 2 runs with bubble filling and l >= 2 without), runs int SUM,
 * double SUM and int64 MIN over several counts (the smallest optcc accepts,
 * a prime, and counts large enough for k = 16 and 32 segments), in place or
 * not.  Every result is compared with PMPI_Allreduce on the same inputs
 * (integers exactly, doubles within a reassociation bound), must be
 * bit-identical on all ranks, and sampi_comm_last_algorithm must say
 * "optcc".
 *
 * Usage: optcc_check
 */
#include "mpitest.h"
#include "sampi.h"

#include <float.h>
#include <math.h>

enum kind { K_INT_SUM, K_DOUBLE_SUM, K_I64_MIN, K_COUNT };

static const char *const kind_names[K_COUNT] = {"int SUM", "double SUM", "int64 MIN"};
static const char *const slowdowns[] = {"1", "1.5", "2", "3"};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

static void fill(enum kind k, void *buf, size_t n, int rank, uint64_t salt)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = mix64(i * 0x9e3779b97f4a7c15u ^ ((uint64_t)rank << 40) ^ salt);
        if (k == K_INT_SUM)
            ((int *)buf)[i] = (int)(r % 2000001) - 1000000;
        else if (k == K_DOUBLE_SUM)
            ((double *)buf)[i] = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 1e3;
        else
            ((int64_t *)buf)[i] = (int64_t)r;
    }
}

static void check(struct mt_state *st, MPI_Comm comm, int size, enum kind k, size_t n, int inplace,
                  const char *what)
{
    static const MPI_Datatype types[K_COUNT] = {MPI_INT, MPI_DOUBLE, MPI_INT64_T};
    static const size_t ext[K_COUNT] = {sizeof(int), sizeof(double), sizeof(int64_t)};
    MPI_Op op = k == K_I64_MIN ? MPI_MIN : MPI_SUM;
    int rank;
    PMPI_Comm_rank(comm, &rank);
    char *in = mt_malloc(n * ext[k]), *got = mt_malloc(n * ext[k]), *ref = mt_malloc(n * ext[k]);
    fill(k, in, n, rank, n * 31 + (uint64_t)k);
    PMPI_Allreduce(in, ref, (int)n, types[k], op, comm);
    if (inplace)
        memcpy(got, in, n * ext[k]);
    int rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : in, got, (int)n, types[k], op, comm);
    if (rc != MPI_SUCCESS)
        mt_fail(st, "%s: MPI_Allreduce returned %d", what, rc);
    const char *ran = sampi_comm_last_algorithm(comm);
    if (ran == NULL || strcmp(ran, "optcc") != 0)
        mt_fail(st, "%s: ran '%s', expected 'optcc'", what, ran ? ran : "(null)");
    if (k == K_DOUBLE_SUM) {
        /* |x| <= 500 on every rank: any order of p terms is within this */
        double bound = 500.0 * size * size * DBL_EPSILON * 2;
        for (size_t i = 0; i < n; i++)
            if (!(fabs(((double *)got)[i] - ((double *)ref)[i]) <= bound)) {
                mt_fail(st, "%s: element %zu: got %.17g expected %.17g", what, i,
                        ((double *)got)[i], ((double *)ref)[i]);
                break;
            }
    } else if (memcmp(got, ref, n * ext[k]) != 0) {
        mt_fail(st, "%s: result differs from PMPI_Allreduce", what);
    }
    mt_close_case(st, comm, mt_hash(MT_HASH_SEED, got, n * ext[k]), what);
    free(in);
    free(got);
    free(ref);
}

int main(int argc, char **argv)
{
    struct mt_state st;
    MPI_Comm comm;
    int size, idx = -1, count = 0;
    MPI_T_cvar_handle h;
    int provided;
    MPI_Init(&argc, &argv);
    mt_init(&st, "optcc_check");
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_size(comm, &size);
    if (size < 3 || MPI_T_cvar_get_index("sampi_optcc_slowdown", &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS) {
        if (st.rank == 0)
            printf("optcc_check: needs 3 ranks or more and sampi_optcc_slowdown\n");
        MPI_Finalize();
        return 1;
    }
    sampi_comm_set_algorithm(comm, "optcc");
    /* k = 4 (smallest accepted, and a prime), then k = 16 and 32 for doubles */
    const size_t counts[] = {4 * (size_t)(size - 1), 1009, (size_t)(size - 1) * 1024 * 17 + 5,
                             (size_t)(size - 1) * 1024 * 33 + 3};
    /* Every degraded rank up to 5 ranks; above, the first, a middle and the
     * last one (the schedule's index arithmetic wraps at both ends): all 8 at
     * 8 ranks took over 300 s with both cores busy. */
    for (int z = 0; z < size; z++) {
        if (size > 5 && z != 0 && z != size / 2 && z != size - 1)
            continue;
        for (size_t li = 0; li < sizeof slowdowns / sizeof slowdowns[0]; li++) {
            char value[64];
            snprintf(value, sizeof value, "%d:%s", z, slowdowns[li]);
            if (MPI_T_cvar_write(h, value) != MPI_SUCCESS)
                mt_fail(&st, "writing sampi_optcc_slowdown=%s failed", value);
            for (int k = 0; k < K_COUNT; k++)
                for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                    int inplace = (int)((c + (size_t)k + (size_t)z) % 2);
                    char what[160];
                    snprintf(what, sizeof what, "np=%d slowdown=%s %s count=%zu%s", size, value,
                             kind_names[k], counts[c], inplace ? " in-place" : "");
                    check(&st, comm, size, (enum kind)k, counts[c], inplace, what);
                }
        }
    }
    long failed = mt_summary(&st, size, ", ", "cases");
    MPI_T_cvar_handle_free(&h);
    MPI_Comm_free(&comm);
    MPI_T_finalize();
    MPI_Finalize();
    return mt_exit_code(failed);
}
