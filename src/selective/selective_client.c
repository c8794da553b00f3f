/*
 * selective_client.c - worker side of selective reduce.
 *
 * At MPI_Init (sampi_selective_mode != off) the workers spawn one controller
 * process with MPI_Comm_spawn over MPI_COMM_WORLD; the application's
 * MPI_COMM_WORLD never contains it.  The remote ranks of the resulting
 * intercommunicator are the workers' MPI_COMM_WORLD ranks, which is how the
 * controller names them.
 *
 * A partial allreduce on this rank: READY to the controller, wait for GROUP
 * (PINGs keep the wait alive), scale the buffer by this rank's weight, ring
 * over the members on the communicator's SAMPI data path, DONE.  Groups are
 * disjoint and tagged by their id, so several run at once.
 *
 * Failure: if the controller says nothing for sampi_selective_timeout_ms (it
 * PINGs queued workers four times per period), the worker warns once and
 * falls back for good: every later call is an exact allreduce on a private
 * duplicate of MPI_COMM_WORLD.  Ranks fall back at different calls, and a
 * rank that finished its work cannot take part in the others' later calls,
 * so each fallback call first sums a header {running, count, type}: ranks in
 * MPI_Finalize contribute zeros (sampi_selective_fini loops until no rank is
 * running), and the result is the average over the running ranks.  When all
 * ranks are running, the call is PMPI_Allreduce's exact sum.
 */
#include "selective_client.h"
#include "comm.h"
#include "coll_ctx.h"
#include "revoke.h"
#include "dtype.h"
#include "errors.h"
#include "partial_ring.h"
#include "sampi_internal.h"
#include "selective_proto.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum sel_mode { MODE_OFF, MODE_API, MODE_ALLREDUCE };
enum sel_comm_choice { COMM_WORLD, COMM_CONGRUENT };

static struct {
    pthread_mutex_t lock;
    int active;     /* the controller was spawned */
    int finished;   /* this rank left partial mode (sampi_partial_finish) */
    int dead;       /* it stopped answering: exact fallback from now on */
    MPI_Comm inter; /* to the controller */
    MPI_Comm fb;    /* private dup of MPI_COMM_WORLD for fallback calls */
    int rank, n;
    int64_t iteration;
    uint64_t seq;
    int64_t last_end_ns; /* end of the previous call: compute time = gap to this call */
    double bw_gbps;      /* estimate from the last rings (note_ring); 0: none yet */
    int32_t *members;
    double *weights;
    struct sampi_sel_result last; /* the last call's outcome (sampi_partial_last) */
    int *last_members;
    double *last_weights;
    unsigned char *gbuf;
    size_t gcap;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER, .inter = MPI_COMM_NULL, .fb = MPI_COMM_NULL};

/* Read by MPI_T from any thread, hence atomics outside S.lock. */
static _Atomic uint64_t counters[SAMPI_SEL_C__COUNT];

uint64_t sampi_selective_counter(enum sampi_sel_counter k)
{
    return k < SAMPI_SEL_C__COUNT ? atomic_load_explicit(&counters[k], memory_order_relaxed) : 0;
}

static void bump(enum sampi_sel_counter k, uint64_t v)
{
    atomic_fetch_add_explicit(&counters[k], v, memory_order_relaxed);
}

static int64_t timeout_ns(void)
{
    return sampi_cvar_int(SAMPI_CVAR_SELECTIVE_TIMEOUT_MS) * 1000000LL;
}

/* ------------------------------------------------------------ helpers */

/* Wait for one request with back-off until deadline; cancel it on timeout. */
static int wait_req(MPI_Request *req, MPI_Status *st, int64_t deadline)
{
    unsigned spins = 0;
    for (;;) {
        int flag = 0;
        if (PMPI_Test(req, &flag, st) != MPI_SUCCESS)
            return -EIO;
        if (flag)
            return 0;
        if (sampi_now_ns() > deadline) {
            PMPI_Cancel(req);
            PMPI_Request_free(req);
            return -ETIMEDOUT;
        }
        sampi_wait_pause(&spins);
    }
}

static void declare_dead(const char *why)
{
    if (S.dead)
        return;
    S.dead = 1;
    bump(SAMPI_SEL_C_FALLBACKS, 1);
    sampi_log_warn("selective reduce: the controller %s; falling back to exact allreduces over "
                   "all running ranks from now on",
                   why);
}

/* A ring of m members moved 2(m-1)/m of the buffer through each member in
 * `secs`: the throughput of its slowest link, whoever owns it, so one sample
 * is only a lower bound on this rank's own bandwidth (and on a busy host it
 * is noisy mostly downwards).  The estimate is a maximum that decays by 10%
 * a ring: a fast rank that met a slow one in a few groups still reports fast,
 * so that selective reduce does not go on grouping them on that evidence.
 * A window of the last samples did no better, and one short enough to
 * follow a changed link also forgets a fast rank's fast samples after a few
 * slow groups (docs/notes/2026-11-selective-bandwidth.md). */
static void note_ring(int m, size_t bytes, double secs)
{
    if (m < 2 || !(secs > 0))
        return;
    double gbps = 8.0 * 2.0 * (m - 1) / m * (double)bytes / secs / 1e9;
    S.bw_gbps = gbps > 0.9 * S.bw_gbps ? gbps : 0.9 * S.bw_gbps;
}

/* The bandwidth this rank reports: sampi_selective_bandwidth, else measured. */
static double reported_bw(void)
{
    char text[SAMPI_CVAR_STRING_MAX];
    sampi_cvar_text(SAMPI_CVAR_SELECTIVE_BANDWIDTH, text, sizeof(text));
    if (!*text)
        return S.bw_gbps;
    double star = -1;
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':'), *end = NULL;
        if (!colon) {
            double v = strtod(tok, &end);
            return end != tok && v > 0 ? v : S.bw_gbps;
        }
        *colon = '\0';
        double v = strtod(colon + 1, &end);
        if (end == colon + 1 || !(v > 0))
            continue;
        if (!strcmp(tok, "*"))
            star = v;
        else if (atoi(tok) == S.rank)
            return v;
    }
    return star > 0 ? star : S.bw_gbps;
}

/* Where sampi-controller lives: the variable, else beside the library
 * (<prefix>/lib/libsampi.so -> <prefix>/bin/sampi-controller, or the build
 * tree's <builddir>/.libs/libsampi.so -> <builddir>/sampi-controller), else
 * the name alone for the launcher's PATH search.  The library's own path
 * comes from /proc/self/maps (dladdr would need _GNU_SOURCE before every
 * header, which a forced -include defeats). */
static void controller_path(char *out, size_t len)
{
    sampi_cvar_text(SAMPI_CVAR_SELECTIVE_CONTROLLER, out, len);
    if (*out)
        return;
    char line[PATH_MAX + 128], dir[PATH_MAX] = "";
    FILE *maps = fopen("/proc/self/maps", "r");
    while (maps && fgets(line, sizeof(line), maps)) {
        char *path = strchr(line, '/');
        if (path && strstr(path, "/libsampi.so")) {
            path[strcspn(path, "\n")] = '\0';
            snprintf(dir, sizeof(dir), "%s", path);
            break;
        }
    }
    if (maps)
        fclose(maps);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        const char *rel[] = {"/../bin/sampi-controller", "/../sampi-controller"};
        for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
            snprintf(out, len, "%s%s", dir, rel[i]);
            if (access(out, X_OK) == 0)
                return;
        }
    }
    snprintf(out, len, "sampi-controller");
}

/* Whether `path` names a program that can run here: a file with execute
 * permission, or a bare name found so on PATH.  Open MPI aborts the whole
 * job when MPI_Comm_spawn cannot start its program, whatever the error
 * handler says, so this is asked first.  0, or a negative errno. */
static int controller_runnable(const char *path)
{
    struct stat st;
    if (strchr(path, '/'))
        return stat(path, &st) < 0      ? -errno
               : !S_ISREG(st.st_mode)   ? -EISDIR
               : access(path, X_OK) < 0 ? -errno
                                        : 0;
    const char *d = getenv("PATH");
    while (d && *d) {
        size_t n = strcspn(d, ":");
        char full[PATH_MAX];
        int w = snprintf(full, sizeof(full), "%.*s/%s", (int)n, d, path);
        if (n > 0 && w > 0 && (size_t)w < sizeof(full) && stat(full, &st) == 0 &&
            S_ISREG(st.st_mode) && access(full, X_OK) == 0)
            return 0;
        d += n + (d[n] == ':');
    }
    return -ENOENT;
}

/* ------------------------------------------------------------ spawn */

void sampi_selective_init(void)
{
    MPI_Comm parent = MPI_COMM_NULL;
    if (sampi_cvar_int(SAMPI_CVAR_SELECTIVE_MODE) == MODE_OFF || S.active)
        return;
    PMPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL)
        return; /* a spawned process (the controller itself): no controller of its own */
    PMPI_Comm_rank(MPI_COMM_WORLD, &S.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &S.n);

    /* The controller gets this rank's sampi_selective_* and verbosity settings
     * on its command line: spawned processes need not inherit the
     * environment, and MPI_T writes would not be in it anyway. */
    enum { MAXARGS = 2 * SAMPI_CVAR__COUNT + 1 };
    char *argv[MAXARGS + 1] = {NULL};
    int argc = 0;
    for (int id = 0; id < SAMPI_CVAR__COUNT; id++) {
        const char *name = sampi_cvar_descs[id].name;
        if (strncmp(name, "selective_", 10) && id != SAMPI_CVAR_VERBOSE)
            continue;
        char val[SAMPI_CVAR_STRING_MAX];
        sampi_cvar_text(id, val, sizeof(val));
        char *arg = malloc(strlen(name) + strlen(val) + 2);
        if (!arg)
            break;
        sprintf(arg, "%s=%s", name, val);
        argv[argc++] = "--set";
        argv[argc++] = arg;
    }
    char path[PATH_MAX];
    controller_path(path, sizeof(path));
    /* rank 0 starts it (the spawn's root): its answer holds for every rank */
    int runnable = S.rank == 0 ? controller_runnable(path) : 0;
    PMPI_Bcast(&runnable, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (runnable) {
        char set[8];
        if (S.rank == 0)
            sampi_log_warn("selective reduce: the controller %s'%s' cannot be run here (%s)%s; "
                           "sampi_selective_mode is off for this run",
                           sampi_cvar_text(SAMPI_CVAR_SELECTIVE_CONTROLLER, set, sizeof(set))[0]
                               ? "named by sampi_selective_controller, "
                               : "",
                           path, strerror(-runnable),
                           strchr(path, '/') ? "" : " (searched on PATH)");
        for (int i = 1; i < argc; i += 2)
            free(argv[i]);
        return;
    }

    MPI_Errhandler old;
    PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &old);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int err = MPI_SUCCESS;
    int rc = PMPI_Comm_spawn(path, argv, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &S.inter, &err);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, old);
    PMPI_Errhandler_free(&old);
    for (int i = 1; i < argc; i += 2)
        free(argv[i]);

    int ok = rc == MPI_SUCCESS && err == MPI_SUCCESS, all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (S.rank == 0)
            sampi_log_warn("selective reduce: could not spawn the controller '%s'; "
                           "sampi_selective_mode is off for this run",
                           path);
        return;
    }
    S.members = malloc((size_t)S.n * sizeof(*S.members));
    S.weights = malloc((size_t)S.n * sizeof(*S.weights));
    S.gcap = sampi_sp_group_size(S.n);
    S.gbuf = malloc(S.gcap);
    S.last_members = malloc((size_t)S.n * sizeof(*S.last_members));
    S.last_weights = malloc((size_t)S.n * sizeof(*S.last_weights));
    S.last.group = -1;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &S.fb) != MPI_SUCCESS || !S.members || !S.weights ||
        !S.gbuf || !S.last_members || !S.last_weights)
        declare_dead("could not be set up (out of memory)");
    S.active = 1;
    S.last_end_ns = -1;
    /* A controller that is gone must cost a warning, not the process: Open
     * MPI's TCP path to it would raise SIGPIPE.  Only a default disposition
     * is changed (an application's own handler stays). */
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
        sa.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &sa, NULL);
    }
    if (S.rank == 0)
        sampi_log(SAMPI_LOG_INFO, "selective reduce: controller '%s' serves %d workers", path, S.n);
}

/* ------------------------------------------------------------ messages */

static int send_msg(const struct sampi_sp_msg *m)
{
    unsigned char buf[SAMPI_SP_SMALL_MAX];
    long len = sampi_sp_encode(m, S.n, buf, sizeof(buf));
    if (len < 0)
        return (int)len;
    MPI_Request req;
    if (PMPI_Isend(buf, (int)len, MPI_BYTE, 0, SAMPI_SEL_TAG_UP, S.inter, &req) != MPI_SUCCESS)
        return -EIO;
    return wait_req(&req, MPI_STATUS_IGNORE, sampi_now_ns() + timeout_ns());
}

/* The next message from the controller other than a PING, each message
 * (PINGs too) restarting the timeout.  0, -ETIMEDOUT, -EIO, or a decoding
 * error (logged). */
static int recv_msg(struct sampi_sp_msg *m)
{
    for (;;) {
        MPI_Request req;
        MPI_Status st;
        if (PMPI_Irecv(S.gbuf, (int)S.gcap, MPI_BYTE, 0, SAMPI_SEL_TAG_DOWN, S.inter, &req) !=
            MPI_SUCCESS)
            return -EIO;
        int rc = wait_req(&req, &st, sampi_now_ns() + timeout_ns());
        if (rc)
            return rc;
        int len = 0;
        PMPI_Get_count(&st, MPI_BYTE, &len);
        m->u.group.members = S.members;
        m->u.group.weights = S.weights;
        m->u.group.capacity = S.n;
        rc = sampi_sp_decode(S.gbuf, (size_t)len, S.n, m);
        if (rc) {
            sampi_log_error("selective reduce: malformed message from the controller: %s",
                            sampi_sp_strerror(rc));
            return rc;
        }
        if (m->type != SAMPI_SP_PING)
            return 0;
    }
}

/* ------------------------------------------------------------ the paths */

static void scale_buf(void *buf, size_t count, enum sampi_elem elem, double f)
{
    if (f == 1.0)
        return;
    if (elem == SAMPI_ELEM_F32) {
        float *x = buf;
        for (size_t i = 0; i < count; i++)
            x[i] = (float)(x[i] * f);
    } else {
        double *x = buf;
        for (size_t i = 0; i < count; i++)
            x[i] *= f;
    }
}

static int wait_coll(MPI_Request *req)
{
    /* blocking, but leaving the core to ranks that still compute */
    return wait_req(req, MPI_STATUS_IGNORE, INT64_MAX) ? -EIO : 0;
}

/* One fallback call: running ranks' buffers averaged (see the top). */
static int exact_call(void *buf, size_t count, MPI_Datatype dt, enum sampi_elem elem, MPI_Comm comm,
                      double scale, struct sampi_sel_result *res)
{
    int64_t t0 = sampi_now_ns();
    int fb = S.active && !S.finished; /* else plain collective over comm */
    MPI_Comm on = fb ? S.fb : comm;
    int k = S.n;
    int rc = 0;
    if (!fb)
        PMPI_Comm_size(comm, &k);
    if (fb) {
        long long hdr[3] = {1, (long long)count, (long long)elem}, sum[3];
        MPI_Request req;
        PMPI_Iallreduce(hdr, sum, 3, MPI_LONG_LONG, MPI_SUM, on, &req);
        if ((rc = wait_coll(&req)))
            return rc;
        k = (int)sum[0];
        if (sum[1] != (long long)count * k || sum[2] != (long long)elem * k)
            return -EINVAL; /* ranks disagree on count or type */
    }
    if (count > INT_MAX)
        return -EMSGSIZE;
    MPI_Request req;
    PMPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, dt, MPI_SUM, on, &req);
    if ((rc = wait_coll(&req)))
        return rc;
    scale_buf(buf, count, elem, scale / k);
    S.iteration++;
    if (res) {
        res->group = -1;
        res->outcome = SAMPI_SEL_OUT_EXACT;
        res->size = k;
        res->weight = 1.0 / k;
        res->seconds = (double)(sampi_now_ns() - t0) * 1e-9;
        res->iteration = S.iteration;
    }
    return 0;
}

/* First call on comm: collective set-up of SAMPI's state and data path. */
static int comm_ready(MPI_Comm comm, struct sampi_comm **out)
{
    int rc = sampi_comm_get(comm, 1, out);
    if (rc)
        return rc;
    struct sampi_comm *c = *out;
    if ((rc = sampi_comm_join(c)))
        return rc;
    return sampi_comm_open_netdev(c);
}

static int group_call(void *buf, size_t count, MPI_Datatype dt, const struct sampi_dtype_info *info,
                      struct sampi_comm *c, double scale, struct sampi_sel_result *res, int *fell)
{
    int64_t t_ready = sampi_now_ns();
    struct sampi_sp_msg m = {
        .type = SAMPI_SP_READY,
        .u.ready = {.rank = S.rank,
                    .iteration = S.iteration + 1,
                    .t_compute = S.last_end_ns < 0 ? -1 : (double)(t_ready - S.last_end_ns) * 1e-9,
                    .bw_gbps = reported_bw(),
                    .seq = S.seq + 1,
                    .bytes = (uint64_t)(count * info->extent)}};
    int rc = send_msg(&m);
    if (rc == -ETIMEDOUT || rc == -EIO) {
        declare_dead("does not take reports");
        *fell = 1;
        return 0;
    }
    if (rc)
        return rc;
    S.seq++;
    rc = recv_msg(&m);
    bump(SAMPI_SEL_C_GROUP_WAIT_NS, (uint64_t)(sampi_now_ns() - t_ready));
    if (rc == -ETIMEDOUT || rc == -EIO) {
        declare_dead("did not answer within sampi_selective_timeout_ms");
        *fell = 1;
        return 0;
    }
    if (rc)
        return -EPROTO;
    if (m.type == SAMPI_SP_ERROR) {
        sampi_log_error("selective reduce: the controller refused this rank's report: %s",
                        sampi_sp_strerror(-m.u.error.code));
        return -EPROTO;
    }
    if (m.type != SAMPI_SP_GROUP) {
        sampi_log_error("selective reduce: unexpected %s from the controller",
                        sampi_sp_type_name(m.type));
        return -EPROTO;
    }
    const struct sampi_sp_group *g = &m.u.group;
    int me = -1;
    for (int i = 0; i < g->m; i++)
        if (g->members[i] == S.rank)
            me = i;
    if (me < 0) {
        sampi_log_error("selective reduce: the controller sent group %llu without this rank",
                        (unsigned long long)g->id);
        return -EPROTO;
    }

    int64_t t0 = sampi_now_ns();
    /* the caller's scale is applied afterwards, so that members with
     * different scales (MPI_Allreduce and the API mixed) still add w_j x_j */
    scale_buf(buf, count, info->elem, g->weights[me]);
    struct sampi_coll_args a = {
        .sendbuf = MPI_IN_PLACE,
        .recvbuf = buf,
        .count = count,
        .datatype = dt,
        .mpi_op = MPI_SUM,
        .dt = *info,
        .op = SAMPI_OP_SUM,
        .reduce = sampi_reduce_fn_get(SAMPI_OP_SUM, info->elem),
        .comm = c->comm,
    };
    struct sampi_coll_ctx ctx;
    sampi_coll_ctx_fill(c, &ctx);
    a.ctx = &ctx;
    int members[g->m];
    for (int i = 0; i < g->m; i++)
        members[i] = g->members[i];
    rc = sampi_partial_ring(&a, members, g->m, g->id);
    int64_t t1 = sampi_now_ns();
    if (rc) {
        /* the other members may be waiting for this rank: tell them */
        sampi_revoke(c, rc, "a selective group's reduction");
        return rc;
    }
    scale_buf(buf, count, info->elem, scale);
    double secs = (double)(t1 - t0) * 1e-9;
    note_ring(g->m, count * info->extent, secs);
    S.iteration = g->iter_after;
    if (res) {
        res->group = (long long)g->id;
        res->outcome = g->kind == SAMPI_SP_KIND_FULL ? SAMPI_SEL_OUT_FULL : SAMPI_SEL_OUT_PARTIAL;
        res->size = g->m;
        res->weight = g->weights[me];
        res->seconds = secs;
        res->iteration = S.iteration;
        for (int i = 0; i < g->m && i < res->capacity; i++) {
            if (res->members)
                res->members[i] = g->members[i];
            if (res->weights)
                res->weights[i] = g->weights[i];
        }
    }
    struct sampi_sp_msg done = {
        .type = SAMPI_SP_DONE,
        .u.done = {.id = g->id, .rank = S.rank, .seconds = secs, .bw_gbps = reported_bw()}};
    if (send_msg(&done))
        declare_dead("does not take reports");
    return 0;
}

int sampi_selective_partial(void *buf, size_t count, MPI_Datatype datatype, MPI_Comm comm,
                            double scale, struct sampi_sel_result *res)
{
    struct sampi_dtype_info info;
    if (sampi_dtype_lookup(datatype, &info) ||
        (info.elem != SAMPI_ELEM_F32 && info.elem != SAMPI_ELEM_F64))
        return -ENOTSUP;
    struct sampi_sel_result local = {0};
    if (!res)
        res = &local;
    pthread_mutex_lock(&S.lock);
    int rc = 0, fell = 0;
    struct sampi_comm *c = NULL;
    if (!S.active || S.dead || S.finished) {
        rc = exact_call(buf, count, datatype, info.elem, comm, scale, res);
        goto out;
    }
    rc = comm_ready(comm, &c);
    if (rc || c->revoked) {
        declare_dead(rc ? "cannot be used: the data path did not open"
                        : "cannot be used: an earlier group failed");
        rc = exact_call(buf, count, datatype, info.elem, comm, scale, res);
        goto out;
    }
    rc = group_call(buf, count, datatype, &info, c, scale, res, &fell);
    if (fell)
        rc = exact_call(buf, count, datatype, info.elem, comm, scale, res);
out:
    S.last_end_ns = sampi_now_ns();
    if (!rc) {
        static const enum sampi_sel_counter by_outcome[] = {
            [SAMPI_SEL_OUT_PARTIAL] = SAMPI_SEL_C_GROUP,
            [SAMPI_SEL_OUT_FULL] = SAMPI_SEL_C_FULL,
            [SAMPI_SEL_OUT_EXACT] = SAMPI_SEL_C_EXACT};
        bump(SAMPI_SEL_C_CALLS, 1);
        bump(by_outcome[res->outcome], 1);
        if (res->outcome != SAMPI_SEL_OUT_EXACT)
            atomic_store_explicit(&counters[SAMPI_SEL_C_LAST_SIZE], (uint64_t)res->size,
                                  memory_order_relaxed);
    }
    if (!rc && S.active && S.last_members) {
        S.last = *res;
        int m = res->outcome == SAMPI_SEL_OUT_EXACT ? 0 : res->size;
        for (int i = 0; i < m; i++) {
            S.last_members[i] = S.members[i];
            S.last_weights[i] = S.weights[i];
        }
    }
    pthread_mutex_unlock(&S.lock);
    return rc;
}

int sampi_selective_last(struct sampi_sel_result *res)
{
    pthread_mutex_lock(&S.lock);
    int rc = S.last_members ? 0 : -ENOENT;
    if (!rc) {
        int *members = res->members, cap = res->capacity;
        double *weights = res->weights;
        *res = S.last;
        res->members = members;
        res->weights = weights;
        res->capacity = cap;
        int m = S.last.outcome == SAMPI_SEL_OUT_EXACT ? 0 : S.last.size;
        for (int i = 0; i < m && i < cap; i++) {
            if (members)
                members[i] = S.last_members[i];
            if (weights)
                weights[i] = S.last_weights[i];
        }
    }
    pthread_mutex_unlock(&S.lock);
    return rc;
}

/* ------------------------------------------------------------ MPI_Allreduce */

static int chosen_comm(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD)
        return 1;
    if (sampi_cvar_int(SAMPI_CVAR_SELECTIVE_COMM) != COMM_CONGRUENT)
        return 0;
    int result = MPI_UNEQUAL;
    PMPI_Comm_compare(comm, MPI_COMM_WORLD, &result);
    return result == MPI_CONGRUENT || result == MPI_IDENT;
}

int sampi_selective_may_route(void)
{
    return sampi_cvar_int(SAMPI_CVAR_SELECTIVE_MODE) == MODE_ALLREDUCE;
}

int sampi_selective_route(const struct sampi_coll_args *args, int *rc)
{
    if (sampi_cvar_int(SAMPI_CVAR_SELECTIVE_MODE) != MODE_ALLREDUCE || !S.active || S.finished ||
        args->op != SAMPI_OP_SUM || args->count == 0 ||
        (args->dt.elem != SAMPI_ELEM_F32 && args->dt.elem != SAMPI_ELEM_F64) ||
        !chosen_comm(args->comm))
        return 0;
    if (args->sendbuf != MPI_IN_PLACE)
        memcpy(args->recvbuf, args->sendbuf, args->count * args->dt.extent);
    int e = sampi_selective_partial(args->recvbuf, args->count, args->datatype, args->comm,
                                    (double)S.n, NULL);
    *rc = e ? sampi_errno_to_mpi(e) : MPI_SUCCESS;
    if (e)
        PMPI_Comm_call_errhandler(args->comm, *rc);
    return 1;
}

/* ------------------------------------------------------------ leaving */

/* Leave partial mode: STOP to the controller, then serve the running ranks'
 * fallback calls with zeros until no rank runs.  Returns when every rank has
 * left; later calls are exact over all ranks (as with the mode off). */
static void finish_locked(void)
{
    if (!S.active || S.finished)
        return;
    /* Even a rank that gave the controller up says goodbye (briefly): a
     * controller that was only slow must still learn that everyone left. */
    struct sampi_sp_msg m = {.type = SAMPI_SP_STOP, .u.rank = S.rank};
    int rc = send_msg(&m);
    if (!rc) /* the controller acknowledges with a STOP */
        rc = recv_msg(&m);
    if (!rc && m.type != SAMPI_SP_STOP)
        rc = -EPROTO;
    if (rc)
        declare_dead("did not acknowledge this rank's stop");
    for (;;) {
        long long hdr[3] = {0, 0, 0}, sum[3];
        MPI_Request req;
        PMPI_Iallreduce(hdr, sum, 3, MPI_LONG_LONG, MPI_SUM, S.fb, &req);
        if (wait_coll(&req) || sum[0] == 0)
            break;
        size_t count = (size_t)(sum[1] / sum[0]);
        enum sampi_elem elem = (enum sampi_elem)(sum[2] / sum[0]);
        MPI_Datatype dt = elem == SAMPI_ELEM_F32 ? MPI_FLOAT : MPI_DOUBLE;
        void *zeros = calloc(count ? count : 1, elem == SAMPI_ELEM_F32 ? 4 : 8);
        if (!zeros)
            break;
        PMPI_Iallreduce(MPI_IN_PLACE, zeros, (int)count, dt, MPI_SUM, S.fb, &req);
        rc = wait_coll(&req);
        free(zeros);
        if (rc)
            break;
    }
    S.finished = 1;
}

int sampi_selective_finish(void)
{
    pthread_mutex_lock(&S.lock);
    finish_locked();
    pthread_mutex_unlock(&S.lock);
    return 0;
}

void sampi_selective_fini(void)
{
    pthread_mutex_lock(&S.lock);
    if (S.active) {
        finish_locked();
        /* A free, not MPI_Comm_disconnect: disconnecting is collective with
         * the controller, which may be gone. */
        PMPI_Comm_free(&S.inter);
        PMPI_Comm_free(&S.fb);
        free(S.members);
        free(S.weights);
        free(S.gbuf);
        free(S.last_members);
        free(S.last_weights);
        S.last_members = NULL;
        S.active = 0;
    }
    pthread_mutex_unlock(&S.lock);
}
