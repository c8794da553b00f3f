/*
 * waitall_cost - what SAMPI's MPI_Waitall costs a program's unrelated
 * point-to-point requests, side by side with Open MPI's own in one run.
 *
 * Each exchange posts 8 requests of one double (4 receives, 4 sends, to
 * both neighbours on a ring of the ranks) and completes them with one
 * MPI_Waitall: blocks of ITERS exchanges alternate between MPI_Waitall
 * (through SAMPI, which with progress threads calls MPI_Testall until all
 * are done: pmpi_wrap/request.c) and PMPI_Waitall (Open MPI's).  Rank 0
 * prints the time per exchange of each and their ratio.
 *
 *   mpirun -np 2 --bind-to core -x SAMPI_PROGRESS=thread \
 *       build/benchmarks/waitall_cost [ITERS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { BLOCKS = 10, REQS = 8 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int iters = argc > 1 ? atoi(argv[1]) : 20000;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int to[4] = {right, left, right, left};
    double out[4] = {1, 2, 3, 4}, in[4], seconds[2] = {0, 0};
    for (int block = 0; block < 2 * BLOCKS; block++) {
        const int open_mpi = block & 1;
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            MPI_Request req[REQS];
            MPI_Status st[REQS];
            /* receive k from the rank that sends k to us */
            for (int k = 0; k < 4; k++)
                MPI_Irecv(&in[k], 1, MPI_DOUBLE, to[k ^ 1], k, MPI_COMM_WORLD, &req[k]);
            for (int k = 0; k < 4; k++)
                MPI_Isend(&out[k], 1, MPI_DOUBLE, to[k], k, MPI_COMM_WORLD, &req[4 + k]);
            if (open_mpi)
                PMPI_Waitall(REQS, req, st);
            else
                MPI_Waitall(REQS, req, st);
        }
        seconds[open_mpi] += MPI_Wtime() - start;
    }
    if (rank == 0)
        printf("waitall_cost: np %d, %d requests: MPI_Waitall %.3f us, PMPI_Waitall %.3f us, "
               "ratio %.3f\n",
               size, REQS, seconds[0] / (BLOCKS * iters) * 1e6, seconds[1] / (BLOCKS * iters) * 1e6,
               seconds[0] / seconds[1]);
    MPI_Finalize();
    return 0;
}
