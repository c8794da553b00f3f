/*
 * selective_train.c - a training-like loop for selective reduce, measured for
 * real under mpirun.
 *
 * Each rank "computes" for a time drawn from its own distribution (a sleep:
 * mean base x (1 + (skew - 1) r / (n - 1)) for rank r, log-normal jitter
 * sigma), perturbs a model buffer, then averages it with
 * sampi_partial_allreduce().  Run it with SAMPI_SELECTIVE_MODE=api and
 * SAMPI_SELECTIVE_SCHEME=partial or selective (or mode off: exact averaging of
 * all ranks every round, the all-reduce baseline).  Each rank stops after
 * --seconds of its own clock; without a controller the ranks agree to stop
 * through the last element of the model, which every call averages.
 *
 * Prints the paper's metrics (Luo et al., Sec. IV):
 * average sync time (reduction only, waiting excluded), average wait (ready to
 * reduction start), average sync scale (group size), total syncs, total
 * iterations; as one JSON line and one human-readable line.
 *
 *   mpirun -np 8 -x SAMPI_SELECTIVE_MODE=api -x SAMPI_SELECTIVE_SCHEME=selective \
 *       sampi-selective-train --seconds 20 --count 1000000 --skew 4
 */
#include "sampi.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct opts {
    double seconds, base_ms, skew, sigma;
    long count;
    unsigned seed;
};

static void usage(void)
{
    fprintf(stderr, "usage: sampi-selective-train [--seconds S] [--count N] [--base-ms MS] "
                    "[--skew K] [--sigma S] [--seed N]\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){
        .seconds = 10, .base_ms = 50, .skew = 4, .sigma = 0.3, .count = 1 << 20, .seed = 1};
    double count = (double)o->count, seed = o->seed;
    const struct {
        const char *name;
        double *value;
    } table[] = {{"--seconds", &o->seconds}, {"--count", &count},    {"--base-ms", &o->base_ms},
                 {"--skew", &o->skew},       {"--sigma", &o->sigma}, {"--seed", &seed}};
    for (int i = 1; i < argc; i += 2) {
        size_t k = 0;
        while (k < sizeof(table) / sizeof(table[0]) && strcmp(argv[i], table[k].name))
            k++;
        if (k == sizeof(table) / sizeof(table[0]) || i + 1 >= argc) {
            usage();
            return -1;
        }
        *table[k].value = atof(argv[i + 1]);
    }
    o->count = (long)count;
    o->seed = (unsigned)seed;
    if (o->seconds <= 0 || o->count < 2 || o->base_ms < 0 || o->skew < 1 || o->sigma < 0) {
        usage();
        return -1;
    }
    return 0;
}

/* Standard normal from two uniforms of a rank-private generator. */
static double normal(unsigned *state)
{
    double u1 = (rand_r(state) + 1.0) / (RAND_MAX + 2.0);
    double u2 = (rand_r(state) + 1.0) / (RAND_MAX + 2.0);
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    struct opts o;
    if (parse(argc, argv, &o)) {
        MPI_Finalize();
        return 2;
    }
    float *model = malloc((size_t)o.count * sizeof(float));
    int *members = malloc((size_t)n * sizeof(int));
    double *weights = malloc((size_t)n * sizeof(double));
    if (!model || !members || !weights)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 0; i < o.count; i++)
        model[i] = 1.0f;
    unsigned rng = o.seed * 7919u + (unsigned)rank;
    double mean_s = o.base_ms * 1e-3 * (1 + (o.skew - 1) * (n > 1 ? (double)rank / (n - 1) : 0));

    /* per rank: calls, sum of 1/m (groups), sum of seconds/m, sum of waits, sum of m */
    double acc[6] = {0};
    long full = 0, exact = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (;;) {
        double compute = mean_s * exp(o.sigma * normal(&rng) - o.sigma * o.sigma / 2);
        sleep_s(compute);
        for (long i = rank % 7; i < o.count - 1; i += 97) /* a sparse "gradient step" */
            model[i] += 0.001f * (float)(rank + 1);
        int over = MPI_Wtime() - t0 >= o.seconds;
        model[o.count - 1] = over ? 1.0f : 0.0f;
        sampi_partial_info_t info = {.members = members, .weights = weights, .capacity = n};
        double c0 = MPI_Wtime();
        int rc = sampi_partial_allreduce(model, (int)o.count, MPI_FLOAT, MPI_COMM_WORLD, &info);
        double took = MPI_Wtime() - c0;
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: sampi_partial_allreduce failed (%d)\n", rank, rc);
            break;
        }
        acc[0] += 1;
        acc[1] += 1.0 / info.size;
        acc[2] += info.seconds / info.size;
        acc[3] += took - info.seconds;
        acc[4] += info.size;
        acc[5] += compute;
        full += info.kind == SAMPI_PARTIAL_FULL;
        exact += info.kind == SAMPI_PARTIAL_EXACT;
        if (info.kind == SAMPI_PARTIAL_EXACT ? model[o.count - 1] > 0 : over)
            break;
    }
    double elapsed = MPI_Wtime() - t0;
    sampi_partial_finish(MPI_COMM_WORLD); /* before the collectives below */
    double tot[6], tmax = 0;
    long cnt[2] = {full, exact}, cnt_tot[2];
    MPI_Reduce(acc, tot, 6, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(cnt, cnt_tot, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&elapsed, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        const char *scheme = getenv("SAMPI_SELECTIVE_SCHEME");
        const char *mode = getenv("SAMPI_SELECTIVE_MODE");
        int off = !mode || !strcmp(mode, "off");
        const char *label = off ? "allreduce" : scheme ? scheme : "selective";
        double syncs = tot[1];
        printf("{\"scheme\":\"%s\",\"n\":%d,\"count\":%ld,\"seconds\":%.2f,\"skew\":%.2f,"
               "\"avg_sync_time_s\":%.5f,\"avg_wait_s\":%.5f,\"avg_sync_scale\":%.3f,"
               "\"total_syncs\":%.0f,\"total_iterations\":%.0f,\"full_syncs_member_calls\":%ld,"
               "\"exact_calls\":%ld,\"avg_compute_s\":%.4f}\n",
               label, n, o.count, tmax, o.skew, tot[2] / syncs, tot[3] / tot[0], tot[0] / syncs,
               syncs, tot[0], cnt_tot[0], cnt_tot[1], tot[5] / tot[0]);
        printf("%-10s n=%d  avg sync time %.4f s  avg wait %.4f s  avg scale %.2f  syncs %.0f  "
               "iterations %.0f  (%.1f s)\n",
               label, n, tot[2] / syncs, tot[3] / tot[0], tot[0] / syncs, syncs, tot[0], tmax);
    }
    free(model);
    free(members);
    free(weights);
    MPI_Finalize();
    return 0;
}
