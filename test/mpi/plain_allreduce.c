/*
 * plain_allreduce.c - an ordinary MPI program that knows nothing of SAMPI.
 *
 * It is built without libsampi on purpose: preload.test injects SAMPI with
 * LD_PRELOAD and checks from SAMPI's per-call log that the interposition
 * happened, while this program checks that the answers are still right.
 * It uses only the standard MPI interface, as an unmodified application
 * would.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

#define COUNT 5000

/* The verdicts are combined with MPI_Reduce, which SAMPI leaves alone, so a
 * broken MPI_Allreduce cannot vouch for itself. */
static int check(int rank, const char *name, int ok, int *failed)
{
    int all;
    MPI_Reduce(&ok, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    MPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("plain_allreduce: %s %s\n", all ? "PASS" : "FAIL", name);
    *failed += !all;
    return all;
}

int main(int argc, char **argv)
{
    int rank, size, failed = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int *in = malloc(sizeof(int) * COUNT), *out = malloc(sizeof(int) * COUNT), ok = 1;
    for (int i = 0; i < COUNT; i++)
        in[i] = rank * COUNT + i;
    MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < COUNT; i++)
        ok &= out[i] == size * i + COUNT * size * (size - 1) / 2;
    check(rank, "MPI_INT MPI_SUM", ok, &failed);

    double d[COUNT];
    for (int i = 0; i < COUNT; i++)
        d[i] = (double)((rank + i) % size) - 0.5;
    MPI_Allreduce(MPI_IN_PLACE, d, COUNT, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    ok = 1;
    for (int i = 0; i < COUNT; i++)
        ok &= d[i] == (double)(size - 1) - 0.5;
    check(rank, "MPI_DOUBLE MPI_MAX in place", ok, &failed);

    long l = rank % 2 ? -(long)rank : (long)rank, lsum;
    MPI_Allreduce(&l, &lsum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    long want = 0;
    for (int r = 0; r < size; r++)
        want += r % 2 ? -(long)r : (long)r;
    check(rank, "MPI_LONG MPI_SUM count 1", lsum == want, &failed);

    if (rank == 0)
        printf("plain_allreduce: %d passed, %d failed\n", 3 - failed, failed);
    free(in);
    free(out);
    MPI_Finalize();
    return failed ? 1 : 0;
}
