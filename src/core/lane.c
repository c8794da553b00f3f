/*
 * lane.c - sampi_lane_* (lane.h).
 *
 * The lane is thread-local, so taking it needs no lock; what closes every
 * thread's lane at once is a process-wide epoch, and the control variables'
 * count of writes, which a lane remembers from its opening.
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
    uint64_t left;   /* calls it may still take */
    uint64_t calls;  /* c->calls as its last call left it */
    uint64_t epoch;  /* `epoch` at the opening */
    uint64_t writes; /* sampi_cvar_writes() at the opening */
};

/* initial-exec: a lookup of the thread's lane costs one load, not a call */
static _Thread_local struct lane lane __attribute__((tls_model("initial-exec")));

void sampi_lane_open(const struct sampi_lane_key *key, struct sampi_comm *c, uint64_t *counter,
                     uint64_t n)
{
    lane = (struct lane){.key = *key,
                         .c = c,
                         .counter = counter,
                         .left = n,
                         .calls = c->calls,
                         .epoch = atomic_load_explicit(&epoch, memory_order_acquire),
                         .writes = sampi_cvar_writes()};
}

struct sampi_comm *sampi_lane_take(const struct sampi_lane_key *key)
{
    if (!lane.left || key->comm != lane.key.comm || key->count != lane.key.count ||
        key->datatype != lane.key.datatype || key->op != lane.key.op ||
        key->in_place != lane.key.in_place)
        return NULL;
    if (lane.epoch != atomic_load_explicit(&epoch, memory_order_acquire) ||
        lane.writes != sampi_cvar_writes() || lane.c->calls != lane.calls) {
        lane.left = 0;
        return NULL;
    }
    lane.left--;
    lane.calls = ++lane.c->calls;
    if (lane.counter)
        ++*lane.counter;
    return lane.c;
}

void sampi_lane_close(void)
{
    lane.left = 0;
}

void sampi_lane_close_all(void)
{
    atomic_fetch_add_explicit(&epoch, 1, memory_order_acq_rel);
}
