/*
 * comm_info_check.c - choosing SAMPI's algorithm and data path per
 * communicator with MPI info hints (pmpi_wrap/comm_info.c), run by
 * comm_info.test with SAMPI_OPTIREDUCE_NETDEV=ofi-udp and nothing forced.
 *
 * Each check is one PASS/FAIL line agreed by all ranks:
 *   - MPI_Comm_set_info / MPI_Comm_dup_with_info with sampi_algorithm=ring
 *     make that communicator run ring, exactly, while MPI_COMM_WORLD keeps its
 *     default;
 *   - sampi_algorithm=optireduce on a float SUM of more than 1 MiB runs
 *     optireduce within float tolerance;
 *   - an unknown value leaves the choice as it was (comm_info.test checks the
 *     one warning), "default" clears it;
 *   - sampi_netdev chooses the data path before the first call, and is
 *     ignored (with a warning) afterwards;
 *   - MPI_INFO_NULL, empty info and foreign keys change nothing;
 *   - intercommunicators ignore the keys;
 *   - values that differ between ranks, before or after the first call, fall
 *     back to PMPI_Allreduce with an exact result instead of hanging, and
 *     agreeing values afterwards bring the algorithm back.
 */
#include "mpitest.h"
#include "sampi.h"

#include <math.h>

static int rank, size;

#define N 1000

/* A new info with key=value (key NULL: empty). */
static MPI_Info info_with(const char *key, const char *value)
{
    MPI_Info info;
    MPI_Info_create(&info);
    if (key)
        MPI_Info_set(info, key, value);
    return info;
}

static void set_hint(MPI_Comm comm, const char *key, const char *value)
{
    MPI_Info info = info_with(key, value);
    MPI_Comm_set_info(comm, info);
    MPI_Info_free(&info);
}

static MPI_Comm dup_with(const char *key, const char *value)
{
    MPI_Comm comm;
    MPI_Info info = info_with(key, value);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
    MPI_Info_free(&info);
    return comm;
}

/* The communicator's own algorithm setting, as MPI_T's communicator-bound
 * sampi_comm_algorithm reads it: -1 when it follows sampi_algorithm. */
static int override_of(MPI_Comm comm)
{
    int idx, n, v = -2;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index("sampi_comm_algorithm", &idx) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(idx, &comm, &h, &n) == MPI_SUCCESS) {
        MPI_T_cvar_read(h, &v);
        MPI_T_cvar_handle_free(&h);
    }
    return v;
}

/* `auto` measures which algorithm runs N ints (native or rhd here), so a call
 * left to it is recognised by its setting, not by what it ran. */
#define AUTO "auto"

/* An int SUM of N elements on an intracommunicator: exact, and run by
 * `expect` (NULL: any; AUTO: no per-communicator choice in force, and one
 * of auto's arms ran it).  Returns 1 when both hold on this rank. */
static int int_case(struct mt_state *mt, MPI_Comm comm, const char *expect, const char *what)
{
    int in[N], out[N], r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    for (int i = 0; i < N; i++)
        in[i] = r * 7 + i;
    int rc = MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, comm);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += out[i] != n * i + 7 * n * (n - 1) / 2;
    const char *ran = sampi_comm_last_algorithm(comm);
    int as_expected = !expect || strcmp(ran, expect) == 0;
    if (expect && strcmp(expect, AUTO) == 0)
        as_expected =
            override_of(comm) == -1 && (strcmp(ran, "native") == 0 || strcmp(ran, "rhd") == 0);
    int ok = rc == MPI_SUCCESS && !bad && as_expected;
    if (!ok)
        mt_fail(mt, "%s: rc %d, %d wrong elements, ran %s (expected %s)", what, rc, bad, ran,
                expect ? expect : "any");
    return ok;
}

static float value(int r, size_t i)
{
    return (float)((double)((i * 2654435761u + (size_t)r * 40503u) % 20001) / 10000.0 - 1.0);
}

static int optireduce_case(struct mt_state *mt)
{
    const size_t n = 300000; /* 1.2 MB: above sampi_optireduce_min_bytes (1 MiB) */
    MPI_Comm comm = dup_with("sampi_algorithm", "optireduce");
    float *in = mt_malloc(n * sizeof(float)), *out = mt_malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        in[i] = value(rank, i);
    int rc = MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, comm);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (int r = 0; r < size; r++)
            s += value(r, i);
        num += (out[i] - s) * (out[i] - s);
        den += s * s;
    }
    double err = sqrt(num / (den > 0 ? den : 1));
    const char *ran = sampi_comm_last_algorithm(comm);
    int ok = rc == MPI_SUCCESS && err <= 1e-5 && strcmp(ran, "optireduce") == 0;
    if (!ok)
        mt_fail(mt, "optireduce: rc %d, relative L2 error %.3g, ran %s", rc, err, ran);
    free(in);
    free(out);
    MPI_Comm_free(&comm);
    return ok;
}

static int netdev_case(struct mt_state *mt)
{
    MPI_Info info = info_with("sampi_algorithm", "ring");
    MPI_Info_set(info, "sampi_netdev", "ofi");
    MPI_Comm comm;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
    MPI_Info_free(&info);
    int ok = int_case(mt, comm, "ring", "netdev=ofi");
    ok &= strcmp(sampi_comm_netdev(comm), "ofi") == 0;
    /* too late: the path is open; then a name SAMPI does not know */
    set_hint(comm, "sampi_netdev", "mpi");
    set_hint(comm, "sampi_netdev", "bogus-nd");
    ok &= int_case(mt, comm, "ring", "netdev after use");
    if (strcmp(sampi_comm_netdev(comm), "ofi") != 0) {
        mt_fail(mt, "netdev is %s, expected ofi", sampi_comm_netdev(comm));
        ok = 0;
    }
    MPI_Comm_free(&comm);
    return ok;
}

static int null_info_case(struct mt_state *mt)
{
    MPI_Comm comm;
    int ok = MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &comm) == MPI_SUCCESS;
    ok &= int_case(mt, comm, AUTO, "dup_with_info(MPI_INFO_NULL)");
    set_hint(comm, NULL, NULL);
    ok &= int_case(mt, comm, AUTO, "empty info");
    set_hint(comm, "no_locks", "true");
    ok &= int_case(mt, comm, AUTO, "foreign key");
    /* Open MPI 4.1 refuses MPI_INFO_NULL here, through MPI_COMM_WORLD's error
     * handler; whatever it answers, the call must come back and change
     * nothing */
    MPI_Errhandler world_eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_info(comm, MPI_INFO_NULL);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_eh);
    MPI_Errhandler_free(&world_eh);
    ok &= int_case(mt, comm, AUTO, "set_info(MPI_INFO_NULL)");
    MPI_Comm_free(&comm);
    return ok;
}

static int inter_case(struct mt_state *mt)
{
    MPI_Comm half, inter, inter2;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 17, &inter);
    set_hint(inter, "sampi_algorithm", "bogus-inter"); /* no warning: ignored */
    set_hint(inter, "sampi_algorithm", "ring");
    MPI_Info info = info_with("sampi_algorithm", "ring");
    int ok = MPI_Comm_dup_with_info(inter, info, &inter2) == MPI_SUCCESS;
    MPI_Info_free(&info);
    /* an intercommunicator allreduce gives each group the other group's sum */
    int in = rank + 1, out = 0, expect = 0;
    for (int r = 0; r < size; r++)
        if (r % 2 != rank % 2)
            expect += r + 1;
    ok &= MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, inter) == MPI_SUCCESS && out == expect;
    out = 0;
    ok &= MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, inter2) == MPI_SUCCESS && out == expect;
    /* SAMPI keeps no state on them */
    ok &= strcmp(sampi_comm_last_algorithm(inter), "none") == 0 &&
          strcmp(sampi_comm_last_algorithm(inter2), "none") == 0;
    if (!ok)
        mt_fail(mt, "intercommunicator: got %d, expected %d, algorithms %s/%s", out, expect,
                sampi_comm_last_algorithm(inter), sampi_comm_last_algorithm(inter2));
    MPI_Comm_free(&inter2);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    return ok;
}

/* Ranks disagree: rank 0 asks for `v0`, the others for `v1`. */
static void set_split(MPI_Comm comm, const char *v0, const char *v1)
{
    set_hint(comm, "sampi_algorithm", rank == 0 ? v0 : v1);
}

int main(int argc, char **argv)
{
    struct mt_state mt;
    MPI_Init(&argc, &argv);
    mt_init(&mt, "comm_info_check");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    int ok = int_case(&mt, MPI_COMM_WORLD, AUTO, "world");
    mt_verdict(&mt, "MPI_COMM_WORLD follows auto", ok);

    MPI_Comm a;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    set_hint(a, "sampi_algorithm", "ring");
    ok = int_case(&mt, a, "ring", "set_info ring");
    ok &= int_case(&mt, MPI_COMM_WORLD, AUTO, "world after set_info");
    mt_verdict(&mt, "MPI_Comm_set_info sampi_algorithm=ring", ok);

    MPI_Comm b = dup_with("sampi_algorithm", "ring");
    ok = int_case(&mt, b, "ring", "dup_with_info ring");
    ok &= int_case(&mt, MPI_COMM_WORLD, AUTO, "world after dup_with_info");
    mt_verdict(&mt, "MPI_Comm_dup_with_info sampi_algorithm=ring", ok);
    MPI_Comm_free(&b);

    mt_verdict(&mt, "sampi_algorithm=optireduce, float SUM of 1.2 MB", optireduce_case(&mt));

    set_hint(a, "sampi_algorithm", "bogus");
    mt_verdict(&mt, "unknown value keeps the choice", int_case(&mt, a, "ring", "bogus"));

    set_hint(a, "sampi_algorithm", "default");
    ok = int_case(&mt, a, AUTO, "default");
    set_hint(a, "sampi_algorithm", "RHD"); /* spelled as SAMPI_ALGORITHM accepts it */
    ok &= int_case(&mt, a, "rhd", "RHD");
    /* Open MPI's MPI_Info_set refuses an empty value (MPI_ERR_INFO_VALUE), so
     * "" cannot reach MPI_Comm_set_info through it; "Default" can */
    set_hint(a, "sampi_algorithm", "Default");
    ok &= int_case(&mt, a, AUTO, "Default");
    mt_verdict(&mt, "\"default\" clears the choice", ok);

    mt_verdict(&mt, "sampi_netdev before and after first use", netdev_case(&mt));
    mt_verdict(&mt, "MPI_INFO_NULL, empty info, foreign keys", null_info_case(&mt));
    mt_verdict(&mt, "intercommunicators ignore the keys", inter_case(&mt));

    /* Mismatch before the first call: the agreement falls back. */
    MPI_Comm m;
    MPI_Comm_dup(MPI_COMM_WORLD, &m);
    set_split(m, "ring", "rhd");
    ok = int_case(&mt, m, "native", "mismatch before first call");
    MPI_Comm_free(&m);
    /* The same when one rank's value is one SAMPI does not know. */
    MPI_Comm_dup(MPI_COMM_WORLD, &m);
    set_split(m, "nonesuch", "ring");
    ok &= int_case(&mt, m, "native", "mismatch with an unknown value");
    MPI_Comm_free(&m);
    mt_verdict(&mt, "mismatched values before the first call fall back", ok);

    /* Mismatch after the communicator agreed once, then agreement again. */
    set_hint(a, "sampi_algorithm", "ring");
    ok = int_case(&mt, a, "ring", "before mismatch");
    set_split(a, "ring", "rhd");
    ok &= int_case(&mt, a, "native", "mismatch after first call");
    set_hint(a, "sampi_algorithm", "rhd");
    ok &= int_case(&mt, a, "rhd", "agreed again");
    mt_verdict(&mt, "mismatched values after the first call fall back, then recover", ok);
    MPI_Comm_free(&a);

    long failed = mt_summary(&mt, size, ", ", "cases");
    MPI_T_finalize();
    MPI_Finalize();
    return mt_exit_code(failed);
}
