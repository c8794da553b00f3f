/*
 * wait.c - the waiter (wait.h).
 *
 * Example, sampi_stall_warn_ms = 120000 and no limit: a rank that waits for
 * rank 3 logs at 2, 4, 8, 16 ... minutes of silence, and keeps waiting; when
 * rank 3's data lands the clocks restart, so a long transfer that moves
 * warns only if it stalls for two minutes somewhere.
 */
#include "wait.h"
#include "clock.h"
#include "p2p_allreduce.h"
#include "wait_mode.h"
#include "sampi_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sampi_waiter_init(struct sampi_waiter *w, const char *what, int (*poll)(void *owner),
                       void (*describe)(void *owner, char *buf, size_t len), void *owner)
{
    *w = (struct sampi_waiter){.what = what, .poll = poll, .describe = describe, .owner = owner};
    w->limit_ns = sampi_cvar_int(SAMPI_CVAR_TIMEOUT_MS) * 1000000LL;
    w->warn_ns = sampi_cvar_int(SAMPI_CVAR_STALL_WARN_MS) * 1000000LL;
    w->begin_ns = sampi_now_ns();
    sampi_waiter_progress(w);
}

void sampi_waiter_progress(struct sampi_waiter *w)
{
    w->progress_ns = w->looked_ns = sampi_now_ns();
    w->next_warn_ns = w->warn_ns > 0 ? w->progress_ns + w->warn_ns : INT64_MAX;
}

/* Time this process did not run (SAMPI_WAIT_ABSENT_MS) is not silence: the
 * silence clocks move on by it.  Example: stopped 20 s in a wait with a 2 s
 * stall warning; at the first look after SIGCONT, 20.1 s after the last,
 * progress_ns moves on by 20.0 s, so no warning and no limit fires before
 * the peers had 2 s of this rank's running time to answer. */
static void discount_absence(struct sampi_waiter *w, int64_t now)
{
    int64_t gap = now - w->looked_ns - SAMPI_WAIT_POLL_MS * 1000000LL;
    if (gap > SAMPI_WAIT_ABSENT_MS * 1000000LL) {
        w->progress_ns += gap;
        if (w->next_warn_ns != INT64_MAX)
            w->next_warn_ns += gap;
        w->absent_ns += gap;
    }
    w->looked_ns = now;
}

int64_t sampi_waiter_slice_end(const struct sampi_waiter *w)
{
    int64_t end = sampi_now_ns() + SAMPI_WAIT_POLL_MS * 1000000LL;
    if (w->limit_ns > 0 && w->progress_ns + w->limit_ns < end)
        end = w->progress_ns + w->limit_ns;
    if (w->next_warn_ns < end)
        end = w->next_warn_ns;
    return end;
}

void sampi_waiter_ranks(const int *ranks, int n, char *buf, size_t len)
{
    enum { SHOWN = 8 };
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && i < SHOWN && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%d",
                               i == 0 ? (n > 1 ? "ranks " : "rank ") : ", ", ranks[i]);
    if (n > SHOWN && at < len)
        snprintf(buf + at, len - at, " and %d more", n - SHOWN);
}

int sampi_waiter_idle(struct sampi_waiter *w, const char *whom)
{
    int rc = w->poll ? w->poll(w->owner) : 0;
    if (rc)
        return rc;
    int64_t now = sampi_now_ns();
    discount_absence(w, now);
    if (now >= w->next_warn_ns) {
        char where[160] = "a communicator";
        if (w->describe)
            w->describe(w->owner, where, sizeof(where));
        char named[128] = "";
        if (!whom && w->absent) {
            w->absent(w->absent_ctx, named, sizeof(named));
            whom = named[0] ? named : NULL;
        }
        double silent = (double)(now - w->progress_ns) / 1e9;
        char absent[96] = "";
        if (w->absent_ns)
            snprintf(absent, sizeof(absent), ", of which this rank itself did not run %.1f s",
                     (double)w->absent_ns / 1e9);
        sampi_log_warn("%s: still waiting for %s in %s after %.1f s without progress (%.1f s in "
                       "all%s); a late rank is not an error%s",
                       where, whom ? whom : "its peers", w->what, silent,
                       (double)(now - w->begin_ns) / 1e9, absent,
                       w->limit_ns > 0 ? "" : ": SAMPI waits for it (sampi_timeout_ms=0)");
        w->warnings++;
        /* the next one after twice the silence so far */
        w->next_warn_ns = w->progress_ns + 2 * (now - w->progress_ns);
    }
    if (w->limit_ns > 0 && now >= w->progress_ns + w->limit_ns)
        return -ETIMEDOUT;
    return 0;
}

/* After one look at what a wait waits for: progress restarts the silence
 * clock; silence past the slice asks the waiter (revocation, the stall
 * warning, the limit); then the pause of the wait mode.  0 to look again,
 * or the waiter's error. */
static int turn(struct sampi_waiter *w, int progressed, int64_t *slice_end, unsigned *spins,
                const char *whom)
{
    if (progressed) {
        sampi_waiter_progress(w);
        *slice_end = sampi_waiter_slice_end(w);
        *spins = 0;
        return 0;
    }
    if (sampi_now_ns() >= *slice_end) {
        int rc = sampi_waiter_idle(w, whom);
        if (rc)
            return rc;
        *slice_end = sampi_waiter_slice_end(w);
    }
    sampi_wait_pause(spins);
    return 0;
}

int sampi_waiter_mpi(struct sampi_waiter *w, MPI_Request *reqs, int n, const char *whom)
{
    unsigned spins = 0;
    int64_t slice_end = sampi_waiter_slice_end(w);
    for (;;) {
        /* counted afresh each time: the owner's poll may complete one of
         * these requests itself (argcheck.c) */
        int left = 0, progressed = 0;
        for (int i = 0; i < n; i++) {
            if (reqs[i] == MPI_REQUEST_NULL)
                continue;
            int flag = 0;
            if (PMPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                return -EIO; /* SAMPI's communicators return errors */
            if (flag)
                progressed = 1;
            else
                left++;
        }
        if (!left)
            return 0;
        int rc = turn(w, progressed, &slice_end, &spins, whom);
        if (rc)
            return rc;
    }
}

/* The ranks `allreduce` still waits for, for a stall warning ("rank 2"). */
static void p2p_absent(void *ctx, char *buf, size_t len)
{
    enum { SHOWN = 9 };
    int ranks[SHOWN];
    int n = sampi_p2p_allreduce_waiting_for(ctx, ranks, SHOWN);
    sampi_waiter_ranks(ranks, n, buf, len);
}

int sampi_waiter_p2p(struct sampi_waiter *w, struct sampi_p2p_allreduce *allreduce)
{
    unsigned spins = 0;
    int64_t slice_end = sampi_waiter_slice_end(w);
    /* a stall warning names the ranks it waits for, unless w knows better */
    struct sampi_waiter mine = *w;
    if (!mine.absent) {
        mine.absent = p2p_absent;
        mine.absent_ctx = allreduce;
    }
    for (;;) {
        int progressed = 0;
        /* the owner's poll may have completed it itself (argcheck.c): a
         * complete exchange answers 1 again */
        int rc = sampi_p2p_allreduce_test(allreduce, &progressed);
        if (!rc)
            rc = turn(&mine, progressed, &slice_end, &spins, NULL);
        if (rc) {
            mine.absent = w->absent;
            mine.absent_ctx = w->absent_ctx;
            *w = mine;
            return rc < 0 ? rc : 0;
        }
    }
}

/* Each communicator counts the helpers' exchanges on it (the same count on
 * every rank, since every rank makes them in the same order): the count
 * goes into the tag (p2p_allreduce.c says why).  Kept as an attribute, so a
 * new communicator starts from 0 on every rank. */
static int seq_keyval = MPI_KEYVAL_INVALID;
static pthread_once_t seq_once = PTHREAD_ONCE_INIT;

static int seq_delete(MPI_Comm comm, int kv, void *value, void *extra)
{
    (void)comm, (void)kv, (void)extra;
    free(value);
    return MPI_SUCCESS;
}

static void seq_keyval_make(void)
{
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, seq_delete, &seq_keyval, NULL);
}

/* The tag of comm's next helper exchange of kind `sub`, or -ENOMEM. */
static int next_tag(MPI_Comm comm, enum sampi_p2p_sub sub)
{
    pthread_once(&seq_once, seq_keyval_make);
    unsigned *n = NULL;
    int flag = 0;
    if (seq_keyval == MPI_KEYVAL_INVALID ||
        PMPI_Comm_get_attr(comm, seq_keyval, &n, &flag) != MPI_SUCCESS)
        return -ENOMEM;
    if (!flag) {
        if (!(n = calloc(1, sizeof(*n))))
            return -ENOMEM;
        if (PMPI_Comm_set_attr(comm, seq_keyval, n) != MPI_SUCCESS) {
            free(n);
            return -ENOMEM;
        }
    }
    return SAMPI_P2P_TAG(sub, (*n)++);
}

/* SAMPI's own allreduce of `count` elements on comm into out (count * the
 * type's size bytes), through w: 0, -ENOTSUP (not a pair the kernels
 * reduce: nothing was sent), or another negative errno. */
static int p2p_allreduce(struct sampi_waiter *w, enum sampi_p2p_sub sub, const void *in, void *out,
                         int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    struct sampi_p2p_allreduce x;
    sampi_p2p_allreduce_init(&x);
    int tag = next_tag(comm, sub);
    if (tag < 0)
        return tag;
    int rc = sampi_p2p_allreduce_start(&x, in, count, dt, op, comm, tag);
    if (!rc)
        rc = sampi_waiter_p2p(w, &x);
    if (!rc)
        memcpy(out, sampi_p2p_allreduce_result(&x), x.bytes);
    sampi_p2p_allreduce_release(&x);
    return rc;
}

/* The buffers of one PMPI collective: in, then out.  Freed when the
 * collective completed; let go (never freed) when the wait failed, so that
 * the pending request can still complete into them when a late rank
 * arrives. */
static void *coll_buffers(size_t in, size_t out)
{
    return malloc(in + out ? in + out : 1);
}

/* A datatype or op the kernels do not reduce (the same on every rank). */
static int nbc_allreduce(struct sampi_waiter *w, const void *in, void *out, int count,
                         MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int tsize = 0;
    PMPI_Type_size(dt, &tsize);
    size_t bytes = (size_t)count * (size_t)tsize;
    char *buf = coll_buffers(bytes, bytes);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, in, bytes);
    MPI_Request r;
    if (PMPI_Iallreduce(buf, buf + bytes, count, dt, op, comm, &r) != MPI_SUCCESS) {
        free(buf);
        return -EIO;
    }
    int rc = sampi_waiter_mpi(w, &r, 1, NULL);
    if (rc)
        return rc; /* buf stays with the pending request */
    memcpy(out, buf + bytes, bytes);
    free(buf);
    return 0;
}

int sampi_waiter_allreduce(struct sampi_waiter *w, const void *in, void *out, int count,
                           MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    if (!w)
        return PMPI_Allreduce(in, out, count, dt, op, comm) == MPI_SUCCESS ? 0 : -EIO;
    int rc = p2p_allreduce(w, SAMPI_P2P_SUB_ALLREDUCE, in, out, count, dt, op, comm);
    return rc == -ENOTSUP ? nbc_allreduce(w, in, out, count, dt, op, comm) : rc;
}

/* The allgather is the allreduce under MPI_BOR of a byte vector where each
 * rank fills only its own slot: OR with zeros keeps every bit, so every
 * rank gets every contribution exactly.  It moves the whole vector at every
 * step (log2 p steps of p * count bytes), fine for the few bytes per rank
 * SAMPI gathers. */
int sampi_waiter_allgather(struct sampi_waiter *w, const void *in, int count, MPI_Datatype dt,
                           void *out, MPI_Comm comm)
{
    if (!w)
        return PMPI_Allgather(in, count, dt, out, count, dt, comm) == MPI_SUCCESS ? 0 : -EIO;
    int tsize = 0, size = 0, rank = 0;
    PMPI_Type_size(dt, &tsize);
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    size_t bytes = (size_t)count * (size_t)tsize, all = bytes * (size_t)size;
    if (all > INT_MAX)
        return -E2BIG; /* SAMPI gathers a few bytes per rank */
    char *buf = calloc(all ? all : 1, 1);
    if (!buf)
        return -ENOMEM;
    memcpy(buf + bytes * (size_t)rank, in, bytes);
    int rc = p2p_allreduce(w, SAMPI_P2P_SUB_ALLGATHER, buf, out, (int)all, MPI_BYTE, MPI_BOR, comm);
    free(buf);
    return rc;
}

int sampi_waiter_one(struct sampi_waiter *w, MPI_Request *req)
{
    if (!w)
        return PMPI_Wait(req, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -EIO;
    return sampi_waiter_mpi(w, req, 1, NULL);
}

int sampi_waiter_barrier(struct sampi_waiter *w, MPI_Comm comm)
{
    if (!w)
        return PMPI_Barrier(comm) == MPI_SUCCESS ? 0 : -EIO;
    /* one byte, so that the exchange has messages */
    unsigned char in = 0, out;
    return p2p_allreduce(w, SAMPI_P2P_SUB_BARRIER, &in, &out, 1, MPI_BYTE, MPI_BOR, comm);
}
