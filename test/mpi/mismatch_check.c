/*
 * mismatch_check.c - ranks that pass different arguments to one
 * MPI_Allreduce under auto end with the same error class on every rank,
 * wherever auto sends each rank's call (Open MPI's allreduce for a small
 * one, SAMPI's data path or Open MPI for a large one), run by
 * mismatch.test with a limit (sampi_timeout_ms) or sampi_check_native.
 *
 * Each case runs on a fresh communicator under auto:
 *   first  the mismatched call is the communicator's first;
 *   after  three calls of 8 bytes came first;
 * with the branches left to auto, or set (`split`: rank 0 runs Open MPI's
 * allreduce and the others ring, after warm-up calls that all ran Open
 * MPI's, so that SAMPI's data path is not open yet when the mismatched
 * call sends the others to it: the case that hung before the check came
 * first);
 * and the mismatch is
 *   count  rank 0 passes BYTES of doubles, the others OTHER bytes;
 *   type   rank 0 passes MPI_FLOAT, the others MPI_DOUBLE, the same count
 *          (BYTES of doubles).
 * Every rank must return MPI_ERR_COUNT (count) or MPI_ERR_TYPE (type), and
 * the communicator's next call the revoked error (MPI_ERR_OTHER).
 *
 * Before them, 2000 converged small calls: none takes the lane (each is
 * checked first).
 *
 * Usage: mismatch_check        (the lane case, then every mismatch case)
 *        mismatch_check lane   (neither a limit nor the check set: the
 *                               converged small calls take the lane)
 *        mismatch_check late   (the last rank 3 s late to a checked call)
 */
#include "mpitest.h"
#include "sampi.h"

#include <unistd.h>

static struct mt_state st;
static int rank;

static int class_of(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

static const char *class_name(int cls)
{
    switch (cls) {
    case MPI_SUCCESS:
        return "MPI_SUCCESS";
    case MPI_ERR_COUNT:
        return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE:
        return "MPI_ERR_TYPE";
    case MPI_ERR_OP:
        return "MPI_ERR_OP";
    case MPI_ERR_OTHER:
        return "MPI_ERR_OTHER";
    default:
        return "another class";
    }
}

static MPI_Comm fresh_comm(void)
{
    MPI_Comm comm;
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    sampi_comm_set_algorithm(comm, "auto");
    return comm;
}

/* One allreduce of `count` elements of `type` (MPI_SUM); its class. */
static int call(MPI_Comm comm, int count, MPI_Datatype type)
{
    int size = 0;
    MPI_Type_size(type, &size);
    size_t bytes = (size_t)(count ? count : 1) * (size_t)size;
    char *in = calloc(1, bytes), *out = calloc(1, bytes);
    if (!in || !out)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int rc = MPI_Allreduce(in, out, count, type, MPI_SUM, comm);
    free(in);
    free(out);
    return class_of(rc);
}

static void expect(const char *what, int got, int want)
{
    if (got != want)
        mt_fail(&st, "%s: returned %s (%d), expected %s", what, class_name(got), got,
                class_name(want));
}

/* One case (see the header); its verdict agreed on every rank.  `split`:
 * the branches are set instead of left to auto: the warm-up calls run
 * native, then rank 0 stays native and the others run ring, which opens
 * SAMPI's data path while rank 0 checks (the count or type mismatch is
 * the first field the check compares, before the algorithm). */
static void one_case(int after, int split, int type_case, size_t bytes, size_t other)
{
    char what[200];
    snprintf(what, sizeof(what), "%s%s, %s, rank 0 %zu B, the others %zu B",
             after ? "after three native calls" : "first call",
             split ? ", rank 0 native and the others ring" : ", auto",
             type_case ? "MPI_FLOAT against MPI_DOUBLE" : "counts", bytes,
             type_case ? bytes : other);
    MPI_Comm comm = fresh_comm();
    if (split)
        sampi_comm_set_algorithm(comm, "native");
    for (int i = 0; after && i < 3; i++)
        expect("a warm-up call", call(comm, 1, MPI_DOUBLE), MPI_SUCCESS);
    if (split)
        sampi_comm_set_algorithm(comm, rank == 0 ? "native" : "ring");
    int count = (int)(bytes / sizeof(double));
    int cls;
    if (type_case)
        cls = call(comm, count, rank == 0 ? MPI_FLOAT : MPI_DOUBLE);
    else
        cls = call(comm, rank == 0 ? count : (int)(other / sizeof(double)), MPI_DOUBLE);
    expect(what, cls, type_case ? MPI_ERR_TYPE : MPI_ERR_COUNT);
    expect("the next call", call(comm, 1, MPI_DOUBLE), MPI_ERR_OTHER);
    MPI_Comm_free(&comm);
    mt_close_case(&st, MPI_COMM_WORLD, 0, what);
}

/* The process's lane count (pvar sampi_lane_calls) from a handle started
 * before the calls (a session's counter counts from its start). */
static MPI_T_pvar_session lane_session;
static MPI_T_pvar_handle lane_handle;

static void lane_counter_start(void)
{
    int idx, n;
    if (MPI_T_pvar_get_index("sampi_lane_calls", MPI_T_PVAR_CLASS_COUNTER, &idx) != MPI_SUCCESS ||
        MPI_T_pvar_session_create(&lane_session) != MPI_SUCCESS ||
        MPI_T_pvar_handle_alloc(lane_session, idx, NULL, &lane_handle, &n) != MPI_SUCCESS ||
        MPI_T_pvar_start(lane_session, lane_handle) != MPI_SUCCESS)
        mt_fail(&st, "no handle on sampi_lane_calls");
}

static unsigned long long lane_calls(void)
{
    unsigned long long v = 0;
    if (MPI_T_pvar_read(lane_session, lane_handle, &v) != MPI_SUCCESS)
        mt_fail(&st, "cannot read sampi_lane_calls");
    return v;
}

/* 2000 converged small calls: with `want_lane` some take the lane (neither
 * a limit nor the check of native calls is set), without it none does
 * (each is checked first).  How many is printed, not judged: auto measures
 * more often, and explores again, when a busy host makes the calls' costs
 * jump (with both cores loaded, 0 of 2000 once, where ring and rhd were not
 * slowed and auto ran them). */
static void lane_case(int want_lane)
{
    MPI_Comm comm = fresh_comm();
    lane_counter_start();
    unsigned long long before = lane_calls();
    for (int i = 0; i < 2000; i++)
        expect("a small call", call(comm, 1, MPI_DOUBLE), MPI_SUCCESS);
    unsigned long long n = lane_calls() - before;
    if (want_lane ? n == 0 : n != 0)
        mt_fail(&st, "%llu of 2000 converged small calls took the lane (want %s)", n,
                want_lane ? "some" : "none");
    if (rank == 0)
        printf("mismatch_check: %llu of 2000 converged small calls took the lane\n", n);
    MPI_Comm_free(&comm);
    mt_close_case(&st, MPI_COMM_WORLD, 0, "2000 converged small calls");
}

/* The last rank 3 s late to a checked native call: the others' stall
 * warning (mismatch.test sets it to 0.3 s) names it; every result exact. */
static void late_case(void)
{
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm = fresh_comm();
    expect("a warm-up call", call(comm, 1, MPI_DOUBLE), MPI_SUCCESS);
    if (rank == size - 1)
        sleep(3);
    double one = 1, sum = 0;
    expect("the late call", class_of(MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, comm)),
           MPI_SUCCESS);
    if (sum != size)
        mt_fail(&st, "the late call: %g, expected %d", sum, size);
    MPI_Comm_free(&comm);
    mt_close_case(&st, MPI_COMM_WORLD, 0, "a rank late to a checked call");
}

int main(int argc, char **argv)
{
    mt_start(&st, "mismatch_check", &argc, &argv, 1);
    rank = st.rank;
    if (argc > 1 && !strcmp(argv[1], "lane")) {
        lane_case(1);
    } else if (argc > 1 && !strcmp(argv[1], "late")) {
        late_case();
    } else {
        lane_case(0);
        static const size_t sizes[] = {8, 1024, 4 << 20};
        /* split only after warm-up calls: settings that differ at the
         * first call make the communicator Open MPI's (comm_info.test) */
        for (int split = 0; split < 2; split++)
            for (int after = split; after < 2; after++)
                for (int s = 0; s < 3; s++) {
                    /* counts: against another of the sizes (4 MiB against
                     * 8 B), so that most pairs straddle auto's boundaries */
                    one_case(after, split, 0, sizes[s], sizes[(s + 2) % 3]);
                    one_case(after, split, 1, sizes[s], 0);
                }
    }
    long cases, failed;
    mt_totals(&st, &cases, &failed);
    if (rank == 0)
        printf("mismatch_check: %ld cases, %ld failed\n", cases, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
