/*
 * detect.c - degraded-link detection from probe timings (detect.h).
 *
 * Worked example, n = 4, rank 2 at half bandwidth (l = 2), probe time 1 on a
 * healthy link: from_left = {1, 1, 2, 2} (rank 2 hears rank 1 through its
 * slow ingress; rank 3 hears rank 2's slow egress), from_right = {1, 2, 2, 1}.
 * Rank 2's four links all take 2, the links not touching it (0<->1, 0<->3)
 * take 1: score 2.  Rank 1's links are {1 (from 0), 2 (from 2), 2 (to 2),
 * 1 (to 0)}: score 1.  Probe says (2, 2.0), estimate 2.0 (the median of
 * rank 2's four); three of those in a row confirm it.
 */
#include "detect.h"
#include "optcc_schedule.h"
#include "predict.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A directed link a -> b, in the probe of a ring: b's from_left when a = b-1,
 * b's from_right when a = b+1 (both when n = 2, which is refused). */
struct link {
    int from, to;
    double t;
};

int sampi_detect_probe(const double *from_left, const double *from_right, int n, double *slowdown,
                       double *estimate)
{
    int best = -1;
    double best_score = 0, best_estimate = 0;
    struct link *links = NULL;
    double *others = NULL;
    if (n < 3)
        goto out;
    links = malloc((size_t)(2 * n) * sizeof(*links));
    others = malloc((size_t)(2 * n) * sizeof(*others));
    if (!links || !others)
        goto out;
    for (int i = 0; i < n; i++) {
        if (!(from_left[i] > 0) || !(from_right[i] > 0))
            goto out;
        links[2 * i] = (struct link){(i - 1 + n) % n, i, from_left[i]};
        links[2 * i + 1] = (struct link){(i + 1) % n, i, from_right[i]};
    }
    for (int r = 0; r < n; r++) {
        double own = INFINITY, mine[4];
        int m = 0, k = 0;
        for (int j = 0; j < 2 * n; j++) {
            if (links[j].from == r || links[j].to == r) {
                own = fmin(own, links[j].t);
                if (k < 4)
                    mine[k++] = links[j].t;
            } else {
                others[m++] = links[j].t;
            }
        }
        /* n = 3: every link touches two of the three ranks, one stays */
        double rest = m ? sampi_median(others, m) : 0;
        double score = m ? own / rest : 1;
        if (best < 0 || score > best_score) {
            best = r;
            best_score = score;
            best_estimate = m ? fmax(sampi_median(mine, k) / rest, score) : 1;
        }
    }
    *slowdown = best_score;
    *estimate = best_estimate;
out:
    free(links);
    free(others);
    return best;
}

void sampi_detector_init(struct sampi_detector *d)
{
    memset(d, 0, sizeof(*d));
    d->rank = d->candidate = -1;
}

static double quantised(double l)
{
    return sampi_optcc_quantise_l(l) / (double)SAMPI_OPTCC_L_SCALE;
}

int sampi_detector_note(struct sampi_detector *d, int rank, double slowdown, double estimate)
{
    if (rank < 0)
        return 0;
    int changed = 0;
    if (d->rank >= 0) {
        /* confirmed: follow its slowdown, or release it after calm probes */
        int still = rank == d->rank && slowdown >= SAMPI_DETECT_RELEASE_THRESHOLD;
        d->calm = still ? 0 : d->calm + 1;
        if (!still && d->calm >= SAMPI_DETECT_RELEASE) {
            sampi_detector_init(d);
            return 1;
        }
        if (still) {
            memmove(d->recent + 1, d->recent, sizeof(d->recent) - sizeof(d->recent[0]));
            d->recent[0] = estimate;
            double v[3];
            memcpy(v, d->recent, sizeof(v));
            double l = quantised(sampi_median(v, 3));
            changed = l != d->slowdown;
            d->slowdown = l;
        }
        return changed;
    }
    if (slowdown < SAMPI_DETECT_THRESHOLD) {
        d->candidate = -1;
        d->streak = 0;
        return 0;
    }
    if (rank != d->candidate) {
        d->candidate = rank;
        d->streak = 0;
    }
    d->recent[d->streak % 3] = estimate;
    if (++d->streak >= SAMPI_DETECT_CONFIRM) {
        double v[3];
        memcpy(v, d->recent, sizeof(v));
        d->rank = rank;
        d->slowdown = quantised(sampi_median(v, 3));
        d->calm = 0;
        return 1;
    }
    return 0;
}

int sampi_debug_slow_link_parse(const char *text, int *rank, double *l, long *after, char *err,
                                size_t errlen)
{
    int used = 0;
    if (sscanf(text, "%d:%lf:%ld%n", rank, l, after, &used) != 3 || text[used] != '\0' ||
        *rank < 0 || !(*l > 1) || *after < 0) {
        snprintf(err, errlen,
                 "sampi_debug_slow_link: '%s' is not 'rank:l:after' (a rank >= 0, a slowdown "
                 "l > 1, a count of tracked calls >= 0; example '5:4:20'), or empty",
                 text);
        return -EINVAL;
    }
    return 0;
}

int sampi_debug_slow_link_validate(const char *text, char *err, size_t errlen)
{
    int rank;
    double l;
    long after;
    return text[0] ? sampi_debug_slow_link_parse(text, &rank, &l, &after, err, errlen) : 0;
}

void sampi_detect_slow_link(double *from_left, double *from_right, int n, int r, double l)
{
    if (n < 2 || r < 0 || r >= n)
        return;
    from_left[r] *= l;
    from_right[r] *= l;
    from_right[(r - 1 + n) % n] *= l; /* r's left neighbour hears r on its right */
    from_left[(r + 1) % n] *= l;      /* and its right neighbour on its left */
}
