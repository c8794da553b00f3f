/*
 * composed_check.c - a regime change found inside a composed algorithm
 * reaches the caller's auto, counted in calls; run by composed.test on a
 * layout of nodes (sampi_hier_ranks_per_node) with auto on the caller's
 * communicator, hier made the cheapest arm (sampi_debug_algo_delay slows
 * the flat ones), and one rank's link made slow inside hier's stage
 * across the nodes (sampi_debug_slow_link).
 *
 * Each call is followed by a read of the caller's pvars:
 *   sampi_comm_parts_regime_changes      this rank's count of its parts'
 *                                        regime changes (as they happen);
 *   sampi_comm_auto_composition_changes  times the caller's auto acted on
 *                                        them (agreed);
 *   sampi_comm_auto_explorations         the caller's explorations.
 * D: the first call in which some rank saw a part change regime; A: the
 * first call whose decision acted on it.  Asserted: both happen within
 * CALLS calls, every rank has the same A, A - D is at most 8 (every measured
 * call agrees on the parts' changes, and a converged call of 1 MiB or more
 * is measured at least every 8th: autosel.c), and call A explores again.
 * Every result is exact.
 *
 * With `none` (a layout whose stages are too small to track: the stage
 * across 2 nodes has 2 ranks), asserted instead: no part changes regime and
 * auto never acts, counted over CALLS calls.
 *
 * Usage: composed_check CALLS BYTES [none]
 */
#include "mpitest.h"
#include "sampi.h"

static struct mt_state st;
static int rank, size;

struct counter {
    MPI_T_pvar_handle h;
    const char *name;
};

static MPI_T_pvar_session session;

static void counter_start(struct counter *k, const char *name, MPI_Comm comm)
{
    int idx, n;
    k->name = name;
    if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx) != MPI_SUCCESS ||
        MPI_T_pvar_handle_alloc(session, idx, &comm, &k->h, &n) != MPI_SUCCESS)
        mt_fail(&st, "no handle on %s", name);
    /* LIVE counters: read as they are, not started */
}

static unsigned long long counter_read(const struct counter *k)
{
    unsigned long long v = 0;
    if (MPI_T_pvar_read(session, k->h, &v) != MPI_SUCCESS)
        mt_fail(&st, "cannot read %s", k->name);
    return v;
}

int main(int argc, char **argv)
{
    size = mt_start(&st, "composed_check", &argc, &argv, 1);
    rank = st.rank;
    int calls = argc > 2 ? atoi(argv[1]) : 0;
    long bytes = argc > 2 ? atol(argv[2]) : 0;
    if (calls <= 0 || bytes < (long)sizeof(double)) {
        if (rank == 0)
            fprintf(stderr, "usage: composed_check CALLS BYTES\n");
        MPI_Finalize();
        return 2;
    }
    int none = argc > 3 && !strcmp(argv[3], "none");
    int count = (int)(bytes / (long)sizeof(double));
    double *buf = malloc((size_t)count * sizeof(double));
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    sampi_comm_set_algorithm(comm, "auto");
    MPI_T_pvar_session_create(&session);
    struct counter parts, acted, explored;
    counter_start(&parts, "sampi_comm_parts_regime_changes", comm);
    counter_start(&acted, "sampi_comm_auto_composition_changes", comm);
    counter_start(&explored, "sampi_comm_auto_explorations", comm);

    int seen = -1, act = -1, explored_at_act = 0;
    unsigned long long explorations = 0;
    for (int i = 1; i <= calls; i++) {
        for (int j = 0; j < count; j++)
            buf[j] = rank + 1 + (j % 5);
        if (MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS)
            mt_fail(&st, "call %d failed", i);
        for (int j = 0; j < count; j++)
            if (buf[j] != size * (size + 1) / 2 + (double)size * (j % 5)) {
                mt_fail(&st, "call %d: element %d is %g", i, j, buf[j]);
                break;
            }
        unsigned long long e = counter_read(&explored);
        if (seen < 0 && counter_read(&parts) > 0)
            seen = i;
        if (act < 0 && counter_read(&acted) > 0) {
            act = i; /* acted on when it decided call i: that call explores */
            explored_at_act = e > explorations;
        }
        explorations = e;
    }
    /* D over the ranks (a rank outside the stage that changed sees nothing) */
    int in[2] = {seen < 0 ? calls + 1 : seen, act < 0 ? calls + 1 : act}, lo[2], hi[2];
    PMPI_Allreduce(in, lo, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(in, hi, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int d = lo[0], a = lo[1];
    if (none) {
        if (d <= calls || a <= calls)
            mt_fail(&st,
                    "a part changed regime in call %d, auto acted in call %d: expected neither", d,
                    a);
        if (rank == 0)
            printf("composed_check: np=%d: no part changed regime in %d calls, auto never acted\n",
                   size, calls);
    } else if (d > calls)
        mt_fail(&st, "no part changed regime within %d calls", calls);
    else if (a > calls)
        mt_fail(&st, "a part changed regime at call %d; auto did not act within %d calls", d,
                calls);
    else if (lo[1] != hi[1])
        mt_fail(&st, "auto acted at calls %d..%d on different ranks", lo[1], hi[1]);
    else if (a - d > 8)
        mt_fail(&st, "a part changed regime at call %d, auto acted at call %d: more than 8 calls",
                d, a);
    else if (!explored_at_act)
        mt_fail(&st, "auto acted at call %d, but that call did not explore", a);
    if (rank == 0 && !none)
        printf("composed_check: np=%d: a part changed regime in call %d, the caller's auto "
               "measured again from call %d (%d later)\n",
               size, d, a, a - d);
    mt_close_case(&st, MPI_COMM_WORLD, 0, "a part's regime change reaches the caller's auto");
    MPI_T_pvar_handle_free(session, &parts.h);
    MPI_T_pvar_handle_free(session, &acted.h);
    MPI_T_pvar_handle_free(session, &explored.h);
    MPI_T_pvar_session_free(&session);
    MPI_Comm_free(&comm);
    free(buf);
    long cases, failed;
    mt_totals(&st, &cases, &failed);
    if (rank == 0)
        printf("composed_check: np=%d, %ld cases, %ld failed\n", size, cases, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
