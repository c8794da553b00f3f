/*
 * bad_args.c - SAMPI's MPI_Allreduce fails like Open MPI's.
 *
 * Default mode: every erroneous call of the table below is made on
 * MPI_COMM_WORLD and on a duplicate, with SAMPI forced to "ring" so that
 * validation, not Open MPI, has to catch it.  The expected error class is
 * what PMPI_Allreduce returns for the same arguments.  Each case runs twice:
 * under MPI_ERRORS_RETURN (the class must match) and under a counting error
 * handler (it must be invoked exactly once, on the right communicator, with
 * a code of that class).  Afterwards a correct allreduce must still work.
 *
 * --fallback error|warn|silent   (run with SAMPI_ALGORITHM=ring and
 *     SAMPI_FALLBACK set to the same policy) a user-defined op cannot run
 *     ring: "error" must fail it with MPI_ERR_ARG, the others must hand it
 *     to PMPI_Allreduce and give Open MPI's result.
 * --timeout   (run with SAMPI_TIMEOUT_MS=2000) rank 1 joins an allreduce
 *     6 s late: the others must get an error, through the error handler,
 *     after about the timeout and well before rank 1 arrives.
 *
 * Prints PASS/FAIL per case; exits non-zero when any case failed.
 */
#include "mpitest.h"
#include "sampi.h"

#include <time.h>
#include <unistd.h>

#define N 16

/* ------------------------------------------------------------ error handler */

static struct {
    int calls;
    MPI_Comm comm;
    int code;
} handled;

static void count_errors(MPI_Comm *comm, int *code, ...)
{
    handled.calls++;
    handled.comm = *comm;
    handled.code = *code;
}

static MPI_Errhandler counting_handler;

static const char *class_name(int cls)
{
    static const struct {
        int cls;
        const char *name;
    } names[] = {
        {MPI_SUCCESS, "MPI_SUCCESS"},         {MPI_ERR_BUFFER, "MPI_ERR_BUFFER"},
        {MPI_ERR_COUNT, "MPI_ERR_COUNT"},     {MPI_ERR_TYPE, "MPI_ERR_TYPE"},
        {MPI_ERR_COMM, "MPI_ERR_COMM"},       {MPI_ERR_OP, "MPI_ERR_OP"},
        {MPI_ERR_ARG, "MPI_ERR_ARG"},         {MPI_ERR_OTHER, "MPI_ERR_OTHER"},
        {MPI_ERR_INTERN, "MPI_ERR_INTERN"},   {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE"},
        {MPI_ERR_PENDING, "MPI_ERR_PENDING"}, {MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].cls == cls)
            return names[i].name;
    return "(another class)";
}

static int error_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        PMPI_Error_class(rc, &cls);
    return cls;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ the bad calls */

enum sendsel { SEND_OK, SEND_NULL, SEND_RECVBUF };  /* SEND_RECVBUF: the receive buffer itself */
enum recvsel { RECV_OK, RECV_NULL, RECV_IN_PLACE }; /* RECV_IN_PLACE: MPI_IN_PLACE as recvbuf */
enum dtsel { D_INT, D_NULL, D_2INT, D_FLOAT, D_UNCOMMITTED, D_CHAR };
enum opsel { O_SUM, O_NULL, O_BAND, O_USER, O_MAXLOC, O_MINLOC };

struct bad_case {
    const char *name;
    enum sendsel send;
    enum recvsel recv;
    int count;
    enum dtsel dt;
    enum opsel op;
    int null_comm;
    /* Open MPI does not check buffers: PMPI_Allreduce would dereference
     * NULL and crash, so it cannot be asked.  MPI_ERR_BUFFER is the class
     * MPI reserves for an invalid buffer pointer, so that is expected. */
    int pmpi_crashes;
};

static const struct bad_case cases[] = {
    {"null sendbuf", SEND_NULL, RECV_OK, N, D_INT, O_SUM, 0, 1},
    {"null recvbuf", SEND_OK, RECV_NULL, N, D_INT, O_SUM, 0, 1},
    {"null buffers with count 0 (valid)", SEND_NULL, RECV_NULL, 0, D_INT, O_SUM, 0, 0},
    {"negative count", SEND_OK, RECV_OK, -1, D_INT, O_SUM, 0, 0},
    {"MPI_DATATYPE_NULL", SEND_OK, RECV_OK, N, D_NULL, O_SUM, 0, 0},
    {"MPI_OP_NULL", SEND_OK, RECV_OK, N, D_INT, O_NULL, 0, 0},
    {"MPI_COMM_NULL", SEND_OK, RECV_OK, N, D_INT, O_SUM, 1, 0},
    {"sendbuf == recvbuf (not MPI_IN_PLACE)", SEND_RECVBUF, RECV_OK, N, D_INT, O_SUM, 0, 0},
    {"recvbuf == MPI_IN_PLACE", SEND_OK, RECV_IN_PLACE, N, D_INT, O_SUM, 0, 0},
    {"MPI_SUM on MPI_2INT", SEND_OK, RECV_OK, N / 2, D_2INT, O_SUM, 0, 0},
    {"MPI_BAND on MPI_FLOAT", SEND_OK, RECV_OK, N, D_FLOAT, O_BAND, 0, 0},
    /* SAMPI runs MPI_CHAR with the ten ops Open MPI accepts on it; these two
     * Open MPI refuses (MPI_ERR_OP), and so must SAMPI. */
    {"MPI_MAXLOC on MPI_CHAR", SEND_OK, RECV_OK, N, D_CHAR, O_MAXLOC, 0, 0},
    {"MPI_MINLOC on MPI_CHAR", SEND_OK, RECV_OK, N, D_CHAR, O_MINLOC, 0, 0},
    {"uncommitted derived type, MPI_SUM", SEND_OK, RECV_OK, N / 2, D_UNCOMMITTED, O_SUM, 0, 0},
    {"uncommitted derived type, user op", SEND_OK, RECV_OK, N / 2, D_UNCOMMITTED, O_USER, 0, 0},
    /* Last: Open MPI's MPI_BOTTOM is NULL, so its aliasing check lets this
     * one through to the collective, where it crashes; an implementation
     * that forwards it crashes the program and hides no other case. */
    {"null sendbuf and recvbuf", SEND_NULL, RECV_NULL, N, D_INT, O_SUM, 0, 1},
};

struct handles {
    MPI_Datatype dt[6];
    MPI_Op op[6];
};

struct args {
    const void *send;
    void *recv;
    int count;
    MPI_Datatype dt;
    MPI_Op op;
    MPI_Comm comm;
};

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int size;
    PMPI_Type_size(*dt, &size);
    for (long i = 0; i < (long)*len * size / (long)sizeof(int); i++)
        ((int *)inout)[i] += ((const int *)in)[i];
}

static struct args make_args(const struct bad_case *bc, const struct handles *h, MPI_Comm comm,
                             int *sendbuf, int *recvbuf)
{
    const void *send[] = {sendbuf, NULL, recvbuf};
    void *recv[] = {recvbuf, NULL, MPI_IN_PLACE};
    struct args a = {send[bc->send], recv[bc->recv], bc->count,
                     h->dt[bc->dt],  h->op[bc->op],  bc->null_comm ? MPI_COMM_NULL : comm};
    return a;
}

static int call_pmpi(const struct args *a)
{
    return PMPI_Allreduce(a->send, a->recv, a->count, a->dt, a->op, a->comm);
}

static int call_sampi(const struct args *a)
{
    return MPI_Allreduce(a->send, a->recv, a->count, a->dt, a->op, a->comm);
}

static void set_handler(MPI_Comm comm, MPI_Errhandler eh)
{
    MPI_Comm_set_errhandler(comm, eh);
    /* Open MPI reports some errors (MPI_COMM_NULL among them) through
     * MPI_COMM_WORLD, so its handler is watched too. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
}

/* How a call failed: its error class and what the error handler saw. */
struct outcome {
    int cls;
    int calls;         /* handler invocations */
    const char *where; /* communicator the handler was invoked on */
    int handler_cls;
};

static const char *comm_label(MPI_Comm c, MPI_Comm comm)
{
    if (c == MPI_COMM_WORLD)
        return "MPI_COMM_WORLD";
    return c == comm ? "the call's communicator" : "another communicator";
}

static struct outcome call_watched(int (*call)(const struct args *), const struct args *a,
                                   MPI_Comm comm)
{
    set_handler(comm, counting_handler);
    memset(&handled, 0, sizeof handled);
    struct outcome o = {error_class(call(a)), handled.calls, "nowhere", MPI_SUCCESS};
    if (o.calls) {
        o.where = comm_label(handled.comm, comm);
        o.handler_cls = error_class(handled.code);
    }
    set_handler(comm, MPI_ERRORS_RETURN);
    return o;
}

static void describe_outcome(char *out, size_t len, int cls, const struct outcome *o)
{
    if (o->calls == 0)
        snprintf(out, len, "%s, handler not called", class_name(cls));
    else
        snprintf(out, len, "%s, handler called %d time(s) on %s with %s", class_name(cls), o->calls,
                 o->where, class_name(o->handler_cls));
}

static void run_bad_case(struct mt_state *st, const struct bad_case *bc, const struct handles *h,
                         MPI_Comm comm, const char *cname)
{
    int sendbuf[N], recvbuf[N];
    for (int i = 0; i < N; i++)
        sendbuf[i] = recvbuf[i] = i;
    struct args a = make_args(bc, h, comm, sendbuf, recvbuf);

    struct outcome want = {MPI_ERR_BUFFER, 1, comm_label(comm, comm), MPI_ERR_BUFFER};
    if (!bc->pmpi_crashes)
        want = call_watched(call_pmpi, &a, comm);

    /* Forced ring: SAMPI's own validation must reject the call. */
    sampi_comm_set_algorithm(comm, "ring");
    set_handler(comm, MPI_ERRORS_RETURN);
    int got = error_class(call_sampi(&a));
    struct outcome got_h = call_watched(call_sampi, &a, comm);

    int ok = got == want.cls && got_h.cls == want.cls && got_h.calls == want.calls &&
             strcmp(got_h.where, want.where) == 0 && got_h.handler_cls == want.handler_cls;
    char name[400], saw[160], owant[160];
    describe_outcome(saw, sizeof saw, got, &got_h);
    describe_outcome(owant, sizeof owant, want.cls, &want);
    snprintf(name, sizeof name, "comm=%s %s: %s; Open MPI: %s", cname, bc->name, saw, owant);
    if (!ok)
        mt_fail(st, "%s (class with the handler set: %s)", name, class_name(got_h.cls));
    mt_verdict(st, name, ok);
}

/* A correct call after the bad ones: nothing is left half-done, and the
 * algorithm in force (forced here with `force`, or by SAMPI_ALGORITHM when
 * `force` is NULL) still runs it. */
static void run_good_call(struct mt_state *st, MPI_Comm comm, const char *cname, const char *force,
                          const char *expect)
{
    enum { COUNT = 1000 };
    int in[COUNT], out[COUNT], rank, size, ok = 1;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    for (int i = 0; i < COUNT; i++)
        in[i] = rank + i;
    if (force)
        sampi_comm_set_algorithm(comm, force);
    int rc = MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < COUNT && rc == MPI_SUCCESS; i++)
        ok &= out[i] == size * i + size * (size - 1) / 2;
    const char *ran = sampi_comm_last_algorithm(comm);
    ok &= rc == MPI_SUCCESS && strcmp(ran, expect) == 0;
    if (!ok)
        mt_fail(st, "correct allreduce on %s: class %s, ran %s (want %s)", cname,
                class_name(error_class(rc)), ran, expect);
    char name[128];
    snprintf(name, sizeof name, "comm=%s correct allreduce after the errors (ran %s)", cname, ran);
    mt_verdict(st, name, ok);
}

static void run_bad_args(struct mt_state *st)
{
    struct handles h = {
        {MPI_INT, MPI_DATATYPE_NULL, MPI_2INT, MPI_FLOAT, MPI_DATATYPE_NULL, MPI_CHAR},
        {MPI_SUM, MPI_OP_NULL, MPI_BAND, MPI_OP_NULL, MPI_MAXLOC, MPI_MINLOC}};
    PMPI_Type_contiguous(2, MPI_INT, &h.dt[D_UNCOMMITTED]);
    PMPI_Op_create(user_sum, 1, &h.op[O_USER]);
    MPI_Comm dup;
    PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
    const struct {
        MPI_Comm comm;
        const char *name;
    } comms[] = {{MPI_COMM_WORLD, "world"}, {dup, "dup"}};

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t c = 0; c < 2; c++)
            run_bad_case(st, &cases[i], &h, comms[c].comm, comms[c].name);
    for (size_t c = 0; c < 2; c++)
        run_good_call(st, comms[c].comm, comms[c].name, "ring", "ring");

    PMPI_Type_free(&h.dt[D_UNCOMMITTED]);
    PMPI_Op_free(&h.op[O_USER]);
    PMPI_Comm_free(&dup);
}

/* ------------------------------------------------------------ fallback policy */

static void run_fallback_policy(struct mt_state *st, const char *policy)
{
    enum { COUNT = 100 };
    int in[COUNT], out[COUNT], ref[COUNT], rank;
    MPI_Op op;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Op_create(user_sum, 1, &op);
    for (int i = 0; i < COUNT; i++)
        in[i] = rank * 3 - i;
    PMPI_Allreduce(in, ref, COUNT, MPI_INT, op, MPI_COMM_WORLD);

    /* The algorithm comes from SAMPI_ALGORITHM=ring, not from the API. */
    int want_error = strcmp(policy, "error") == 0;
    set_handler(MPI_COMM_WORLD, counting_handler);
    memset(&handled, 0, sizeof handled);
    int cls = error_class(MPI_Allreduce(in, out, COUNT, MPI_INT, op, MPI_COMM_WORLD));
    int calls = handled.calls;
    set_handler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *ran = sampi_comm_last_algorithm(MPI_COMM_WORLD);

    int ok;
    char name[256];
    if (want_error) {
        ok = cls == MPI_ERR_ARG && calls == 1;
        snprintf(name, sizeof name,
                 "SAMPI_FALLBACK=error, user op under ring: class %s (want MPI_ERR_ARG), "
                 "handler called %d time(s)",
                 class_name(cls), calls);
    } else {
        ok = cls == MPI_SUCCESS && calls == 0 && memcmp(out, ref, sizeof out) == 0 &&
             strcmp(ran, "native") == 0;
        snprintf(name, sizeof name,
                 "SAMPI_FALLBACK=%s, user op under ring: class %s, ran %s, result %s", policy,
                 class_name(cls), ran, memcmp(out, ref, sizeof out) ? "wrong" : "correct");
    }
    if (!ok)
        mt_fail(st, "%s", name);
    mt_verdict(st, name, ok);
    PMPI_Op_free(&op);
    /* Predefined ops still run the algorithm SAMPI_ALGORITHM forces. */
    run_good_call(st, MPI_COMM_WORLD, "world", NULL, "ring");
}

/* ------------------------------------------------------------ timeout */

/*
 * The late rank is 1.  The call runs on its own duplicate of
 * MPI_COMM_WORLD, which is never used again: after a timeout the ranks
 * disagree about that communicator's sequence of calls.  Messages are
 * small (eager), so nobody blocks on a rendezvous with a peer that gave up.
 */
static void run_timeout(struct mt_state *st)
{
    enum { COUNT = 256, LATE_S = 6 };
    const double min_wait = 1.5, max_wait = 5.0; /* SAMPI_TIMEOUT_MS=2000 */
    int in[COUNT], out[COUNT], rank;
    MPI_Comm tcomm;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_dup(MPI_COMM_WORLD, &tcomm);
    for (int i = 0; i < COUNT; i++)
        in[i] = i;
    sampi_comm_set_algorithm(tcomm, "ring");
    MPI_Comm_set_errhandler(tcomm, counting_handler);
    memset(&handled, 0, sizeof handled);
    /* A first call opens the data path on every rank, so the timed call
     * below measures waiting for a peer, not connection set-up. */
    int warm = MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, tcomm);
    PMPI_Barrier(MPI_COMM_WORLD);

    if (rank == 1)
        sleep(LATE_S);
    double t0 = now();
    int cls = error_class(MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, tcomm));
    double waited = now() - t0;

    char name[256];
    int ok;
    if (rank == 1) {
        /* Its peers have left: success or an error are both fine, as long
         * as it does not hang. */
        ok = waited < max_wait;
        snprintf(name, sizeof name, "timeout: late rank returned after %.1f s (class %s)", waited,
                 class_name(cls));
    } else {
        ok = cls != MPI_SUCCESS && waited >= min_wait && waited < max_wait && handled.calls == 1 &&
             error_class(handled.code) == cls;
        snprintf(name, sizeof name,
                 "timeout: rank %d got class %s after %.1f s (want an error after %.1f..%.1f s, "
                 "before the late rank's %d s), handler called %d time(s)",
                 rank, class_name(cls), waited, min_wait, max_wait, LATE_S, handled.calls);
    }
    if (warm != MPI_SUCCESS) {
        ok = 0;
        mt_fail(st, "timeout: the warm-up allreduce failed (class %s)", class_name(warm));
    }
    if (!ok)
        mt_fail(st, "%s", name);
    /* Each rank's own line: what the waiting ranks saw differs from the
     * late rank's. */
    printf("%s %s\n", ok ? "PASS" : "FAIL", name);
    fflush(stdout);
    mt_verdict(st, "timeout: all ranks", ok);

    PMPI_Barrier(MPI_COMM_WORLD);
    run_good_call(st, MPI_COMM_WORLD, "world", "ring", "ring");
}

int main(int argc, char **argv)
{
    struct mt_state st;
    MPI_Init(&argc, &argv);
    mt_init(&st, "bad_args");
    MPI_Comm_create_errhandler(count_errors, &counting_handler);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    const char *policy = mt_option(argc, argv, "--fallback", NULL);
    if (policy)
        run_fallback_policy(&st, policy);
    else if (mt_has_flag(argc, argv, "--timeout"))
        run_timeout(&st);
    else
        run_bad_args(&st);

    long failed = mt_summary(&st, 0, "", "cases");
    PMPI_Errhandler_free(&counting_handler);
    MPI_Finalize();
    return mt_exit_code(failed);
}
