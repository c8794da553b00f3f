/*
 * wait_mode.c - the wait mode (wait_mode.h): auto's decision, the mode in
 * force, and the idle turn of every polling loop.
 *
 * Why it matters: with a core per rank, sched_yield returns at once, so a
 * rank that yields and then sleeps sleeps through any wait longer than a few
 * microseconds, and once a straggler has made everyone wait, every step of a
 * schedule pays a sleep's wake-up (docs/design.md, 'Waits follow the node';
 * the figures are in docs/notes/2026-11-wait-mode.md).
 *
 * Example: mpirun -np 16 --bind-to core on a 16-core node: 16 local ranks,
 * their bindings cover 16 CPUs, Open MPI does not yield -> poll.  mpirun
 * --oversubscribe -np 8 on 2 cores: 8 local ranks on 2 CPUs -> yield.
 */
#include "wait_mode.h"
#include "config.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

const char *const sampi_wait_mode_names[] = {"auto", "poll", "yield", "block", NULL};

/* ------------------------------------------------------------ the decision */

static int ranks_unknown(const struct sampi_node_facts *f)
{
    return f->local_ranks <= 0 || f->cpus <= 0;
}

static int oversubscribed(const struct sampi_node_facts *f)
{
    return f->local_ranks > f->cpus;
}

static int ompi_yields(const struct sampi_node_facts *f)
{
    return f->ompi_yields == 1;
}

static int always(const struct sampi_node_facts *f)
{
    (void)f;
    return 1;
}

/* The first rule that holds decides; the reason precedes the facts. */
static const struct wait_rule {
    int (*holds)(const struct sampi_node_facts *f);
    enum sampi_wait_mode mode;
    const char *reason;
} rules[] = {
    {ranks_unknown, SAMPI_WAIT_YIELD, "the ranks or CPUs of this node are unknown"},
    {oversubscribed, SAMPI_WAIT_YIELD, "oversubscribed"},
    {ompi_yields, SAMPI_WAIT_YIELD, "Open MPI yields when idle (mpi_yield_when_idle)"},
    {always, SAMPI_WAIT_POLL, NULL},
};

enum sampi_wait_mode sampi_wait_mode_decide(const struct sampi_node_facts *f, char *why, size_t len)
{
    const struct wait_rule *r = rules;
    while (!r->holds(f))
        r++;
    char facts[160];
    snprintf(facts, sizeof(facts), "%d local rank%s on %d CPU%s%s%s", f->local_ranks,
             f->local_ranks == 1 ? "" : "s", f->cpus, f->cpus == 1 ? "" : "s",
             f->source ? ", from " : "", f->source ? f->source : "");
    if (r->reason)
        snprintf(why, len, "%s; %s", r->reason, facts);
    else
        snprintf(why, len, "%s", facts);
    return r->mode;
}

/* ------------------------------------------------------------ the state */

static _Atomic int auto_mode = SAMPI_WAIT_AUTO; /* AUTO: not resolved */
static char auto_why[256] = "not resolved in this process (it did not start through SAMPI's "
                            "MPI_Init or MPI_Allreduce)";
static _Atomic uint64_t sleeps;

void sampi_wait_mode_resolve(const struct sampi_node_facts *f)
{
    enum sampi_wait_mode m = sampi_wait_mode_decide(f, auto_why, sizeof(auto_why));
    atomic_store_explicit(&auto_mode, (int)m, memory_order_release);
}

int sampi_wait_mode_resolved(void)
{
    return atomic_load_explicit(&auto_mode, memory_order_acquire) != SAMPI_WAIT_AUTO;
}

static enum sampi_wait_mode auto_answer(void)
{
    int m = atomic_load_explicit(&auto_mode, memory_order_relaxed);
    return m == SAMPI_WAIT_AUTO ? SAMPI_WAIT_YIELD : (enum sampi_wait_mode)m;
}

enum sampi_wait_mode sampi_wait_mode_now(void)
{
    long long set = sampi_cvar_int(SAMPI_CVAR_BUSY_POLL);
    if (set > SAMPI_WAIT_AUTO && set < SAMPI_WAIT__COUNT)
        return (enum sampi_wait_mode)set;
    return auto_answer();
}

const char *sampi_wait_mode_describe(char *buf, size_t len)
{
    enum sampi_wait_mode now = sampi_wait_mode_now();
    if (sampi_cvar_int(SAMPI_CVAR_BUSY_POLL) == SAMPI_WAIT_AUTO)
        snprintf(buf, len, "%s (auto: %s)", sampi_wait_mode_names[now], auto_why);
    else
        snprintf(buf, len, "%s (set by sampi_busy_poll; auto would %s: %s)",
                 sampi_wait_mode_names[now], sampi_wait_mode_names[auto_answer()], auto_why);
    return buf;
}

/* ------------------------------------------------------------ waiting */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* block: yields first (cheap when a peer is about to answer), then sleeps
 * doubling up to 1 ms, so that a rank waiting 20 ms wakes ~20 times. */
static void block_pause(unsigned n)
{
    enum { YIELDS = 64, MAX_SLEEP_NS = 1000000 };
    if (n < YIELDS) {
        sched_yield();
        return;
    }
    unsigned shift = n - YIELDS;
    long ns = shift >= 10 ? MAX_SLEEP_NS : (1000L << shift);
    struct timespec ts = {0, ns};
    sampi_wait_count_sleep();
    nanosleep(&ts, NULL);
}

void sampi_wait_pause(unsigned *spins)
{
    unsigned n = (*spins)++;
    switch (sampi_wait_mode_now()) {
    case SAMPI_WAIT_POLL:
        cpu_relax();
        break;
    case SAMPI_WAIT_BLOCK:
        block_pause(n);
        break;
    default:
        sched_yield();
        break;
    }
}

void sampi_wait_count_sleep(void)
{
    atomic_fetch_add_explicit(&sleeps, 1, memory_order_relaxed);
}

uint64_t sampi_wait_sleeps(void)
{
    return atomic_load_explicit(&sleeps, memory_order_relaxed);
}
