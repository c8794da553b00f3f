/*
 * stragglar_dump.c - prints the StragglAR schedule for N ranks and straggler
 * S in the text format of the StragglAR reference checker, so that
 * test/stragglar_crosscheck.test can feed the builder's output to what CI
 * provides beside the checkout (../shared/specs/stragglar_check.py), where
 * present.
 *
 * usage: stragglar_dump N STRAGGLER
 */
#include "stragglar_schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_int(const char *s, int *v)
{
    char *end;
    long x = strtol(s, &end, 10);
    if (end == s || *end || x < 0 || x > SAMPI_STRAGGLAR_MAX_N)
        return -1;
    *v = (int)x;
    return 0;
}

int main(int argc, char **argv)
{
    int n, straggler;
    if (argc != 3 || parse_int(argv[1], &n) || parse_int(argv[2], &straggler)) {
        fprintf(stderr, "usage: stragglar_dump N STRAGGLER\n");
        return 2;
    }
    struct sampi_stragglar_schedule s;
    int rc = sampi_stragglar_schedule(n, straggler, &s);
    if (rc) {
        fprintf(stderr, "stragglar_dump: cannot build n=%d straggler=%d: %s\n", n, straggler,
                strerror(-rc));
        return 1;
    }
    rc = sampi_stragglar_dump(&s, stdout);
    sampi_stragglar_schedule_free(&s);
    if (rc || fflush(stdout)) {
        fprintf(stderr, "stragglar_dump: write error\n");
        return 1;
    }
    return 0;
}
