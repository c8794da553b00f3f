/*
 * dgram_fault.h - fault injection for datagram transports: a decorator that
 * wraps any struct sampi_dgram and drops or delays its datagrams, seeded and
 * reproducible.  It exists because this kernel has no netem; tests and
 * benchmarks use it, and it is off unless sampi_optireduce_fault is set.
 *
 * Spec text (sampi_optireduce_fault), comma-separated key=value:
 *   drop=P      each datagram sent is lost with probability P (0..1)
 *   late=P      each datagram received is held back with probability P
 *   delay=T     how long a held datagram waits (us, ms or s suffix; default us)
 *   pareto=A    held datagrams wait T (U^(-1/A) - 1) instead (heavy tail,
 *               Lomax with shape A > 0), capped at max
 *   max=T       cap on any delay (default 10 s)
 *   seed=N      random seed (default 1); rank r draws from seed and r
 * Example: "drop=0.001,late=0.01,delay=5ms,seed=7".
 *
 * Drops happen at the sender (the datagram never leaves), delays at the
 * receiver (a held datagram is delivered by a later recv() once due, so a
 * datagram still held when the receiver stops listening is late for good).
 */
#ifndef SAMPI_DGRAM_FAULT_H
#define SAMPI_DGRAM_FAULT_H

#include "dgram.h"

#include <stddef.h>
#include <stdint.h>

struct sampi_fault_cfg {
    double drop; /* 0..1 */
    double late; /* 0..1 */
    int64_t delay_ns;
    double pareto; /* 0: fixed delay */
    int64_t max_ns;
    uint64_t seed;
};

struct sampi_fault_counts {
    uint64_t sent;    /* datagrams handed to send() */
    uint64_t dropped; /* of those, lost on purpose */
    uint64_t dropped_bytes;
    uint64_t delayed;  /* datagrams received and held back */
    uint64_t delay_ns; /* their total delay */
};

/* Parse the spec text; "" gives a configuration that injects nothing.  0, or
 * -EINVAL with a message in err.  Pure. */
int sampi_fault_parse(const char *text, struct sampi_fault_cfg *cfg, char *err, size_t errlen);

/* Whether cfg injects anything. */
int sampi_fault_active(const struct sampi_fault_cfg *cfg);

/* Draw one delay (ns) from cfg for a uniform u in (0, 1].  Pure. */
int64_t sampi_fault_delay_ns(const struct sampi_fault_cfg *cfg, double u);

/* The injector's generator (splitmix64): a uniform draw in (0, 1] from
 * *state, which it advances.  Pure; benchmarks draw with it too. */
double sampi_fault_unit(uint64_t *state);

/* Wrap inner (which the decorator then owns and closes).  0 or -ENOMEM. */
int sampi_dgram_fault_wrap(struct sampi_dgram *inner, const struct sampi_fault_cfg *cfg,
                           struct sampi_dgram **out);

/* The counters of a decorator; 0, or -EINVAL when dg is not one. */
int sampi_dgram_fault_counts(struct sampi_dgram *dg, struct sampi_fault_counts *out);

/* Suspend injection (on = 1) or resume it, e.g. while timeouts calibrate.
 * Datagrams already held are still delivered when due.  No-op when dg is
 * not a decorator. */
void sampi_dgram_fault_bypass(struct sampi_dgram *dg, int on);

#endif
