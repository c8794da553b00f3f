/*
 * box_check.c - what box.test asks of a cluster in a box
 * (benchmarks/testbed/box), seen from inside the job.
 *
 *   box_check nodes H K        Open MPI sees H nodes of K ranks: on every rank
 *                              MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
 *                              gives K ranks that share its processor name,
 *                              the H nodes have H different names, and an
 *                              MPI_Allreduce across them (SAMPI's, as
 *                              SAMPI_ALGORITHM says) is exact
 *   box_check pair A B BYTES REPS
 *                              ranks A and B exchange BYTES each way, REPS
 *                              times (MPI_Sendrecv: Open MPI's transport,
 *                              vader inside a host, tcp between hosts); A
 *                              prints the time and the rate each way
 *
 * Verdicts are combined with PMPI_Reduce, which SAMPI leaves alone, so an
 * MPI_Allreduce under test never vouches for itself.  Lines start with
 * "box_check:"; exit status 0 when every check passed on every rank, 1 when
 * one failed, 2 bad usage.
 */
#include <mpi.h>
#include <sampi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failed;

static void verdict(const char *what, int ok)
{
    int all = 0;
    PMPI_Reduce(&ok, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    PMPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("box_check: %s %s\n", all ? "PASS" : "FAIL", what);
    fflush(stdout);
    failed += !all;
}

static int nodes(int want_h, int want_k)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0, lrank = 0, lsize = 0;
    MPI_Comm node;
    PMPI_Get_processor_name(name, &len);
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    PMPI_Comm_rank(node, &lrank);
    PMPI_Comm_size(node, &lsize);

    /* K ranks on my node, all of one name (mine). */
    char *names = calloc((size_t)lsize, MPI_MAX_PROCESSOR_NAME);
    PMPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                   node);
    int same = 1;
    for (int i = 0; i < lsize; i++)
        same &= strcmp(names + (size_t)i * MPI_MAX_PROCESSOR_NAME, name) == 0;
    if (lsize != want_k || !same)
        printf("box_check: [rank %d] on %s: MPI_Comm_split_type gave %d ranks (want %d)%s\n", rank,
               name, lsize, want_k, same ? "" : ", not all of this name");
    char what[160];
    snprintf(what, sizeof what, "MPI_Comm_split_type(SHARED): %d ranks of one name on every rank",
             want_k);
    verdict(what, lsize == want_k && same);
    free(names);

    /* H leaders, H different names; rank 0 prints the map. */
    char *all = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
    PMPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
                MPI_COMM_WORLD);
    int leader = lrank == 0, leaders = 0, distinct = 1;
    PMPI_Reduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char map[4096] = "";
        int nnames = 0;
        for (int r = 0; r < size; r++) {
            const char *n = all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
            int first = 1;
            for (int q = 0; q < r; q++)
                first &= strcmp(all + (size_t)q * MPI_MAX_PROCESSOR_NAME, n) != 0;
            if (!first)
                continue;
            nnames++;
            size_t at = strlen(map);
            snprintf(map + at, sizeof map - at, "%s%s:", nnames > 1 ? "; " : "", n);
            for (int q = r; q < size; q++)
                if (strcmp(all + (size_t)q * MPI_MAX_PROCESSOR_NAME, n) == 0) {
                    at = strlen(map);
                    snprintf(map + at, sizeof map - at, " %d", q);
                }
        }
        distinct = nnames == leaders;
        printf("box_check: map %s\n", map);
        snprintf(what, sizeof what, "%d nodes (%d node leaders, %d names; want %d)", leaders,
                 leaders, nnames, want_h);
        distinct &= leaders == want_h;
    }
    verdict(what, distinct);
    free(all);

    /* An exact allreduce across the hosts: integer SUM and double MAX. */
    enum { COUNT = 1 << 20 };
    int *in = malloc(sizeof(int) * COUNT), *out = malloc(sizeof(int) * COUNT), ok = 1;
    for (int i = 0; i < COUNT; i++)
        in[i] = rank * 7 + i % 13;
    MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < COUNT; i++)
        ok &= out[i] == 7 * size * (size - 1) / 2 + size * (i % 13);
    verdict("MPI_Allreduce MPI_INT MPI_SUM, 4 MiB, across the nodes", ok);
    double *d = malloc(sizeof(double) * COUNT);
    for (int i = 0; i < COUNT; i++)
        d[i] = (double)((rank + i) % size) + 0.25;
    MPI_Allreduce(MPI_IN_PLACE, d, COUNT, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    ok = 1;
    for (int i = 0; i < COUNT; i++)
        ok &= d[i] == (double)(size - 1) + 0.25;
    verdict("MPI_Allreduce MPI_DOUBLE MPI_MAX in place, 8 MiB, across the nodes", ok);
    /* forced hier on Open MPI's own nodes: they are alike, so it runs its stages */
    const char *alg = getenv("SAMPI_ALGORITHM");
    if (alg && strcmp(alg, "hier") == 0) {
        const char *ran = sampi_comm_last_algorithm(MPI_COMM_WORLD);
        verdict("hier ran its stages on Open MPI's nodes", ran && strcmp(ran, "hier") == 0);
    }
    free(in);
    free(out);
    free(d);
    PMPI_Comm_free(&node);
    return 0;
}

static int pair(int a, int b, long bytes, int reps)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "", peer[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    PMPI_Get_processor_name(name, &len);
    if (a < 0 || b < 0 || a >= size || b >= size || a == b || bytes <= 0 || reps <= 0) {
        if (rank == 0)
            fprintf(stderr,
                    "box_check pair: need two different ranks below %d, BYTES and REPS > 0\n",
                    size);
        return 2;
    }
    char *sbuf = NULL, *rbuf = NULL;
    int me = rank == a || rank == b, other = rank == a ? b : a;
    if (me) {
        sbuf = malloc((size_t)bytes);
        rbuf = malloc((size_t)bytes);
        memset(sbuf, rank & 0xff, (size_t)bytes);
        PMPI_Sendrecv(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, other, 1, peer,
                      MPI_MAX_PROCESSOR_NAME, MPI_CHAR, other, 1, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE);
        /* one untimed exchange: connections are made on first use */
        PMPI_Sendrecv(sbuf, 1, MPI_CHAR, other, 2, rbuf, 1, MPI_CHAR, other, 2, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    double t = PMPI_Wtime();
    int ok = 1;
    if (me) {
        for (int i = 0; i < reps; i++)
            PMPI_Sendrecv(sbuf, (int)bytes, MPI_CHAR, other, 3, rbuf, (int)bytes, MPI_CHAR, other,
                          3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t = PMPI_Wtime() - t;
        ok = rbuf[0] == (char)(other & 0xff) && rbuf[bytes - 1] == (char)(other & 0xff);
        if (rank == a)
            printf("box_check: pair %d (%s) <-> %d (%s): %ld bytes x %d each way in %.3f s, %.2f "
                   "MB/s each way\n",
                   a, name, b, peer, bytes, reps, t, (double)bytes * reps / t / 1e6);
        fflush(stdout);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    free(sbuf);
    free(rbuf);
    char what[96];
    snprintf(what, sizeof what, "pair %d <-> %d: data arrived", a, b);
    verdict(what, ok);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 2;
    MPI_Init(&argc, &argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 4 && strcmp(argv[1], "nodes") == 0)
        rc = nodes(atoi(argv[2]), atoi(argv[3]));
    else if (argc == 6 && strcmp(argv[1], "pair") == 0)
        rc = pair(atoi(argv[2]), atoi(argv[3]), atol(argv[4]), atoi(argv[5]));
    else if (rank == 0)
        fprintf(stderr, "usage: box_check nodes H K | box_check pair A B BYTES REPS\n");
    MPI_Finalize();
    if (rc)
        return rc;
    return failed ? 1 : 0;
}
