/*
 * config.c - parsing and storage of SAMPI's control variables (the merged
 * table of cvars.def).
 *
 * Integer values are read on every MPI_Allreduce, so they live in plain
 * atomics; string values are copied out under a lock because an MPI_T write
 * may replace them from another thread.
 */
#include "config.h"
#include "log.h"

#include <mpi.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const sampi_fallback_names[] = {"silent", "warn", "error", NULL};

const struct sampi_cvar_desc sampi_cvar_descs[SAMPI_CVAR__COUNT] = {
#define SAMPI_CVAR(id, nm, ty, def, it, mn, mx, sum, desc)                                         \
    [SAMPI_CVAR_##id] = {.name = nm,                                                               \
                         .type = SAMPI_CVAR_TYPE_##ty,                                             \
                         .default_text = def,                                                      \
                         .items = it,                                                              \
                         .min = mn,                                                                \
                         .max = mx,                                                                \
                         .summary = sum,                                                           \
                         .description = desc},
#include "cvars.def"
#undef SAMPI_CVAR
};

const struct sampi_cvar_info sampi_cvar_infos[SAMPI_CVAR__COUNT] = {
#define SAMPI_CVAR(...)
#define SAMPI_CVAR_INFO(id, verb, sc, cm)                                                          \
    [SAMPI_CVAR_##id] = {.present = 1,                                                             \
                         .verbosity = MPI_T_VERBOSITY_##verb,                                      \
                         .scope = MPI_T_SCOPE_##sc,                                                \
                         .comm = SAMPI_CVAR_COMM_##cm},
#include "cvars.def"
#undef SAMPI_CVAR_INFO
#undef SAMPI_CVAR
};

static _Atomic long long int_values[SAMPI_CVAR__COUNT];
static char string_values[SAMPI_CVAR__COUNT][SAMPI_CVAR_STRING_MAX];
static pthread_mutex_t string_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const bool_true[] = {"1", "true", "yes", "on", NULL};
static const char *const bool_false[] = {"0", "false", "no", "off", NULL};

static int word_in(const char *text, const char *const *words)
{
    for (int i = 0; words[i]; i++)
        if (strcasecmp(text, words[i]) == 0)
            return 1;
    return 0;
}

static void list_items(const char *const *items, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; items && items[i] && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", items[i]);
}

/* An enum value given by its item's number, as MPI_T writes it ("1" for
 * the second item): the index, or -1.  Keeps settings written when a
 * variable was a boolean meaning what they meant (sampi_busy_poll=1: poll). */
static int enum_number(const struct sampi_cvar_desc *d, const char *text)
{
    int n = 0;
    while (d->items && d->items[n])
        n++;
    if (!isdigit((unsigned char)text[0]) || strlen(text) > 3)
        return -1;
    for (const char *c = text; *c; c++)
        if (!isdigit((unsigned char)*c))
            return -1;
    int v = atoi(text);
    return v < n ? v : -1;
}

static int parse_integer(const struct sampi_cvar_desc *d, const char *text, long long *value,
                         char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || errno == ERANGE)
        goto bad;
    if (d->type == SAMPI_CVAR_TYPE_SIZE) {
        static const struct {
            char suffix;
            int shift;
        } units[] = {{'k', 10}, {'m', 20}, {'g', 30}, {'t', 40}};
        for (size_t i = 0; *end && i < sizeof(units) / sizeof(units[0]); i++) {
            if (tolower((unsigned char)*end) != units[i].suffix)
                continue;
            if (v > (LLONG_MAX >> units[i].shift))
                goto bad;
            v <<= units[i].shift;
            end++;
            if (tolower((unsigned char)*end) == 'b' || *end == 'i')
                end += (*end == 'i' && tolower((unsigned char)end[1]) == 'b') ? 2 : 1;
            break;
        }
    }
    while (isspace((unsigned char)*end))
        end++;
    if (*end != '\0' || v < d->min || v > d->max)
        goto bad;
    *value = v;
    return 0;
bad:
    snprintf(err, errlen, "sampi_%s: '%s' is not %s in [%lld, %lld]", d->name, text,
             d->type == SAMPI_CVAR_TYPE_SIZE ? "a byte count (k/m/g suffixes allowed)"
                                             : "an integer",
             d->min, d->max);
    return -EINVAL;
}

/* STRING variables whose text has a grammar of its own: their owners' checks
 * (SAMPI_CVAR_PARSE), NULL for free text. */
static sampi_cvar_parse_fn *const string_parsers[SAMPI_CVAR__COUNT] = {
#define SAMPI_CVAR(...)
#define SAMPI_CVAR_PARSE(id, fn) [SAMPI_CVAR_##id] = fn,
#include "cvars.def"
#undef SAMPI_CVAR_PARSE
#undef SAMPI_CVAR
};

int sampi_cvar_enum_index(enum sampi_cvar_id id, const char *item)
{
    const char *const *items = sampi_cvar_descs[id].items;
    for (int i = 0; item && items && items[i]; i++)
        if (strcasecmp(items[i], item) == 0)
            return i;
    return -1;
}

int sampi_cvar_parse(enum sampi_cvar_id id, const char *text, long long *value, char *err,
                     size_t errlen)
{
    if (id < 0 || id >= SAMPI_CVAR__COUNT) {
        snprintf(err, errlen, "no SAMPI control variable has index %d", (int)id);
        return -EINVAL;
    }
    const struct sampi_cvar_desc *d = &sampi_cvar_descs[id];
    char items[512];
    if (!text)
        text = "";
    switch (d->type) {
    case SAMPI_CVAR_TYPE_INT:
    case SAMPI_CVAR_TYPE_SIZE:
        return parse_integer(d, text, value, err, errlen);
    case SAMPI_CVAR_TYPE_BOOL:
        if (word_in(text, bool_true)) {
            *value = 1;
            return 0;
        }
        if (word_in(text, bool_false)) {
            *value = 0;
            return 0;
        }
        snprintf(err, errlen,
                 "sampi_%s: '%s' is not a boolean (accepted: 1, 0, true, false, "
                 "yes, no, on, off)",
                 d->name, text);
        return -EINVAL;
    case SAMPI_CVAR_TYPE_ENUM: {
        int i = sampi_cvar_enum_index(id, text);
        if (i < 0)
            i = enum_number(d, text);
        if (i >= 0) {
            *value = i;
            return 0;
        }
        list_items(d->items, items, sizeof(items));
        snprintf(err, errlen, "sampi_%s: '%s' is not one of: %s (or an item's number from 0)",
                 d->name, text, items);
        return -EINVAL;
    }
    case SAMPI_CVAR_TYPE_STRING:
        if (strlen(text) >= SAMPI_CVAR_STRING_MAX) {
            snprintf(err, errlen, "sampi_%s: value longer than %d characters", d->name,
                     SAMPI_CVAR_STRING_MAX - 1);
            return -EINVAL;
        }
        if (string_parsers[id] && string_parsers[id](text, err, errlen))
            return -EINVAL;
        *value = 0;
        return 0;
    }
    return -EINVAL;
}

/* every successful sampi_cvar_set (lane.h: a write closes the lanes) */
static _Atomic uint64_t writes;

uint64_t sampi_cvar_writes(void)
{
    return atomic_load_explicit(&writes, memory_order_acquire);
}

int sampi_cvar_set(enum sampi_cvar_id id, const char *text, char *err, size_t errlen)
{
    long long v = 0;
    int rc = sampi_cvar_parse(id, text, &v, err, errlen);
    if (rc)
        return rc;
    if (sampi_cvar_descs[id].type == SAMPI_CVAR_TYPE_STRING) {
        static _Atomic long long generations;
        pthread_mutex_lock(&string_lock);
        snprintf(string_values[id], SAMPI_CVAR_STRING_MAX, "%s", text ? text : "");
        pthread_mutex_unlock(&string_lock);
        v = atomic_fetch_add(&generations, 1) + 1;
    }
    atomic_store(&int_values[id], v);
    atomic_fetch_add_explicit(&writes, 1, memory_order_acq_rel);
    return 0;
}

long long sampi_cvar_int(enum sampi_cvar_id id)
{
    return atomic_load_explicit(&int_values[id], memory_order_relaxed);
}

const char *sampi_cvar_text(enum sampi_cvar_id id, char *buf, size_t len)
{
    const struct sampi_cvar_desc *d = &sampi_cvar_descs[id];
    long long v = sampi_cvar_int(id);
    switch (d->type) {
    case SAMPI_CVAR_TYPE_ENUM:
        snprintf(buf, len, "%s", d->items[v]);
        break;
    case SAMPI_CVAR_TYPE_STRING:
        pthread_mutex_lock(&string_lock);
        snprintf(buf, len, "%s", string_values[id]);
        pthread_mutex_unlock(&string_lock);
        break;
    default:
        snprintf(buf, len, "%lld", v);
    }
    return buf;
}

const char *sampi_cvar_env_name(enum sampi_cvar_id id, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "SAMPI_%s", sampi_cvar_descs[id].name);
    for (size_t i = 0; i < n && i < len; i++)
        buf[i] = (char)toupper((unsigned char)buf[i]);
    return buf;
}

int sampi_config_load(void)
{
    int rejected = 0;
    char err[600], env[64];
    for (int id = 0; id < SAMPI_CVAR__COUNT; id++) {
        const struct sampi_cvar_desc *d = &sampi_cvar_descs[id];
        if (sampi_cvar_set(id, d->default_text, err, sizeof(err)))
            sampi_log_warn("built-in default rejected: %s", err); /* a bug in cvars.def */
        const char *text = getenv(sampi_cvar_env_name(id, env, sizeof(env)));
        if (!text)
            continue;
        if (sampi_cvar_set(id, text, err, sizeof(err))) {
            sampi_log_warn("%s ignored, keeping the default '%s': %s", env, d->default_text, err);
            rejected++;
        }
    }
    return rejected;
}

static uint32_t pattern_hash(void)
{
    /* Every variable whose MPI_T scope says it must be the same on all ranks
     * (cvars.def marks what shapes the message pattern ALL_EQ); verbosity,
     * pinning, limits and polling may differ between ranks without harm. */
    uint32_t h = 2166136261u; /* FNV-1a over the values' text */
    char buf[SAMPI_CVAR_STRING_MAX];
    for (int i = 0; i < SAMPI_CVAR__COUNT; i++) {
        if (sampi_cvar_infos[i].scope != MPI_T_SCOPE_ALL_EQ)
            continue;
        sampi_cvar_text((enum sampi_cvar_id)i, buf, sizeof(buf));
        for (const char *c = buf; *c; c++)
            h = (h ^ (unsigned char)*c) * 16777619u;
        h = (h ^ 0xff) * 16777619u;
    }
    return h;
}

uint32_t sampi_config_pattern_hash(void)
{
    /* Formatting every value costs a microsecond, and the argument check asks
     * at every call it runs: the hash is kept with the count of writes it was
     * computed after, both in one word (the high half: that count + 1, so
     * that 0 means none), so that a thread reads a matching pair.  Read
     * before computing, the count can only be older than the values: then
     * the next call computes again. */
    static _Atomic uint64_t kept;
    const uint64_t tag = (sampi_cvar_writes() + 1) & 0xffffffffu;
    uint64_t k = atomic_load_explicit(&kept, memory_order_acquire);
    if (k >> 32 == tag)
        return (uint32_t)k;
    uint32_t h = pattern_hash();
    atomic_store_explicit(&kept, tag << 32 | h, memory_order_release);
    return h;
}
