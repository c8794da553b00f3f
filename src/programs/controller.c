/*
 * controller.c - sampi-controller, the selective-reduce controller rank.
 *
 * Spawned by the workers' MPI_Init (sampi_selective_mode != off) through
 * MPI_Comm_spawn; it talks to them over the parent intercommunicator, whose
 * remote ranks are the workers' MPI_COMM_WORLD ranks.  Settings arrive as
 * "--set name=value" arguments (the workers' sampi_selective_* values).
 *
 * Event loop: receive READY / DONE / STOP (probe with back-off, never a dry
 * spin), feed them to the policy library (coll_algos/selective_policy.h),
 * and send each group the policy launches to its members.  Queued workers
 * get a PING every quarter of sampi_selective_timeout_ms so that they can
 * tell a long wait from a dead controller.
 *
 * A malformed, spoofed or out-of-order message is refused with an ERROR to
 * its sender and a log line naming the worker and the reason; the other
 * workers are served as before.
 *
 * A worker that stops (MPI_Finalize, sampi_partial_finish) is retired from
 * the policy: it is never grouped again, and full synchronisations cover only
 * the workers still running (a full sync of all n would wait forever).
 */
#include "sampi_internal.h"
#include "selective_client.h"
#include "selective_policy.h"
#include "selective_proto.h"
#include "netdev.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>

enum wstate { COMPUTING, QUEUED, SYNCING, STOPPED };

struct worker {
    enum wstate state;
    uint64_t seq; /* last READY accepted */
    long iteration;
};

struct ctl {
    MPI_Comm parent;
    int n, stopped;
    struct worker *w;
    struct sampi_sel_policy pol;
    struct sampi_sel_group grp;
    long launched, members_total, full, refused;
    double ready_sum; /* sum over launched members of (launch - ready) */
    double *ready_at;
    int silent_after, exit_after, kill_after; /* sampi_selective_debug_controller; -1: off */
    unsigned char *buf;
    size_t cap;
};

static double now_s(void)
{
    return (double)sampi_now_ns() * 1e-9;
}

static void send_to(struct ctl *c, int worker, const struct sampi_sp_msg *m)
{
    long len = sampi_sp_encode(m, c->n, c->buf, c->cap);
    if (len < 0) {
        sampi_log_error("controller: cannot encode %s for worker %d: %s",
                        sampi_sp_type_name(m->type), worker, sampi_sp_strerror((int)len));
        return;
    }
    MPI_Send(c->buf, (int)len, MPI_BYTE, worker, SAMPI_SEL_TAG_DOWN, c->parent);
}

static void refuse(struct ctl *c, int worker, int neg, uint64_t seq, const char *what)
{
    c->refused++;
    sampi_log_error("controller: refused %s from worker %d: %s", what, worker,
                    sampi_sp_strerror(neg));
    struct sampi_sp_msg e = {.type = SAMPI_SP_ERROR, .u.error = {.code = -neg, .seq = seq}};
    send_to(c, worker, &e);
}

static void launch(struct ctl *c, int kind, int m, const int *members, const double *weights)
{
    struct sampi_sp_msg g = {.type = SAMPI_SP_GROUP};
    int32_t mem[m];
    double w[m];
    long iter_after = 0;
    double t = now_s();
    for (int i = 0; i < m; i++) {
        mem[i] = members[i];
        w[i] = weights[i];
        if (c->w[members[i]].iteration > iter_after)
            iter_after = c->w[members[i]].iteration;
        c->w[members[i]].state = SYNCING;
        c->ready_sum += t - c->ready_at[members[i]];
    }
    g.u.group = (struct sampi_sp_group){.id = (uint64_t)c->launched,
                                        .kind = kind,
                                        .iter_after = iter_after,
                                        .m = m,
                                        .members = mem,
                                        .weights = w};
    for (int i = 0; i < m; i++)
        send_to(c, members[i], &g);
    c->launched++;
    c->members_total += m;
    c->full += kind == SAMPI_SP_KIND_FULL;
    sampi_log(SAMPI_LOG_CALL, "controller: group %ld of %d (%s)", c->launched - 1, m,
              kind == SAMPI_SP_KIND_FULL ? "full" : "partial");
}

static void decide(struct ctl *c, double *wait_until)
{
    if (c->silent_after >= 0 && c->launched >= c->silent_after)
        return;
    enum sampi_sel_action a;
    while ((a = sampi_sel_policy_decide(&c->pol, now_s(), &c->grp)) == SAMPI_SEL_LAUNCH) {
        /* the policy's ids are the workers' ranks */
        launch(c, c->grp.kind == SAMPI_SEL_FULL ? SAMPI_SP_KIND_FULL : SAMPI_SP_KIND_PARTIAL,
               c->grp.m, c->grp.members, c->grp.weights);
    }
    *wait_until = a == SAMPI_SEL_WAIT ? c->grp.wait_until : -1;
}

static void on_ready(struct ctl *c, int src, const struct sampi_sp_ready *r)
{
    struct worker *w = &c->w[src];
    if (w->state == STOPPED) {
        refuse(c, src, -ESRCH, r->seq, "READY");
        return;
    }
    if (w->state != COMPUTING || r->seq != w->seq + 1) {
        sampi_log_error("controller: worker %d sent READY seq %llu in state %s (expected seq "
                        "%llu)",
                        src, (unsigned long long)r->seq,
                        w->state == QUEUED    ? "queued"
                        : w->state == SYNCING ? "syncing"
                                              : "computing",
                        (unsigned long long)(w->seq + 1));
        {
            refuse(c, src, -EALREADY, r->seq, "READY");
            return;
        }
    }
    int rc = 0;
    if (c->pol.priv) { /* else set-up failed: answer nothing (see main) */
        /* the policy's v is the size actually reduced */
        if (r->bytes > 0)
            sampi_sel_policy_set_model_bytes(&c->pol, (double)r->bytes);
        rc = sampi_sel_policy_report(&c->pol, src, now_s(), r->iteration, r->t_compute, r->bw_gbps);
    }
    if (rc) {
        refuse(c, src, rc, r->seq, "READY");
        return;
    }
    w->seq = r->seq;
    w->iteration = r->iteration;
    w->state = QUEUED;
    c->ready_at[src] = now_s();
}

static void on_done(struct ctl *c, int src, const struct sampi_sp_done *d)
{
    struct worker *w = &c->w[src];
    if (w->state != SYNCING) {
        c->refused++;
        sampi_log_error("controller: ignored DONE of group %llu from worker %d: it is not "
                        "syncing",
                        (unsigned long long)d->id, src);
        return;
    }
    w->state = COMPUTING;
    sampi_sel_policy_sync_done(&c->pol, src, now_s());
    if (d->bw_gbps > 0 && c->pol.priv)
        sampi_sel_policy_set_bandwidth(&c->pol, src, d->bw_gbps);
}

static void on_stop(struct ctl *c, int src)
{
    struct worker *w = &c->w[src];
    if (w->state == STOPPED) {
        refuse(c, src, -EALREADY, 0, "STOP");
        return;
    }
    if (w->state != COMPUTING)
        sampi_log_error("controller: worker %d stopped while %s", src,
                        w->state == QUEUED ? "queued" : "syncing");
    w->state = STOPPED;
    c->stopped++;
    /* never grouped again; full syncs now cover the workers still running */
    if (c->pol.priv)
        sampi_sel_policy_retire(&c->pol, src);
    sampi_log(SAMPI_LOG_SETUP, "controller: worker %d stopped; %d still running", src,
              c->n - c->stopped);
    struct sampi_sp_msg ack = {.type = SAMPI_SP_STOP, .u.rank = src}; /* acknowledged */
    send_to(c, src, &ack);
}

/* Receive and handle one message if one is waiting; 1 when one was. */
static int poll_one(struct ctl *c)
{
    int flag = 0, len = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, SAMPI_SEL_TAG_UP, c->parent, &flag, &st);
    if (!flag)
        return 0;
    MPI_Get_count(&st, MPI_BYTE, &len);
    int src = st.MPI_SOURCE;
    unsigned char small[SAMPI_SP_SMALL_MAX];
    unsigned char *b = len <= (int)sizeof(small) ? small : malloc((size_t)len);
    MPI_Recv(b ? b : small, b ? len : 0, MPI_BYTE, src, SAMPI_SEL_TAG_UP, c->parent,
             MPI_STATUS_IGNORE);
    struct sampi_sp_msg m = {0};
    int type = b ? sampi_sp_peek_type(b, (size_t)len) : -ENOMEM;
    /* only READY, DONE and STOP travel towards the controller */
    int rc = type < 0 ? type
             : type == SAMPI_SP_READY || type == SAMPI_SP_DONE || type == SAMPI_SP_STOP
                 ? sampi_sp_decode(b, (size_t)len, c->n, &m)
                 : -EPROTO;
    if (b != small)
        free(b);
    if (rc)
        return refuse(c, src, rc, 0, "a message"), 1;
    int32_t claimed = m.type == SAMPI_SP_READY  ? m.u.ready.rank
                      : m.type == SAMPI_SP_DONE ? m.u.done.rank
                      : m.type == SAMPI_SP_STOP ? m.u.rank
                                                : -1;
    if (claimed != src) /* a worker may speak only for itself */
        return refuse(c, src, claimed < 0 ? -EPROTO : -ERANGE, 0, sampi_sp_type_name(m.type)), 1;
    switch (m.type) {
    case SAMPI_SP_READY:
        on_ready(c, src, &m.u.ready);
        break;
    case SAMPI_SP_DONE:
        on_done(c, src, &m.u.done);
        break;
    case SAMPI_SP_STOP:
        on_stop(c, src);
        break;
    default:
        break;
    }
    return 1;
}

static void ping_queued(struct ctl *c)
{
    struct sampi_sp_msg ping = {.type = SAMPI_SP_PING};
    for (int i = 0; i < c->n; i++)
        if (c->w[i].state == QUEUED)
            send_to(c, i, &ping);
}

static int parse_debug(struct ctl *c)
{
    char text[SAMPI_CVAR_STRING_MAX];
    sampi_cvar_text(SAMPI_CVAR_SELECTIVE_DEBUG_CONTROLLER, text, sizeof(text));
    c->silent_after = c->exit_after = c->kill_after = -1;
    if (!*text)
        return 0;
    int k = -1;
    if (sscanf(text, "silent:%d", &k) == 1 && k >= 0)
        c->silent_after = k;
    else if (sscanf(text, "exit:%d", &k) == 1 && k >= 0)
        c->exit_after = k;
    else if (sscanf(text, "kill:%d", &k) == 1 && k >= 0)
        c->kill_after = k;
    else
        return -EINVAL;
    return 0;
}

static int setup(struct ctl *c, int argc, char **argv)
{
    sampi_config_load();
    for (int i = 1; i < argc; i++) {
        char err[256];
        if (!strcmp(argv[i], "--set") && i + 1 < argc) {
            char *eq = strchr(argv[++i], '=');
            int id = -1;
            if (eq)
                for (int k = 0; k < SAMPI_CVAR__COUNT; k++)
                    if (!strncmp(sampi_cvar_descs[k].name, argv[i], (size_t)(eq - argv[i])) &&
                        sampi_cvar_descs[k].name[eq - argv[i]] == '\0')
                        id = k;
            if (id < 0 || sampi_cvar_set(id, eq + 1, err, sizeof(err))) {
                fprintf(stderr, "sampi-controller: bad setting '%s'\n", argv[i]);
                return -EINVAL;
            }
        } else {
            fprintf(stderr, "sampi-controller: unknown argument '%s' (see sampi-controller(1))\n",
                    argv[i]);
            return -EINVAL;
        }
    }
    if (parse_debug(c)) {
        fprintf(stderr, "sampi-controller: bad sampi_selective_debug_controller\n");
        return -EINVAL;
    }
    MPI_Comm_remote_size(c->parent, &c->n);
    struct sampi_sel_params prm;
    sampi_sel_params_default(&prm);
    if (sampi_sel_params_from_cvars(&prm)) {
        fprintf(stderr, "sampi-controller: a sampi_selective_* setting does not parse\n");
        return -EINVAL;
    }
    int rc = sampi_sel_policy_init(&c->pol, &prm, c->n);
    if (rc)
        return rc;
    sampi_sel_policy_set_epoch(&c->pol, now_s());
    c->w = calloc((size_t)c->n, sizeof(*c->w));
    c->ready_at = calloc((size_t)c->n, sizeof(*c->ready_at));
    c->cap = sampi_sp_group_size(c->n);
    c->buf = malloc(c->cap);
    if (!c->w || !c->ready_at || !c->buf || sampi_sel_group_init(&c->grp, c->n))
        return -ENOMEM;
    return 0;
}

int main(int argc, char **argv)
{
    struct ctl c = {0};
    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&c.parent);
    if (c.parent == MPI_COMM_NULL) {
        fprintf(stderr, "sampi-controller: not started by SAMPI. Set SAMPI_SELECTIVE_MODE=api "
                        "or allreduce and run the application: its MPI_Init spawns this "
                        "program.\n");
        MPI_Finalize();
        return 2;
    }
    sampi_log_set_rank(-1);
    int rc = setup(&c, argc, argv);
    if (rc) {
        /* keep serving, as a controller that launches nothing: the workers
         * time out and fall back, which beats a hang */
        sampi_log_error("controller: set-up failed (%s); answering nothing", strerror(-rc));
        c.silent_after = 0;
        if (!c.w) {
            c.n = c.n ? c.n : 1;
            c.w = calloc((size_t)c.n, sizeof(*c.w));
            c.ready_at = calloc((size_t)c.n, sizeof(*c.ready_at));
            c.cap = sampi_sp_group_size(c.n);
            c.buf = malloc(c.cap);
        }
    }
    int64_t keepalive_ns = sampi_cvar_int(SAMPI_CVAR_SELECTIVE_TIMEOUT_MS) * 250000LL;
    int64_t next_ping = sampi_now_ns() + keepalive_ns;
    double wait_until = -1;
    unsigned spins = 0;
    while (c.stopped < c.n) {
        if (c.exit_after >= 0 && c.launched >= c.exit_after) {
            sampi_log_warn("controller: leaving after %ld groups "
                           "(sampi_selective_debug_controller)",
                           c.launched);
            MPI_Finalize();
            return 0;
        }
        if (c.kill_after >= 0 && c.launched >= c.kill_after)
            raise(SIGKILL); /* a real death, as a crash would be */
        int got = 0;
        while (poll_one(&c))
            got = 1;
        int silent = c.silent_after >= 0 && c.launched >= c.silent_after;
        if (rc == 0 && (got || (wait_until >= 0 && now_s() >= wait_until)))
            decide(&c, &wait_until);
        if (!silent && sampi_now_ns() >= next_ping) {
            ping_queued(&c);
            next_ping = sampi_now_ns() + keepalive_ns;
        }
        if (got)
            spins = 0;
        else
            sampi_wait_pause(&spins);
    }
    if (c.launched && sampi_log_enabled(SAMPI_LOG_INFO))
        sampi_log(SAMPI_LOG_INFO,
                  "controller: %ld groups (%ld full), average size %.2f, average wait %.4f s, "
                  "%ld messages refused",
                  c.launched, c.full, (double)c.members_total / (double)c.launched,
                  c.members_total ? c.ready_sum / (double)c.members_total : 0.0, c.refused);
    /* the workers free their side too: a disconnect would be collective with
     * workers that may have given this controller up */
    MPI_Comm_free(&c.parent);
    if (rc == 0) {
        sampi_sel_group_free(&c.grp);
        sampi_sel_policy_free(&c.pol);
    }
    free(c.w);
    free(c.ready_at);
    free(c.buf);
    MPI_Finalize();
    return 0;
}
