/*
 * iallreduce_check.c - MPI_Iallreduce and persistent allreduce
 * (MPIX_Allreduce_init) through SAMPI, against PMPI_Allreduce.
 *
 *   iallreduce_check matrix      every exact algorithm and auto, several ops,
 *                                datatypes and counts, in place and not:
 *                                nonblocking and persistent
 *   iallreduce_check rules       requests mixed with point-to-point ones in
 *                                Waitall/Waitany/Testsome, 32 outstanding
 *                                calls on one communicator, two
 *                                communicators interleaved, blocking calls
 *                                between nonblocking ones, a persistent
 *                                request started many times, MPI_Comm_free
 *                                with calls pending, MPI_Cancel refused
 *   iallreduce_check background  rank 0 posts and computes without any MPI
 *                                call while the last rank posts 200 ms late:
 *                                with progress threads the call finishes
 *                                during rank 0's computation (counted by the
 *                                sampi_nb_calls pvar, which MPI_T reads
 *                                without moving anything); with calls it is
 *                                Open MPI's
 *   iallreduce_check faults      a silent rank under sampi_timeout_ms and
 *                                an argument mismatch: the same error class
 *                                in every rank's status
 *
 * Counts, never times: no verdict depends on how busy the machine is.
 */
#include "mpitest.h"
#include "sampi.h"

#include <mpi-ext.h>

#include <time.h>

static struct mt_state st;
static int rank, size;

static const char *const algos[] = {"native", "ring", "rhd", "stragglar", "optcc", "hier", "auto"};
#define NALGOS (sizeof algos / sizeof algos[0])

static MPI_Comm fresh_comm(const char *algorithm)
{
    MPI_Comm comm;
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (algorithm)
        sampi_comm_set_algorithm(comm, algorithm);
    return comm;
}

static void fill(double *v, int n, int seed)
{
    for (int i = 0; i < n; i++)
        v[i] = (double)((i * 7 + seed * 13 + rank * 31) % 97) - 40.0;
}

static int class_of(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        PMPI_Error_class(rc, &cls);
    return cls;
}

/* A process-wide counter of SAMPI's, counted from open_counter on (MPI_T
 * reads move nothing: no progress, no message). */
struct counter {
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int ok;
};

static void open_counter(struct counter *k, const char *name)
{
    int idx, n;
    k->ok = MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx) == MPI_SUCCESS &&
            MPI_T_pvar_session_create(&k->s) == MPI_SUCCESS &&
            MPI_T_pvar_handle_alloc(k->s, idx, NULL, &k->h, &n) == MPI_SUCCESS &&
            MPI_T_pvar_start(k->s, k->h) == MPI_SUCCESS;
    if (!k->ok)
        mt_fail(&st, "cannot read the pvar %s", name);
}

static unsigned long long read_counter(struct counter *k)
{
    unsigned long long v = 0;
    if (k->ok)
        MPI_T_pvar_read(k->s, k->h, &v);
    return v;
}

static void close_counter(struct counter *k)
{
    if (!k->ok)
        return;
    MPI_T_pvar_handle_free(k->s, &k->h);
    MPI_T_pvar_session_free(&k->s);
}

static int read_mode(void)
{
    int idx, n, v = -1;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    if (MPI_T_pvar_get_index("sampi_progress_mode", MPI_T_PVAR_CLASS_GENERIC, &idx) != MPI_SUCCESS)
        return -1;
    MPI_T_pvar_session_create(&s);
    if (MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &n) == MPI_SUCCESS) {
        MPI_T_pvar_read(s, h, &v);
        MPI_T_pvar_handle_free(s, &h);
    }
    MPI_T_pvar_session_free(&s);
    return v;
}

/* ------------------------------------------------------------ matrix */

struct dt_case {
    MPI_Datatype dt;
    const char *name;
    size_t size;
};

/* Values as the datatype holds them, from small integers (exact sums). */
static void put(void *buf, MPI_Datatype dt, int i, int v)
{
    if (dt == MPI_INT)
        ((int *)buf)[i] = v;
    else if (dt == MPI_FLOAT)
        ((float *)buf)[i] = (float)v;
    else if (dt == MPI_DOUBLE)
        ((double *)buf)[i] = v;
    else if (dt == MPI_LONG_LONG)
        ((long long *)buf)[i] = v;
    else if (dt == MPI_UNSIGNED_CHAR)
        ((unsigned char *)buf)[i] = (unsigned char)v;
}

/* One case: nonblocking (or persistent, started `starts` times with new
 * values each time) against PMPI_Allreduce of the same values. */
static void one_case(MPI_Comm comm, const char *algo, const struct dt_case *d, MPI_Op op,
                     const char *opname, int n, int in_place, int persistent)
{
    const int starts = persistent ? 3 : 1;
    size_t bytes = (size_t)n * d->size;
    unsigned char *send = mt_malloc(bytes), *recv = mt_malloc(bytes), *want = mt_malloc(bytes);
    MPI_Request req = MPI_REQUEST_NULL;
    uint64_t hash = MT_HASH_SEED;
    for (int s = 0; s < starts; s++) {
        for (int i = 0; i < n; i++) {
            int v = op == MPI_PROD ? 1 + (i + rank + s) % 2 : (i * 5 + rank * 3 + s) % 23 - 7;
            if (d->dt == MPI_UNSIGNED_CHAR)
                v = op == MPI_PROD ? v : (v + 7) % 9;
            put(send, d->dt, i, v);
        }
        PMPI_Allreduce(send, want, n, d->dt, op, comm);
        void *sb = send;
        if (in_place) {
            memcpy(recv, send, bytes);
            sb = MPI_IN_PLACE;
        } else {
            memset(recv, 0xA5, bytes);
        }
        int rc;
        if (persistent) {
            if (s == 0 && (rc = MPIX_Allreduce_init(sb, recv, n, d->dt, op, comm, MPI_INFO_NULL,
                                                    &req)) != MPI_SUCCESS) {
                mt_fail(&st, "%s %s %s n=%d: MPIX_Allreduce_init error %d", algo, d->name, opname,
                        n, rc);
                break;
            }
            rc = MPI_Start(&req);
        } else {
            rc = MPI_Iallreduce(sb, recv, n, d->dt, op, comm, &req);
        }
        MPI_Status status;
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&req, &status);
        if (rc != MPI_SUCCESS)
            mt_fail(&st, "%s %s %s n=%d%s%s: error %d", algo, d->name, opname, n,
                    in_place ? " in place" : "", persistent ? " persistent" : "", rc);
        else if (memcmp(recv, want, bytes) != 0)
            mt_fail(&st, "%s %s %s n=%d%s%s start %d: result differs from PMPI_Allreduce", algo,
                    d->name, opname, n, in_place ? " in place" : "",
                    persistent ? " persistent" : "", s);
        if (!persistent && req != MPI_REQUEST_NULL)
            mt_fail(&st, "%s: the completed request is not MPI_REQUEST_NULL", algo);
        hash = mt_hash(hash, recv, bytes);
    }
    if (persistent && req != MPI_REQUEST_NULL) {
        MPI_Request_free(&req);
        if (req != MPI_REQUEST_NULL)
            mt_fail(&st, "%s: MPI_Request_free left the handle set", algo);
    }
    char what[160];
    snprintf(what, sizeof what, "%s %s %s n=%d%s%s", algo, d->name, opname, n,
             in_place ? " in place" : "", persistent ? " persistent" : "");
    mt_close_case(&st, comm, hash, what);
    free(send);
    free(recv);
    free(want);
}

static void run_matrix(void)
{
    static const struct dt_case dts[] = {{MPI_INT, "int", sizeof(int)},
                                         {MPI_DOUBLE, "double", sizeof(double)},
                                         {MPI_FLOAT, "float", sizeof(float)},
                                         {MPI_LONG_LONG, "long long", sizeof(long long)},
                                         {MPI_UNSIGNED_CHAR, "uchar", 1}};
    static const struct {
        MPI_Op op;
        const char *name;
    } ops[] = {{MPI_SUM, "sum"}, {MPI_MAX, "max"}, {MPI_MIN, "min"}, {MPI_PROD, "prod"}};
    static const int counts[] = {1, 7, 1000, 65537};
    for (size_t a = 0; a < NALGOS; a++) {
        MPI_Comm comm = fresh_comm(algos[a]);
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
            for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
                for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                    /* every combination of in place and persistent once per
                     * (datatype, op, count), in rotation, and all four at
                     * the largest count */
                    int k = (int)(d + o + c);
                    int all = c == sizeof counts / sizeof counts[0] - 1 && o == 0;
                    for (int v = 0; v < 4; v++)
                        if (all || v == k % 4)
                            one_case(comm, algos[a], &dts[d], ops[o].op, ops[o].name, counts[c],
                                     v & 1, v >> 1);
                }
        MPI_Comm_free(&comm);
    }
}

/* ------------------------------------------------------------ rules */

/* An Iallreduce of n doubles on comm whose expected sum is known. */
struct pending {
    double *send, *recv;
    int n, seed;
};

static void pending_post(struct pending *p, MPI_Comm comm, int n, int seed, MPI_Request *req)
{
    p->n = n;
    p->seed = seed;
    p->send = mt_malloc((size_t)n * sizeof(double));
    p->recv = mt_malloc((size_t)n * sizeof(double));
    fill(p->send, n, seed);
    int rc = MPI_Iallreduce(p->send, p->recv, n, MPI_DOUBLE, MPI_SUM, comm, req);
    if (rc != MPI_SUCCESS)
        mt_fail(&st, "Iallreduce seed %d: error %d", seed, rc);
}

/* Checks the sum (every rank's fill summed) and frees the buffers. */
static void pending_check(struct pending *p, const char *what)
{
    for (int i = 0; i < p->n; i++) {
        double want = 0;
        for (int r = 0; r < size; r++)
            want += (double)((i * 7 + p->seed * 13 + r * 31) % 97) - 40.0;
        if (p->recv[i] != want) {
            mt_fail(&st, "%s seed %d: element %d is %g, want %g", what, p->seed, i, p->recv[i],
                    want);
            break;
        }
    }
    free(p->send);
    free(p->recv);
}

/* Point-to-point around a ring, mixed with an Iallreduce, in every kind of
 * completion call. */
static void case_mixed(MPI_Comm comm)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int kind = 0; kind < 3; kind++) {
        MPI_Request reqs[3];
        struct pending p;
        int out = rank * 100 + kind, in = -1;
        PMPI_Irecv(&in, 1, MPI_INT, left, 7, comm, &reqs[0]);
        pending_post(&p, comm, 5000, kind, &reqs[1]);
        PMPI_Isend(&out, 1, MPI_INT, right, 7, comm, &reqs[2]);
        MPI_Status statuses[3];
        if (kind == 0) {
            if (MPI_Waitall(3, reqs, statuses) != MPI_SUCCESS)
                mt_fail(&st, "Waitall failed");
        } else if (kind == 1) {
            for (int done = 0; done < 3; done++) {
                int idx = -1;
                MPI_Waitany(3, reqs, &idx, statuses);
                if (idx < 0 || idx > 2)
                    mt_fail(&st, "Waitany index %d", idx);
            }
        } else {
            int left_to_do = 3;
            while (left_to_do > 0) {
                int outcount = 0, idx[3];
                MPI_Testsome(3, reqs, &outcount, idx, statuses);
                if (outcount != MPI_UNDEFINED)
                    left_to_do -= outcount;
            }
        }
        for (int i = 0; i < 3; i++)
            if (reqs[i] != MPI_REQUEST_NULL)
                mt_fail(&st, "mixed %d: request %d not completed", kind, i);
        if (in != left * 100 + kind)
            mt_fail(&st, "mixed %d: point-to-point got %d", kind, in);
        pending_check(&p, kind == 0 ? "Waitall" : kind == 1 ? "Waitany" : "Testsome");
    }
    mt_verdict(&st, "mixed: Iallreduce with point-to-point in Waitall, Waitany, Testsome",
               !st.local_bad);
    st.local_bad = 0;
}

/* 32 outstanding on one communicator, completed in reverse order; a
 * blocking call between them; two communicators interleaved. */
static void case_outstanding(MPI_Comm comm)
{
    enum { N = 32 };
    MPI_Request reqs[N];
    struct pending p[N];
    MPI_Comm other = fresh_comm("ring");
    struct pending q[4];
    MPI_Request qreq[4];
    for (int i = 0; i < N; i++) {
        pending_post(&p[i], comm, 100 + i * 37, i, &reqs[i]);
        if (i % 8 == 0)
            pending_post(&q[i / 8], other, 3000, 50 + i, &qreq[i / 8]);
        if (i == N / 2) { /* a blocking call on the same communicator */
            double v = rank, s = 0;
            MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, comm);
            if (s != (double)size * (size - 1) / 2)
                mt_fail(&st, "blocking call between nonblocking ones: %g", s);
        }
    }
    for (int i = N - 1; i >= 0; i--) {
        MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
        pending_check(&p[i], "outstanding");
    }
    MPI_Waitall(4, qreq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 4; i++)
        pending_check(&q[i], "second communicator");
    MPI_Comm_free(&other);
    mt_verdict(&st,
               "outstanding: 32 calls on one communicator, a blocking one among them, "
               "another communicator interleaved",
               !st.local_bad);
    st.local_bad = 0;
}

/* One persistent request started many times; Startall with two. */
static void case_persistent(MPI_Comm comm, int starts)
{
    double v[3], s[3];
    MPI_Request req[2];
    int rc = MPIX_Allreduce_init(v, s, 3, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &req[0]);
    double w = 0, t = 0;
    rc |= MPIX_Allreduce_init(&w, &t, 1, MPI_DOUBLE, MPI_MAX, comm, MPI_INFO_NULL, &req[1]);
    if (rc != MPI_SUCCESS)
        mt_fail(&st, "MPIX_Allreduce_init failed");
    int bad = 0;
    for (int k = 0; k < starts && !bad; k++) {
        v[0] = k;
        v[1] = rank;
        v[2] = 1;
        w = rank + k;
        if (k % 2)
            MPI_Startall(2, req);
        else
            MPI_Start(&req[0]);
        MPI_Waitall(k % 2 ? 2 : 1, req, MPI_STATUSES_IGNORE);
        if (s[0] != (double)k * size || s[1] != (double)size * (size - 1) / 2 || s[2] != size)
            bad = 1, mt_fail(&st, "persistent start %d: %g %g %g", k, s[0], s[1], s[2]);
        if (k % 2 && t != size - 1 + k)
            bad = 1, mt_fail(&st, "persistent Startall %d: max %g", k, t);
        if (req[0] == MPI_REQUEST_NULL)
            bad = 1, mt_fail(&st, "persistent request became MPI_REQUEST_NULL after a wait");
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    char what[96];
    snprintf(what, sizeof what, "persistent: one request started %d times, Startall", starts);
    mt_verdict(&st, what, !st.local_bad);
    st.local_bad = 0;
}

/* Whether a case about SAMPI's own requests runs: only with the progress
 * thread.  With calls the requests are Open MPI's own, whose behaviour the
 * case is not about; rank 0 says so, naming the case and the reason. */
static int with_threads_only(const char *what, const char *why)
{
    if (read_mode() == 1)
        return 1;
    if (rank == 0)
        printf("iallreduce_check: %s: not run with calls (%s)\n", what, why);
    return 0;
}

/* MPI_Comm_free with calls pending: they complete, as MPI says. */
static void case_free_pending(void)
{
    /* Open MPI 4.1's libnbc keeps the communicator without a reference of
     * its own (handle->comm, no OBJ_RETAIN): between two rounds of its
     * schedule nothing holds the freed communicator, and the next round's
     * send reads a destroyed one (seen once in 30 runs under the
     * sanitizers, a SEGV in mca_pml_ob1_isend). */
    if (!with_threads_only("free with calls pending",
                           "Open MPI 4.1's libnbc does not hold the communicator"))
        return;
    MPI_Comm comm = fresh_comm("ring");
    MPI_Request reqs[4];
    struct pending p[4];
    for (int i = 0; i < 4; i++)
        pending_post(&p[i], comm, 20000, 70 + i, &reqs[i]);
    MPI_Comm_free(&comm);
    MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 4; i++)
        pending_check(&p[i], "freed communicator");
    mt_verdict(&st, "free: MPI_Comm_free with 4 calls pending, they complete", !st.local_bad);
    st.local_bad = 0;
}

/* MPI_Cancel: refused with MPI's error; the call still completes. */
static void case_cancel(MPI_Comm comm)
{
    MPI_Request req;
    struct pending p;
    pending_post(&p, comm, 1000, 90, &req);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Cancel(&req);
    MPI_Status status;
    MPI_Wait(&req, &status);
    int cancelled = 1;
    MPI_Test_cancelled(&status, &cancelled);
    if (rc == MPI_SUCCESS && cancelled)
        mt_fail(&st, "MPI_Cancel cancelled a collective");
    pending_check(&p, "after MPI_Cancel");
    /* a persistent one: refused too, and it still runs */
    double v = rank, sum = -1;
    MPIX_Allreduce_init(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &req);
    MPI_Start(&req);
    rc = MPI_Cancel(&req);
    MPI_Wait(&req, &status);
    cancelled = 1;
    MPI_Test_cancelled(&status, &cancelled);
    if (rc == MPI_SUCCESS || cancelled)
        mt_fail(&st, "MPI_Cancel on a persistent allreduce: rc %d, cancelled %d", rc, cancelled);
    if (sum != (double)size * (size - 1) / 2)
        mt_fail(&st, "persistent call after MPI_Cancel: %g", sum);
    MPI_Request_free(&req);
    mt_verdict(&st, "cancel: MPI_Cancel on a collective's request changes nothing", !st.local_bad);
    st.local_bad = 0;
}

/* A communicator's first call nonblocking, then a message the other ranks
 * wait for before they post theirs: legal MPI (initiation is local), and
 * it must not wait for the other ranks. */
static void case_first_call_local(void)
{
    MPI_Comm comm = fresh_comm("ring");
    MPI_Request req;
    struct pending p;
    int token = 7;
    if (rank == 0) {
        pending_post(&p, comm, 2000, 95, &req);
        for (int r = 1; r < size; r++)
            PMPI_Send(&token, 1, MPI_INT, r, 11, MPI_COMM_WORLD);
    } else {
        PMPI_Recv(&token, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        pending_post(&p, comm, 2000, 95, &req);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    pending_check(&p, "first call, nonblocking");
    MPI_Comm_free(&comm);
    mt_verdict(&st, "first call: MPI_Iallreduce returns before the other ranks post theirs",
               !st.local_bad);
    st.local_bad = 0;
}

/* MPI_Request_free on a request still running: the call goes on and
 * delivers its result (a blocking call on the communicator after it waits
 * for it); nothing of SAMPI's is freed under the thread (the sanitizer pass
 * runs this). */
static void case_free_active(MPI_Comm comm)
{
    /* Open MPI 4.1 refuses MPI_Request_free on its own running nonblocking
     * collective (the handle stays set) */
    if (!with_threads_only("request freed while running", "Open MPI's own request"))
        return;
    MPI_Request req;
    struct pending p;
    pending_post(&p, comm, 30000, 97, &req);
    MPI_Request_free(&req);
    if (req != MPI_REQUEST_NULL)
        mt_fail(&st, "MPI_Request_free left the handle set");
    double v = 1, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
    if (sum != size)
        mt_fail(&st, "the blocking call after a freed request: %g", sum);
    pending_check(&p, "freed while running");
    mt_verdict(&st, "request freed while running: the call completes, its result arrives",
               !st.local_bad);
    st.local_bad = 0;
}

static void run_rules(int starts)
{
    case_first_call_local();
    MPI_Comm comm = fresh_comm("ring");
    case_mixed(comm);
    case_outstanding(comm);
    case_persistent(comm, starts);
    case_free_pending();
    case_cancel(comm);
    case_free_active(comm);
    MPI_Comm_free(&comm);
}

/* ------------------------------------------------------------ background */

static void spin_ms(double ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

/* `mode` is what the test script forced: "thread" or "calls". */
static void run_background(const char *mode)
{
    MPI_Comm comm = fresh_comm("ring");
    double v[1000], s[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = rank + i;
    /* warm: the communicator's first call agrees on its settings */
    MPI_Request req;
    MPI_Iallreduce(v, s, 1000, MPI_DOUBLE, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    PMPI_Barrier(MPI_COMM_WORLD);
    struct counter finished, native;
    open_counter(&finished, "sampi_nb_calls");
    open_counter(&native, "sampi_nb_native");
    int thread = strcmp(mode, "thread") == 0;
    int seen = 0, chunks = 0;
    if (rank == size - 1) {
        struct timespec late = {0, 200 * 1000000L};
        nanosleep(&late, NULL);
    }
    MPI_Iallreduce(v, s, 1000, MPI_DOUBLE, MPI_SUM, comm, &req);
    if (rank == 0) {
        /* compute, no MPI call, until the thread says it finished the call
         * (at most 60 s: far above the 200 ms the last rank is late) */
        /* with calls nothing is to be seen: 400 ms, twice the lateness */
        int most = thread ? 60000 : 400;
        for (chunks = 0; chunks < most && !seen; chunks++) {
            spin_ms(1);
            seen = read_counter(&finished) > 0;
        }
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < 1000; i++)
        if (s[i] != (double)size * (size - 1) / 2 + (double)size * i) {
            mt_fail(&st, "background: element %d is %g", i, s[i]);
            break;
        }
    int mode_pvar = read_mode();
    if (thread) {
        if (rank == 0 && !seen)
            mt_fail(&st, "the call did not complete during 60 s of computing");
        if (mode_pvar != 1)
            mt_fail(&st, "sampi_progress_mode is %d, not 1 (thread)", mode_pvar);
    } else {
        /* calls: Open MPI's own call, which moved only inside MPI_Wait */
        if (read_counter(&finished) != 0)
            mt_fail(&st, "a progress thread ran a call under sampi_progress=calls");
        if (read_counter(&native) != 1)
            mt_fail(&st, "the call did not go to Open MPI's MPI_Iallreduce");
        if (mode_pvar != 2)
            mt_fail(&st, "sampi_progress_mode is %d, not 2 (calls)", mode_pvar);
    }
    close_counter(&finished);
    close_counter(&native);
    if (rank == 0)
        printf("iallreduce_check: background %s: rank 0 computed %d ms chunks, %s\n", mode, chunks,
               seen ? "the call completed meanwhile" : "no completion seen meanwhile");
    char what[128];
    snprintf(what, sizeof what, "background (%s): a late rank, rank 0 computing", mode);
    mt_verdict(&st, what, !st.local_bad);
    st.local_bad = 0;
    MPI_Comm_free(&comm);
}

/* ------------------------------------------------------------ faults */

static int set_cvar(const char *name, int value)
{
    int idx, n, rc;
    MPI_T_cvar_handle h;
    if ((rc = MPI_T_cvar_get_index(name, &idx)) != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_T_cvar_handle_alloc(idx, NULL, &h, &n)) != MPI_SUCCESS)
        return rc;
    rc = MPI_T_cvar_write(h, &value);
    MPI_T_cvar_handle_free(&h);
    return rc;
}

/* The classes every rank's status got must be one class, not success. */
static void expect_same_class(const char *what, int cls)
{
    int in[2] = {cls, -cls}, out[2];
    PMPI_Allreduce(in, out, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (out[0] != -out[1])
        mt_fail(&st, "%s: ranks got different classes (%d..%d)", what, -out[1], out[0]);
    if (cls == MPI_SUCCESS)
        mt_fail(&st, "%s: the call succeeded", what);
    mt_verdict(&st, what, !st.local_bad);
    st.local_bad = 0;
}

/* Complete two[] through `how`, each request's class in cls[] (-1: not
 * completed); the calls' own rules for a request complete in error. */
static void complete_by(const char *how, MPI_Request two[2], int cls[2])
{
    MPI_Status sts[2];
    int idx[2], out = 0, flag = 0, rc;
    if (strcmp(how, "Waitall") == 0) {
        rc = MPI_Waitall(2, two, sts);
        for (int i = 0; i < 2; i++)
            cls[i] = rc == MPI_ERR_IN_STATUS ? class_of(sts[i].MPI_ERROR) : class_of(rc);
        return;
    }
    for (int left = 2, turns = 0; left > 0 && turns < 1000000; turns++) {
        if (strcmp(how, "Wait") == 0) {
            int i = 2 - left;
            cls[i] = class_of(MPI_Wait(&two[i], &sts[0]));
            left--;
        } else if (strcmp(how, "Waitany") == 0 || strcmp(how, "Testany") == 0) {
            flag = 1;
            rc = how[0] == 'W' ? MPI_Waitany(2, two, &idx[0], &sts[0])
                               : MPI_Testany(2, two, &idx[0], &flag, &sts[0]);
            if (flag && idx[0] != MPI_UNDEFINED) {
                cls[idx[0]] = class_of(rc);
                left--;
            }
        } else {
            rc = how[0] == 'W' ? MPI_Waitsome(2, two, &out, idx, sts)
                               : MPI_Testsome(2, two, &out, idx, sts);
            for (int j = 0; out != MPI_UNDEFINED && j < out; j++, left--)
                cls[idx[j]] = rc == MPI_ERR_IN_STATUS ? class_of(sts[j].MPI_ERROR) : class_of(rc);
        }
    }
}

static void own_truncated(const char *how)
{
    MPI_Comm self;
    PMPI_Comm_dup(MPI_COMM_SELF, &self);
    PMPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
    MPI_Request two[2];
    char one_byte = 1, got_byte = 0;
    MPI_Irecv(&got_byte, 1, MPI_BYTE, 0, 1, self, &two[0]);
    MPI_Irecv(NULL, 0, MPI_BYTE, 0, 2, self, &two[1]);
    MPI_Send(&one_byte, 1, MPI_BYTE, 0, 1, self);
    MPI_Send(&one_byte, 1, MPI_BYTE, 0, 2, self);
    for (int done = 0; !done;)
        PMPI_Request_get_status(two[1], &done, MPI_STATUS_IGNORE);
    int cls[2] = {-1, -1};
    complete_by(how, two, cls);
    if (cls[0] != MPI_SUCCESS || cls[1] != MPI_ERR_TRUNCATE || got_byte != 1)
        mt_fail(&st, "own requests, one truncated, MPI_%s: classes %d and %d, byte %d", how, cls[0],
                cls[1], got_byte);
    for (int i = 0; i < 2; i++)
        if (two[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&two[i]);
    char what[96];
    snprintf(what, sizeof(what), "faults: the program's truncated receive in MPI_%s", how);
    mt_verdict(&st, what, !st.local_bad);
    st.local_bad = 0;
    PMPI_Comm_free(&self);
}

static void run_faults(void)
{
    enum { LIMIT_MS = 2000 };
    /* Open MPI hands a generalized request's error to MPI_COMM_WORLD's
     * handler in MPI_Wait (sampi(7) NONBLOCKING) */
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* a silent rank: the last one posts only after the others gave up */
    MPI_Comm comm = fresh_comm("ring");
    double v[4096], s[4096];
    fill(v, 4096, 1);
    MPI_Request req;
    MPI_Iallreduce(v, s, 4096, MPI_DOUBLE, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    set_cvar("sampi_timeout_ms", LIMIT_MS);
    MPI_Status status = {0};
    int rc = MPI_SUCCESS;
    if (rank != size - 1) {
        MPI_Iallreduce(v, s, 4096, MPI_DOUBLE, MPI_SUM, comm, &req);
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        MPI_Iallreduce(v, s, 4096, MPI_DOUBLE, MPI_SUM, comm, &req);
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    expect_same_class("faults: silent rank, limit 2 s: the same class from every MPI_Wait",
                      class_of(rc));
    /* the next call fails at once; Waitall puts the class in the status */
    MPI_Iallreduce(v, s, 4096, MPI_DOUBLE, MPI_SUM, comm, &req);
    rc = MPI_Waitall(1, &req, &status);
    if (rc != MPI_ERR_IN_STATUS)
        mt_fail(&st, "silent, next call: MPI_Waitall returned %d, not MPI_ERR_IN_STATUS", rc);
    expect_same_class("faults: the next call, the same class in every Waitall status",
                      class_of(status.MPI_ERROR));
    set_cvar("sampi_timeout_ms", 0);
    MPI_Comm_free(&comm);

    /* the same with a persistent request: the call's own class, not the
     * carrier's MPI_ERR_TRUNCATE, from MPI_Wait and in a Waitall status */
    comm = fresh_comm("ring");
    MPI_Request preq;
    MPIX_Allreduce_init(v, s, 4096, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &preq);
    MPI_Start(&preq);
    MPI_Wait(&preq, MPI_STATUS_IGNORE);
    set_cvar("sampi_timeout_ms", LIMIT_MS);
    rc = MPI_SUCCESS;
    if (rank != size - 1) {
        MPI_Start(&preq);
        rc = MPI_Wait(&preq, MPI_STATUS_IGNORE);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        MPI_Start(&preq);
        rc = MPI_Wait(&preq, MPI_STATUS_IGNORE);
    }
    if (class_of(rc) == MPI_ERR_TRUNCATE)
        mt_fail(&st, "persistent, silent rank: MPI_ERR_TRUNCATE, the carrier's class");
    /* as Open MPI does for its own: a request that failed is freed */
    if (preq != MPI_REQUEST_NULL)
        mt_fail(&st, "persistent, silent rank: the failed request was not freed");
    expect_same_class("faults: persistent, silent rank: the same class from every MPI_Wait",
                      class_of(rc));
    /* a new request on the revoked communicator fails at once: complete in
     * error before MPI_Waitall sees it (Open MPI 4.1's threaded Waitall
     * never returned then; request.c) */
    MPIX_Allreduce_init(v, s, 4096, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &preq);
    MPI_Start(&preq);
    for (int done = 0; !done;) /* PMPI's: SAMPI's would take the failure */
        PMPI_Request_get_status(preq, &done, MPI_STATUS_IGNORE);
    rc = MPI_Waitall(1, &preq, &status);
    if (rc != MPI_ERR_IN_STATUS)
        mt_fail(&st, "persistent, next one: MPI_Waitall returned %d, not MPI_ERR_IN_STATUS", rc);
    expect_same_class("faults: persistent, the next one: the same class in every Waitall status",
                      class_of(status.MPI_ERROR));
    if (preq != MPI_REQUEST_NULL)
        mt_fail(&st, "persistent, next one: the failed request was not freed");
    /* and through MPI_Testall, which Open MPI answers MPI_SUCCESS for a
     * persistent request complete in error */
    MPIX_Allreduce_init(v, s, 4096, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &preq);
    MPI_Start(&preq);
    int flag = 0;
    do
        rc = MPI_Testall(1, &preq, &flag, &status);
    while (!flag && rc == MPI_SUCCESS);
    if (rc != MPI_ERR_IN_STATUS)
        mt_fail(&st, "persistent, Testall: MPI_Testall returned %d, not MPI_ERR_IN_STATUS", rc);
    if (preq != MPI_REQUEST_NULL)
        mt_fail(&st, "persistent, Testall: the failed request was not freed");
    expect_same_class("faults: persistent, MPI_Testall: the same class in every status",
                      class_of(status.MPI_ERROR));
    if (preq != MPI_REQUEST_NULL)
        MPI_Request_free(&preq);
    set_cvar("sampi_timeout_ms", 0);
    MPI_Comm_free(&comm);

    /* the program's own requests, one of them complete in error before the
     * completion call (a truncated receive), through each call of the
     * family, with Open MPI threaded underneath as with SAMPI's progress
     * threads: MPI_Waitall needs SAMPI's workaround (request.c), the others
     * must simply return, with each request's own class */
    static const char *const hows[] = {"Waitall",  "Wait",    "Waitany",
                                       "Waitsome", "Testany", "Testsome"};
    for (size_t i = 0; i < sizeof(hows) / sizeof(hows[0]); i++)
        own_truncated(hows[i]);

    /* an argument mismatch: the last rank passes one element more */
    comm = fresh_comm("ring");
    MPI_Iallreduce(v, s, 4096, MPI_DOUBLE, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    rc = MPI_Iallreduce(v, s, rank == size - 1 ? 4000 : 3999, MPI_DOUBLE, MPI_SUM, comm, &req);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    expect_same_class("faults: counts differ: the same class in every status", class_of(rc));
    MPI_Comm_free(&comm);
}

/* The thread level the program asked for is the one it gets and the one
 * MPI_Query_thread says, through SAMPI's MPI_T_init_thread too (Open MPI
 * 4.1's would set the process's level to its argument); with progress
 * threads forced Open MPI runs MPI_THREAD_MULTIPLE underneath. */
static void check_levels(int required, int provided, const char *mode)
{
    int query = -1, underneath = -1, after = -1, mpit;
    MPI_Query_thread(&query);
    PMPI_Query_thread(&underneath);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &mpit);
    MPI_T_finalize();
    MPI_Query_thread(&after);
    if (provided != required)
        mt_fail(&st, "asked for level %d, got %d", required, provided);
    if (query != provided || after != provided)
        mt_fail(&st, "MPI_Query_thread says %d (after MPI_T_init_thread: %d), the program got %d",
                query, after, provided);
    if (strcmp(mode, "thread") == 0 && underneath != MPI_THREAD_MULTIPLE)
        mt_fail(&st, "progress threads, but Open MPI runs at level %d underneath", underneath);
    if (strcmp(mode, "calls") == 0 && underneath != provided)
        mt_fail(&st, "no progress thread, but Open MPI runs at level %d underneath, not %d",
                underneath, provided);
    char what[96];
    snprintf(what, sizeof what, "levels (%s): asked %d, got %d, query %d, underneath %d", mode,
             required, provided, after, underneath);
    mt_verdict(&st, what, !st.local_bad);
    st.local_bad = 0;
}

int main(int argc, char **argv)
{
    int provided, required = -1;
    const char *what = argc > 1 ? argv[1] : "matrix";
    if (strcmp(what, "levels") == 0) {
        required = atoi(mt_option(argc, argv, "--level", "0"));
        MPI_Init_thread(&argc, &argv, required, &provided);
    } else {
        MPI_Init(&argc, &argv);
        required = provided = MPI_THREAD_SINGLE;
    }
    mt_init(&st, "iallreduce_check");
    if (strcmp(what, "levels") == 0)
        check_levels(required, provided, mt_option(argc, argv, "--mode", "calls"));
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    rank = st.rank;
    if (strcmp(what, "matrix") == 0)
        run_matrix();
    else if (strcmp(what, "rules") == 0)
        run_rules(atoi(mt_option(argc, argv, "--starts", "10000")));
    else if (strcmp(what, "background") == 0)
        run_background(mt_option(argc, argv, "--mode", "thread"));
    else if (strcmp(what, "faults") == 0)
        run_faults();
    char sep[64];
    snprintf(sep, sizeof sep, " %s: ", what);
    long failed = mt_summary(&st, size, sep, "cases");
    MPI_T_finalize();
    MPI_Finalize();
    return mt_exit_code(failed);
}
