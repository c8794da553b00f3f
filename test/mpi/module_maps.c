/*
 * module_maps.c - what a process maps, read from /proc/self/maps: a program
 * that uses only the `mpi` data path must not map libfabric or DPDK, and
 * opening `ofi` must load its module then.
 *
 *   module_maps [--ofi yes|no] [--opti yes|no] [--missing-rank R --missing-dir DIR]
 *
 * Like plain_allreduce it knows nothing of SAMPI and is run with
 * LD_PRELOAD=libsampi.so (modules.test, which also sets SAMPI_ALGORITHM=ring
 * so that every call goes through SAMPI's data path).  It checks, on every
 * rank:
 *   default   after an MPI_Allreduce on MPI_COMM_WORLD (the default data
 *             path, `mpi`), with a right answer: no libfabric, no librte_*,
 *             no psm or ibverbs, and no SAMPI module is mapped;
 *   ofi       (--ofi) an MPI_Allreduce, with a right answer, on a duplicate
 *             made with the hint sampi_netdev=ofi.  --ofi yes: the ofi module
 *             and libfabric are mapped now (DPDK still is not); --ofi no (its
 *             module is missing): still neither is mapped.
 *   opti      (--opti) a float MPI_SUM of 1.2 MB on a duplicate made with the
 *             hint sampi_algorithm=optireduce (modules.test chooses the
 *             datagram path ofi-udp).  --opti yes: the call succeeds and the
 *             ofi-udp module and libfabric are mapped now; --opti no (its
 *             module is missing): the call falls back to PMPI_Allreduce, so
 *             the sum is exact, and neither is mapped.
 * --missing-rank R --missing-dir DIR: rank R sets sampi_module_path to DIR
 * through MPI_T before anything else, so that only it misses the module; with
 * --ofi yes, the other ranks map it and rank R does not (they all fall back
 * to `mpi`, which modules.test reads from SAMPI's log).
 * Rank 0 prints one PASS or FAIL line per check; every rank exits with the
 * verdict all ranks agreed on (combined with MPI_Reduce, which SAMPI leaves
 * alone).
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 4099

struct maps {
    int fabric, rte, psm, verbs, ofi_module, dgram_module, udp_module;
};

static int read_maps(struct maps *m)
{
    memset(m, 0, sizeof(*m));
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        const char *path = strchr(line, '/');
        if (!path)
            continue;
        m->fabric |= strstr(path, "/libfabric.so") != NULL;
        m->rte |= strstr(path, "/librte_") != NULL;
        m->psm |= strstr(path, "/libpsm") != NULL;
        m->verbs |= strstr(path, "/libibverbs.so") != NULL;
        m->ofi_module |= strstr(path, "/sampi_netdev_ofi.so") != NULL;
        m->dgram_module |= strstr(path, "/sampi_dgram_") != NULL;
        m->udp_module |= strstr(path, "/sampi_dgram_ofi_udp.so") != NULL;
    }
    fclose(f);
    return 0;
}

static void describe(const struct maps *m, char *buf, size_t len)
{
    snprintf(buf, len,
             "libfabric=%d librte=%d libpsm=%d libibverbs=%d ofi-module=%d dgram-module=%d "
             "ofi-udp-module=%d",
             m->fabric, m->rte, m->psm, m->verbs, m->ofi_module, m->dgram_module, m->udp_module);
}

/* Combined over all ranks with MPI_Reduce and MPI_Bcast: a broken
 * MPI_Allreduce cannot vouch for itself. */
static int check(int rank, const char *name, int ok, const char *mine, int *failed)
{
    int all = 0;
    if (!ok)
        printf("module_maps: rank %d: %s: %s\n", rank, name, mine);
    MPI_Reduce(&ok, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    MPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("module_maps: %s %s\n", all ? "PASS" : "FAIL", name);
    fflush(stdout);
    *failed += !all;
    return all;
}

/* An MPI_Allreduce of n floats on comm: 0 when it failed, 1 when it
 * succeeded, 2 when the sum is exact too (small integers: any order of
 * additions gives the same floats). */
static int float_sum(MPI_Comm comm, int n)
{
    int rank, size, rc = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    float *in = malloc(sizeof(float) * (size_t)n), *out = malloc(sizeof(float) * (size_t)n);
    if (in && out) {
        for (int i = 0; i < n; i++)
            in[i] = (float)(rank + i % 7);
        if (MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, comm) == MPI_SUCCESS) {
            rc = 2;
            for (int i = 0; rc == 2 && i < n; i++)
                if (out[i] != (float)(size * (size - 1) / 2 + size * (i % 7)))
                    rc = 1;
        }
    }
    free(in);
    free(out);
    return rc;
}

static MPI_Comm dup_with(const char *key, const char *value)
{
    MPI_Info info;
    MPI_Comm dup;
    MPI_Info_create(&info);
    MPI_Info_set(info, key, value);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &dup);
    MPI_Info_free(&info);
    return dup;
}

/* An MPI_Allreduce of COUNT ints on comm, checked. */
static int sum_ok(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *in = malloc(sizeof(int) * COUNT), *out = malloc(sizeof(int) * COUNT), ok = in && out;
    for (int i = 0; ok && i < COUNT; i++)
        in[i] = rank * 3 + i;
    if (ok && MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, comm) != MPI_SUCCESS)
        ok = 0;
    for (int i = 0; ok && i < COUNT; i++)
        ok = out[i] == 3 * size * (size - 1) / 2 + size * i;
    free(in);
    free(out);
    return ok;
}

static int set_module_path(const char *dir)
{
    int provided, index, count;
    MPI_T_cvar_handle h;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return 0;
    int ok = MPI_T_cvar_get_index("sampi_module_path", &index) == MPI_SUCCESS &&
             MPI_T_cvar_handle_alloc(index, NULL, &h, &count) == MPI_SUCCESS;
    if (ok) {
        ok = MPI_T_cvar_write(h, dir) == MPI_SUCCESS;
        MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
    return ok;
}

static const char *option(int argc, char **argv, const char *flag)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], flag) == 0)
            return argv[i + 1];
    return NULL;
}

int main(int argc, char **argv)
{
    int rank, size, failed = 0;
    char mine[256];
    struct maps m;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *ofi = option(argc, argv, "--ofi");
    const char *missing_rank = option(argc, argv, "--missing-rank");
    const char *missing_dir = option(argc, argv, "--missing-dir");
    int missing = missing_rank && missing_dir ? atoi(missing_rank) : -1;

    if (missing >= 0) {
        int ok = rank != missing || set_module_path(missing_dir);
        snprintf(mine, sizeof(mine), "could not write sampi_module_path through MPI_T");
        check(rank, "sampi_module_path written through MPI_T", ok, mine, &failed);
    }

    int ok = sum_ok(MPI_COMM_WORLD);
    check(rank, "default data path: right sum", ok, "wrong sum", &failed);
    ok = read_maps(&m) == 0;
    describe(&m, mine, sizeof(mine));
    ok = ok && !m.fabric && !m.rte && !m.psm && !m.verbs && !m.ofi_module && !m.dgram_module;
    check(rank, "default data path: no libfabric, DPDK, psm, ibverbs or SAMPI module mapped", ok,
          mine, &failed);

    if (ofi) {
        int loads = strcmp(ofi, "yes") == 0 && rank != missing;
        MPI_Comm dup = dup_with("sampi_netdev", "ofi");
        ok = sum_ok(dup);
        check(rank, "sampi_netdev=ofi: right sum", ok, "wrong sum", &failed);
        ok = read_maps(&m) == 0;
        describe(&m, mine, sizeof(mine));
        ok = ok && m.fabric == loads && m.ofi_module == loads && !m.rte && !m.dgram_module;
        check(rank,
              strcmp(ofi, "yes") == 0
                  ? "sampi_netdev=ofi: the ofi module and libfabric mapped where it loads, no DPDK"
                  : "sampi_netdev=ofi, module missing: still no libfabric, no DPDK",
              ok, mine, &failed);
        MPI_Comm_free(&dup);
    }

    const char *opti = option(argc, argv, "--opti");
    if (opti) {
        int loads = strcmp(opti, "yes") == 0;
        MPI_Comm dup = dup_with("sampi_algorithm", "optireduce");
        int rc = float_sum(dup, 300000); /* 1.2 MB: above sampi_optireduce_min_bytes */
        /* optireduce is approximate: only its fallback must be exact */
        ok = loads ? rc >= 1 : rc == 2;
        check(rank,
              loads ? "sampi_algorithm=optireduce: the call succeeds"
                    : "sampi_algorithm=optireduce, module missing: exact sum (PMPI_Allreduce)",
              ok, rc ? "inexact sum" : "the call failed", &failed);
        ok = read_maps(&m) == 0;
        describe(&m, mine, sizeof(mine));
        ok = ok && m.udp_module == loads && m.fabric == loads;
        check(rank,
              loads ? "sampi_algorithm=optireduce: the ofi-udp module and libfabric mapped"
                    : "sampi_algorithm=optireduce, module missing: still no libfabric",
              ok, mine, &failed);
        MPI_Comm_free(&dup);
    }

    if (rank == 0)
        printf("module_maps: %s\n", failed ? "FAILED" : "passed");
    MPI_Finalize();
    return failed ? 1 : 0;
}
