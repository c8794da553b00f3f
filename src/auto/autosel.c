/*
 * autosel.c - `auto` that measures (autosel.h).
 */
#include "autosel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const sampi_regime_names[SAMPI_REGIME__COUNT] = {
    [SAMPI_REGIME_NONE] = "none",
    [SAMPI_REGIME_STRAGGLER] = "straggler",
    [SAMPI_REGIME_DEGRADED] = "degraded",
};

int sampi_autosel_bucket(size_t bytes)
{
    int b = 0;
    while (b < SAMPI_AUTOSEL_BUCKETS - 1 && ((size_t)1 << b) < bytes)
        b++;
    return b;
}

/* The least one measured call is taken to add: the tracking exchange (a
 * barrier and an allgather of three doubles per rank) at p = 2 on shared
 * memory, rounded up (docs/notes/2026-11-small-call-costs.md).  Where the
 * tracker measured more (sampi_tracker_exchange_ns: 1 ms on the testbed's
 * shaped TCP at 8 ranks), its figure counts. */
#define MIN_EXCHANGE_NS 10000.0
/* The share of the calls' time measuring may take once a cell converged. */
#define MEASURE_BUDGET 0.01

/* Not measured yet, or unsettled: by size.  The exchange costs about one
 * small allreduce: big calls often, small ones seldom. */
static int period_by_size(size_t bytes)
{
    if (bytes >= ((size_t)1 << 20))
        return 2;
    if (bytes >= ((size_t)64 << 10))
        return 16;
    return 128;
}

int sampi_autosel_period(size_t bytes, double cost_ns, double exchange_ns)
{
    if (!(cost_ns > 0))
        return period_by_size(bytes);
    /* The period grows as the call gets cheaper: 0.5 us calls every
     * 2048th, 20 us every 64th, 150 us every 8th, 4 ms every 2nd; large
     * calls at least every 8th, since the straggler prediction comes from
     * them. */
    int most = bytes >= ((size_t)1 << 20) ? 8 : bytes >= ((size_t)64 << 10) ? 64 : 2048;
    double exchange = exchange_ns > MIN_EXCHANGE_NS ? exchange_ns : MIN_EXCHANGE_NS;
    double want = exchange / (MEASURE_BUDGET * cost_ns);
    int period = 2;
    while (period < most && period < want)
        period *= 2;
    return period;
}

void sampi_autosel_init(struct sampi_autosel *s)
{
    memset(s, 0, sizeof(*s));
}

void sampi_autosel_free(struct sampi_autosel *s)
{
    for (int b = 0; b < SAMPI_AUTOSEL_BUCKETS; b++)
        for (int r = 0; r < SAMPI_REGIME__COUNT; r++)
            free(s->cell[b][r]);
    memset(s, 0, sizeof(*s));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sampi_arm_median(const struct sampi_arm_costs *a)
{
    if (a->n == 0)
        return 0;
    double v[SAMPI_AUTOSEL_KEEP];
    memcpy(v, a->cost, (size_t)a->n * sizeof(double));
    qsort(v, (size_t)a->n, sizeof(double), cmp_double);
    return a->n % 2 ? v[a->n / 2] : (v[a->n / 2 - 1] + v[a->n / 2]) / 2;
}

static double arm_min(const struct sampi_arm_costs *a)
{
    double m = a->n ? a->cost[0] : 0;
    for (int i = 1; i < a->n; i++)
        m = a->cost[i] < m ? a->cost[i] : m;
    return m;
}

/* The cheapest of the samples taken since the cell's last (re-)exploration
 * began (all kept ones when there are none): what one look at the arm says
 * now, not what it cost before the re-check. */
static double arm_min_fresh(const struct sampi_arm_costs *a)
{
    int k = a->fresh < a->n ? a->fresh : a->n;
    if (k <= 0)
        return arm_min(a);
    double m = a->cost[(a->head + SAMPI_AUTOSEL_KEEP - 1) % SAMPI_AUTOSEL_KEEP];
    for (int i = 2; i <= k; i++) {
        double v = a->cost[(a->head + SAMPI_AUTOSEL_KEEP - i) % SAMPI_AUTOSEL_KEEP];
        m = v < m ? v : m;
    }
    return m;
}

static void arm_add(struct sampi_arm_costs *a, double cost)
{
    a->cost[a->head] = cost;
    a->head = (a->head + 1) % SAMPI_AUTOSEL_KEEP;
    if (a->n < SAMPI_AUTOSEL_KEEP)
        a->n++;
    a->fresh++;
}

static void arm_clear(struct sampi_arm_costs *a)
{
    memset(a, 0, sizeof(*a));
}

static int has(uint32_t set, int algo)
{
    return (set >> algo) & 1u;
}

static int popcount(uint32_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* At a periodic re-check, whether one call of loser `a` costs more than the
 * budget allows for the calls since the last look, judged by its best
 * sample of at least two (one descheduled call must not exile an arm). */
static int too_dear(const struct sampi_autosel_cell *c, int a)
{
    if (c->choice < 0 || c->arm[a].n < SAMPI_AUTOSEL_FIRST_SAMPLES || c->arm[c->choice].n == 0)
        return 0;
    double best = sampi_arm_median(&c->arm[c->choice]);
    return arm_min(&c->arm[a]) - best > SAMPI_AUTOSEL_RETRY_BUDGET * (double)c->recheck * best;
}

/* Start (or restart) exploring.  The winner keeps what it has and counts as
 * fully sampled.  When the world changed (first look, drift, regime, arms)
 * every other allowed arm starts afresh; at a periodic re-check a loser
 * keeps its samples and takes fresh ones on top, unless one call of it is
 * too dear to try (then it sits this re-check out). */
static void explore(struct sampi_autosel_cell *c)
{
    int periodic = !c->world_changed && c->explorations > 0;
    c->state = SAMPI_CELL_EXPLORING;
    c->candidates = c->allowed;
    c->explorations++;
    for (int a = 0; a < SAMPI_ALGO__COUNT; a++) {
        if (a == c->choice && c->arm[a].n > 0)
            c->arm[a].fresh = SAMPI_AUTOSEL_FULL_SAMPLES;
        else if (periodic && has(c->allowed, a) && too_dear(c, a))
            c->candidates &= ~(1u << a);
        else if (periodic && has(c->allowed, a))
            c->arm[a].fresh = 0;
        else
            arm_clear(&c->arm[a]);
    }
    c->world_changed = 0;
}

static void converge(struct sampi_autosel_cell *c, int winner)
{
    int changed = winner != c->choice;
    c->choice = winner;
    c->state = SAMPI_CELL_CONVERGED;
    c->converged_ns = sampi_arm_median(&c->arm[winner]);
    if (changed || c->recheck == 0)
        c->recheck = SAMPI_AUTOSEL_RECHECK_MIN;
    else if (c->recheck < SAMPI_AUTOSEL_RECHECK_MAX)
        c->recheck *= 2;
    c->recheck_at = c->calls + c->recheck;
}

/* The candidate with the cheapest median (ties: the lower id). */
static int cheapest(const struct sampi_autosel_cell *c, double *median)
{
    int best = -1;
    double bm = 0;
    for (int a = 0; a < SAMPI_ALGO__COUNT; a++) {
        if (!has(c->candidates, a) || c->arm[a].n == 0)
            continue;
        double m = sampi_arm_median(&c->arm[a]);
        if (best < 0 || m < bm) {
            best = a;
            bm = m;
        }
    }
    if (median)
        *median = bm;
    return best;
}

/* At the end of a re-check: the arm the cell ran before, unless another beats
 * it by more than the margin.  Two arms within noise of each other (ring
 * and rhd on 64 KiB at 2 ranks) would otherwise trade places at re-checks,
 * each switch starting the re-check period over, and so measuring more. */
static int incumbent_or_cheapest(const struct sampi_autosel_cell *c, double *median)
{
    int best = cheapest(c, median);
    const int was = c->choice;
    if (was >= 0 && was != best && has(c->candidates, was) && c->arm[was].n > 0 &&
        sampi_arm_median(&c->arm[was]) <= (1 + SAMPI_AUTOSEL_MARGIN) * *median) {
        *median = sampi_arm_median(&c->arm[was]);
        return was;
    }
    return best;
}

/* Samples a candidate needs before the first cut: 2 when the cell is new,
 * 1 at a re-check (the winner has its samples; a loser that one sample shows
 * hopeless again leaves at once, which keeps re-checks cheap). */
static int first_samples(const struct sampi_autosel_cell *c)
{
    return c->explorations > 1 ? 1 : SAMPI_AUTOSEL_FIRST_SAMPLES;
}

/* At a periodic re-check, whether loser `a` still loses: its record from
 * before the re-check was kept (n > fresh), its median over kept and fresh
 * samples is above the best's by more than the margin, and no fresh sample
 * came in below the best's median.  What a re-check asks of a loser is
 * whether it got better; one call that is no better, on top of a record that
 * was worse, says no, and it leaves after that call instead of taking all
 * five.  Example, scene (d) of scripts/demo (256 KiB, a long network tail):
 * ring converged at 10 ms, rhd's record 12-14 ms; at the re-check rhd's one
 * fresh call takes 13 ms and it leaves: 1 call of rhd per re-check, not 5.
 * A loser whose fresh call beats the best's median stays, and its fresh
 * samples move its median until it wins or loses on the full rule. */
static int still_loses(const struct sampi_arm_costs *a, double best_ns)
{
    return a->n > a->fresh && arm_min_fresh(a) > best_ns &&
           sampi_arm_median(a) > (1 + SAMPI_AUTOSEL_MARGIN) * best_ns;
}

/* Whether the drifted winner `w` still beats every loser's record by more
 * than the margin.  Then the drift is looked at as a periodic re-check
 * (losers keep their samples, one fresh call each, still_loses): a loser
 * that got no better leaves after one call, one that did stays and is
 * judged in full.  Otherwise (a loser's record now beats the winner) the
 * world changed under the records too, and every loser starts afresh.
 * Example, scene (c) of scripts/demo (2 MiB, rank 7's link at l = 2):
 * optcc converged at 87 ms and drifted to 116 with the CPU's contention
 * (the testbed's 8 ranks on 2 cores), ring's record 147, native's 230:
 * ring, rhd and native take one call each (3 calls) where starting afresh
 * took 11 (ring 5, native 5, rhd 1) and chose optcc again. */
static int still_ahead(const struct sampi_autosel_cell *c, int w)
{
    double winner = sampi_arm_median(&c->arm[w]);
    for (int a = 0; a < SAMPI_ALGO__COUNT; a++)
        if (a != w && has(c->allowed, a) && c->arm[a].n > 0 &&
            sampi_arm_median(&c->arm[a]) <= (1 + SAMPI_AUTOSEL_MARGIN) * winner)
            return 0;
    return 1;
}

/* Every candidate has at least `k` fresh samples. */
static int all_sampled(const struct sampi_autosel_cell *c, int k)
{
    for (int a = 0; a < SAMPI_ALGO__COUNT; a++)
        if (has(c->candidates, a) && c->arm[a].fresh < k)
            return 0;
    return 1;
}

/* After a sample while exploring: cut what is clearly worse, converge when
 * done.  Returns 1 when the cell converged. */
static int judge(struct sampi_autosel_cell *c)
{
    double best_ns;
    int best;
    if (all_sampled(c, first_samples(c))) {
        best = cheapest(c, &best_ns);
        for (int a = 0; a < SAMPI_ALGO__COUNT; a++)
            if (has(c->candidates, a) && a != best &&
                (arm_min_fresh(&c->arm[a]) > SAMPI_AUTOSEL_FIRST_CUT * best_ns ||
                 still_loses(&c->arm[a], best_ns)))
                c->candidates &= ~(1u << a);
    }
    if (all_sampled(c, SAMPI_AUTOSEL_FULL_SAMPLES)) {
        best = incumbent_or_cheapest(c, &best_ns);
        for (int a = 0; a < SAMPI_ALGO__COUNT; a++)
            if (has(c->candidates, a) && a != best &&
                sampi_arm_median(&c->arm[a]) > (1 + SAMPI_AUTOSEL_MARGIN) * best_ns &&
                arm_min(&c->arm[a]) > best_ns)
                c->candidates &= ~(1u << a);
        converge(c, best);
        return 1;
    }
    if (popcount(c->candidates) == 1) {
        converge(c, cheapest(c, NULL));
        return 1;
    }
    return 0;
}

/* The next arm to explore: the candidate with the fewest fresh samples;
 * ties go to the prior, then to the lowest id. */
static int next_arm(const struct sampi_autosel_cell *c)
{
    int pick = -1;
    for (int a = 0; a < SAMPI_ALGO__COUNT; a++) {
        if (!has(c->candidates, a))
            continue;
        if (pick < 0 || c->arm[a].fresh < c->arm[pick].fresh ||
            (c->arm[a].fresh == c->arm[pick].fresh && a == c->prior))
            pick = a;
    }
    return pick;
}

static struct sampi_autosel_cell *cell_of(struct sampi_autosel *s, int bucket,
                                          enum sampi_regime regime, int create)
{
    struct sampi_autosel_cell **slot = &s->cell[bucket][regime];
    if (!*slot && create) {
        *slot = calloc(1, sizeof(**slot));
        if (*slot)
            (*slot)->choice = -1;
    }
    return *slot;
}

/* A converged cell measures one call in this many. */
static uint64_t period_of(const struct sampi_autosel_cell *c, const struct sampi_autosel_input *in)
{
    return (uint64_t)(in->unsettled
                          ? period_by_size(in->bytes)
                          : sampi_autosel_period(in->bytes, c->converged_ns, in->exchange_ns));
}

int sampi_autosel_decide(struct sampi_autosel *s, const struct sampi_autosel_input *in,
                         struct sampi_autosel_decision *out)
{
    int bucket = sampi_autosel_bucket(in->bytes);
    *out = (struct sampi_autosel_decision){.algo = in->prior, .bucket = bucket};
    if (in->regime != s->last_regime) {
        /* a straggler appeared or left, a link degraded or recovered: every
         * cell of the new regime looks again at its next call */
        s->last_regime = in->regime;
        s->regime_changes++;
        for (int b = 0; b < SAMPI_AUTOSEL_BUCKETS; b++)
            if (s->cell[b][in->regime] && s->cell[b][in->regime]->state == SAMPI_CELL_CONVERGED) {
                s->cell[b][in->regime]->recheck_at = s->cell[b][in->regime]->calls;
                s->cell[b][in->regime]->world_changed = 1;
            }
    }
    struct sampi_autosel_cell *c = cell_of(s, bucket, in->regime, 1);
    if (!c)
        return -ENOMEM;
    c->calls++;
    c->prior = in->prior;
    if (c->state == SAMPI_CELL_CONVERGED && c->allowed == 0 && has(in->allowed, c->choice)) {
        c->allowed = in->allowed; /* seeded from a kept table: trust it until the re-check */
    } else if (c->state == SAMPI_CELL_EMPTY || c->allowed != in->allowed) {
        /* first call, or the arms changed (a hint came or went) */
        c->allowed = in->allowed;
        if (c->choice >= 0 && !has(c->allowed, c->choice))
            c->choice = -1;
        c->world_changed = 1;
        explore(c);
    } else if (c->state == SAMPI_CELL_CONVERGED && c->calls >= c->recheck_at) {
        explore(c);
    }
    if (c->state == SAMPI_CELL_EXPLORING && popcount(c->candidates) <= 1) {
        int only = next_arm(c);
        c->choice = only >= 0 ? only : in->prior;
        c->state = SAMPI_CELL_CONVERGED;
        c->recheck = SAMPI_AUTOSEL_RECHECK_MAX;
        c->recheck_at = c->calls + c->recheck;
    }
    if (c->state == SAMPI_CELL_EXPLORING) {
        out->algo = next_arm(c);
        out->measure = 1;
        out->exploring = 1;
    } else {
        out->algo = c->choice;
        out->measure = c->calls % period_of(c, in) == 0;
    }
    c->measured += out->measure;
    return 0;
}

void sampi_autosel_arms_changed(struct sampi_autosel *s, uint32_t arms)
{
    for (int b = 0; b < SAMPI_AUTOSEL_BUCKETS; b++)
        for (int r = 0; r < SAMPI_REGIME__COUNT; r++) {
            struct sampi_autosel_cell *c = s->cell[b][r];
            if (!c || !(c->allowed & arms))
                continue;
            for (int a = 0; a < SAMPI_ALGO__COUNT; a++)
                if (has(arms, a))
                    arm_clear(&c->arm[a]); /* they describe the world before */
            if (c->state == SAMPI_CELL_CONVERGED) {
                /* the cell's next call: a re-check, in which the other arms
                 * keep what they measured (their world did not change) */
                c->recheck_at = c->calls;
            } else if (c->state == SAMPI_CELL_EXPLORING) {
                c->candidates |= c->allowed & arms; /* back in, with no sample */
            }
        }
}

uint64_t sampi_autosel_repeats(struct sampi_autosel *s, const struct sampi_autosel_input *in,
                               const struct sampi_autosel_decision *d, uint64_t **calls)
{
    /* just decided from *in: the selector's regime and the cell's arms are
     * in's, and a converged cell is before its re-check */
    struct sampi_autosel_cell *c = cell_of(s, d->bucket, in->regime, 0);
    if (!c || d->measure || d->exploring || c->state != SAMPI_CELL_CONVERGED ||
        c->calls >= c->recheck_at)
        return 0;
    /* the calls before the next measured one and before the re-check */
    const uint64_t period = period_of(c, in);
    uint64_t n = period - c->calls % period;
    if (c->recheck_at - c->calls < n)
        n = c->recheck_at - c->calls;
    *calls = &c->calls;
    return n - 1;
}

int sampi_autosel_note(struct sampi_autosel *s, const struct sampi_autosel_input *in, int algo,
                       double cost_ns)
{
    struct sampi_autosel_cell *c = cell_of(s, sampi_autosel_bucket(in->bytes), in->regime, 0);
    if (!c || algo < 0 || algo >= SAMPI_ALGO__COUNT || !(cost_ns >= 0))
        return 0;
    arm_add(&c->arm[algo], cost_ns);
    if (c->state == SAMPI_CELL_EXPLORING)
        return has(c->candidates, algo) ? judge(c) : 0;
    /* converged: the winner's drift reopens the cell */
    if (algo == c->choice && c->arm[algo].n >= SAMPI_AUTOSEL_FIRST_SAMPLES + 1 &&
        sampi_arm_median(&c->arm[algo]) > (1 + SAMPI_AUTOSEL_DRIFT) * c->converged_ns) {
        c->recheck_at = c->calls + 1;
        c->world_changed = !still_ahead(c, algo);
    }
    return 0;
}

int sampi_autosel_seed(struct sampi_autosel *s, int bucket, enum sampi_regime regime, int algo,
                       double cost_ns, uint64_t recheck)
{
    if (bucket < 0 || bucket >= SAMPI_AUTOSEL_BUCKETS || regime < 0 ||
        regime >= SAMPI_REGIME__COUNT || algo <= 0 || algo >= SAMPI_ALGO__COUNT)
        return -EINVAL;
    struct sampi_autosel_cell *c = cell_of(s, bucket, regime, 1);
    if (!c)
        return -ENOMEM;
    c->state = SAMPI_CELL_CONVERGED;
    c->choice = algo;
    c->allowed = 0; /* the first call fills it in, keeping the choice when allowed */
    c->converged_ns = cost_ns;
    arm_clear(&c->arm[algo]);
    arm_add(&c->arm[algo], cost_ns);
    c->recheck = recheck ? recheck : SAMPI_AUTOSEL_RECHECK_MIN;
    c->recheck_at = c->recheck;
    return 0;
}

const struct sampi_autosel_cell *sampi_autosel_cell(const struct sampi_autosel *s, int bucket,
                                                    enum sampi_regime regime)
{
    if (bucket < 0 || bucket >= SAMPI_AUTOSEL_BUCKETS || regime < 0 ||
        regime >= SAMPI_REGIME__COUNT)
        return NULL;
    return s->cell[bucket][regime];
}

int sampi_autosel_ranking(const struct sampi_autosel_cell *c, int *best, double *best_ns, int *next,
                          double *next_ns)
{
    *best = *next = -1;
    *best_ns = *next_ns = 0;
    if (!c || c->choice < 0)
        return -1;
    *best = c->choice;
    *best_ns = sampi_arm_median(&c->arm[c->choice]);
    for (int a = 0; a < SAMPI_ALGO__COUNT; a++) {
        if (a == c->choice || c->arm[a].n == 0)
            continue;
        double m = sampi_arm_median(&c->arm[a]);
        if (*next < 0 || m < *next_ns) {
            *next = a;
            *next_ns = m;
        }
    }
    return 0;
}
