/*
 * log.c - one line per message, written with a single write() so lines from
 * several threads or ranks sharing a terminal do not interleave mid-line.
 */
#include "log.h"
#include "config.h"

#include <stdio.h>
#include <unistd.h>

static int world_rank = -1;

void sampi_log_set_rank(int rank)
{
    world_rank = rank;
}

int sampi_log_enabled(int level)
{
    return level <= sampi_cvar_int(SAMPI_CVAR_VERBOSE);
}

void sampi_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sampi_vlog(level, fmt, ap);
    va_end(ap);
}

void sampi_vlog(int level, const char *fmt, va_list ap)
{
    if (!sampi_log_enabled(level))
        return;
    char line[2048];
    int n = world_rank >= 0 ? snprintf(line, sizeof(line), "sampi[%d]: ", world_rank)
                            : snprintf(line, sizeof(line), "sampi: ");
    n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    if (n >= (int)sizeof(line) - 1)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}
