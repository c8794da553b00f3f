/*
 * repro_check.c - what a run of `auto` gives, for comparing two runs:
 *
 *   repro_check [--calls N]
 *
 * N calls (default 40) of MPI_Allreduce(MPI_FLOAT, MPI_SUM) on
 * MPI_COMM_WORLD at each of 64 KiB, 256 KiB and 1 MiB, on inputs that make
 * the order of the additions show in the last bits (values spread over many
 * binades, different on every rank and call).  Rank 0 prints
 *
 *   repro_check: np=P hash=H native=A ring=B rhd=C ...
 *
 * H a hash of every result of every call, A, B, C how many calls each
 * algorithm ran (the pvar sampi_calls).  Every result is also compared with
 * PMPI_Allreduce's within a tolerance, so a wrong result fails the run (exit
 * 1 on every rank); equal bits between runs are the caller's check.
 */
#include "mpitest.h"

#include <float.h>
#include <math.h>

static float value(int rank, int call, size_t i)
{
    uint64_t x = mt_hash(0x51AB, &(uint64_t[]){(uint64_t)rank, (uint64_t)call, i}, 24);
    int exponent = (int)(x % 40) - 20;
    return ldexpf(1.0f + (float)((x >> 8) % 1000) / 1000.0f, exponent) * ((x >> 20) & 1 ? -1 : 1);
}

int main(int argc, char **argv)
{
    struct mt_state st;
    int size = mt_start(&st, "repro_check", &argc, &argv, 1);
    int calls = atoi(mt_option(argc, argv, "--calls", "40"));
    const size_t counts[] = {16384, 65536, 262144};
    float *in = mt_malloc(counts[2] * sizeof(float)), *out = mt_malloc(counts[2] * sizeof(float));
    float *ref = mt_malloc(counts[2] * sizeof(float)), *mag = mt_malloc(counts[2] * sizeof(float));
    /* sampi_calls counts from the handle's start: started before the calls */
    int idx, n = 0, counting = 0;
    MPI_T_pvar_session ses;
    MPI_T_pvar_handle hd;
    if (MPI_T_pvar_get_index("sampi_calls", MPI_T_PVAR_CLASS_COUNTER, &idx) == MPI_SUCCESS &&
        MPI_T_pvar_session_create(&ses) == MPI_SUCCESS &&
        MPI_T_pvar_handle_alloc(ses, idx, NULL, &hd, &n) == MPI_SUCCESS && n <= 64 &&
        MPI_T_pvar_start(ses, hd) == MPI_SUCCESS)
        counting = 1;
    uint64_t h = 14695981039346656037ull;
    long bad = 0;
    for (size_t s = 0; s < sizeof(counts) / sizeof(counts[0]); s++)
        for (int c = 0; c < calls; c++) {
            for (size_t i = 0; i < counts[s]; i++)
                in[i] = value(st.rank, c, i);
            if (MPI_Allreduce(in, out, (int)counts[s], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
                MPI_SUCCESS) {
                bad++;
                continue;
            }
            PMPI_Allreduce(in, ref, (int)counts[s], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            for (size_t i = 0; i < counts[s]; i++)
                in[i] = fabsf(in[i]);
            PMPI_Allreduce(in, mag, (int)counts[s], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            /* another order of the additions errs by at most (p - 1) roundings
             * of the partial sums, each bounded by the sum of magnitudes */
            for (size_t i = 0; i < counts[s]; i++)
                if (fabsf(out[i] - ref[i]) > 4.0f * (float)size * FLT_EPSILON * mag[i]) {
                    bad++;
                    break;
                }
            h = mt_hash(h, out, counts[s] * sizeof(float));
        }

    /* sampi_calls: one element per algorithm, named by sampi_algorithm's enum */
    int enum_n = 0, len;
    unsigned long long ran[64] = {0};
    MPI_T_enum en = MPI_T_ENUM_NULL;
    char line[1024], name[64];
    snprintf(line, sizeof(line), "repro_check: np=%d hash=%016llx", size, (unsigned long long)h);
    if (counting && MPI_T_pvar_read(ses, hd, ran) == MPI_SUCCESS) {
        int idx_alg;
        if (MPI_T_cvar_get_index("sampi_algorithm", &idx_alg) == MPI_SUCCESS) {
            char cname[64], desc[16];
            int nl = sizeof(cname), dl = sizeof(desc), verb, bind, scope;
            MPI_Datatype dt;
            MPI_T_cvar_get_info(idx_alg, cname, &nl, &verb, &dt, &en, desc, &dl, &bind, &scope);
            char ename[64];
            int elen = sizeof(ename);
            MPI_T_enum_get_info(en, &enum_n, ename, &elen);
        }
        for (int a = 0; a < n && a < enum_n; a++) {
            int v;
            len = sizeof(name);
            if (ran[a] && MPI_T_enum_get_item(en, a, &v, name, &len) == MPI_SUCCESS) {
                size_t at = strlen(line);
                snprintf(line + at, sizeof(line) - at, " %s=%llu", name, ran[a]);
            }
        }
    }
    if (st.rank == 0) {
        printf("%s\n", line);
        fflush(stdout);
    }
    int rc = mt_agreed_exit(bad);
    if (st.rank == 0)
        printf("repro_check: %ld wrong results on rank 0\n", bad);
    free(in);
    free(out);
    free(ref);
    free(mag);
    MPI_T_finalize();
    MPI_Finalize();
    return rc;
}
