/*
 * threads.c - concurrent MPI_Allreduce on different communicators from
 * different threads (MPI_THREAD_MULTIPLE, design rule 7).
 *
 * Two threads per rank, each with its own duplicate of MPI_COMM_WORLD, run
 * ITERATIONS allreduces of varying sizes with "ring" and "rhd" forced in
 * turn on their communicator.  Both threads' traffic is in flight at once,
 * so messages of one communicator must never be matched by the other.
 * Every result is checked exactly (integer sums, and double sums of small
 * integers, which are exact in any order), and sampi_comm_last_algorithm
 * must name the forced algorithm.
 *
 * Usage: threads [--netdev mpi|ofi]
 * Prints "threads: SKIP: ..." and exits 0 when MPI_THREAD_MULTIPLE is not
 * provided (threads.test turns that into a skip).
 */
#include "mpitest.h"
#include "sampi.h"

#include <pthread.h>

#define NTHREADS   2
#define ITERATIONS 240

struct worker {
    int id;
    MPI_Comm comm;
    const char *netdev;
    struct mt_state st;
    pthread_t tid;
};

/* The same on every rank for a given iteration; crosses the small-message,
 * non-divisible and segmented (> 256 KiB) regimes. */
static int count_for(int iter, int size)
{
    static const int counts[] = {1, 7, 0, 64, 1000, 4099, 33333, 70001};
    int c = counts[iter % (int)(sizeof counts / sizeof counts[0])];
    return c == 0 ? size + 1 : c;
}

static int input(int rank, int thread, int iter, int i)
{
    return (rank + 1) * (i % 1000 + 1) * (thread + 1) - iter;
}

static int expected(int size, int thread, int iter, int i)
{
    return (i % 1000 + 1) * (thread + 1) * size * (size + 1) / 2 - size * iter;
}

static void one_iteration(struct worker *w, int iter, int rank, int size, int *ibuf, int *iout,
                          double *dbuf, double *dout)
{
    static const char *const algs[] = {"ring", "rhd"};
    const char *alg = algs[iter % 2];
    int count = count_for(iter, size), use_double = (iter / 2) % 2;
    char what[160];
    snprintf(what, sizeof what, "thread=%d iter=%d alg=%s type=%s count=%d", w->id, iter, alg,
             use_double ? "MPI_DOUBLE" : "MPI_INT", count);

    for (int i = 0; i < count; i++) {
        ibuf[i] = input(rank, w->id, iter, i);
        dbuf[i] = ibuf[i];
    }
    int rc = sampi_comm_set_algorithm(w->comm, alg);
    if (rc != MPI_SUCCESS)
        mt_fail(&w->st, "%s: sampi_comm_set_algorithm returned %d", what, rc);
    if (use_double)
        rc = MPI_Allreduce(dbuf, dout, count, MPI_DOUBLE, MPI_SUM, w->comm);
    else
        rc = MPI_Allreduce(ibuf, iout, count, MPI_INT, MPI_SUM, w->comm);
    if (rc != MPI_SUCCESS)
        mt_fail(&w->st, "%s: MPI_Allreduce returned %d", what, rc);
    const char *ran = sampi_comm_last_algorithm(w->comm);
    if (ran == NULL || strcmp(ran, alg) != 0)
        mt_fail(&w->st, "%s: sampi_comm_last_algorithm says '%s'", what, ran ? ran : "(null)");
    for (int i = 0; i < count; i++) {
        int want = expected(size, w->id, iter, i);
        if (use_double ? dout[i] != (double)want : iout[i] != want) {
            mt_fail(&w->st, "%s: element %d is %g, expected %d", what, i,
                    use_double ? dout[i] : (double)iout[i], want);
            break;
        }
    }
    mt_close_case(&w->st, w->comm, 0, what);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    int rank, size, max = 0;
    PMPI_Comm_rank(w->comm, &rank);
    PMPI_Comm_size(w->comm, &size);
    for (int it = 0; it < ITERATIONS; it++)
        max = count_for(it, size) > max ? count_for(it, size) : max;
    int *ibuf = mt_malloc(sizeof(int) * max), *iout = mt_malloc(sizeof(int) * max);
    double *dbuf = mt_malloc(sizeof(double) * max), *dout = mt_malloc(sizeof(double) * max);

    for (int it = 0; it < ITERATIONS; it++)
        one_iteration(w, it, rank, size, ibuf, iout, dbuf, dout);

    if (w->netdev) {
        const char *nd = sampi_comm_netdev(w->comm);
        if (nd == NULL || strcmp(nd, w->netdev) != 0)
            mt_fail(&w->st, "thread=%d: sampi_comm_netdev says '%s', requested '%s'", w->id,
                    nd ? nd : "(null)", w->netdev);
        mt_close_case(&w->st, w->comm, 0, "netdev");
    }
    free(ibuf);
    free(iout);
    free(dbuf);
    free(dout);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            printf("threads: SKIP: MPI_Init_thread provided level %d, below "
                   "MPI_THREAD_MULTIPLE (%d)\n",
                   provided, MPI_THREAD_MULTIPLE);
        MPI_Finalize();
        return 0;
    }

    static const char *const names[NTHREADS] = {"threads[0]", "threads[1]"};
    struct worker w[NTHREADS];
    const char *netdev = mt_option(argc, argv, "--netdev", NULL);
    for (int t = 0; t < NTHREADS; t++) {
        w[t].id = t;
        w[t].netdev = netdev;
        mt_init(&w[t].st, names[t]);
        /* Duplicated here, in the same order on every rank: creating
         * communicators is collective and must not race. */
        PMPI_Comm_dup(MPI_COMM_WORLD, &w[t].comm);
        PMPI_Comm_set_errhandler(w[t].comm, MPI_ERRORS_RETURN);
        if (netdev && sampi_comm_set_netdev(w[t].comm, netdev) != MPI_SUCCESS)
            mt_fail(&w[t].st, "sampi_comm_set_netdev(%s) failed", netdev);
    }
    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&w[t].tid, NULL, worker_main, &w[t]);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(w[t].tid, NULL);

    long cases = 0, failed = 0;
    for (int t = 0; t < NTHREADS; t++) {
        long c, f;
        mt_totals(&w[t].st, &c, &f);
        cases += c;
        failed += f;
        PMPI_Comm_free(&w[t].comm);
    }
    if (rank == 0)
        printf("threads: np=%d netdev=%s: %ld cases, %ld failed\n", size,
               netdev ? netdev : "default", cases, failed);
    MPI_Finalize();
    return mt_exit_code(failed);
}
