/*
 * debug_delay.c - the SAMPI_DEBUG_DELAY straggler injector.
 *
 * The text is parsed again only when the variable changes (its generation,
 * see config.h), so the cost on every MPI_Allreduce is one atomic load when
 * the variable is empty.
 */
#include "debug_delay.h"
#include "sampi_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DELAY_MS 600000.0

static int bad(char *err, size_t errlen, const char *text, const char *why)
{
    snprintf(err, errlen,
             "sampi_debug_delay: '%s' %s (accepted: rank:ms[:jitter_ms] entries separated by "
             "commas, rank a number or *, times 0 to %.0f ms)",
             text, why, MAX_DELAY_MS);
    return -EINVAL;
}

static int parse_ms(const char *p, char **end, double *out)
{
    *out = strtod(p, end);
    return *end != p && *out >= 0 && *out <= MAX_DELAY_MS;
}

int sampi_debug_delay_parse(const char *text, int rank, double *ms, double *jitter_ms, char *err,
                            size_t errlen)
{
    *ms = *jitter_ms = 0;
    if (!text || !*text)
        return 0;
    const char *p = text;
    while (*p) {
        char *end;
        int all = *p == '*';
        long r = -1;
        if (all) {
            end = (char *)p + 1;
        } else {
            r = strtol(p, &end, 10);
            if (end == p || r < 0)
                return bad(err, errlen, text, "names no rank");
        }
        if (*end != ':')
            return bad(err, errlen, text, "lacks ':ms' after a rank");
        double d, j = 0;
        if (!parse_ms(end + 1, &end, &d))
            return bad(err, errlen, text, "has a bad delay");
        if (*end == ':' && !parse_ms(end + 1, &end, &j))
            return bad(err, errlen, text, "has a bad jitter");
        if (*end != ',' && *end != '\0')
            return bad(err, errlen, text, "has text after an entry");
        if (all || r == rank) {
            *ms = d;
            *jitter_ms = j;
        }
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

/* A variable of the rank:ms[:jitter_ms] grammar and what it says for this
 * rank, parsed again when its generation changes. */
struct rank_delay {
    enum sampi_cvar_id var;
    const char *where; /* for the warning: "before every MPI_Allreduce" */
    _Atomic long long generation, us, jitter_us;
};

static struct rank_delay entry_delay = {SAMPI_CVAR_DEBUG_DELAY, "before every MPI_Allreduce", -1, 0,
                                        0};
static struct rank_delay stall_delay = {
    SAMPI_CVAR_DEBUG_STALL,
    "inside every MPI_Allreduce SAMPI runs, after the argument check is posted", -1, 0, 0};
static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;

static void refresh(struct rank_delay *d, long long generation)
{
    pthread_mutex_lock(&refresh_lock);
    if (atomic_load(&d->generation) != generation) {
        char text[SAMPI_CVAR_STRING_MAX], err[256];
        double ms = 0, jitter = 0;
        int rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        sampi_cvar_text(d->var, text, sizeof(text));
        sampi_debug_delay_parse(text, rank, &ms, &jitter, err, sizeof(err)); /* validated on set */
        atomic_store(&d->us, (long long)(ms * 1000));
        atomic_store(&d->jitter_us, (long long)(jitter * 1000));
        atomic_store(&d->generation, generation);
        if (ms > 0 || jitter > 0)
            sampi_log_warn("debug: sampi_%s makes this rank sleep %.3f ms (+ up to %.3f ms) %s",
                           sampi_cvar_descs[d->var].name, ms, jitter, d->where);
    }
    pthread_mutex_unlock(&refresh_lock);
}

static void apply(struct rank_delay *d)
{
    long long generation = sampi_cvar_int(d->var);
    if (atomic_load_explicit(&d->generation, memory_order_acquire) != generation)
        refresh(d, generation);
    long long us = atomic_load_explicit(&d->us, memory_order_relaxed);
    long long jit = atomic_load_explicit(&d->jitter_us, memory_order_relaxed);
    if (us <= 0 && jit <= 0)
        return;
    static _Thread_local unsigned seed;
    if (!seed)
        seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&seed;
    if (jit > 0)
        us += (long long)((double)rand_r(&seed) / RAND_MAX * (double)jit);
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

void sampi_debug_delay_apply(void)
{
    apply(&entry_delay);
}

void sampi_debug_stall_apply(void)
{
    apply(&stall_delay);
}

/* ---------------------------------------------- sampi_debug_algo_delay */

int sampi_debug_algo_delay_parse(const char *text, sampi_debug_algo_lookup_fn *lookup, double *ms,
                                 int nalgos, char *err, size_t errlen)
{
    for (int i = 0; i < nalgos; i++)
        ms[i] = 0;
    const char *p = text ? text : "";
    while (*p) {
        char name[32];
        size_t len = strcspn(p, ":,");
        if (p[len] != ':' || len == 0 || len >= sizeof(name))
            goto bad;
        memcpy(name, p, len);
        name[len] = '\0';
        int id = lookup(name);
        if (id < 0 || id >= nalgos)
            goto bad;
        char *end;
        double d;
        if (!parse_ms(p + len + 1, &end, &d) || (*end != ',' && *end != '\0'))
            goto bad;
        ms[id] = d;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
bad:
    snprintf(err, errlen,
             "sampi_debug_algo_delay: '%s' is not a list of algorithm:ms (an algorithm other "
             "than auto, a delay of 0 to %.0f ms), e.g. 'ring:3' or 'native:5,rhd:5'",
             text, MAX_DELAY_MS);
    return -EINVAL;
}

static _Atomic long long algo_generation = -1;
static _Atomic long long algo_delay_us[SAMPI_DEBUG_ALGOS_MAX];

void sampi_debug_algo_delay_apply(int algo, sampi_debug_algo_lookup_fn *lookup)
{
    long long generation = sampi_cvar_int(SAMPI_CVAR_DEBUG_ALGO_DELAY);
    if (atomic_load_explicit(&algo_generation, memory_order_acquire) != generation) {
        pthread_mutex_lock(&refresh_lock);
        char text[SAMPI_CVAR_STRING_MAX], err[256];
        double ms[SAMPI_DEBUG_ALGOS_MAX];
        sampi_cvar_text(SAMPI_CVAR_DEBUG_ALGO_DELAY, text, sizeof(text));
        if (sampi_debug_algo_delay_parse(text, lookup, ms, SAMPI_DEBUG_ALGOS_MAX, err, sizeof(err)))
            ms[0] = 0; /* validated on set */
        for (int i = 0; i < SAMPI_DEBUG_ALGOS_MAX; i++)
            atomic_store(&algo_delay_us[i], (long long)(ms[i] * 1000));
        atomic_store(&algo_generation, generation);
        pthread_mutex_unlock(&refresh_lock);
    }
    if (algo < 0 || algo >= SAMPI_DEBUG_ALGOS_MAX)
        return;
    long long us = atomic_load_explicit(&algo_delay_us[algo], memory_order_relaxed);
    if (us <= 0)
        return;
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

int sampi_debug_delay_validate(const char *text, char *err, size_t errlen)
{
    double ms, jitter;
    return sampi_debug_delay_parse(text, 0, &ms, &jitter, err, errlen);
}

int sampi_debug_stall_validate(const char *text, char *err, size_t errlen)
{
    double ms, jitter;
    char why[256];
    int rc = sampi_debug_delay_parse(text, 0, &ms, &jitter, why, sizeof(why));
    if (rc) /* the same grammar, under this variable's name */
        snprintf(err, errlen, "sampi_debug_stall%s", why + strlen("sampi_debug_delay"));
    return rc;
}
