/*
 * lane.c - sampi_lane_* (lane.h).
 *
 * Lanes are thread-local, so taking one needs no lock; what closes every
 * thread's lanes at once is a process-wide epoch, and the control
 * variables' count of writes, which a lane remembers from its opening.
 */
#include "lane.h"
#include "comm.h"
#include "config.h"

#include <stdatomic.h>

static _Atomic uint64_t epoch;

struct lane {
    struct sampi_lane_key key;
    struct sampi_comm *c;
    uint64_t *counter;
    uint64_t expect; /* *counter as the lane's last call left it */
    uint64_t left;   /* calls it may still take */
    uint64_t epoch;  /* `epoch` at the opening */
    uint64_t writes; /* sampi_cvar_writes() at the opening */
};

/* A few per thread, so that a program cycling through several calls (the
 * sizes of a step's reductions, two communicators) keeps them all; the one
 * taken last is looked at first.  initial-exec: a lookup costs loads, not a
 * call. */
#define LANES 8
static _Thread_local struct lane lanes[LANES] __attribute__((tls_model("initial-exec")));
static _Thread_local unsigned lane_next __attribute__((tls_model("initial-exec")));
static _Thread_local unsigned lane_last __attribute__((tls_model("initial-exec")));

static int same_key(const struct sampi_lane_key *a, const struct sampi_lane_key *b)
{
    return a->comm == b->comm && a->count == b->count && a->datatype == b->datatype &&
           a->op == b->op && a->in_place == b->in_place;
}

void sampi_lane_open(const struct sampi_lane_key *key, struct sampi_comm *c, uint64_t *counter,
                     uint64_t n)
{
    struct lane *l = NULL;
    for (int i = 0; i < LANES && !l; i++)
        if (same_key(&lanes[i].key, key))
            l = &lanes[i];
    if (!l)
        l = &lanes[lane_next++ % LANES];
    *l = (struct lane){.key = *key,
                       .c = c,
                       .counter = counter,
                       .expect = counter ? *counter : 0,
                       .left = n,
                       .epoch = atomic_load_explicit(&epoch, memory_order_acquire),
                       .writes = sampi_cvar_writes()};
}

/* Still valid: nothing closed every lane, c is still quiet (a call of SAMPI's
 * on it since could have been given up on), and no other call advanced the
 * count the decisions follow (another key of the same cell, another
 * thread). */
static int valid(const struct lane *l)
{
    return l->epoch == atomic_load_explicit(&epoch, memory_order_acquire) &&
           l->writes == sampi_cvar_writes() && l->c->quiet &&
           (!l->counter || *l->counter == l->expect);
}

struct sampi_comm *sampi_lane_take(const struct sampi_lane_key *key)
{
    for (unsigned i = 0; i < LANES; i++) {
        const unsigned at = (lane_last + i) % LANES;
        struct lane *l = &lanes[at];
        if (!l->left || !same_key(&l->key, key))
            continue;
        lane_last = at;
        if (!valid(l)) {
            l->left = 0;
            return NULL;
        }
        l->left--;
        l->c->calls++;
        if (l->counter)
            l->expect = ++*l->counter;
        return l->c;
    }
    return NULL;
}

void sampi_lane_close_all(void)
{
    atomic_fetch_add_explicit(&epoch, 1, memory_order_acq_rel);
}
