/*
 * progress_mode.c - the progress mode (progress_mode.h): auto's decision
 * from the node, and the mode in force.
 *
 * Why a free PU and not "always a thread": with a core per rank and nothing
 * spare, a progress thread takes turns with the computation it is meant to
 * overlap, and every turn it takes is the program's time; Open MPI's libnbc
 * then does as well (it moves the call inside the program's MPI calls).
 */
#include "progress_mode.h"

#include <stdatomic.h>
#include <stdio.h>

const char *const sampi_progress_mode_names[] = {"auto", "thread", "calls", NULL};

/* ------------------------------------------------------------ the decision */

static int unknown(const struct sampi_progress_facts *f)
{
    return f->binding_pus <= 0;
}

/* Bound to fewer PUs than the node has: the binding alone says. */
static int bound_with_spare(const struct sampi_progress_facts *f)
{
    return f->binding_pus < f->node_pus && f->binding_pus >= 2;
}

static int bound_to_one(const struct sampi_progress_facts *f)
{
    return f->binding_pus == 1;
}

/* Unbound: the node's PUs against the job's ranks on it. */
static int unbound_with_spare(const struct sampi_progress_facts *f)
{
    return f->local_ranks > 0 && f->node_pus > f->local_ranks;
}

static int always(const struct sampi_progress_facts *f)
{
    (void)f;
    return 1;
}

/* The first rule that holds decides. */
static const struct progress_rule {
    int (*holds)(const struct sampi_progress_facts *f);
    enum sampi_progress_mode mode;
    const char *reason;
} rules[] = {
    {unknown, SAMPI_PROGRESS_CALLS, "this process's binding is unknown"},
    {bound_with_spare, SAMPI_PROGRESS_THREAD,
     "the binding holds %d PUs: the rank computes on one, the thread takes another"},
    {bound_to_one, SAMPI_PROGRESS_CALLS, "no free PU: the binding holds %d PU"},
    {unbound_with_spare, SAMPI_PROGRESS_THREAD, "unbound, and the node has a PU beyond its ranks"},
    {always, SAMPI_PROGRESS_CALLS, "no free PU"},
};

enum sampi_progress_mode sampi_progress_mode_decide(const struct sampi_progress_facts *f, char *why,
                                                    size_t len)
{
    const struct progress_rule *r = rules;
    while (!r->holds(f))
        r++;
    char reason[160];
    snprintf(reason, sizeof(reason), r->reason, f->binding_pus);
    snprintf(why, len, "%s; %d local rank%s, %d PUs on the node, %d in the binding", reason,
             f->local_ranks, f->local_ranks == 1 ? "" : "s", f->node_pus, f->binding_pus);
    return r->mode;
}

/* ------------------------------------------------------------ the state */

static _Atomic int mode_now = SAMPI_PROGRESS_AUTO; /* AUTO: not resolved */
static char mode_why[400] = "not resolved in this process (it did not start through SAMPI's "
                            "MPI_Init or MPI_Init_thread)";

void sampi_progress_mode_resolve(enum sampi_progress_mode local, int agreed, const char *why)
{
    enum sampi_progress_mode m =
        local == SAMPI_PROGRESS_THREAD && agreed ? SAMPI_PROGRESS_THREAD : SAMPI_PROGRESS_CALLS;
    if (local == SAMPI_PROGRESS_THREAD && !agreed)
        snprintf(mode_why, sizeof(mode_why),
                 "%s; but not every rank of the job can run a progress thread, and they must "
                 "take nonblocking calls alike",
                 why);
    else
        snprintf(mode_why, sizeof(mode_why), "%s", why);
    atomic_store_explicit(&mode_now, (int)m, memory_order_release);
}

static char placed[256];

void sampi_progress_mode_placed(const char *where)
{
    snprintf(placed, sizeof(placed), "%s", where);
}

enum sampi_progress_mode sampi_progress_mode_now(void)
{
    int m = atomic_load_explicit(&mode_now, memory_order_acquire);
    return m == SAMPI_PROGRESS_THREAD ? SAMPI_PROGRESS_THREAD : SAMPI_PROGRESS_CALLS;
}

const char *sampi_progress_mode_describe(char *buf, size_t len)
{
    enum sampi_progress_mode m = sampi_progress_mode_now();
    snprintf(buf, len, "%s (%s%s%s)", sampi_progress_mode_names[m], mode_why,
             m == SAMPI_PROGRESS_THREAD && placed[0] ? "; threads " : "",
             m == SAMPI_PROGRESS_THREAD ? placed : "");
    return buf;
}
