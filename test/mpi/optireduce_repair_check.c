/*
 * optireduce_repair_check.c - sampi_opti_repair (coll_algos/optireduce_repair.c)
 * called directly: every owner's shard holds known values, every other rank's
 * copy holds garbage in randomly "missing" packets (seeded per rank and
 * case), and the stage-2 bitmap says which.  After the repair every rank must
 * hold the owners' exact bits everywhere, identical on all ranks, and
 * floats_repaired must equal the floats this rank had marked missing.
 * Loops over packet sizes, vector lengths (empty shards, short last packets),
 * loss rates (none to all) and per-round budgets (one round, many rounds).
 * The exchanges wait through a waiter (wait.h) here, as optireduce's do;
 * the malformed-layout case passes none (waits without a limit).
 * Also: a rank with a malformed bitmap layout makes every rank return
 * -EINVAL before anything moves, with w untouched everywhere.
 *
 *   optireduce_repair_check      prints "optireduce_repair_check: np=N: C cases, F failed"
 */
#include "dgram_fault.h"
#include "mpitest.h"
#include "optireduce_repair.h"
#include "wait.h"

#include <errno.h>

/* The owner's value at float i of shard s: distinct bits everywhere. */
static float owner_val(int s, size_t i)
{
    return (float)(s + 1) * 1000.0f + (float)i * 0.37f + 0.125f;
}

struct layout {
    int n, me;
    size_t count;
    uint32_t per_pkt;
    size_t *off, *len, *base; /* n, n, n + 1 */
    uint8_t *seen;
};

/* optireduce's sharding (spec 3.1) and bit layout (own shard: no bits); the
 * copy of w with garbage where packets are "missing"; returns the floats
 * marked missing. */
static uint64_t prepare(struct layout *L, float *w, double loss, uint64_t seed)
{
    int n = L->n, me = L->me;
    size_t q = L->count / (size_t)n, rem = L->count % (size_t)n, bits = 0;
    for (int s = 0; s < n; s++) {
        L->len[s] = q + ((size_t)s < rem);
        L->off[s] = (size_t)s * q + ((size_t)s < rem ? (size_t)s : rem);
        L->base[s] = bits;
        if (s != me)
            bits += (size_t)sampi_opti_repair_npkts(L->len[s], L->per_pkt);
    }
    L->base[n] = bits;
    L->seen = mt_malloc(bits / 8 + 1);
    memset(L->seen, 0, bits / 8 + 1);
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + (uint64_t)me * 7919 + 1, missing = 0;
    for (int s = 0; s < n; s++)
        for (size_t i = 0; i < L->len[s]; i++)
            w[L->off[s] + i] = owner_val(s, i);
    for (int s = 0; s < n; s++) {
        if (s == me)
            continue;
        size_t np = (size_t)sampi_opti_repair_npkts(L->len[s], L->per_pkt);
        for (size_t k = 0; k < np; k++) {
            size_t b = L->base[s] + k;
            if (sampi_fault_unit(&st) > loss) { /* a draw in (0, 1] */
                L->seen[b / 8] |= (uint8_t)(1u << (b % 8));
                continue;
            }
            size_t lo = k * L->per_pkt,
                   hi = lo + L->per_pkt < L->len[s] ? lo + L->per_pkt : L->len[s];
            for (size_t i = lo; i < hi; i++) {
                uint32_t g =
                    0x7fc00000u | ((uint32_t)(sampi_fault_unit(&st) * 0x3fffff) & 0x3fffff);
                memcpy(&w[L->off[s] + i], &g, sizeof g);
            }
            missing += hi - lo;
        }
    }
    return missing;
}

static int exact(const struct layout *L, const float *w, size_t *bad_at)
{
    for (int s = 0; s < L->n; s++)
        for (size_t i = 0; i < L->len[s]; i++) {
            float want = owner_val(s, i);
            if (memcmp(&w[L->off[s] + i], &want, sizeof want)) {
                *bad_at = L->off[s] + i;
                return 0;
            }
        }
    return 1;
}

static void one_case(struct mt_state *mt, int n, int me, size_t count, uint32_t per_pkt,
                     double loss, size_t budget, uint64_t seed)
{
    struct layout L = {n, me, count, per_pkt, NULL, NULL, NULL, NULL};
    L.off = mt_malloc((size_t)n * sizeof(size_t));
    L.len = mt_malloc((size_t)n * sizeof(size_t));
    L.base = mt_malloc(((size_t)n + 1) * sizeof(size_t));
    float *w = mt_malloc((count + 1) * sizeof(float));
    uint64_t missing = prepare(&L, w, loss, seed), repaired = 12345;
    struct sampi_waiter wt;
    sampi_waiter_init(&wt, "the repair", NULL, NULL, NULL);
    int rc = sampi_opti_repair_budget(MPI_COMM_WORLD, &wt, w, L.off, L.len, per_pkt, L.seen, L.base,
                                      budget, &repaired);
    char what[160];
    snprintf(what, sizeof what, "count=%zu per_pkt=%u loss=%g budget=%zu", count, per_pkt, loss,
             budget);
    size_t at = 0;
    if (rc)
        mt_fail(mt, "%s: rc %d", what, rc);
    else if (!exact(&L, w, &at))
        mt_fail(mt, "%s: w[%zu] is not the owner's value", what, at);
    if (repaired != missing)
        mt_fail(mt, "%s: %llu floats repaired, %llu were missing", what,
                (unsigned long long)repaired, (unsigned long long)missing);
    mt_close_case(mt, MPI_COMM_WORLD, mt_hash(MT_HASH_SEED, w, count * sizeof(float)), what);
    free(L.off);
    free(L.len);
    free(L.base);
    free(L.seen);
    free(w);
}

/* Rank 1 claims fewer bits than its shards need: everyone refuses, nothing
 * moves. */
static void bad_layout(struct mt_state *mt, int n, int me)
{
    struct layout L = {n, me, 1000, 4, NULL, NULL, NULL, NULL};
    L.off = mt_malloc((size_t)n * sizeof(size_t));
    L.len = mt_malloc((size_t)n * sizeof(size_t));
    L.base = mt_malloc(((size_t)n + 1) * sizeof(size_t));
    float *w = mt_malloc(1000 * sizeof(float));
    uint64_t repaired = 7;
    prepare(&L, w, 0.2, 99);
    float *copy = mt_malloc(1000 * sizeof(float));
    memcpy(copy, w, 1000 * sizeof(float));
    if (me == 1)
        L.base[n] = 1;
    int rc = sampi_opti_repair(MPI_COMM_WORLD, NULL, w, L.off, L.len, 4, L.seen, L.base, &repaired);
    if (rc != -EINVAL)
        mt_fail(mt, "bad layout on rank 1: rc %d, want %d on every rank", rc, -EINVAL);
    if (memcmp(copy, w, 1000 * sizeof(float)) || repaired != 0)
        mt_fail(mt, "bad layout on rank 1: w changed or %llu repaired",
                (unsigned long long)repaired);
    mt_close_case(mt, MPI_COMM_WORLD, 0, "bad layout");
    free(L.off);
    free(L.len);
    free(L.base);
    free(L.seen);
    free(w);
    free(copy);
}

int main(int argc, char **argv)
{
    struct mt_state mt;
    int n = mt_start(&mt, "optireduce_repair_check", &argc, &argv, 0), me = mt.rank;
    static const uint32_t pkts[] = {1, 3, 16, 256};
    static const double losses[] = {0, 0.01, 0.3, 1};
    const size_t counts[] = {0, 1, (size_t)n - 1, 97, 1000, 4099, 65537};
    uint64_t seed = 1;
    for (size_t p = 0; p < sizeof pkts / sizeof pkts[0]; p++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (size_t l = 0; l < sizeof losses / sizeof losses[0]; l++) {
                /* default budget (one round); one packet per round on short
                 * vectors; a few packets per round, at most ~17 rounds */
                size_t few = 5 * (size_t)pkts[p] + 1;
                size_t budgets[] = {0, counts[c] / pkts[p] <= 64 ? pkts[p] : 0,
                                    few > counts[c] / 16 ? few : counts[c] / 16};
                for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++)
                    one_case(&mt, n, me, counts[c], pkts[p], losses[l], budgets[b], seed++);
            }
    bad_layout(&mt, n, me);
    long failed = mt_summary(&mt, n, ": ", "cases");
    MPI_Finalize();
    return mt_exit_code(failed);
}
