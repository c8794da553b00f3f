/*
 * selective_check.c - selective reduce, end to end: every call's result is the
 * weighted average of its group members' inputs, checked against a reference
 * that rank 0 recomputes from all ranks' records afterwards.
 *
 *   selective_check [--type float|double] [--count N] [--iters K] [--route 0|1]
 *                   [--expect-fallback 0|1]
 *
 * Each rank makes K calls, sleeping a rank-dependent time before each so that
 * groups vary.  The input of rank r at its call k is a known function
 * x(r, k, i); with --route 1 the odd calls are MPI_Allreduce(MPI_SUM) (with
 * SAMPI_SELECTIVE_MODE=allreduce; the result must be size x the average) and
 * sampi_partial_last() gives their group.  Each rank records, per call, the
 * group, its weights, its result at a few indices and a hash of the whole
 * result; rank 0 gathers them and checks:
 *   - members of one group agree on members and weights, and hold identical
 *     bits (same hash); the weights sum to 1; each member recorded the group;
 *   - sampled results equal sum_j w_j x(j, k_j, i) (k_j: member j's call that
 *     took part), within a floating-point tolerance;
 *   - exact (fallback) calls: the e-th exact call of every rank matched the
 *     others' e-th, and the result is the mean over the ranks that made it;
 *   - --expect-fallback 1: some calls fell back; 0: none did; 2: there was
 *     never a controller (it could not be started): every call was exact,
 *     and no rank counts a controller given up;
 *   - a full synchronisation holds every rank that still took part in a later
 *     group (ranks that stopped are retired from the controller's policy);
 *   - on each rank, the sampi_selective_* performance variables agree with
 *     its records (calls by kind, last group size, fallbacks, a wait > 0).
 * --stagger E: odd ranks make E calls fewer and stop (sampi_partial_finish)
 * while the others go on, so the ranks' counts of group calls differ.
 * --exact-after K: then K exact MPI_Allreduce(MPI_INT) calls on
 * MPI_COMM_WORLD (run with SAMPI_ALGORITHM=ring: on SAMPI's data path, whose
 * per-call sequence numbers the group calls must not have disturbed).
 * Prints "selective_check: np=N ..., F failed".
 */
#include "mpitest.h"
#include "sampi.h"

#include <math.h>
#include <time.h>

#define MAXN     16
#define NSAMPLES 4
#define NOT_MADE (-2) /* a record of a call this rank did not make (--stagger) */

struct rec {
    int call, kind, size, route;
    long long group;
    int members[MAXN];
    double weights[MAXN];
    double samples[NSAMPLES];
    uint64_t hash;
};

static double input(int r, int k, long i)
{
    /* values of a few units with a fractional part: sums stay well inside
     * float precision, and every (rank, call, index) differs */
    return (double)((r * 37 + k * 11 + i * 7) % 101) / 8.0 + r;
}

/* A counter handle started before the calls: its reads count from there. */
struct counter {
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int ok;
};

static void counter_start(struct counter *c, const char *name, int cls)
{
    int idx, n;
    MPI_Comm comm = MPI_COMM_WORLD; /* ignored: the variables are per process */
    c->ok = MPI_T_pvar_get_index(name, cls, &idx) == MPI_SUCCESS &&
            MPI_T_pvar_session_create(&c->s) == MPI_SUCCESS &&
            MPI_T_pvar_handle_alloc(c->s, idx, &comm, &c->h, &n) == MPI_SUCCESS;
    if (c->ok && cls == MPI_T_PVAR_CLASS_COUNTER)
        c->ok = MPI_T_pvar_start(c->s, c->h) == MPI_SUCCESS;
}

static long long counter_read(struct counter *c)
{
    unsigned long long v = 0;
    if (!c->ok || MPI_T_pvar_read(c->s, c->h, &v) != MPI_SUCCESS)
        return -1;
    return (long long)v;
}

enum { PV_CALLS, PV_GROUP, PV_FULL, PV_EXACT, PV_LAST, PV_FB, PV_WAIT, PV__COUNT };
static const char *const pv_names[PV__COUNT] = {
    "sampi_selective_calls",           "sampi_selective_group_calls",
    "sampi_selective_full_calls",      "sampi_selective_exact_calls",
    "sampi_selective_last_group_size", "sampi_selective_controller_fallbacks",
    "sampi_selective_group_wait_ns"};

/* This rank's pvars against its records; the number of mismatches. */
static int check_pvars(struct counter *pv, const struct rec *recs, int made, int expect_fb,
                       int rank)
{
    long long want[PV__COUNT] = {0}, got[PV__COUNT];
    int bad = 0;
    for (int k = 0; k < made; k++) {
        if (recs[k].kind < 0)
            continue;
        want[PV_CALLS]++;
        want[recs[k].kind == SAMPI_PARTIAL_GROUP  ? PV_GROUP
             : recs[k].kind == SAMPI_PARTIAL_FULL ? PV_FULL
                                                  : PV_EXACT]++;
        if (recs[k].kind != SAMPI_PARTIAL_EXACT)
            want[PV_LAST] = recs[k].size;
    }
    for (int i = 0; i < PV__COUNT; i++)
        got[i] = counter_read(&pv[i]);
    for (int i = PV_CALLS; i <= PV_LAST; i++)
        if (got[i] != want[i]) {
            printf("selective_check: rank %d: %s = %lld, records say %lld\n", rank, pv_names[i],
                   got[i], want[i]);
            bad++;
        }
    /* an exact call during the run means this rank gave the controller up,
     * unless it never had one */
    if (got[PV_FB] < 0 || got[PV_FB] > 1 ||
        (expect_fb != 2 && want[PV_EXACT] > 0 && got[PV_FB] != 1) ||
        (expect_fb != 1 && got[PV_FB] != 0)) {
        printf("selective_check: rank %d: %s = %lld with %lld exact calls\n", rank, pv_names[PV_FB],
               got[PV_FB], want[PV_EXACT]);
        bad++;
    }
    if (got[PV_WAIT] < 0 || (want[PV_GROUP] + want[PV_FULL] > 0 && got[PV_WAIT] == 0)) {
        printf("selective_check: rank %d: %s = %lld\n", rank, pv_names[PV_WAIT], got[PV_WAIT]);
        bad++;
    }
    return bad;
}

/* A rank missing from full synchronisation `a` that still took part in a
 * later group (it had not stopped), else -1. */
static int full_missing(const struct rec *all, int n, int iters, const struct rec *a)
{
    for (int q = 0; q < n; q++) {
        int in = 0, later = 0;
        for (int j = 0; j < a->size; j++)
            in |= a->members[j] == q;
        for (int k = 0; k < iters; k++) {
            const struct rec *b = &all[q * iters + k];
            later |= (b->kind == SAMPI_PARTIAL_GROUP || b->kind == SAMPI_PARTIAL_FULL) &&
                     b->group > a->group;
        }
        if (!in && later)
            return q;
    }
    return -1;
}

static long sample_index(int s, long count)
{
    long idx[NSAMPLES] = {0, count / 3, (2 * count) / 3, count - 1};
    return idx[s];
}

int main(int argc, char **argv)
{
    struct mt_state st;
    int n = mt_start(&st, "selective_check", &argc, &argv, 0), rank = st.rank;
    int dbl = 1, iters = 12, route = 0, expect_fb = 0, stagger = 0, exact_after = 0;
    long count = 1000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--type"))
            dbl = strcmp(argv[i + 1], "float") != 0;
        else if (!strcmp(argv[i], "--count"))
            count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters"))
            iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--route"))
            route = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--expect-fallback"))
            expect_fb = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--stagger"))
            stagger = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--exact-after"))
            exact_after = atoi(argv[i + 1]);
    }
    int made = rank % 2 && stagger < iters ? iters - stagger : iters;
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    struct counter pv[PV__COUNT];
    for (int i = 0; i < PV__COUNT; i++)
        counter_start(&pv[i], pv_names[i],
                      i == PV_LAST ? MPI_T_PVAR_CLASS_GENERIC : MPI_T_PVAR_CLASS_COUNTER);
    if (n > MAXN || count < 1) {
        if (rank == 0)
            printf("selective_check: np must be <= %d and count >= 1\n", MAXN);
        MPI_Finalize();
        return 1;
    }
    size_t ext = dbl ? sizeof(double) : sizeof(float);
    MPI_Datatype dt = dbl ? MPI_DOUBLE : MPI_FLOAT;
    void *buf = malloc((size_t)count * ext), *out = malloc((size_t)count * ext);
    struct rec *recs = calloc((size_t)iters, sizeof(*recs));
    if (!buf || !out || !recs)
        MPI_Abort(MPI_COMM_WORLD, 1);

    for (int k = made; k < iters; k++)
        recs[k].kind = NOT_MADE;
    for (int k = 0; k < made; k++) {
        struct timespec ts = {0, (long)(1 + rank % 3) * 4000000L};
        nanosleep(&ts, NULL);
        for (long i = 0; i < count; i++) {
            if (dbl)
                ((double *)buf)[i] = input(rank, k, i);
            else
                ((float *)buf)[i] = (float)input(rank, k, i);
        }
        struct rec *r = &recs[k];
        r->call = k;
        r->route = route && (k % 2);
        sampi_partial_info_t info = {
            .members = r->members, .weights = r->weights, .capacity = MAXN};
        int rc;
        void *res = buf;
        if (r->route) {
            rc = MPI_Allreduce(buf, out, (int)count, dt, MPI_SUM, MPI_COMM_WORLD);
            res = out;
            if (rc == MPI_SUCCESS)
                rc = sampi_partial_last(MPI_COMM_WORLD, &info);
        } else {
            rc = sampi_partial_allreduce(buf, (int)count, dt, MPI_COMM_WORLD, &info);
        }
        if (rc != MPI_SUCCESS) {
            mt_fail(&st, "call %d returned %d", k, rc);
            r->kind = -1;
            continue;
        }
        r->kind = info.kind;
        r->size = info.size;
        r->group = info.group;
        for (int s = 0; s < NSAMPLES; s++) {
            long i = sample_index(s, count);
            r->samples[s] = dbl ? ((double *)res)[i] : ((float *)res)[i];
        }
        r->hash = mt_hash(0, res, (size_t)count * ext);
    }
    sampi_partial_finish(MPI_COMM_WORLD);
    if (check_pvars(pv, recs, made, expect_fb, rank))
        mt_fail(&st, "performance variables disagree with the records");
    for (int i = 0; i < PV__COUNT; i++)
        if (pv[i].ok) {
            MPI_T_pvar_handle_free(pv[i].s, &pv[i].h);
            MPI_T_pvar_session_free(&pv[i].s);
        }
    MPI_T_finalize();
    /* long enough for a ring over every rank (count >= n elements) */
    enum { EXACT_COUNT = 1000 };
    int xs[EXACT_COUNT], sums[EXACT_COUNT];
    for (int k = 0; k < exact_after; k++) {
        for (int i = 0; i < EXACT_COUNT; i++)
            xs[i] = rank + k + i;
        int rc = MPI_Allreduce(xs, sums, EXACT_COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        int wrong = 0;
        for (int i = 0; i < EXACT_COUNT && rc == MPI_SUCCESS; i++)
            wrong += sums[i] != n * (n - 1) / 2 + n * (k + i);
        if (rc != MPI_SUCCESS || wrong)
            mt_fail(&st, "exact call %d after the groups: rc %d, %d elements wrong", k, rc, wrong);
    }

    /* gather every rank's records on rank 0 */
    struct rec *all = rank == 0 ? malloc((size_t)n * iters * sizeof(*all)) : NULL;
    PMPI_Gather(recs, (int)(iters * sizeof(*recs)), MPI_BYTE, all, (int)(iters * sizeof(*recs)),
                MPI_BYTE, 0, MPI_COMM_WORLD);
    long cases = 0, failed = 0, partial = 0, exact = 0, full = 0;
    if (rank == 0) {
        double scale_route = n;
        for (int r = 0; r < n; r++) {
            int exact_ordinal = 0;
            for (int k = 0; k < iters; k++) {
                struct rec *a = &all[r * iters + k];
                if (a->kind == NOT_MADE)
                    continue;
                cases++;
                int bad = 0;
                double scale = a->route ? scale_route : 1.0;
                double tol = (dbl ? 1e-9 : 2e-5) * 150 * n * scale;
                if (a->kind < 0) {
                    failed++;
                    continue;
                }
                if (a->kind == SAMPI_PARTIAL_EXACT) {
                    exact++;
                    /* the e-th exact call of each rank that made one */
                    int e = exact_ordinal++, running = 0;
                    double want[NSAMPLES] = {0};
                    for (int q = 0; q < n; q++) {
                        int seen = 0;
                        for (int kk = 0; kk < iters; kk++) {
                            struct rec *b = &all[q * iters + kk];
                            if (b->kind != SAMPI_PARTIAL_EXACT)
                                continue;
                            if (seen++ == e) {
                                running++;
                                for (int s = 0; s < NSAMPLES; s++)
                                    want[s] += input(q, kk, sample_index(s, count));
                            }
                        }
                    }
                    if (running != a->size) {
                        printf("selective_check: rank %d call %d: exact over %d ranks, "
                               "records show %d\n",
                               r, k, a->size, running);
                        bad = 1;
                    }
                    for (int s = 0; s < NSAMPLES; s++)
                        if (fabs(a->samples[s] - want[s] * scale / running) > tol) {
                            printf("selective_check: rank %d call %d: exact sample %d = %.9g, "
                                   "want %.9g\n",
                                   r, k, s, a->samples[s], want[s] * scale / running);
                            bad = 1;
                        }
                    failed += bad;
                    continue;
                }
                partial += a->kind == SAMPI_PARTIAL_GROUP;
                full += a->kind == SAMPI_PARTIAL_FULL;
                if (a->size < 1 || a->size > n) {
                    printf("selective_check: rank %d call %d: group size %d\n", r, k, a->size);
                    failed++;
                    continue;
                }
                int miss = a->kind == SAMPI_PARTIAL_FULL ? full_missing(all, n, iters, a) : -1;
                if (miss >= 0) {
                    printf("selective_check: full sync %lld of %d lacks rank %d, which ran on\n",
                           a->group, a->size, miss);
                    failed++;
                    continue;
                }
                double wsum = 0, want[NSAMPLES] = {0};
                int me = 0;
                for (int j = 0; j < a->size; j++) {
                    wsum += a->weights[j];
                    int q = a->members[j];
                    me |= q == r;
                    /* member q's record of the same group */
                    struct rec *b = NULL;
                    for (int kk = 0; kk < iters && q >= 0 && q < n; kk++)
                        if (all[q * iters + kk].group == a->group &&
                            all[q * iters + kk].kind == a->kind)
                            b = &all[q * iters + kk];
                    if (!b) {
                        printf("selective_check: group %lld: member %d has no record of it\n",
                               a->group, q);
                        bad = 1;
                        continue;
                    }
                    /* identical bits, unless the two scaled differently */
                    if (b->size != a->size || (b->route == a->route && b->hash != a->hash) ||
                        memcmp(b->members, a->members, sizeof(int) * (size_t)a->size) ||
                        memcmp(b->weights, a->weights, sizeof(double) * (size_t)a->size)) {
                        printf("selective_check: group %lld: ranks %d and %d disagree "
                               "(members, weights or result bits)\n",
                               a->group, r, q);
                        bad = 1;
                    }
                    for (int s = 0; s < NSAMPLES; s++)
                        want[s] += a->weights[j] * input(q, b->call, sample_index(s, count));
                }
                if (!me || fabs(wsum - 1) > 1e-9) {
                    printf("selective_check: group %lld: rank %d %s, weights sum %.12g\n", a->group,
                           r, me ? "member" : "NOT a member", wsum);
                    bad = 1;
                }
                for (int s = 0; s < NSAMPLES; s++)
                    if (fabs(a->samples[s] - want[s] * scale) > tol) {
                        printf("selective_check: group %lld rank %d sample %d = %.9g, want "
                               "%.9g\n",
                               a->group, r, s, a->samples[s], want[s] * scale);
                        bad = 1;
                    }
                failed += bad;
            }
        }
        if (expect_fb == 2 && (partial || full)) {
            printf("selective_check: no controller, yet %ld partial and %ld full calls\n", partial,
                   full);
            failed++;
        }
        if (expect_fb >= 1 && exact == 0) {
            printf("selective_check: expected calls to fall back, none did\n");
            failed++;
        }
        if (expect_fb == 0 && exact > 0) {
            printf("selective_check: %ld calls fell back unexpectedly\n", exact);
            failed++;
        }
        printf("selective_check: np=%d type=%s count=%ld route=%d: %ld calls (%ld partial, %ld "
               "full, %ld exact), %ld failed\n",
               n, dbl ? "double" : "float", count, route, cases, partial, full, exact, failed);
        fflush(stdout);
    }
    /* rank 0 judged the records; every rank's own failures count as well */
    int code = mt_agreed_exit(failed + st.local_bad);
    free(all);
    free(recs);
    free(buf);
    free(out);
    MPI_Finalize();
    return code;
}
