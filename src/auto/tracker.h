/*
 * tracker.h - what a communicator's recent calls say about its ranks: who is
 * usually late (for stragglar) and whose link is degraded (for optcc).
 *
 * The tracker knows no algorithm: it hands what it saw to the algorithms'
 * models (the `model` column of algos.def) and asks them.
 *
 * After every tracked call (a call of at least sampi_tracker_min_bytes on 3
 * or more ranks) the ranks allgather how long each spent in it by its own
 * clock (one double each), and now and then run a short link probe
 * (detect.h).  The decisions for call k+1 are taken from what every rank
 * holds after call k, so all ranks agree without synchronised clocks
 * (docs/design.md, 'Decisions are agreed').  The exchanges run on the communicator's private
 * duplicate and wait through its waiter (wait.h); a call that failed skips
 * them, since the failure revokes the communicator and tells the others.
 */
#ifndef SAMPI_TRACKER_H
#define SAMPI_TRACKER_H

#include "algos.h"
#include "detect.h"
#include "predict.h"
#include "report.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct sampi_comm;

struct sampi_tracker {
    struct sampi_predictor pred;
    struct sampi_beta beta;
    struct sampi_detector det;
    struct sampi_prediction now; /* pred's answer, recomputed when pred changes */
    uint64_t tracked;            /* calls tracked */
    uint64_t next_probe;         /* the tracked-call count of the next link probe */
    uint64_t probe_gap;          /* tracked calls between probes now (backs off) */
    int64_t entry_ns;            /* this rank's entry into the current call */
    int predicted;               /* the straggler predicted for the current call, -1 none */
    int last_late;               /* the notably late rank of the last tracked call, -1 none */
    double last_gap_ns;          /* how late it was, after the second-last */
    double *dur;                 /* n durations of the last call */
    double *exch;                /* 3n: the exchange's (duration, parts' changes, own exchange
                                  * time of the call before) per rank */
    double exchange_own_ns;      /* this rank's last exchange, barrier to allgather's end */
    double exchange_ns;          /* what an exchange costs, agreed (0: none measured yet) */
    double *probe_times;         /* 2n receive times of the last probe, interleaved (left, right)
                                  * per rank, then the same split into n lefts and n rights */
    char *probe_buf;             /* 2 * probe_bytes: one to send, one to receive into */
    size_t probe_bytes;
    /* published for the performance variables (read from any thread) */
    _Atomic int pv_predicted; /* -1: none */
    _Atomic int pv_degraded;  /* -1: none */
    _Atomic uint64_t pv_lateness_ns, pv_slowdown_milli, pv_beta_ps;
    _Atomic uint64_t pv_bytes; /* the last tracked call's vector */
    /* the end-of-run report's sums (report.h), NULL unless sampi_report is set */
    struct sampi_report_acc *report;
};

/* Whether a call the user forced to an algorithm is tracked: at least
 * sampi_tracker_min_bytes on 3 or more ranks (agreed inputs only), so that
 * a forced `stragglar` still learns its straggler.  `auto` measures the calls
 * its selector asks for instead (auto.h). */
int sampi_tracker_wanted(const struct sampi_comm *c, size_t bytes);

/* A tracked call starts: note the entry time and the prediction in force.
 * Call after any injected delay. */
void sampi_tracker_begin(struct sampi_comm *c);

/* After a tracked call ran `algo` successfully: wait until every rank has
 * left the algorithm (a barrier), stamp this rank's duration, exchange the
 * durations (the one exchange of a measured call), update the predictions and the arrival
 * counters, maybe probe.  *cost_ns: what the call cost, from the last
 * arrival to the end (agreed on every rank), -1 when unknown; the caller
 * hands it to auto (auto.h).  Collective.  0, or a negative errno when an
 * exchange failed (the caller then revokes the communicator). */
int sampi_tracker_end(struct sampi_comm *c, enum sampi_algo_id algo, size_t bytes, double *cost_ns);

/* Regime changes across a composition.  A composed algorithm (hier) runs
 * others on parts of the caller's communicator, whose trackers see what the
 * caller's cannot (a late node, a node's degraded link) and the other way
 * round.  When a tracked call changes what c's tracker says (nobody late, a
 * straggler predicted, rank R's link degraded), c->regime_epoch advances
 * (agreed on c: every rank computes it from the same exchange) and, where c
 * is a part, its parent's parts_changes on this rank.  Each tracking
 * exchange on c carries the ranks' parts_changes beside their durations,
 * so c->parts_epoch, their sum, is agreed on c.  auto (auto.c) reads both:
 * a new parts_epoch drops what it measured of the composed arms
 * (SAMPI_CAP_COMPOSED), a new parent regime_epoch what a part measured of
 * every arm.  A composition written later needs nothing more: its parts
 * are parts (struct sampi_comm.parent), its row carries the cap. */
uint64_t sampi_tracker_parts_epoch(const struct sampi_comm *c);
uint64_t sampi_tracker_regime_epoch(const struct sampi_comm *c);

/* Whether the last tracked call on c agrees with the world as the tracker
 * and auto now see it: somebody notably late in a straggler regime
 * (`straggler_regime`, auto's), nobody outside one; the predicted rank the
 * late one (nobody, when none is predicted), by at least half the
 * predicted lateness (before any tracked call, the regime alone).  Agreed
 * on every rank (from the tracking exchange).  auto measures often while
 * not: the world may be changing. */
int sampi_tracker_settled(const struct sampi_comm *c, int straggler_regime);

/* What one tracking exchange costs, in ns: a running mean (1/8 per
 * exchange) of the shortest of the ranks' own times for the exchange before
 * (the rank that reached the barrier last waited for nobody); agreed on
 * every rank.  0 before two exchanges were made. */
double sampi_tracker_exchange_ns(const struct sampi_comm *c);

/* The straggler predicted for the next call, or -1. */
int sampi_tracker_straggler(const struct sampi_comm *c);
/* The degraded rank detected, or -1; *slowdown its factor. */
int sampi_tracker_degraded(const struct sampi_comm *c, double *slowdown);
/* Inputs for `auto` (select.h), from the tracker of c (zeros when none) and
 * the call's context, already filled by the caller (sampi_coll_ctx_fill). */
struct sampi_select_hints;
struct sampi_coll_ctx;
void sampi_tracker_hints(struct sampi_comm *c, const struct sampi_coll_ctx *ctx, size_t count,
                         size_t extent, struct sampi_select_hints *h);

/* The report's sums of c's tracked calls (NULL: none kept). */
const struct sampi_report_acc *sampi_tracker_report(const struct sampi_comm *c);

void sampi_tracker_free(struct sampi_tracker *t);

#endif
