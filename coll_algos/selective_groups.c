/*
 * selective_groups.c - the two pure building blocks of Selective Reduce
 * (Luo et al., "Progress and Bandwidth Aware Partial Model Synchronization
 * With Selective Reduce", Sec. III-C and III-D).
 *
 * BAG (Alg. 1, bandwidth-aware grouping): sort the ready workers by bandwidth,
 * fastest first; a group takes a mandatory core of p workers, then every next
 * worker whose bandwidth is >= (1 - eta) x the slowest core member; the first
 * slower one opens the next group.  O(m log m).  A ring all-reduce of group g
 * costs 2|g|alpha + 2v/min_g b (Eq. 2), so grouping by bandwidth keeps one
 * slow worker from slowing everybody: the extension costs at most
 * 2v/b * eta/(1-eta) more than the core alone.
 *   Example (p = 2, eta = 0.3): b = {1, 5, 1, 5} -> {5, 5} and {1, 1}; ring
 *   times 2v/5 and 2v/1, i.e. 2 s and 10 s for v = 5 (the paper's Fig. 3(e)),
 *   against 10 s and 10 s for arrival order {w1, w2}, {w3, w4}.
 *
 * BPAWR (Alg. 2, bandwidth- and progress-aware waiting and replacement): for
 * a group g of >= p ready workers, the workers still computing that are
 * faster than g's slowest one are "candidates"; each finishes within dt with
 * probability p_i (F(t_i + dt) by default, see prob_fn).  floor(sum p_i)
 * virtual workers of bandwidth sum(p_i b_i)/sum(p_i) join g in a BAG of its
 * own; if the first group of that BAG is faster than g by more than
 * theta x dt, g waits and its slowest workers (g_delta) would be replaced.
 * Candidates are claimed so that a later group does not count them again.
 * O((|g| + |S|) log).
 *   Example (p = 2, eta = 0.3, v = 4 Gbit): g = {10, 9, 7.5} Gbps, computing
 *   workers of 20 and 19 Gbps certain to finish within dt: two virtual
 *   workers of 19.5 form the core, the extension needs >= 13.65, so all of g
 *   is replaced and t_X = 8/7.5 - 8/19.5 = 0.66 s > dt: wait.
 *
 * Ambiguities: the core is p (A1; `literal` gives p+1), b* is reset when a
 * group opens (A2), floor for the expected count (A6), the probability-
 * weighted mean bandwidth (A7), and LAUNCH <=> |g| >= p and t_X <= theta dt
 * (A4): Alg. 2's flag means "wait" where Alg. 3 reads it as "launch".
 */
#include "selective_policy.h"

#include <math.h>
#include <stdlib.h>

/* Bandwidth non-increasing, then smaller id first (virtual ids are < 0). */
static int cmp_item(const void *a, const void *b)
{
    const struct sampi_sel_item *x = a, *y = b;
    if (x->bw != y->bw)
        return x->bw > y->bw ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

void sampi_sel_sort_items(struct sampi_sel_item *items, int m)
{
    if (m > 1)
        qsort(items, (size_t)m, sizeof(*items), cmp_item);
}

int sampi_sel_bag(struct sampi_sel_item *items, int m, int p, double eta, int literal, int *start)
{
    sampi_sel_sort_items(items, m);
    return sampi_sel_bag_sorted(items, m, p, eta, literal, start);
}

int sampi_sel_bag_sorted(const struct sampi_sel_item *items, int m, int p, double eta, int literal,
                         int *start)
{
    int ngroups = 0, size = 0;
    double bstar = 0.0;
    if (m <= 0)
        goto fail;
    start[ngroups++] = 0;
    for (int i = 0; i < m; i++) {
        double b = items[i].bw;
        if (literal ? size <= p : size < p) {
            size++;
            bstar = b * (1.0 - eta);
        } else if (b >= bstar) {
            size++;
        } else {
            start[ngroups++] = i;
            size = 1;
            bstar = b * (1.0 - eta);
        }
    }
    start[ngroups] = m;
fail:
    return ngroups;
}

enum sampi_sel_bpawr_result sampi_sel_bpawr(const struct sampi_sel_bpawr_args *args,
                                            struct sampi_sel_cand *training, int ns,
                                            const struct sampi_sel_item *g, int m, int *delta,
                                            int *ndelta, struct sampi_sel_item *scratch, int *start,
                                            double *tx)
{
    enum sampi_sel_bpawr_result res = SAMPI_SEL_BPAWR_LAUNCH;
    double ksum = 0.0, wsum = 0.0, bhat = INFINITY, saved = 0.0;
    *ndelta = 0;
    if (m < args->p || m <= 0) {
        res = SAMPI_SEL_BPAWR_HOLD;
        goto fail;
    }
    for (int i = 0; i < m; i++)
        bhat = fmin(bhat, g[i].bw);
    /* C: unclaimed candidates faster than g's bottleneck (Eq. 4). */
    for (int i = 0; i < ns; i++) {
        if (training[i].claimed || !(training[i].bw > bhat))
            continue;
        double pi = args->prob(args->prob_ctx, training[i].id, training[i].elapsed, args->delta_t);
        training[i].claimed = 1;
        ksum += pi;
        wsum += pi * training[i].bw;
    }
    /* The epsilon keeps 0.1 + 0.2 + 0.7 from flooring to 0. */
    int k = (int)floor(ksum + 1e-9);
    if (k <= 0)
        goto fail;
    double bbar = wsum / ksum;
    int nl = 0, sorted = 1;
    for (int i = 1; i < m && sorted; i++)
        sorted = cmp_item(&g[i - 1], &g[i]) < 0;
    if (sorted) {
        /* g comes sorted from the controller's BAG: merge the k equal
         * virtual workers (ids -k..-1, ahead of any real worker of equal
         * bandwidth) in O(m + k) instead of sorting. */
        int i = 0;
        while (i < m && g[i].bw > bbar)
            scratch[nl++] = g[i++];
        for (int j = k; j >= 1; j--)
            scratch[nl++] = (struct sampi_sel_item){.bw = bbar, .id = -j};
        while (i < m)
            scratch[nl++] = g[i++];
    } else {
        for (int i = 0; i < m; i++)
            scratch[nl++] = g[i];
        for (int j = 0; j < k; j++)
            scratch[nl++] = (struct sampi_sel_item){.bw = bbar, .id = -1 - j};
        qsort(scratch, (size_t)nl, sizeof(*scratch), cmp_item);
    }
    sampi_sel_bag_sorted(scratch, nl, args->p, args->eta, args->literal_bag, start);
    /* g* = the first BAG group: a prefix of the sorted list.  The real
     * workers of g outside it are g_delta. */
    double bstar_min = INFINITY;
    for (int i = start[0]; i < start[1]; i++)
        bstar_min = fmin(bstar_min, scratch[i].bw);
    for (int i = start[1]; i < nl; i++)
        if (scratch[i].id >= 0)
            delta[(*ndelta)++] = scratch[i].id;
    saved = 2.0 * args->v_gbit / bhat - 2.0 * args->v_gbit / bstar_min;
    if (saved > args->theta * args->delta_t)
        res = SAMPI_SEL_BPAWR_WAIT_REPLACE;
    else
        *ndelta = 0;
fail:
    if (tx)
        *tx = saved;
    return res;
}
