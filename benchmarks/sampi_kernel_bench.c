/*
 * sampi_kernel_bench.c - memory bandwidth of the reduction kernels against
 * memcpy, measured side by side in one run.
 *
 * The kernels run on every received segment of an exact Allreduce, so they
 * should be limited by memory, not by arithmetic: the target is a float SUM at
 * no less than 0.8x the bandwidth memcpy reaches on the same machine.
 *
 * Bytes are counted as for memcpy, every byte read or written once: memcpy
 * moves 2 x size (read src, write dst), a kernel 3 x size (read in, read
 * inout, write inout).  Repetitions interleave memcpy and the kernels so that
 * a noisy neighbour slows them alike, and the median is reported.
 */
#include "kernels.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_BYTES (64UL << 20)
#define DEFAULT_REPS  21
/* Repetitions run and thrown away first: page faults, frequency ramp-up. */
#define WARMUP 2

struct measure {
    const char *name;
    enum sampi_op op;
    enum sampi_elem elem; /* SAMPI_ELEM__COUNT for memcpy */
    unsigned traffic;     /* buffer-sized passes over memory per repetition */
    double *times;
    double median;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *f, const char *argv0)
{
    fprintf(f,
            "usage: %s [-s bytes] [-r reps] [--json] [-h]\n"
            "  -s bytes  buffer size, with an optional K, M or G suffix (default 64M)\n"
            "  -r reps   timed repetitions; the median is reported (default %d)\n"
            "  --json    one JSON object per line instead of the table\n"
            "  -h        this help\n",
            argv0, DEFAULT_REPS);
}

/* Sizes are binary multiples, as "64M" means a 64 MiB buffer. */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-')
        return -1;
    switch (*end) {
    case 'G':
    case 'g':
        v <<= 10;
        /* fall through */
    case 'M':
    case 'm':
        v <<= 10;
        /* fall through */
    case 'K':
    case 'k':
        v <<= 10;
        end++;
        break;
    default:
        break;
    }
    if (*end != '\0' || v == 0)
        return -1;
    *out = (size_t)v;
    return 0;
}

static void fill(enum sampi_elem elem, void *buf, size_t bytes, double base)
{
    /* Normal values that stay small over many SUMs: denormals or infinities
     * would measure the FPU's slow paths, not memory. */
    if (elem == SAMPI_ELEM_F64) {
        double *d = buf;
        for (size_t k = 0; k < bytes / sizeof *d; k++)
            d[k] = base + (double)(k % 1024) / 1024;
    } else {
        float *f = buf;
        for (size_t k = 0; k < bytes / sizeof *f; k++)
            f[k] = (float)(base + (double)(k % 1024) / 1024);
    }
}

int main(int argc, char **argv)
{
    size_t bytes = DEFAULT_BYTES;
    long reps = DEFAULT_REPS;
    int json = 0, rc = EXIT_FAILURE;

    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0) {
            usage(stdout, argv[0]);
            return EXIT_SUCCESS;
        } else if (strcmp(argv[a], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[a], "-s") == 0 && a + 1 < argc) {
            if (parse_size(argv[++a], &bytes) != 0) {
                fprintf(stderr, "%s: bad size '%s'\n", argv[0], argv[a]);
                return 2;
            }
        } else if (strcmp(argv[a], "-r") == 0 && a + 1 < argc) {
            char *end;
            reps = strtol(argv[++a], &end, 10);
            if (*end != '\0' || reps < 1 || reps > 1000000) {
                fprintf(stderr, "%s: bad repetition count '%s'\n", argv[0], argv[a]);
                return 2;
            }
        } else {
            usage(stderr, argv[0]);
            return 2;
        }
    }
    /* whole doubles, so every kernel covers the same bytes */
    bytes -= bytes % sizeof(double);
    if (bytes == 0) {
        fprintf(stderr, "%s: buffer must hold at least one double\n", argv[0]);
        return 2;
    }

    struct measure m[] = {
        {"memcpy", SAMPI_OP__COUNT, SAMPI_ELEM__COUNT, 2, NULL, 0},
        {"sum_f32", SAMPI_OP_SUM, SAMPI_ELEM_F32, 3, NULL, 0},
        {"sum_f64", SAMPI_OP_SUM, SAMPI_ELEM_F64, 3, NULL, 0},
    };
    const size_t nm = sizeof m / sizeof m[0];
    void *in = NULL, *inout = NULL;

    if (posix_memalign(&in, 4096, bytes) != 0 || posix_memalign(&inout, 4096, bytes) != 0) {
        fprintf(stderr, "%s: cannot allocate 2 x %zu bytes\n", argv[0], bytes);
        goto fail;
    }
    for (size_t k = 0; k < nm; k++) {
        m[k].times = calloc((size_t)reps, sizeof(double));
        if (m[k].times == NULL) {
            fprintf(stderr, "%s: out of memory\n", argv[0]);
            goto fail;
        }
    }

    for (long r = -WARMUP; r < reps; r++) {
        for (size_t k = 0; k < nm; k++) {
            double t0, t1;
            /* Every measurement starts from freshly written buffers, so the
             * caches hold the same leftovers for memcpy and the kernels, and
             * the kernels never see another type's bit patterns. */
            fill(m[k].elem, in, bytes, 1.0);
            fill(m[k].elem, inout, bytes, 2.0);
            if (m[k].elem == SAMPI_ELEM__COUNT) {
                t0 = now();
                memcpy(inout, in, bytes);
                t1 = now();
            } else {
                const sampi_reduce_fn fn = sampi_reduce_fn_get(m[k].op, m[k].elem);
                t0 = now();
                fn(inout, in, bytes / sampi_elem_size(m[k].elem));
                t1 = now();
            }
            if (r >= 0)
                m[k].times[r] = t1 - t0;
        }
    }

    for (size_t k = 0; k < nm; k++)
        m[k].median = median(m[k].times, (size_t)reps);
    const double copy_bw = (double)m[0].traffic * (double)bytes / m[0].median;

    if (!json) {
        printf("sampi_kernel_bench: buffer %zu bytes (%.1f MiB), median of %ld repetitions\n",
               bytes, (double)bytes / (1 << 20), reps);
        printf("bytes moved per repetition: memcpy 2 x buffer, kernel 3 x buffer\n\n");
        printf("%-10s %12s %12s %12s %10s\n", "name", "median ms", "min ms", "GB/s", "vs memcpy");
    }
    for (size_t k = 0; k < nm; k++) {
        const double traffic = (double)m[k].traffic * (double)bytes;
        const double bw = traffic / m[k].median;
        const double best = m[k].times[0]; /* sorted by median() */
        if (json)
            printf("{\"bench\":\"sampi_kernel\",\"name\":\"%s\",\"op\":\"%s\",\"elem\":\"%s\","
                   "\"buffer_bytes\":%zu,\"bytes_moved\":%.0f,\"reps\":%ld,"
                   "\"median_s\":%.9f,\"min_s\":%.9f,\"bandwidth_GBps\":%.3f,"
                   "\"ratio_vs_memcpy\":%.4f}\n",
                   m[k].name, m[k].elem == SAMPI_ELEM__COUNT ? "copy" : sampi_op_name(m[k].op),
                   m[k].elem == SAMPI_ELEM__COUNT ? "byte" : sampi_elem_name(m[k].elem), bytes,
                   traffic, reps, m[k].median, best, bw / 1e9, bw / copy_bw);
        else
            printf("%-10s %12.3f %12.3f %12.2f %9.2fx\n", m[k].name, m[k].median * 1e3, best * 1e3,
                   bw / 1e9, bw / copy_bw);
    }
    rc = EXIT_SUCCESS;

fail:
    for (size_t k = 0; k < nm; k++)
        free(m[k].times);
    free(in);
    free(inout);
    return rc;
}
