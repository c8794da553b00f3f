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
#include "wait_mode.h"
#include "sampi_internal.h"

#include <errno.h>
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
    w->progress_ns = sampi_now_ns();
    w->next_warn_ns = w->warn_ns > 0 ? w->progress_ns + w->warn_ns : INT64_MAX;
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
        sampi_log_warn("%s: still waiting for %s in %s after %.1f s without progress (%.1f s in "
                       "all); a late rank is not an error%s",
                       where, whom ? whom : "its peers", w->what, silent,
                       (double)(now - w->begin_ns) / 1e9,
                       w->limit_ns > 0 ? "" : ": SAMPI waits for it (sampi_timeout_ms=0)");
        w->warnings++;
        /* the next one after twice the silence so far */
        w->next_warn_ns = w->progress_ns + 2 * (now - w->progress_ns);
    }
    if (w->limit_ns > 0 && now >= w->progress_ns + w->limit_ns)
        return -ETIMEDOUT;
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
        if (progressed) {
            sampi_waiter_progress(w);
            slice_end = sampi_waiter_slice_end(w);
            spins = 0;
            continue;
        }
        if (sampi_now_ns() >= slice_end) {
            int rc = sampi_waiter_idle(w, whom);
            if (rc)
                return rc;
            slice_end = sampi_waiter_slice_end(w);
        }
        sampi_wait_pause(&spins);
    }
}

/* The buffers of one collective: in, then out.  Freed when the collective
 * completed; let go (never freed) when the wait failed, so that the pending
 * request can still complete into them when a late rank arrives. */
static void *coll_buffers(size_t in, size_t out)
{
    return malloc(in + out ? in + out : 1);
}

int sampi_waiter_allreduce(struct sampi_waiter *w, const void *in, void *out, int count,
                           MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    if (!w)
        return PMPI_Allreduce(in, out, count, dt, op, comm) == MPI_SUCCESS ? 0 : -EIO;
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

int sampi_waiter_allgather(struct sampi_waiter *w, const void *in, int count, MPI_Datatype dt,
                           void *out, MPI_Comm comm)
{
    if (!w)
        return PMPI_Allgather(in, count, dt, out, count, dt, comm) == MPI_SUCCESS ? 0 : -EIO;
    int tsize = 0, size = 0;
    PMPI_Type_size(dt, &tsize);
    PMPI_Comm_size(comm, &size);
    size_t bytes = (size_t)count * (size_t)tsize;
    char *buf = coll_buffers(bytes, bytes * (size_t)size);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, in, bytes);
    MPI_Request r;
    if (PMPI_Iallgather(buf, count, dt, buf + bytes, count, dt, comm, &r) != MPI_SUCCESS) {
        free(buf);
        return -EIO;
    }
    int rc = sampi_waiter_mpi(w, &r, 1, NULL);
    if (rc)
        return rc; /* buf stays with the pending request */
    memcpy(out, buf + bytes, bytes * (size_t)size);
    free(buf);
    return 0;
}

int sampi_waiter_one(struct sampi_waiter *w, MPI_Request *req)
{
    if (!w)
        return PMPI_Wait(req, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -EIO;
    return sampi_waiter_mpi(w, req, 1, NULL);
}

int sampi_waiter_barrier(struct sampi_waiter *w, MPI_Comm comm)
{
    MPI_Request r;
    if (PMPI_Ibarrier(comm, &r) != MPI_SUCCESS)
        return -EIO;
    return sampi_waiter_one(w, &r);
}

int sampi_request_cancel(MPI_Request *req)
{
    if (*req == MPI_REQUEST_NULL)
        return 0;
    MPI_Status st;
    int cancelled = 0;
    PMPI_Cancel(req);
    PMPI_Wait(req, &st);
    PMPI_Test_cancelled(&st, &cancelled);
    return !cancelled;
}
