/*
 * tracking.c - `auto` follows what the communicator's calls show.
 *
 * Phases on MPI_COMM_WORLD (every result checked on every rank, every call):
 *  1. one rank (--late R) sleeps --delay-ms before each call: it must become
 *     the predicted straggler (pvar sampi_comm_predicted_straggler), `auto`
 *     must try `stragglar` (unless --expect-stragglar 0) and never on 3
 *     ranks, and the prediction must have been right in most calls;
 *  2. nobody is late: the prediction must follow (it lapses, or the rank
 *     it still names is late by less than a tenth of the injected delay);
 *  3. another rank is late: the prediction must follow it;
 *  4. sampi_optcc_slowdown is written through MPI_T ("rank:2"): `auto` must
 *     run `optcc`; cleared: `auto` must never run it again.
 * Which algorithm wins is measured (auto.test checks that); this test checks
 * that the straggler and the degraded rank are found, and that the arms
 * they make possible come and go with them.
 * Run with SAMPI_TRACKER_MIN_BYTES small enough for the message size.
 */
#include "mpitest.h"
#include "sampi.h"

#include <time.h>

static struct mt_state st;
static int rank, size;

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms * 1e6) % 1000000000L};
    nanosleep(&ts, NULL);
}

static int pvar_int(const char *name, int cls)
{
    int idx, value = -2;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int n;
    if (MPI_T_pvar_get_index(name, cls, &idx) != MPI_SUCCESS)
        return -3;
    MPI_T_pvar_session_create(&s);
    MPI_Comm comm = MPI_COMM_WORLD;
    if (MPI_T_pvar_handle_alloc(s, idx, &comm, &h, &n) == MPI_SUCCESS) {
        MPI_T_pvar_read(s, h, &value);
        MPI_T_pvar_handle_free(s, &h);
    }
    MPI_T_pvar_session_free(&s);
    return value;
}

/* A counter handle started now: its reads count from here. */
struct counter {
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int ok;
};

static void counter_start(struct counter *c, const char *name)
{
    int idx, n;
    c->ok = MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx) == MPI_SUCCESS &&
            MPI_T_pvar_session_create(&c->s) == MPI_SUCCESS;
    MPI_Comm comm = MPI_COMM_WORLD;
    c->ok = c->ok && MPI_T_pvar_handle_alloc(c->s, idx, &comm, &c->h, &n) == MPI_SUCCESS &&
            MPI_T_pvar_start(c->s, c->h) == MPI_SUCCESS;
}

static unsigned long long counter_read(struct counter *c)
{
    unsigned long long v = 0;
    if (c->ok)
        MPI_T_pvar_read(c->s, c->h, &v);
    return v;
}

static unsigned long long pvar_ull(const char *name, int cls)
{
    int idx, n;
    unsigned long long value = 0;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    if (MPI_T_pvar_get_index(name, cls, &idx) != MPI_SUCCESS)
        return 0;
    MPI_T_pvar_session_create(&s);
    MPI_Comm comm = MPI_COMM_WORLD;
    if (MPI_T_pvar_handle_alloc(s, idx, &comm, &h, &n) == MPI_SUCCESS) {
        /* a counter's handle counts from its start: read the live value by
         * starting it (continuous counters need no start) */
        MPI_T_pvar_start(s, h);
        MPI_T_pvar_read(s, h, &value);
        MPI_T_pvar_handle_free(s, &h);
    }
    MPI_T_pvar_session_free(&s);
    return value;
}

static int set_slowdown(const char *text)
{
    int idx, n;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index("sampi_optcc_slowdown", &idx) != MPI_SUCCESS)
        return -1;
    if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &n) != MPI_SUCCESS)
        return -1;
    int rc = MPI_T_cvar_write(h, text);
    MPI_T_cvar_handle_free(&h);
    return rc;
}

/* Run `calls` allreduces with `late` (or nobody, -1) sleeping first; check
 * each result; count the calls that ran `algo`. */
static int phase(const char *label, int calls, int late, double delay_ms, size_t count,
                 const char *algo, int *last_count)
{
    float *buf = mt_malloc(count * sizeof(float));
    int ran = 0;
    for (int c = 0; c < calls; c++) {
        for (size_t i = 0; i < count; i++)
            buf[i] = (float)((rank + 1) * ((i + c) % 7 + 1));
        if (rank == late)
            sleep_ms(delay_ms);
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        float ranks_sum = (float)size * (size + 1) / 2;
        for (size_t i = 0; i < count; i++)
            if (buf[i] != ranks_sum * (float)((i + c) % 7 + 1)) {
                mt_fail(&st, "%s call %d: element %zu = %g, want %g", label, c, i, buf[i],
                        ranks_sum * (float)((i + c) % 7 + 1));
                break;
            }
        const char *ran_algo = sampi_comm_last_algorithm(MPI_COMM_WORLD);
        ran += ran_algo && strcmp(ran_algo, algo) == 0;
        if (rank == 0 && getenv("TRACKING_DEBUG"))
            printf("%s call %d: %s predicted %d late %llu crit %llu\n", label, c,
                   ran_algo ? ran_algo : "-",
                   pvar_int("sampi_comm_predicted_straggler", MPI_T_PVAR_CLASS_GENERIC),
                   pvar_ull("sampi_comm_predicted_lateness_ns", MPI_T_PVAR_CLASS_GENERIC),
                   pvar_ull("sampi_comm_stragglar_critical_delay_ns", MPI_T_PVAR_CLASS_GENERIC));
        /* the decision must be the same on every rank */
        int mine = ran_algo ? (int)ran_algo[0] * 256 + (int)ran_algo[1] : 0, lo, hi;
        PMPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        PMPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (lo != hi)
            mt_fail(&st, "%s call %d: ranks ran different algorithms", label, c);
        if (c == calls - 1 && last_count)
            *last_count = ran_algo && strcmp(ran_algo, algo) == 0;
    }
    free(buf);
    return ran;
}

int main(int argc, char **argv)
{
    size = mt_start(&st, "tracking", &argc, &argv, 1);
    rank = st.rank;
    int late = atoi(mt_option(argc, argv, "--late", "1")) % size;
    double delay = atof(mt_option(argc, argv, "--delay-ms", "50"));
    size_t count = (size_t)atol(mt_option(argc, argv, "--count", "262144"));
    /* on 5 ranks StragglAR saves at most 1 - 1.5/1.6 of a ring: too close to
     * auto's 5% margin to demand it there */
    int expect = atoi(mt_option(argc, argv, "--expect-stragglar", size >= 4 ? "1" : "0"));
    /* enough calls for a new straggler to win the prediction's majority
     * when auto measures one call in 2 */
    int calls = 40, last_is = 0;

    /* 1. a persistent straggler */
    struct counter made, right_ones;
    counter_start(&made, "sampi_comm_predictions");
    counter_start(&right_ones, "sampi_comm_predictions_right");
    int n_str = phase("late", calls, late, delay, count, "stragglar", &last_is);
    int predicted = pvar_int("sampi_comm_predicted_straggler", MPI_T_PVAR_CLASS_GENERIC);
    unsigned long long tried = counter_read(&made), right = counter_read(&right_ones);
    if (predicted != late)
        mt_fail(&st, "predicted straggler %d, want %d", predicted, late);
    /* once the straggler is predicted, stragglar is one of auto's arms:
     * measured at least once; whether it wins is the measurements' call */
    if (expect && !n_str)
        mt_fail(&st,
                "auto never tried stragglar with rank %d %g ms late (%d calls; lateness %llu ns)",
                late, delay, calls,
                pvar_ull("sampi_comm_predicted_lateness_ns", MPI_T_PVAR_CLASS_GENERIC));
    if (size == 3 && n_str)
        mt_fail(&st, "auto ran stragglar on 3 ranks (%d calls)", n_str);
    if (!made.ok || !right_ones.ok)
        mt_fail(&st, "the prediction counters cannot be read through MPI_T");
    /* predictions are made for measured calls only, which auto samples once
     * its choice has converged (one in 2 at this size) */
    else if (tried < 6 || right * 10 < tried * 8)
        mt_fail(&st, "predictions: %llu made, %llu right", tried, right);

    /* 2. nobody late: the prediction follows.  A rank may still be "last"
     * by scheduling noise, and on oversubscribed cores, where waits yield,
     * one rank can stay last by a steady 100-200 us (the one Open MPI's
     * small allreduces release last), which still names it.  Whether
     * stragglar then still pays is the measurements' call (it came within
     * 3% of ring here): what must hold is that the predicted lateness has
     * fallen from the injected delay to noise, a tenth of it being far
     * above any scheduler stall. */
    phase("calm", calls, -1, 0, count, "stragglar", &last_is);
    int still = pvar_int("sampi_comm_predicted_straggler", MPI_T_PVAR_CLASS_GENERIC);
    unsigned long long calm_late =
        pvar_ull("sampi_comm_predicted_lateness_ns", MPI_T_PVAR_CLASS_GENERIC);
    if (still >= 0 && (double)calm_late > delay * 1e6 / 10)
        mt_fail(&st, "with nobody late rank %d is still predicted %llu ns late", still, calm_late);

    /* 3. another rank late: the prediction follows */
    int other = (late + 1) % size;
    phase("other", calls, other, delay, count, "stragglar", &last_is);
    predicted = pvar_int("sampi_comm_predicted_straggler", MPI_T_PVAR_CLASS_GENERIC);
    if (predicted != other)
        mt_fail(&st, "predicted %d after rank %d was late, want %d", predicted, other, other);

    /* 4. a degraded rank given, then cleared */
    char text[32];
    snprintf(text, sizeof(text), "%d:2", size - 1);
    if (set_slowdown(text) != MPI_SUCCESS)
        mt_fail(&st, "could not write sampi_optcc_slowdown");
    /* a degraded rank makes optcc an arm, and the model's favourite, which
     * the new regime's exploration runs first */
    int n_optcc = phase("degraded", 4, -1, 0, count, "optcc", &last_is);
    if (size >= 3 && n_optcc < 1)
        mt_fail(&st, "auto never ran optcc in 4 calls with rank %d at l = 2", size - 1);
    set_slowdown("");
    n_optcc = phase("recovered", 4, -1, 0, count, "optcc", &last_is);
    if (n_optcc)
        mt_fail(&st, "auto ran optcc in %d calls after the slowdown was cleared", n_optcc);

    char name[64];
    snprintf(name, sizeof(name), "tracking np=%d late=%d", size, late);
    int ok = mt_verdict(&st, name, !st.local_bad);
    MPI_T_finalize();
    MPI_Finalize();
    return ok ? 0 : 1;
}
