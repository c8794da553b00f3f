/*
 * module.c - the loader of data-path modules (module.h).
 *
 * Each module file is tried once per process: what dlopen gave (the module,
 * or the reason it could not be used) is remembered, so a hundred
 * communicators asking for a missing module cost one search.  A failure is
 * forgotten when sampi_module_path changes (an MPI_T write), so that a
 * corrected path is tried.
 */
#define _GNU_SOURCE /* dladdr */
#include "module.h"
#include "netdev.h"
#include "pin.h"
#include "sampi_internal.h"
#include "wait.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef SAMPI_PKGLIBDIR
#define SAMPI_PKGLIBDIR "/usr/local/lib/sampi"
#endif

/* What module_glue.c records in every module, from this build's cvars.def. */
static const char cvar_names[] =
#define SAMPI_CVAR(id, name, ...) name ","
#include "cvars.def"
#undef SAMPI_CVAR
    "";

#define MAX_MODULES 8
#define REASON_MAX  1024

static const struct sampi_module_host host = {
    .cvar_int = sampi_cvar_int,
    .cvar_text = sampi_cvar_text,
    .vlog = sampi_vlog,
    .log_enabled = sampi_log_enabled,
    .now_ns = sampi_now_ns,
    .wait_pause = sampi_wait_pause,
    .wait_mode_now = sampi_wait_mode_now,
    .wait_count_sleep = sampi_wait_count_sleep,
    .waiter_allreduce = sampi_waiter_allreduce,
    .waiter_allgather = sampi_waiter_allgather,
    .pin_progress_pu = sampi_pin_progress_pu,
};

static struct entry {
    char file[64];
    const struct sampi_module *mod; /* NULL: failed, see reason */
    long long path_gen;             /* sampi_module_path's generation at the failure */
    char reason[REASON_MAX];
} entries[MAX_MODULES];
static int n_entries;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The directory of the shared object that holds this code (libsampi.so),
 * into buf; "" when unknown or when the code is in the program itself
 * (libsampi_core linked in): a program's directory, or the current one for a
 * program found in PATH, is no place to load code from unasked. */
static void core_dir(char *buf, size_t len)
{
    Dl_info info;
    buf[0] = '\0';
    if (!dladdr((void *)&sampi_module_load, &info) || !info.dli_fname || !*info.dli_fname)
        return;
    /* glibc names the main program by argv[0] */
    if (strcmp(info.dli_fname, program_invocation_name) == 0)
        return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (slash)
        snprintf(buf, len, "%.*s", (int)(slash - info.dli_fname), info.dli_fname);
}

const char *sampi_module_search_path(char *buf, size_t len)
{
    char set[SAMPI_CVAR_STRING_MAX];
    sampi_cvar_text(SAMPI_CVAR_MODULE_PATH, set, sizeof(set));
    if (set[0]) {
        snprintf(buf, len, "%s", set);
        return buf;
    }
    char dir[512];
    core_dir(dir, sizeof(dir));
    if (dir[0] && strcmp(dir, SAMPI_PKGLIBDIR) != 0)
        snprintf(buf, len, "%s/sampi:%s:%s", dir, dir, SAMPI_PKGLIBDIR);
    else
        snprintf(buf, len, "%s", SAMPI_PKGLIBDIR);
    return buf;
}

/* snprintf for messages that may be cut short: paths and dlerror() texts
 * are of any length, and a cut message is still a message. */
static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* What is wrong with the descriptor `m` found in a file, or NULL. */
static const char *check(const struct sampi_module *m, const char *name, char *buf, size_t len)
{
    if (m->abi != SAMPI_MODULE_ABI) {
        say(buf, len, "built for module ABI %u, this libsampi has %u (another SAMPI version)",
            m->abi, SAMPI_MODULE_ABI);
        return buf;
    }
    if (!m->cvars || strcmp(m->cvars, cvar_names) != 0)
        return "built against another list of control variables (another SAMPI build)";
    if (!m->name || strcmp(m->name, name) != 0) {
        say(buf, len, "carries transport '%s', not '%s'", m->name ? m->name : "(none)", name);
        return buf;
    }
    if (!m->init || (!m->netdev && !m->dgram))
        return "has no init function or no ops table";
    return NULL;
}

/* Try FILE.so in one directory: the module, or NULL and why in `why`. */
static const struct sampi_module *try_file(const char *path, const char *name, char *why,
                                           size_t len)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *dl = dlerror();
        say(why, len, "%s", dl ? dl : "dlopen failed");
        return NULL;
    }
    char detail[256];
    const struct sampi_module *m = dlsym(h, SAMPI_MODULE_SYMBOL);
    const char *problem = NULL;
    if (!m)
        problem = "no symbol " SAMPI_MODULE_SYMBOL " (not a SAMPI module)";
    else
        problem = check(m, name, detail, sizeof(detail));
    if (!problem) {
        int rc = m->init(&host);
        if (!rc)
            return m; /* stays loaded for the life of the process */
        /* whatever init started stays mapped: no dlclose */
        say(why, len, "%s: its init failed: %s", path, sampi_strerror(rc));
        return NULL;
    }
    say(why, len, "%s: %s", path, problem);
    dlclose(h);
    return NULL;
}

/* Try FILE.so in each directory of the search path: the module, or NULL
 * with the reason in e->reason. */
static const struct sampi_module *search(struct entry *e, const char *name)
{
    char path_list[1024], path[1200], why[REASON_MAX], first_error[REASON_MAX] = "";
    char tried[REASON_MAX] = "";
    size_t tried_len = 0;
    int present = 0;
    sampi_module_search_path(path_list, sizeof(path_list));
    for (char *save = NULL, *dir = strtok_r(path_list, ":", &save); dir;
         dir = strtok_r(NULL, ":", &save)) {
        say(path, sizeof(path), "%s/%s.so", dir, e->file);
        if (tried_len < sizeof(tried) - 1) {
            say(tried + tried_len, sizeof(tried) - tried_len, "%s%s", tried_len ? ", " : "", path);
            tried_len = strlen(tried);
        }
        int exists = access(path, F_OK) == 0;
        const struct sampi_module *m = try_file(path, name, why, sizeof(why));
        if (m)
            return m;
        /* The first file that is there but cannot be used says the most;
         * when none is there, the first "not found" does. */
        if ((exists && !present) || !first_error[0])
            say(first_error, sizeof(first_error), "%s", why);
        present = present || exists;
    }
    say(e->reason, sizeof(e->reason),
        "cannot load module %s.so for '%s' (tried %s): %s; sampi_module_path "
        "(SAMPI_MODULE_PATH) names the directories to search",
        e->file, name, tried[0] ? tried : "no directory",
        first_error[0] ? first_error : "no directory to search");
    return NULL;
}

const struct sampi_module *sampi_module_load(const char *file, const char *name, char *err,
                                             size_t errlen)
{
    const struct sampi_module *m = NULL;
    long long gen = sampi_cvar_int(SAMPI_CVAR_MODULE_PATH);
    pthread_mutex_lock(&lock);
    struct entry *e = NULL;
    for (int i = 0; i < n_entries; i++)
        if (strcmp(entries[i].file, file) == 0)
            e = &entries[i];
    if (!e && n_entries < MAX_MODULES) {
        e = &entries[n_entries++];
        snprintf(e->file, sizeof(e->file), "%s", file);
        e->path_gen = gen - 1; /* not tried yet */
    }
    if (!e) {
        if (err && errlen)
            snprintf(err, errlen, "cannot load module %s.so: too many modules", file);
    } else if (e->mod) {
        m = e->mod;
    } else {
        if (e->path_gen != gen) {
            e->mod = search(e, name);
            e->path_gen = gen;
        }
        m = e->mod;
        if (!m && err && errlen)
            snprintf(err, errlen, "%s", e->reason);
    }
    pthread_mutex_unlock(&lock);
    return m;
}

void sampi_module_finalize_all(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_entries; i++)
        if (entries[i].mod && entries[i].mod->finalize)
            entries[i].mod->finalize();
    pthread_mutex_unlock(&lock);
}
