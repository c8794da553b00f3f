/*
 * auto_check.c - `auto` decides by measurement, run by auto.test.
 *
 *   auto_check learn      on MPI_COMM_WORLD, 2 MiB float sums:
 *       1. auto converges on some algorithm X (whatever this machine says:
 *          what it runs 10 calls in a row);
 *       2. sampi_debug_algo_delay makes X's calls DELAY_MS slower on every rank
 *          (written through MPI_T): within 120 calls auto must have moved
 *          to another algorithm Y (its last 10 calls all run Y: ten in a
 *          row of one arm mean the re-exploration is over, since an
 *          exploring cell alternates its arms);
 *       3. the delay moves to every other algorithm auto may run here: within
 *          400 calls auto must be back on X (its last 10 calls run X);
 *          that took a third exploration (sampi_comm_auto_explorations):
 *          step 2's re-exploration had ended before the others slowed, so
 *          the way back was a new one.  (Ten calls merely avoiding X were
 *          not enough: a re-exploration still running could take in the
 *          others' slow calls and settle on X with no third.)
 *       every call's result is exact, and every rank runs the same algorithm
 *       at every call.  Counted in calls, not seconds.
 *   auto_check uneven     as learn's first two steps, with native slowed on
 *       every rank from the start (SAMPI_DEBUG_ALGO_DELAY=native:DELAY_MS,
 *       which auto.test sets) so that auto converges on ring or rhd (X), and
 *       X then slowed on the last rank only: the other ranks leave X's
 *       calls at once, the last DELAY_MS later, while the other of ring and
 *       rhd is DELAY_MS / 10 slower on every rank.  A barrier (Open MPI's)
 *       after every call lets all ranks enter the next together, so that
 *       only the call's own end is uneven.  A call is done when its last
 *       rank is, so within 120 calls auto must stop running X (its last 10
 *       calls run something else).  Before tracked calls were stamped
 *       when every rank had left the algorithm, auto's cost of a call was
 *       the stay of its quickest rank, and it kept X.
 *   auto_check tuning PHASE   with SAMPI_TUNING_FILE set (auto.test passes
 *       it): 41 calls of 2 MiB and 41 of 64 KiB; prints, on rank 0, the
 *       algorithm the first call of each size ran ("auto_check: first BYTES
 *       ALGO") and how many explorations it began ("auto_check: explored
 *       BYTES N").  PHASE "fresh" expects the first call to explore;
 *       "seeded" expects none (the table came from the file), and auto.test
 *       checks that it ran the algorithm the file names.
 *   auto_check lane       8-byte sums on a duplicate of MPI_COMM_WORLD, each
 *       checked, the lane's count (sampi_comm_lane_calls) the same on every
 *       rank after each step:
 *       1. 6000 calls under auto: some take the lane, not all (auto still
 *          measures, and every rank leaves the lane at the same call); two
 *          sizes alternating with a call on another communicator: some of
 *          them too.  How many is printed, not judged: auto measures more
 *          often, and explores again, when a busy host makes the calls'
 *          costs jump (5900 of 6000 idle here, 1149 to 5898 with both cores
 *          loaded);
 *       2. a control variable written through MPI_T: the next call does not
 *          take the lane (how many of the 200 after it do is printed: it
 *          depends on what auto runs then, which a busy host changes);
 *       3. sampi_comm_set_algorithm(ring): the next call runs ring;
 *       4. native forced: of 1000 calls, all but the first take it; then a
 *          variable written: the next call does not, the 9 after it do.
 */
#include "mpitest.h"
#include "sampi.h"

static struct mt_state st;
static int rank, size;

#define COUNT (512 * 1024) /* floats: 2 MiB */

static int set_text_cvar(const char *name, const char *text)
{
    int idx, n, rc;
    MPI_T_cvar_handle h;
    if ((rc = MPI_T_cvar_get_index(name, &idx)) != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_T_cvar_handle_alloc(idx, NULL, &h, &n)) != MPI_SUCCESS)
        return rc;
    rc = MPI_T_cvar_write(h, text);
    MPI_T_cvar_handle_free(&h);
    return rc;
}

static unsigned long long read_pvar_ull(const char *name, int cls, MPI_Comm comm)
{
    int idx, n;
    unsigned long long v[64] = {0};
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    if (MPI_T_pvar_get_index(name, cls, &idx) != MPI_SUCCESS)
        return ~0ull;
    MPI_T_pvar_session_create(&s);
    if (MPI_T_pvar_handle_alloc(s, idx, &comm, &h, &n) == MPI_SUCCESS) {
        MPI_T_pvar_read(s, h, v);
        MPI_T_pvar_handle_free(s, &h);
    }
    MPI_T_pvar_session_free(&s);
    return v[0];
}

/* One sum of `count` floats; checks the result; returns the algorithm that
 * ran (agreed: a disagreement is a failure). */
static const char *call(int count, int k)
{
    float *buf = mt_malloc((size_t)count * sizeof(float));
    for (int i = 0; i < count; i++)
        buf[i] = (float)((rank + 1) * ((i + k) % 5 + 1));
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    float ranks = (float)size * (size + 1) / 2;
    if (rc != MPI_SUCCESS)
        mt_fail(&st, "call %d: MPI_Allreduce returned %d", k, rc);
    for (int i = 0; rc == MPI_SUCCESS && i < count; i++)
        if (buf[i] != ranks * (float)((i + k) % 5 + 1)) {
            mt_fail(&st, "call %d: element %d = %g", k, i, buf[i]);
            break;
        }
    free(buf);
    const char *ran = sampi_comm_last_algorithm(MPI_COMM_WORLD);
    int mine = ran[0] * 256 + ran[1], lo, hi;
    PMPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi)
        mt_fail(&st, "call %d: ranks ran different algorithms", k);
    return ran;
}

/* uneven: a barrier after every call */
static int realign;

/* Run up to `limit` calls; return how many it took until the last `streak`
 * calls all satisfied want(ran) (== want_algo, or != when `avoid`), or -1. */
static int until(int limit, int streak, const char *algo, int avoid, int *k)
{
    int run = 0;
    for (int i = 0; i < limit; i++) {
        const char *ran = call(COUNT, (*k)++);
        if (realign)
            PMPI_Barrier(MPI_COMM_WORLD);
        int ok = (strcmp(ran, algo) == 0) != avoid;
        run = ok ? run + 1 : 0;
        if (run == streak)
            return i + 1;
    }
    return -1;
}

/* Like until(), the streak's calls all running one algorithm, not `algo`;
 * that one is copied to `y`. */
static int until_another(int limit, int streak, const char *algo, char *y, size_t n, int *k)
{
    int run = 0;
    for (int i = 0; i < limit; i++) {
        const char *ran = call(COUNT, (*k)++);
        if (strcmp(ran, algo) == 0)
            run = 0;
        else
            run = run > 0 && strcmp(ran, y) == 0 ? run + 1 : 1;
        snprintf(y, n, "%s", ran);
        if (run == streak)
            return i + 1;
    }
    return -1;
}

/* X: what auto runs 10 calls in a row, within 200 calls (a re-check's or
 * an exploration's call may come between; the last call alone could be
 * one of them). */
static void converge(char *x, size_t n, int *k)
{
    snprintf(x, n, "none");
    for (int i = 0, streak = 0; i < 200 && streak < 10; i++) {
        const char *ran = call(COUNT, (*k)++);
        if (realign)
            PMPI_Barrier(MPI_COMM_WORLD);
        streak = strcmp(ran, x) == 0 ? streak + 1 : 1;
        snprintf(x, n, "%s", ran);
    }
}

/* Far above what a busy machine adds to a 2 MiB call (a descheduled rank
 * costs tens of ms with both cores loaded), so that which arm is slower
 * never depends on the load; the verdicts count calls. */
#define DELAY_MS 200

static void learn(void)
{
    int k = 0;
    char x[32];
    converge(x, sizeof(x), &k);
    if (strcmp(x, "native") != 0 && strcmp(x, "ring") != 0 && strcmp(x, "rhd") != 0)
        mt_fail(&st, "auto converged on '%s', not an exact algorithm of this size", x);

    char knob[96];
    snprintf(knob, sizeof(knob), "%s:%d", x, DELAY_MS);
    if (set_text_cvar("sampi_debug_algo_delay", knob) != MPI_SUCCESS)
        mt_fail(&st, "cannot write sampi_debug_algo_delay");
    char y[32] = "";
    int avoided = until_another(120, 10, x, y, sizeof(y), &k);
    if (avoided < 0)
        mt_fail(&st,
                "with %s %d ms slower, auto did not settle on another algorithm (10 calls "
                "in a row) within 120 calls",
                x, DELAY_MS);

    /* now everything else auto may run at this size is slower */
    const char *all[] = {"native", "ring", "rhd"};
    size_t at = 0;
    knob[0] = '\0';
    for (size_t i = 0; i < 3; i++)
        if (strcmp(all[i], x) != 0)
            at += (size_t)snprintf(knob + at, sizeof(knob) - at, "%s%s:%d", at ? "," : "", all[i],
                                   DELAY_MS);
    if (set_text_cvar("sampi_debug_algo_delay", knob) != MPI_SUCCESS)
        mt_fail(&st, "cannot write sampi_debug_algo_delay");
    int back = until(400, 10, x, 0, &k);
    if (back < 0)
        mt_fail(&st, "with the others %d ms slower, auto did not come back to %s in 400 calls",
                DELAY_MS, x);
    set_text_cvar("sampi_debug_algo_delay", "");
    if (rank == 0)
        printf("auto_check: converged on %s; on %s %d calls after it was slowed; back on it "
               "%d calls after the others were\n",
               x, y, avoided, back);
    unsigned long long explorations =
        read_pvar_ull("sampi_comm_auto_explorations", MPI_T_PVAR_CLASS_COUNTER, MPI_COMM_WORLD);
    if (explorations < 3 || explorations == ~0ull)
        mt_fail(&st, "sampi_comm_auto_explorations reads %llu, want 3 or more", explorations);
}

static void uneven(void)
{
    int k = 0;
    realign = 1;
    char x[32];
    converge(x, sizeof(x), &k);
    if (strcmp(x, "ring") != 0 && strcmp(x, "rhd") != 0)
        mt_fail(&st, "auto converged on '%s' with native %d ms slower, not on ring or rhd", x,
                DELAY_MS);
    /* the other arm Y costs DELAY_MS / 10 more on every rank, X DELAY_MS
     * more on the last rank alone (a LOCAL variable, written per rank):
     * judged by its quickest rank X would still look the cheaper */
    const char *y = strcmp(x, "ring") == 0 ? "rhd" : "ring";
    char knob[96];
    int n = snprintf(knob, sizeof(knob), "native:%d,%s:%d", DELAY_MS, y, DELAY_MS / 10);
    if (rank == size - 1)
        snprintf(knob + n, sizeof(knob) - (size_t)n, ",%s:%d", x, DELAY_MS);
    if (set_text_cvar("sampi_debug_algo_delay", knob) != MPI_SUCCESS)
        mt_fail(&st, "cannot write sampi_debug_algo_delay");
    int avoided = until(120, 10, x, 1, &k);
    if (avoided < 0)
        mt_fail(&st,
                "with %s %d ms slower on rank %d alone, auto still ran it among its last 10 "
                "of 120 calls",
                x, DELAY_MS, size - 1);
    else if (rank == 0)
        printf("auto_check: converged on %s; avoided it %d calls after rank %d's calls of it "
               "were slowed\n",
               x, avoided, size - 1);
}

static void tuning(const char *phase)
{
    static const int counts[] = {COUNT, 16 * 1024}; /* 2 MiB, 64 KiB */
    int k = 0;
    for (int c = 0; c < 2; c++) {
        unsigned long long before =
            read_pvar_ull("sampi_comm_auto_explorations", MPI_T_PVAR_CLASS_COUNTER, MPI_COMM_WORLD);
        char first[32];
        snprintf(first, sizeof(first), "%s", call(counts[c], k++));
        unsigned long long after =
            read_pvar_ull("sampi_comm_auto_explorations", MPI_T_PVAR_CLASS_COUNTER, MPI_COMM_WORLD);
        for (int i = 0; i < 40; i++)
            call(counts[c], k++);
        if (rank == 0) {
            printf("auto_check: explored %zu %llu\n", counts[c] * sizeof(float), after - before);
            printf("auto_check: first %zu %s\n", counts[c] * sizeof(float), first);
        }
        int seeded = strcmp(phase, "seeded") == 0;
        if (seeded && after != before)
            mt_fail(&st, "%zu bytes: the first call explored although the file had the size",
                    counts[c] * sizeof(float));
        if (!seeded && after == before)
            mt_fail(&st, "%zu bytes: the first call did not explore (phase %s)",
                    counts[c] * sizeof(float), phase);
    }
}

/* One checked sum of n ints (n <= 4) on comm. */
static void small_call(MPI_Comm comm, int k, int n)
{
    int buf[4] = {rank + k, 1, 2, 3};
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT, MPI_SUM, comm);
    if (rc != MPI_SUCCESS || buf[0] != size * (size - 1) / 2 + size * k || buf[1] != size ||
        (n > 2 && buf[2] != 2 * size))
        mt_fail(&st, "small call %d of %d ints: rc %d, got %d %d", k, n, rc, buf[0], buf[1]);
}

/* comm's lane count (sampi_comm_lane_calls, from a handle started when
 * the communicator was made), checked to be the same on every rank. */
static MPI_T_pvar_session lane_session;
static MPI_T_pvar_handle lane_handle;

static void lane_counter_start(MPI_Comm comm)
{
    int idx, n;
    if (MPI_T_pvar_get_index("sampi_comm_lane_calls", MPI_T_PVAR_CLASS_COUNTER, &idx) !=
            MPI_SUCCESS ||
        MPI_T_pvar_session_create(&lane_session) != MPI_SUCCESS ||
        MPI_T_pvar_handle_alloc(lane_session, idx, &comm, &lane_handle, &n) != MPI_SUCCESS ||
        MPI_T_pvar_start(lane_session, lane_handle) != MPI_SUCCESS)
        mt_fail(&st, "no handle on sampi_comm_lane_calls");
}

static unsigned long long lane_calls(const char *when)
{
    unsigned long long mine = ~0ull, lo, hi;
    MPI_T_pvar_read(lane_session, lane_handle, &mine);
    PMPI_Allreduce(&mine, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&mine, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi)
        mt_fail(&st, "%s: lane calls differ across ranks (%llu..%llu)", when, lo, hi);
    return mine;
}

static void lane(void)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    lane_counter_start(comm);
    int k = 0;
    for (int i = 0; i < 6000; i++)
        small_call(comm, k++, 2);
    unsigned long long n = lane_calls("auto");
    if (n == 0 || n >= 6000)
        mt_fail(&st, "auto: %llu of 6000 calls took the lane (want 1..5999)", n);
    if (rank == 0)
        printf("auto_check: %llu of 6000 calls took the lane\n", n);

    /* two sizes alternating on comm, and a call on another communicator
     * between them: each keeps its own lane */
    MPI_Comm other;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    for (int i = 0; i < 3000; i++) {
        small_call(comm, k, 2);
        small_call(comm, k, 4);
        small_call(other, k++, 2);
    }
    MPI_Comm_free(&other);
    unsigned long long two = lane_calls("two sizes") - n;
    if (two == 0)
        mt_fail(&st, "two sizes alternating: none of 6000 calls took a lane");
    if (rank == 0)
        printf("auto_check: two sizes alternating: %llu of 6000 calls took a lane\n", two);
    n += two;

    if (set_text_cvar("sampi_debug_algo_delay", "") != MPI_SUCCESS)
        mt_fail(&st, "writing sampi_debug_algo_delay failed");
    small_call(comm, k++, 2);
    unsigned long long m = lane_calls("after a write");
    if (m != n)
        mt_fail(&st, "the call after a variable was written took the lane");
    /* whether auto's later calls take the lane again depends on what it
     * runs then: with both cores loaded it may have moved to ring or rhd
     * (no lane) for a while, so it is printed here and judged below with
     * native forced */
    for (int i = 0; i < 200; i++)
        small_call(comm, k++, 2);
    unsigned long long again = lane_calls("after a write, 200 calls") - m;
    if (rank == 0)
        printf("auto_check: after a write, %llu of the next 200 calls took the lane\n", again);

    sampi_comm_set_algorithm(comm, "ring");
    m = lane_calls("before ring");
    small_call(comm, k++, 2);
    unsigned long long after_ring = lane_calls("ring"); /* collective: on every rank */
    if (strcmp(sampi_comm_last_algorithm(comm), "ring") != 0 || after_ring != m)
        mt_fail(&st, "set to ring, the call ran %s", sampi_comm_last_algorithm(comm));

    sampi_comm_set_algorithm(comm, "native");
    m = lane_calls("before native");
    for (int i = 0; i < 1000; i++)
        small_call(comm, k++, 2);
    if (lane_calls("native") - m != 999)
        mt_fail(&st, "native forced: %llu of 1000 calls took the lane (want 999)",
                lane_calls("native") - m);

    /* a write closes the lane: the next call takes the full path, and the
     * nine after it the lane again (native forced: no measuring, no
     * exploring, whatever the load) */
    if (set_text_cvar("sampi_debug_algo_delay", "") != MPI_SUCCESS)
        mt_fail(&st, "writing sampi_debug_algo_delay failed");
    m = lane_calls("native, before a write");
    small_call(comm, k++, 2);
    if (lane_calls("native, after a write") != m)
        mt_fail(&st, "native forced: the call after a variable was written took the lane");
    for (int i = 0; i < 9; i++)
        small_call(comm, k++, 2);
    if (lane_calls("native, 9 calls after a write") - m != 9)
        mt_fail(&st,
                "native forced: %llu of the 9 calls after the first one after a write took "
                "the lane (want 9)",
                lane_calls("native, 9 calls after a write") - m);
    MPI_T_pvar_handle_free(lane_session, &lane_handle);
    MPI_T_pvar_session_free(&lane_session);
    MPI_Comm_free(&comm);
}

int main(int argc, char **argv)
{
    size = mt_start(&st, "auto_check", &argc, &argv, 1);
    rank = st.rank;
    const char *mode = argc > 1 ? argv[1] : "learn";
    if (strcmp(mode, "learn") == 0)
        learn();
    else if (strcmp(mode, "uneven") == 0)
        uneven();
    else if (strcmp(mode, "lane") == 0)
        lane();
    else if (strcmp(mode, "tuning") == 0 && argc > 2)
        tuning(argv[2]);
    else
        mt_fail(&st, "usage: auto_check learn | uneven | lane | tuning fresh|seeded");
    char name[64];
    snprintf(name, sizeof(name), "auto_check %s np=%d", mode, size);
    int ok = mt_verdict(&st, name, !st.local_bad);
    MPI_T_finalize();
    MPI_Finalize();
    return ok ? 0 : 1;
}
