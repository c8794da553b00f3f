/*
 * sampi_tail_bench.c - the tail scenario of benchmarks/tail-table: repeated
 * float MPI_Allreduce (SUM) under injected packet delay and loss, compared
 * side by side in one run for `native`, `ring` and `optireduce` with and
 * without the Hadamard transform.
 *
 *   sampi_tail_bench --bytes B --iters N --late-pct X --late-factor F
 *                    --loss L [--pareto A] [--warmup W] [--algos a,b,...]
 *                    [--seed S] [--ref ALGO] [--json]
 *
 * An algorithm may name its data path: "ring@ofi" runs ring over the ofi
 * netdev (the shaped one in benchmarks/testbed).  --ref names the fault-free
 * reliable algorithm whose median is the delay unit (default "ring").
 *
 * The delay unit.  "F x late" is relative to T_ref, the median time of a
 * fault-free `ring` call of this size measured first in the same run: a late
 * datagram arrives (F-1) T_ref after it would have, so a call that must wait
 * for it takes about F times as long.  With --pareto A the extra delay is
 * (F-1) T_ref (U^(-1/A) - 1) instead (a heavy tail).  Every delay is capped at
 * --delay-cap C times T_ref (default 100): the same cap for the injector and
 * the emulation below, so that one draw from the tail cannot stall a run.
 *
 * How faults reach each algorithm.  optireduce's datagram path goes through
 * the fault injector (sampi_optireduce_fault: drops at the sender, delays at
 * the receiver).  native and ring run over reliable transports that the
 * injector cannot reach (this kernel has no netem); for them the same
 * distribution is applied as a reliable transport experiences it: every
 * call waits for its latest datagram, so each rank draws the delays of the
 * datagrams it would receive in the call (2 (p-1)/p B bytes in datagrams of
 * optireduce's size, learnt from one fault-free optireduce call) and sleeps
 * the largest inside the timed region.  Their
 * losses are taken as free (an optimistic assumption for them: a real
 * retransmission costs at least a round trip).
 *
 * Reported per algorithm: P50, P99, P99/P50 and mean of the call time (the
 * slowest rank's, us), the drop percentage optireduce reported over the timed
 * calls (both stages, all ranks), and the relative L2 error of the result against the exact sum
 * (computed once in double with PMPI_Allreduce), over all ranks' results.
 */
#include "comm.h"
#include "config.h"
#include "dgram_fault.h"
#include "optireduce.h"
#include "sampi.h"

#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct opts {
    size_t bytes;
    int iters, warmup;
    double late_pct, late_factor, loss, pareto, cap_factor;
    unsigned long long seed;
    long pkt_floats; /* floats per optireduce datagram: the packet size of the emulation */
    int json;
    const char *algos;
    const char *ref;
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pctl(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    int k = (int)ceil(p / 100.0 * n);
    return v[k < 1 ? 0 : k > n ? n - 1 : k - 1];
}

/* The largest extra delay (us) among k datagrams for a reliable transport. */
static double reliable_delay_us(const struct opts *o, double t_ref_us, long k, uint64_t *rng)
{
    double p = o->late_pct / 100.0, worst = 0, unit_us = (o->late_factor - 1) * t_ref_us;
    if (p <= 0 || unit_us <= 0)
        return 0;
    /* the number of late datagrams is binomial; draw them one by one only
     * when late, by geometric skips */
    for (long i = 0;;) {
        double u = sampi_fault_unit(rng);
        long skip = p >= 1 ? 0 : (long)floor(log(u) / log1p(-p));
        i += skip;
        if (i >= k)
            break;
        double d =
            o->pareto > 0 ? unit_us * (pow(sampi_fault_unit(rng), -1.0 / o->pareto) - 1) : unit_us;
        d = d > o->cap_factor * t_ref_us ? o->cap_factor * t_ref_us : d;
        worst = d > worst ? d : worst;
        i++;
    }
    return worst;
}

static void sleep_us(double us)
{
    if (us <= 0)
        return;
    struct timespec ts = {(time_t)(us / 1e6), (long)(fmod(us, 1e6) * 1e3)};
    nanosleep(&ts, NULL);
}

static void set_cvar(enum sampi_cvar_id id, const char *text)
{
    char err[256];
    if (sampi_cvar_set(id, text, err, sizeof(err)))
        fprintf(stderr, "sampi_tail_bench: %s\n", err);
}

/* optireduce's {lost, expected} payload bytes on comm so far, this rank */
static void opti_counts(MPI_Comm comm, unsigned long long out[2])
{
    struct sampi_comm *c = NULL;
    out[0] = out[1] = 0;
    if (sampi_comm_get(comm, 0, &c) == 0) {
        out[0] = sampi_optireduce_counter(sampi_comm_algo_state(c, SAMPI_ALGO_OPTIREDUCE),
                                          SAMPI_OPTI_C_LOST1) +
                 sampi_optireduce_counter(sampi_comm_algo_state(c, SAMPI_ALGO_OPTIREDUCE),
                                          SAMPI_OPTI_C_LOST2);
        out[1] = sampi_optireduce_counter(sampi_comm_algo_state(c, SAMPI_ALGO_OPTIREDUCE),
                                          SAMPI_OPTI_C_EXPECTED1) +
                 sampi_optireduce_counter(sampi_comm_algo_state(c, SAMPI_ALGO_OPTIREDUCE),
                                          SAMPI_OPTI_C_EXPECTED2);
    }
}

struct result {
    double p50, p99, mean, drop_pct, rel_l2;
};

static int run_algo(const struct opts *o, const char *algo, int ht, double t_ref_us,
                    const float *in, const double *exact, size_t n, int iters, struct result *res)
{
    int rank, size;
    MPI_Comm comm;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    /* "ring@ofi": the algorithm over the named data path */
    char name[64];
    snprintf(name, sizeof(name), "%s", algo);
    char *at = strchr(name, '@');
    if (at) {
        *at++ = 0;
        if (sampi_comm_set_netdev(comm, at) != 0 && rank == 0)
            fprintf(stderr, "sampi_tail_bench: cannot select netdev '%s'\n", at);
    }
    int opti = strcmp(name, "optireduce") == 0;
    if (sampi_comm_set_algorithm(comm, name) != 0 && rank == 0)
        fprintf(stderr, "sampi_tail_bench: cannot select '%s'\n", name);
    set_cvar(SAMPI_CVAR_OPTIREDUCE_HADAMARD, ht ? "1" : "0");
    char fault[256] = "";
    if (opti) {
        double delay_us = (o->late_factor - 1) * t_ref_us;
        int len = snprintf(fault, sizeof(fault), "seed=%llu", o->seed);
        if (o->loss > 0)
            len += snprintf(fault + len, sizeof(fault) - len, ",drop=%g", o->loss);
        if (o->late_pct > 0 && delay_us > 0)
            len += snprintf(fault + len, sizeof(fault) - len, ",late=%g,delay=%.0fus",
                            o->late_pct / 100.0, delay_us);
        if (o->pareto > 0)
            len += snprintf(fault + len, sizeof(fault) - len, ",pareto=%g", o->pareto);
        if (o->late_pct > 0 && delay_us > 0)
            snprintf(fault + len, sizeof(fault) - len, ",max=%.0fus", o->cap_factor * t_ref_us);
    }
    set_cvar(SAMPI_CVAR_OPTIREDUCE_FAULT, fault); /* read when comm's path opens */

    float *out = malloc(n * sizeof(float));
    double *t = malloc((size_t)(iters + o->warmup) * sizeof(double));
    uint64_t rng = o->seed * 0x2545F4914F6CDD1Dull + (uint64_t)rank;
    long per_call_pkts = (long)ceil(2.0 * (size - 1) / size * (double)n / (double)o->pkt_floats);
    double num = 0, den = 0;
    unsigned long long base[2] = {0, 0}; /* optireduce's counters after the warm-up */
    for (int it = 0; it < o->warmup + iters; it++) {
        if (it == o->warmup && opti)
            opti_counts(comm, base);
        memcpy(out, in, n * sizeof(float));
        double extra = opti ? 0 : reliable_delay_us(o, t_ref_us, per_call_pkts, &rng);
        PMPI_Barrier(comm);
        double t0 = now_us();
        sleep_us(extra);
        MPI_Allreduce(MPI_IN_PLACE, out, (int)n, MPI_FLOAT, MPI_SUM, comm);
        double dt = now_us() - t0;
        PMPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm);
        t[it] = dt;
        if (it >= o->warmup)
            for (size_t i = 0; i < n; i++) {
                double d = out[i] - exact[i];
                num += d * d;
                den += exact[i] * exact[i];
            }
    }
    double nd[2] = {num, den};
    PMPI_Allreduce(MPI_IN_PLACE, nd, 2, MPI_DOUBLE, MPI_SUM, comm);
    res->rel_l2 = nd[1] > 0 ? sqrt(nd[0] / nd[1]) : 0;
    double *m = t + o->warmup, sum = 0;
    for (int i = 0; i < iters; i++)
        sum += m[i];
    res->mean = sum / iters;
    res->p99 = pctl(m, iters, 99);
    res->p50 = pctl(m, iters, 50);
    unsigned long long le[2] = {0, 0};
    if (opti)
        opti_counts(comm, le);
    le[0] -= base[0];
    le[1] -= base[1];
    PMPI_Allreduce(MPI_IN_PLACE, le, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    res->drop_pct = le[1] ? 100.0 * (double)le[0] / (double)le[1] : 0;
    free(out);
    free(t);
    MPI_Comm_free(&comm);
    return 0;
}

static const char *opt_val(int argc, char **argv, const char *name, const char *dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return dflt;
}

int main(int argc, char **argv)
{
    struct opts o;
    int rank, size;
    MPI_Init(&argc, &argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    o.bytes = (size_t)strtoull(opt_val(argc, argv, "--bytes", "16777216"), NULL, 0);
    o.iters = atoi(opt_val(argc, argv, "--iters", "1000"));
    o.warmup = atoi(opt_val(argc, argv, "--warmup", "25"));
    o.late_pct = atof(opt_val(argc, argv, "--late-pct", "0"));
    o.late_factor = atof(opt_val(argc, argv, "--late-factor", "10"));
    o.loss = atof(opt_val(argc, argv, "--loss", "0"));
    o.pareto = atof(opt_val(argc, argv, "--pareto", "0"));
    o.cap_factor = atof(opt_val(argc, argv, "--delay-cap", "100"));
    o.seed = strtoull(opt_val(argc, argv, "--seed", "1"), NULL, 0);
    o.algos = opt_val(argc, argv, "--algos", "native,ring,optireduce,optireduce-noht");
    o.ref = opt_val(argc, argv, "--ref", "ring");
    o.json = 0;
    for (int i = 1; i < argc; i++)
        o.json |= strcmp(argv[i], "--json") == 0;
    if (o.iters < 1 || o.bytes < 4) {
        if (rank == 0)
            fprintf(stderr, "sampi_tail_bench: --iters >= 1 and --bytes >= 4\n");
        MPI_Finalize();
        return 2;
    }
    size_t n = o.bytes / 4;
    float *in = malloc(n * sizeof(float));
    double *exact = malloc(n * sizeof(double));
    uint64_t s = 12345 + (uint64_t)rank * 7919;
    for (size_t i = 0; i < n; i++) {
        in[i] = (float)(sampi_fault_unit(&s) * 2 - 1);
        exact[i] = in[i];
    }
    PMPI_Allreduce(MPI_IN_PLACE, exact, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    /* The packet size of the reliable emulation: optireduce's own, learnt
     * from one fault-free call (256 floats when it cannot run) */
    o.pkt_floats = 256;
    {
        MPI_Comm pc;
        struct sampi_comm *c = NULL;
        PMPI_Comm_dup(MPI_COMM_WORLD, &pc);
        set_cvar(SAMPI_CVAR_OPTIREDUCE_FAULT, "");
        float *tmp = malloc(n * sizeof(float));
        memcpy(tmp, in, n * sizeof(float));
        if (sampi_comm_set_algorithm(pc, "optireduce") == 0)
            MPI_Allreduce(MPI_IN_PLACE, tmp, (int)n, MPI_FLOAT, MPI_SUM, pc);
        unsigned long long f = 0;
        if (sampi_comm_get(pc, 0, &c) == 0)
            f = sampi_optireduce_counter(sampi_comm_algo_state(c, SAMPI_ALGO_OPTIREDUCE),
                                         SAMPI_OPTI_C_PKT_FLOATS);
        PMPI_Allreduce(MPI_IN_PLACE, &f, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, pc);
        if (f > 0)
            o.pkt_floats = (long)f;
        free(tmp);
        MPI_Comm_free(&pc);
    }
    /* T_ref: the fault-free ring's median, the unit of "F x late" */
    struct opts clean = o;
    clean.late_pct = clean.loss = 0;
    clean.warmup = 3;
    struct result ref;
    run_algo(&clean, o.ref, 0, 0, in, exact, n, 15, &ref);
    double t_ref = ref.p50;
    if (rank == 0 && !o.json) {
        printf("# tail scenario: p=%d bytes=%zu iters=%d late=%g%% x%g%s loss=%g; T_ref (%s "
               "P50, no faults) = %.0f us; late datagrams +%.0f us; %ld floats per datagram\n",
               size, o.bytes, o.iters, o.late_pct, o.late_factor, o.pareto > 0 ? " (pareto)" : "",
               o.loss, o.ref, t_ref, (o.late_factor - 1) * t_ref, o.pkt_floats);
        printf("%-16s %10s %10s %8s %10s %8s %12s\n", "algo", "p50_us", "p99_us", "p99/p50",
               "mean_us", "drop_%", "rel_l2_err");
    }
    char list[256];
    snprintf(list, sizeof(list), "%s", o.algos);
    for (char *save = NULL, *a = strtok_r(list, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
        struct result r;
        int noht = strcmp(a, "optireduce-noht") == 0;
        run_algo(&o, noht ? "optireduce" : a, !noht, t_ref, in, exact, n, o.iters, &r);
        if (rank != 0)
            continue;
        if (o.json)
            printf("{\"algo\":\"%s\",\"p\":%d,\"bytes\":%zu,\"iters\":%d,\"late_pct\":%g,"
                   "\"late_factor\":%g,\"pareto\":%g,\"loss\":%g,\"t_ref_us\":%.1f,"
                   "\"p50_us\":%.1f,\"p99_us\":%.1f,\"p99_over_p50\":%.3f,\"mean_us\":%.1f,"
                   "\"drop_pct\":%.4f,\"rel_l2_error\":%.3g}\n",
                   a, size, o.bytes, o.iters, o.late_pct, o.late_factor, o.pareto, o.loss, t_ref,
                   r.p50, r.p99, r.p99 / r.p50, r.mean, r.drop_pct, r.rel_l2);
        else
            printf("%-16s %10.0f %10.0f %8.2f %10.0f %8.3f %12.3g\n", a, r.p50, r.p99,
                   r.p99 / r.p50, r.mean, r.drop_pct, r.rel_l2);
        fflush(stdout);
    }
    free(in);
    free(exact);
    MPI_Finalize();
    return 0;
}
