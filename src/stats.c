/*
 * stats.c - process-wide counters and their summary line.
 */
#include "stats.h"
#include "log.h"

#include <stdio.h>

const char *const sampi_fallback_reason_names[SAMPI_FALLBACK__COUNT] = {
    [SAMPI_FALLBACK_DATATYPE] = "datatype", [SAMPI_FALLBACK_OP] = "op",
    [SAMPI_FALLBACK_COMM] = "communicator", [SAMPI_FALLBACK_COUNT_LARGE] = "count",
    [SAMPI_FALLBACK_BROKEN] = "broken",     [SAMPI_FALLBACK_MISMATCH] = "config-mismatch",
};

struct sampi_stats sampi_process_stats;

void sampi_stats_log_summary(void)
{
    if (!sampi_log_enabled(SAMPI_LOG_INFO))
        return;
    char line[768];
    size_t n = 0;
    n += (size_t)snprintf(line + n, sizeof(line) - n, "summary: calls");
    for (int a = 0; a < SAMPI_ALGO__COUNT && n < sizeof(line); a++)
        n += (size_t)snprintf(line + n, sizeof(line) - n, " %s=%llu", sampi_algos[a].name,
                              (unsigned long long)sampi_stat_get(&sampi_process_stats.calls[a]));
    for (int r = 0; r < SAMPI_FALLBACK__COUNT && n < sizeof(line); r++)
        n += (size_t)snprintf(
            line + n, sizeof(line) - n, " fallback-%s=%llu", sampi_fallback_reason_names[r],
            (unsigned long long)sampi_stat_get(&sampi_process_stats.fallbacks[r]));
    if (n < sizeof(line))
        snprintf(line + n, sizeof(line) - n, " sent=%llu received=%llu errors=%llu",
                 (unsigned long long)sampi_stat_get(&sampi_process_stats.bytes_sent),
                 (unsigned long long)sampi_stat_get(&sampi_process_stats.bytes_received),
                 (unsigned long long)sampi_stat_get(&sampi_process_stats.errors));
    sampi_log(SAMPI_LOG_INFO, "%s", line);
}
