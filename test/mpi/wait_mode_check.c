/*
 * wait_mode_check.c - how the ranks wait, read through MPI_T.
 *
 *   wait_mode_check --expect MODE [--sleeps zero|some] [--late R --delay-ms D
 *                   --calls N] [--algos LIST]
 *
 * 1. The pvar sampi_wait_mode equals MODE (poll, yield, block) on every rank.
 * 2. With --late: for each algorithm of LIST (default ring), on a
 *    communicator of its own (sampi_comm_set_algorithm), N calls of 64 KiB
 *    in which rank R sleeps D ms first; every result is checked on every
 *    rank.  The counter sampi_wait_sleeps, started before the calls, must
 *    then be 0 on every rank (zero) or above 0 on some rank (some): waiting
 *    D ms for rank R is where a sleeping wait shows.
 * 3. A write of sampi_busy_poll through MPI_T changes the pvar at once, and
 *    writing the setting back restores MODE.
 * Exit status: 0 when every check passed on every rank (agreed), 1 otherwise.
 */
#include "mpitest.h"
#include "sampi.h"

#include <time.h>

static struct mt_state st;

static const char *const modes[] = {"auto", "poll", "yield", "block", NULL};

static int mode_index(const char *name)
{
    for (int i = 0; modes[i]; i++)
        if (strcmp(modes[i], name) == 0)
            return i;
    return -1;
}

static int read_wait_mode(void)
{
    int idx, n, value = -2;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    if (MPI_T_pvar_get_index("sampi_wait_mode", MPI_T_PVAR_CLASS_GENERIC, &idx) != MPI_SUCCESS)
        return -3;
    MPI_T_pvar_session_create(&s);
    if (MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &n) == MPI_SUCCESS) {
        MPI_T_pvar_read(s, h, &value);
        MPI_T_pvar_handle_free(s, &h);
    }
    MPI_T_pvar_session_free(&s);
    return value;
}

/* Write (or, with `read`, read) sampi_busy_poll: 0, or -1 on an error. */
static int busy_poll(int *value, int read)
{
    int idx, n;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index("sampi_busy_poll", &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &n) != MPI_SUCCESS)
        return -1;
    int rc = read ? MPI_T_cvar_read(h, value) : MPI_T_cvar_write(h, value);
    MPI_T_cvar_handle_free(&h);
    return rc == MPI_SUCCESS ? 0 : -1;
}

/* The sleeps counter, from a handle started now. */
struct counter {
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int ok;
};

static void counter_start(struct counter *c)
{
    int idx, n;
    c->ok =
        MPI_T_pvar_get_index("sampi_wait_sleeps", MPI_T_PVAR_CLASS_COUNTER, &idx) == MPI_SUCCESS &&
        MPI_T_pvar_session_create(&c->s) == MPI_SUCCESS &&
        MPI_T_pvar_handle_alloc(c->s, idx, NULL, &c->h, &n) == MPI_SUCCESS &&
        MPI_T_pvar_start(c->s, c->h) == MPI_SUCCESS;
}

static unsigned long long counter_read(struct counter *c)
{
    unsigned long long v = ~0ULL;
    if (c->ok)
        MPI_T_pvar_read(c->s, c->h, &v);
    return v;
}

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms * 1e6) % 1000000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* N calls of `count` ints on comm with rank `late` D ms late; 0 when every
 * result on this rank was right. */
static int late_calls(MPI_Comm comm, int late, double delay_ms, int calls, const char *algo)
{
    enum { COUNT = 16384 };
    int rank, size, bad = 0;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    int *in = mt_malloc(COUNT * sizeof(int)), *out = mt_malloc(COUNT * sizeof(int));
    for (int c = 0; c < calls; c++) {
        for (int i = 0; i < COUNT; i++)
            in[i] = rank * 7 + i + c;
        if (rank == late)
            sleep_ms(delay_ms);
        int rc = MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, comm);
        for (int i = 0; i < COUNT && rc == MPI_SUCCESS; i++)
            if (out[i] != 7 * size * (size - 1) / 2 + size * (i + c)) {
                rc = -1;
                break;
            }
        if (rc != MPI_SUCCESS && !bad) {
            mt_fail(&st, "%s: call %d wrong (rc %d)", algo, c, rc);
            bad = 1;
        }
    }
    free(in);
    free(out);
    return bad;
}

int main(int argc, char **argv)
{
    int size = mt_start(&st, "wait_mode_check", &argc, &argv, 1);
    const char *expect = mt_option(argc, argv, "--expect", "poll");
    const char *sleeps = mt_option(argc, argv, "--sleeps", "zero");
    int late = atoi(mt_option(argc, argv, "--late", "-1"));
    double delay_ms = atof(mt_option(argc, argv, "--delay-ms", "50"));
    int calls = atoi(mt_option(argc, argv, "--calls", "10"));
    char algos[256];
    snprintf(algos, sizeof(algos), "%s", mt_option(argc, argv, "--algos", "ring"));
    int want = mode_index(expect);
    if (want <= 0 || late >= size || (strcmp(sleeps, "zero") && strcmp(sleeps, "some"))) {
        if (st.rank == 0)
            fprintf(stderr, "wait_mode_check: bad arguments\n");
        MPI_Finalize();
        return 2;
    }

    int mode = read_wait_mode();
    char name[96];
    snprintf(name, sizeof(name), "sampi_wait_mode is %s on every rank", expect);
    if (mode != want)
        printf("wait_mode_check: [rank %d] sampi_wait_mode is %d (%s), expected %d (%s)\n", st.rank,
               mode, mode >= 0 && mode < 4 ? modes[mode] : "?", want, expect);
    mt_verdict(&st, name, mode == want);

    if (late >= 0) {
        struct counter c;
        counter_start(&c);
        int bad = 0;
        for (char *save = NULL, *algo = strtok_r(algos, ",", &save); algo;
             algo = strtok_r(NULL, ",", &save)) {
            MPI_Comm comm;
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
            if (sampi_comm_set_algorithm(comm, algo) != MPI_SUCCESS) {
                mt_fail(&st, "sampi_comm_set_algorithm(%s) failed", algo);
                bad = 1;
            } else {
                bad |= late_calls(comm, late, delay_ms, calls, algo);
            }
            MPI_Comm_free(&comm);
        }
        unsigned long long n = counter_read(&c), any = 0;
        PMPI_Allreduce(&n, &any, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        int ok = strcmp(sleeps, "zero") == 0 ? n == 0 : any > 0 && any != ~0ULL;
        if (!ok)
            printf("wait_mode_check: [rank %d] %llu sleeps while waiting (most on a rank: "
                   "%llu), expected %s\n",
                   st.rank, n, any, sleeps);
        snprintf(name, sizeof(name), "rank %d late %.0f ms x %d calls: results right", late,
                 delay_ms, calls);
        mt_verdict(&st, name, !bad);
        snprintf(name, sizeof(name), "rank %d late %.0f ms x %d calls: sleeps while waiting %s",
                 late, delay_ms, calls, strcmp(sleeps, "zero") == 0 ? "0 on every rank" : "> 0");
        mt_verdict(&st, name, ok);
    }

    int other = want == 3 ? 1 : 3, setting = -1;
    int ok = busy_poll(&setting, 1) == 0 && busy_poll(&other, 0) == 0 && read_wait_mode() == other;
    ok = ok && busy_poll(&setting, 0) == 0 && read_wait_mode() == want;
    snprintf(name, sizeof(name),
             "an MPI_T write of sampi_busy_poll (%s, then back) applies at once", modes[other]);
    mt_verdict(&st, name, ok);

    long cases, failed;
    mt_totals(&st, &cases, &failed);
    if (st.rank == 0)
        printf("wait_mode_check: np=%d, %ld checks, %ld failed\n", size, cases, failed);
    MPI_T_finalize();
    MPI_Finalize();
    return mt_exit_code(failed);
}
