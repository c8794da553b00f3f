/*
 * autosel.h - `auto` that measures: which exact algorithm runs a call, chosen
 * from what the communicator's own calls cost.
 *
 * Pure code (no MPI, no clocks, no I/O), as predict.h and detect.h: the
 * dispatcher asks it for each call, and feeds it back, after a measured call,
 * the call's cost as every rank knows it from the tracking exchange (the time
 * from the last arrival to completion on every rank: the shortest stay in
 * the call, stamped once every rank has left the algorithm, tracker.h).  Every
 * rank calls it with the same inputs in the same order, so every rank takes
 * the same decisions (docs/design.md, 'Decisions are agreed'): exploration follows the cell's call
 * count, never a local random draw.
 *
 * The table: one cell per message-size bucket (bytes in (2^(b-1), 2^b]) and
 * regime (no straggler, a predicted straggler, a degraded link).  A cell
 * holds the recent costs of each arm (an exact algorithm the call may run).
 *
 *   EXPLORING  every call is measured; the arm with the fewest samples runs
 *              next (ties: the prior's favourite first, then the table's
 *              order).  After 2 samples each, an arm whose best sample is
 *              over 1.5 times the best median leaves; after 5 each, an arm
 *              whose median is more than 5% above the best median and whose
 *              best sample is above it too leaves.  When one arm is left, or
 *              every survivor has 5 samples, the cheapest median wins.
 *   CONVERGED  the winner runs; one call in `period` (by the cell's call
 *              count: 2 for calls of 1 MiB or more, 16 below, 128 below
 *              64 KiB) is measured to see drift.  The cell is explored again
 *              after `recheck` calls, a period that doubles from 128 up to
 *              8192 while the winner stays and starts again at 128 when it
 *              changes; at once when the winner's median drifts 25% above
 *              what it converged at (as a periodic re-check below while
 *              the drifted median still beats every loser's median by more
 *              than 5%; else every loser starts afresh); and at the cell's
 *              next call after the regime changed.  A re-check gives each loser one sample
 *              first; the first cut then applies to that fresh sample, and
 *              at a periodic re-check a loser also leaves when the fresh
 *              sample is above the best median and its median over kept and
 *              fresh samples is more than 5% above it (still_loses in
 *              autosel.c): a loser that stayed worse costs one call per
 *              re-check, not five.  A periodic re-check
 *              (nothing said the world changed) skips a loser whose one call
 *              would cost more than SAMPI_AUTOSEL_RETRY_BUDGET of the calls
 *              since the last look: (its median - the winner's) > 2% x
 *              period x the winner's median.  An arm 2x the winner is
 *              looked at again every re-check, one 10x only from a period of
 *              512 calls on, one 1000x never until a drift that puts the
 *              winner behind a loser's record, a regime change or a change
 *              of arms reopens every arm.
 *
 * Example, one bucket, arms native/ring/rhd (ids 1, 2, 3; native the
 * prior), costs 100/300/95 us: calls 1-6 run native, ring, rhd, native,
 * ring, rhd (2 samples each); ring's best 300 > 1.5 x 95 leaves; calls 7-12
 * take native and rhd to 5 samples each; native's median 100 is more than 5%
 * above rhd's 95 and its best sample too: the cell converges on rhd after 12
 * calls, and from then on measures one call in 2 (1 MiB and more).
 */
#ifndef SAMPI_AUTOSEL_H
#define SAMPI_AUTOSEL_H

#include "algos.h"

#include <stddef.h>
#include <stdint.h>

#define SAMPI_AUTOSEL_BUCKETS 48 /* up to 2^47 bytes */
#define SAMPI_AUTOSEL_KEEP    8  /* recent costs kept per arm */

enum sampi_regime {
    SAMPI_REGIME_NONE,      /* nobody persistently late, no degraded link */
    SAMPI_REGIME_STRAGGLER, /* a straggler is predicted */
    SAMPI_REGIME_DEGRADED,  /* a rank's link is degraded */
    SAMPI_REGIME__COUNT
};
extern const char *const sampi_regime_names[SAMPI_REGIME__COUNT];

enum sampi_autosel_state { SAMPI_CELL_EMPTY, SAMPI_CELL_EXPLORING, SAMPI_CELL_CONVERGED };

struct sampi_arm_costs {
    double cost[SAMPI_AUTOSEL_KEEP]; /* ns, a ring buffer */
    int n, head;                     /* samples held (<= KEEP), next slot */
    int fresh;                       /* samples since the cell's last (re-)exploration began */
};

struct sampi_autosel_cell {
    enum sampi_autosel_state state;
    uint32_t allowed;      /* arms that may run calls of this cell (bit per algorithm id) */
    uint32_t candidates;   /* arms still in play while exploring */
    int choice;            /* the winner (an algorithm id), -1 before the first */
    int prior;             /* the model's favourite, explored first */
    uint64_t calls;        /* calls decided in this cell */
    uint64_t measured;     /* of those, measured */
    uint64_t explorations; /* times the cell was (re-)explored */
    uint64_t recheck_at;   /* the cell's call count at which to explore again */
    int world_changed;     /* the winner drifted or the regime changed: re-check every arm */
    uint64_t recheck;      /* the current re-check period */
    double converged_ns;   /* the winner's median when the cell converged */
    struct sampi_arm_costs arm[SAMPI_ALGO__COUNT];
};

struct sampi_autosel {
    struct sampi_autosel_cell *cell[SAMPI_AUTOSEL_BUCKETS][SAMPI_REGIME__COUNT]; /* lazily */
    enum sampi_regime last_regime;
    uint64_t regime_changes;
};

/* What the dispatcher knows of a call before it runs, identical on every
 * rank: its size, the regime, which arms can run it (suited, and not ruled
 * out by the model), and the model's favourite among them. */
struct sampi_autosel_input {
    size_t bytes;
    enum sampi_regime regime;
    uint32_t allowed;
    int prior;
    /* the last measured call disagreed with the regime (a rank late with no
     * straggler regime, or nobody late in one): measure by size, often,
     * until the tracker settles */
    int unsettled;
    /* what one tracking exchange costs, ns (sampi_tracker_exchange_ns; 0:
     * not measured yet): a converged cell's measuring period is priced by it */
    double exchange_ns;
};

struct sampi_autosel_decision {
    int algo;      /* an algorithm id */
    int measure;   /* measure this call (the tracking exchange) */
    int exploring; /* the cell is exploring */
    int bucket;
};

/* What arms `arms` measure changed (a composed algorithm's part saw its
 * regime change, or the communicator a part belongs to did): their samples
 * describe the world before and are dropped in every cell that allows one
 * of them; a converged cell explores again at its next call (as a periodic
 * re-check: the other arms keep their samples), an exploring one takes them
 * back in as candidates.  Called at the same point of the
 * call sequence on every rank (the epoch that says so is agreed). */
void sampi_autosel_arms_changed(struct sampi_autosel *s, uint32_t arms);

/* The bucket of a message of `bytes` bytes: ceil(log2(bytes)), 0 for 0 or 1. */
int sampi_autosel_bucket(size_t bytes);

void sampi_autosel_init(struct sampi_autosel *s);
void sampi_autosel_free(struct sampi_autosel *s);

/* Decide one call.  0, or -ENOMEM (then *out is the prior, unmeasured). */
int sampi_autosel_decide(struct sampi_autosel *s, const struct sampi_autosel_input *in,
                         struct sampi_autosel_decision *out);

/* How many calls after the one just decided (*d, from *in) the cell decides
 * the same way, unmeasured, if their input is the same: the calls before its
 * next measured call and before its re-check; 0 where the cell is not
 * converged or *d was measured.  *calls: the cell's count of calls, which
 * each of those calls must advance (lane.h). */
uint64_t sampi_autosel_repeats(struct sampi_autosel *s, const struct sampi_autosel_input *in,
                               const struct sampi_autosel_decision *d, uint64_t **calls);

/* A measured call of `algo` in the cell of `in` cost cost_ns (the time from
 * the last arrival to completion).  Returns 1 when the cell converged with
 * this sample, else 0. */
int sampi_autosel_note(struct sampi_autosel *s, const struct sampi_autosel_input *in, int algo,
                       double cost_ns);

/* Seed a cell from a kept table (tuning file): it starts converged on
 * `algo` at `cost_ns`, its first re-check after `recheck` calls. */
int sampi_autosel_seed(struct sampi_autosel *s, int bucket, enum sampi_regime regime, int algo,
                       double cost_ns, uint64_t recheck);

/* A cell's view for reports: the winner and its median, the next best arm
 * and its median (-1 / 0 when none).  NULL when the cell is empty. */
const struct sampi_autosel_cell *sampi_autosel_cell(const struct sampi_autosel *s, int bucket,
                                                    enum sampi_regime regime);
int sampi_autosel_ranking(const struct sampi_autosel_cell *c, int *best, double *best_ns, int *next,
                          double *next_ns);

/* The median of an arm's recent costs (0 when it has none). */
double sampi_arm_median(const struct sampi_arm_costs *a);

/* Exploration and measurement parameters, exposed for tests. */
#define SAMPI_AUTOSEL_FIRST_SAMPLES 2    /* samples each before the first cut */
#define SAMPI_AUTOSEL_FULL_SAMPLES  5    /* samples each before converging */
#define SAMPI_AUTOSEL_FIRST_CUT     1.5  /* best sample over the best median: out */
#define SAMPI_AUTOSEL_MARGIN        0.05 /* median above the best's by more: out */
#define SAMPI_AUTOSEL_DRIFT         0.25 /* winner's median this far up: explore again */
#define SAMPI_AUTOSEL_RECHECK_MIN   128
#define SAMPI_AUTOSEL_RECHECK_MAX   8192
#define SAMPI_AUTOSEL_RETRY_BUDGET  0.02 /* a periodic re-check's loser calls, of the period */
/* One call in this many is measured in a converged cell of `bytes` whose
 * winner costs cost_ns, where one tracking exchange costs exchange_ns (both
 * agreed on every rank: from the tracked calls; taken as at least 10 us): as
 * seldom as keeps the tracking exchange under 1% of the calls' time, a
 * power of two from 2 up to 8 (1 MiB and more: the straggler prediction
 * comes from these calls), 64 (64 KiB and more) or 2048; by size alone
 * (2, 16, 128) while cost_ns is 0.  Example: 256 KiB calls of 10 ms with an
 * exchange of 1 ms (8 ranks, the testbed): one in 16; with 10 us, one in 2. */
int sampi_autosel_period(size_t bytes, double cost_ns, double exchange_ns);

#endif
