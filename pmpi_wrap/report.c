/*
 * report.c - the end-of-run report (sampi_report): the MPI half.
 *
 * Every rank of a communicator holds the same durations after a tracked
 * call, so only each communicator's rank 0 sums them (src/auto/report.h, fed
 * by the tracker) and keeps a record of the communicator when its state is
 * freed (a sampi_comm_owner row, runtime.c: also for a
 * communicator the program freed before MPI_Finalize).  At MPI_Finalize,
 * after every state was freed, the records and each rank's host name go to
 * MPI_COMM_WORLD rank 0 (a gather of sizes, a gatherv of bytes, a gather of
 * names: only when sampi_report is set, which every rank sets alike), which
 * writes the text and the JSON.  A path that cannot be written gives one
 * warning; the job's result is unaffected.
 */
#include "auto.h"
#include "comm.h"
#include "report.h"
#include "sampi_internal.h"
#include "tracker.h"
#include "wrap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOST_MAX 64

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static char *kept;      /* packed records, one after the other */
static size_t kept_len; /* bytes used */
static size_t kept_cap;

static int wanted(char *path, size_t len)
{
    return sampi_cvar_text(SAMPI_CVAR_REPORT, path, len)[0] != '\0';
}

/* c's rank in MPI_COMM_WORLD for each of its ranks (-1 unknown). */
static int *world_ranks(const struct sampi_comm *c)
{
    int *out = malloc((size_t)c->size * sizeof(int)), *in = malloc((size_t)c->size * sizeof(int));
    MPI_Group g = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    if (!out || !in) {
        free(out);
        free(in);
        return NULL;
    }
    for (int r = 0; r < c->size; r++) {
        in[r] = r;
        out[r] = -1;
    }
    if (PMPI_Comm_group(c->comm, &g) == MPI_SUCCESS &&
        PMPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS)
        PMPI_Group_translate_ranks(g, c->size, in, world, out);
    if (g != MPI_GROUP_NULL)
        PMPI_Group_free(&g);
    if (world != MPI_GROUP_NULL)
        PMPI_Group_free(&world);
    free(in);
    return out;
}

void sampi_report_keep(struct sampi_comm *c)
{
    char path[SAMPI_CVAR_STRING_MAX];
    if (!wanted(path, sizeof(path)) || c->parent || c->rank != 0)
        return;
    struct sampi_report_comm rec;
    memset(&rec, 0, sizeof(rec));
    uint64_t any = sampi_stat_get(&c->stats.nb_calls);
    for (int a = 0; a < SAMPI_STATS_ALGOS_MAX; a++)
        any += rec.h.calls[a] = sampi_stat_get(&c->stats.calls[a]);
    if (!any)
        return; /* no allreduce here */
    rec.h.label = sampi_comm_label(c);
    rec.h.size = c->size;
    rec.h.ranks_per_node = (int)sampi_cvar_int(SAMPI_CVAR_HIER_RANKS_PER_NODE);
    rec.h.nb_calls = sampi_stat_get(&c->stats.nb_calls);
    rec.h.slowdown = 0;
    rec.h.degraded = sampi_tracker_degraded(c, &rec.h.slowdown);
    sampi_report_cells_from(sampi_auto_table(c), &rec);
    const struct sampi_report_acc *acc = sampi_tracker_report(c);
    if (acc && acc->rank) {
        rec.h.tot = acc->tot;
        rec.rank = acc->rank;
    }
    rec.world_rank = world_ranks(c);
    if (!rec.world_rank)
        return;
    size_t need = sampi_report_pack(&rec, NULL);
    pthread_mutex_lock(&kept_lock);
    if (kept_len + need > kept_cap) {
        size_t cap = kept_cap ? kept_cap : 1 << 16;
        while (cap < kept_len + need)
            cap *= 2;
        char *p = realloc(kept, cap);
        if (p) {
            kept = p;
            kept_cap = cap;
        }
    }
    if (kept_len + need <= kept_cap) {
        sampi_report_pack(&rec, kept + kept_len);
        kept_len += need;
    }
    pthread_mutex_unlock(&kept_lock);
    free(rec.world_rank);
}

/* ---------------------------------------------------------------- writing */

/* Write len bytes of text to `path` (the path's rules: see sampi_report).
 * 0, or -1 after one warning. */
static int write_file(const char *path, int overwrite, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | (overwrite ? 0 : O_EXCL) | O_CLOEXEC, 0644);
    if (fd < 0) {
        sampi_log_warn("sampi_report: cannot write %s: %s%s", path, strerror(errno),
                       errno == EEXIST ? " (an existing report is kept; end the path with ! to "
                                         "overwrite it, or put %p in it)"
                                       : "");
        return -1;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t k = write(fd, text + done, len - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            sampi_log_warn("sampi_report: cannot write %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        done += (size_t)k;
    }
    if (close(fd)) {
        sampi_log_warn("sampi_report: cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* The path with %p expanded and a final ! taken off (*overwrite). */
static void expand(const char *in, char *out, size_t len, int *overwrite)
{
    size_t n = 0, k = strlen(in);
    *overwrite = k > 0 && in[k - 1] == '!';
    if (*overwrite)
        k--;
    for (size_t i = 0; i < k && n + 1 < len; i++) {
        if (in[i] == '%' && i + 1 < k && in[i + 1] == 'p') {
            n += (size_t)snprintf(out + n, len - n, "%ld", (long)getpid());
            n = n < len ? n : len - 1;
            i++;
        } else {
            out[n++] = in[i];
        }
    }
    out[n] = '\0';
}

/* The variables not at their defaults. */
static int changed_vars(const char **names, char (*values)[SAMPI_CVAR_STRING_MAX])
{
    int k = 0;
    for (int id = 0; id < SAMPI_CVAR__COUNT; id++) {
        const struct sampi_cvar_desc *d = &sampi_cvar_descs[id];
        char now[SAMPI_CVAR_STRING_MAX], err[16];
        sampi_cvar_text((enum sampi_cvar_id)id, now, sizeof(now));
        long long def = 0;
        int same = d->type == SAMPI_CVAR_TYPE_STRING
                       ? strcmp(now, d->default_text) == 0
                       : sampi_cvar_parse((enum sampi_cvar_id)id, d->default_text, &def, err,
                                          sizeof(err)) == 0 &&
                             def == sampi_cvar_int((enum sampi_cvar_id)id);
        if (same)
            continue;
        names[k] = d->name;
        snprintf(values[k], SAMPI_CVAR_STRING_MAX, "%s", now);
        k++;
    }
    return k;
}

static void write_report(const char *setting, const char *bytes, size_t len, const char *hosts,
                         int ranks)
{
    /* the records */
    int ncomms = 0;
    struct sampi_report_comm probe;
    for (size_t off = 0, k = 1; off < len && k; off += k)
        if ((k = sampi_report_unpack(bytes + off, len - off, &probe)))
            ncomms++;
    struct sampi_report_comm *comms = calloc((size_t)ncomms + 1, sizeof(*comms));
    const char **host = calloc((size_t)ranks, sizeof(*host));
    const char *names[SAMPI_CVAR__COUNT];
    char(*values)[SAMPI_CVAR_STRING_MAX] = calloc(SAMPI_CVAR__COUNT, SAMPI_CVAR_STRING_MAX);
    const char *vals[SAMPI_CVAR__COUNT];
    if (!comms || !host || !values) {
        sampi_log_warn("sampi_report: out of memory, no report");
        goto out;
    }
    size_t off = 0;
    for (int i = 0; i < ncomms; i++)
        off += sampi_report_unpack(bytes + off, len - off, &comms[i]);
    /* by label: the same order on every run */
    for (int i = 1; i < ncomms; i++)
        for (int j = i; j > 0 && comms[j].h.label < comms[j - 1].h.label; j--) {
            struct sampi_report_comm t = comms[j];
            comms[j] = comms[j - 1];
            comms[j - 1] = t;
        }
    for (int w = 0; w < ranks; w++)
        host[w] = hosts + (size_t)w * HOST_MAX;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int vlen = 0;
    if (PMPI_Get_library_version(version, &vlen) != MPI_SUCCESS)
        snprintf(version, sizeof(version), "unknown MPI");
    version[strcspn(version, "\n,")] = '\0';
    int nvars = changed_vars(names, values);
    for (int i = 0; i < nvars; i++)
        vals[i] = values[i];
    struct sampi_report_run run = {.ranks = ranks,
                                   .host = host,
                                   .mpi_version = version,
                                   .var_names = names,
                                   .var_values = vals,
                                   .nvars = nvars};
    struct sampi_report_buf text = {0}, json = {0};
    sampi_report_format_text(&text, &run, comms, ncomms);
    if (strcmp(setting, "-") == 0) {
        if (!text.failed)
            fputs(text.p, stderr);
    } else {
        sampi_report_format_json(&json, &run, comms, ncomms);
        char path[SAMPI_CVAR_STRING_MAX + 32], jpath[SAMPI_CVAR_STRING_MAX + 40];
        int overwrite;
        expand(setting, path, sizeof(path), &overwrite);
        snprintf(jpath, sizeof(jpath), "%s.json", path);
        if (text.failed || json.failed)
            sampi_log_warn("sampi_report: out of memory, no report");
        else if (write_file(path, overwrite, text.p, text.len) == 0)
            write_file(jpath, overwrite, json.p, json.len);
    }
    sampi_report_buf_free(&text);
    sampi_report_buf_free(&json);
out:
    free(comms);
    free(host);
    free(values);
}

void sampi_report_finalize(void)
{
    char setting[SAMPI_CVAR_STRING_MAX];
    if (!wanted(setting, sizeof(setting)))
        return;
    int rank = 0, size = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    char host[HOST_MAX] = {0};
    int hlen = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    if (PMPI_Get_processor_name(name, &hlen) == MPI_SUCCESS)
        snprintf(host, sizeof(host), "%.*s", HOST_MAX - 1, name);
    pthread_mutex_lock(&kept_lock);
    int mine = kept_len > (size_t)1 << 30 ? 0 : (int)kept_len; /* a gather counts in int */
    int *lens = rank == 0 ? calloc((size_t)size, sizeof(int)) : NULL;
    int *displs = rank == 0 ? calloc((size_t)size, sizeof(int)) : NULL;
    char *hosts = rank == 0 ? calloc((size_t)size, HOST_MAX) : NULL;
    char *all = NULL;
    size_t total = 0;
    /* rank 0 tells the others whether it has room to receive, before each
     * gather that needs it */
    int ok = rank != 0 || (lens && displs && hosts);
    PMPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (ok)
        PMPI_Gather(&mine, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int r = 0; ok && rank == 0 && r < size; r++) {
        displs[r] = (int)total;
        total += (size_t)lens[r];
        ok = total <= (size_t)1 << 30;
    }
    if (ok && rank == 0)
        ok = (all = malloc(total ? total : 1)) != NULL;
    PMPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (ok) {
        PMPI_Gatherv(kept, mine, MPI_BYTE, all, lens, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
        PMPI_Gather(host, HOST_MAX, MPI_CHAR, hosts, HOST_MAX, MPI_CHAR, 0, MPI_COMM_WORLD);
    }
    free(kept);
    kept = NULL;
    kept_len = kept_cap = 0;
    pthread_mutex_unlock(&kept_lock);
    if (rank == 0 && ok)
        write_report(setting, all, total, hosts, size);
    else if (rank == 0)
        sampi_log_warn("sampi_report: out of memory, no report");
    free(all);
    free(lens);
    free(displs);
    free(hosts);
}
