/*
 * report_calls.c - calls for the end-of-run report's test (report.test):
 * `calls` MPI_Allreduce of `bytes` bytes on MPI_COMM_WORLD, and the same
 * on a duplicate freed before MPI_Finalize (its record must survive the
 * free).  Which rank is late is set from outside (sampi_debug_delay).
 *
 *   report_calls CALLS BYTES
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

static int run(MPI_Comm comm, int calls, size_t count)
{
    double *v = malloc(count * sizeof(double));
    int size, bad = 0;
    if (!v)
        return 1;
    MPI_Comm_size(comm, &size);
    for (int c = 0; c < calls; c++) {
        for (size_t i = 0; i < count; i++)
            v[i] = 1;
        MPI_Allreduce(MPI_IN_PLACE, v, (int)count, MPI_DOUBLE, MPI_SUM, comm);
        bad += v[0] != size || v[count - 1] != size;
    }
    free(v);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int calls = argc > 1 ? atoi(argv[1]) : 40;
    size_t count = (argc > 2 ? (size_t)atol(argv[2]) : 1 << 20) / sizeof(double);
    int rank, bad = 0, all = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    bad += run(dup, calls / 4 + 1, count);
    MPI_Comm_free(&dup);
    bad += run(MPI_COMM_WORLD, calls, count);
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("report_calls: %s\n", all ? "FAIL" : "PASS");
    MPI_Finalize();
    return all != 0;
}
