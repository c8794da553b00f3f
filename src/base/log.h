/*
 * log.h - SAMPI's diagnostics on stderr, prefixed with the world rank.
 *
 * Level 0 (errors, warnings) is always printed; higher levels follow
 * sampi_verbose.  The library never exits: errors are logged and returned.
 */
#ifndef SAMPI_LOG_H
#define SAMPI_LOG_H

#include <stdarg.h>

enum { SAMPI_LOG_WARN = 0, SAMPI_LOG_INFO = 1, SAMPI_LOG_SETUP = 2, SAMPI_LOG_CALL = 3 };

void sampi_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sampi_vlog(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
int sampi_log_enabled(int level);
void sampi_log_set_rank(int rank);

#define sampi_log_warn(...)  sampi_log(SAMPI_LOG_WARN, __VA_ARGS__)
#define sampi_log_error(...) sampi_log(SAMPI_LOG_WARN, __VA_ARGS__)

#endif
