/*
 * optcc_dump.c - prints the OptCC schedule in the text format of the OptCC
 * reference model, for test/optcc_crosscheck.test, which uses what CI
 * provides beside the checkout (../shared/specs), where present:
 *   optcc_dump P DEGRADED L K N [nobubble]
 */
#include "optcc_schedule.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_long(const char *s, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return errno || end == s || *end ? -1 : 0;
}

int main(int argc, char **argv)
{
    long long p, z, k, n;
    char *end;
    if ((argc != 6 && argc != 7) || parse_long(argv[1], &p) || parse_long(argv[2], &z) ||
        parse_long(argv[4], &k) || parse_long(argv[5], &n) ||
        (argc == 7 && strcmp(argv[6], "nobubble"))) {
        fprintf(stderr, "usage: %s P DEGRADED L K N [nobubble]\n", argv[0]);
        return 2;
    }
    double l = strtod(argv[3], &end);
    if (end == argv[3] || *end || p > 1 << 20 || z < 0 || z >= p || k > 1 << 20 || n < 1) {
        fprintf(stderr, "%s: bad argument\n", argv[0]);
        return 2;
    }
    struct sampi_optcc_schedule s;
    int rc = sampi_optcc_schedule_build(&s, (int)p, (int)z, l, (int)k, (size_t)n, argc == 6);
    if (rc) {
        fprintf(stderr, "%s: %s\n", argv[0], strerror(-rc));
        return 2;
    }
    rc = sampi_optcc_schedule_dump(&s, stdout);
    sampi_optcc_schedule_free(&s);
    if (rc || fflush(stdout)) {
        fprintf(stderr, "%s: write error\n", argv[0]);
        return 1;
    }
    return 0;
}
