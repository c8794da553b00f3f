/*
 * check_executor.c - the call object of the schedule executor
 * (coll_algos/executor.h), driven in one thread over a fake netdev that
 * joins the ranks of one process.
 *
 * The fake moves a message when a wait looks at a send or a receive whose
 * other half is posted (a rendezvous: the send completes when it is taken),
 * and may move only one per look, so that a round lands segment by segment.
 * A message of another size completes the receive with -EBADMSG, as the
 * mpi netdev does.  It never blocks, and counts the waits given a deadline
 * still ahead: a test must give none.
 *
 * What it shows: ranks whose calls are tested in turn by one thread all end
 * with the exact sum, in place or not (which a blocking executor could
 * never do: the first rank would wait for ever for the others); a peer that
 * has not started costs a test nothing; the header's worked example holds;
 * a failure or an abort settles the call so that nothing later touches
 * its buffers; and several calls in flight on one communicator, each with
 * its own scratch, end with their own sums.
 */
#include "clock.h"
#include "executor.h"
#include "kernels.h"
#include "netdev.h"
#include "schedule.h"
#include "stats.h"
#include "suites.h"
#include "wait.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAXP = 4, MAXOPS = 1024, MAXN = 16, MAXROUNDS = 2 * (MAXP - 1) };

/* ------------------------------------------------------------ fake netdev */

struct fake_op {
    int src, dst; /* the message's ends, for both halves */
    int is_recv;
    int live; /* posted and not yet matched or cancelled */
    uint64_t tag;
    size_t len;
    void *buf;
    sampi_netdev_req_t *req;
};

static struct {
    struct fake_op ops[MAXOPS];
    int nops;
    int per_look;        /* messages one wait may move, 0: any */
    int ahead;           /* waits given a deadline not yet passed */
    int writes_to[MAXP]; /* messages that landed at each rank */
} fab;

static void fab_reset(int per_look)
{
    memset(&fab, 0, sizeof(fab));
    fab.per_look = per_look;
}

static int post(struct sampi_netdev *nd, void *buf, size_t len, int peer, uint64_t tag,
                sampi_netdev_req_t *req, int is_recv)
{
    ck_assert_int_lt(fab.nops, MAXOPS);
    struct fake_op *op = &fab.ops[fab.nops++];
    *op = (struct fake_op){.src = is_recv ? peer : nd->rank,
                           .dst = is_recv ? nd->rank : peer,
                           .is_recv = is_recv,
                           .live = 1,
                           .tag = tag,
                           .len = len,
                           .buf = buf,
                           .req = req};
    *req = (sampi_netdev_req_t){.len = len, .is_recv = is_recv};
    req->impl.ptr[0] = op;
    return 0;
}

static int fake_isend(struct sampi_netdev *nd, const void *buf, size_t len, int peer, uint64_t tag,
                      sampi_netdev_req_t *req)
{
    return post(nd, (void *)buf, len, peer, tag, req, 0);
}

static int fake_irecv(struct sampi_netdev *nd, void *buf, size_t len, int peer, uint64_t tag,
                      sampi_netdev_req_t *req)
{
    return post(nd, buf, len, peer, tag, req, 1);
}

/* Move op's message when its other half is posted (the first posted, as
 * messages between two ranks match in posting order).  1 when it moved. */
static int try_match(struct fake_op *op)
{
    for (int i = 0; i < fab.nops; i++) {
        struct fake_op *o = &fab.ops[i];
        if (!o->live || o->is_recv == op->is_recv || o->src != op->src || o->dst != op->dst ||
            o->tag != op->tag)
            continue;
        struct fake_op *s = op->is_recv ? o : op, *r = op->is_recv ? op : o;
        if (s->len == r->len) {
            memcpy(r->buf, s->buf, s->len);
            fab.writes_to[r->dst]++;
        }
        r->req->status = s->len == r->len ? 0 : -EBADMSG;
        s->live = r->live = 0;
        s->req->done = r->req->done = 1;
        return 1;
    }
    return 0;
}

static int fake_wait(struct sampi_netdev *nd, sampi_netdev_req_t *const *reqs, int n,
                     int64_t deadline_ns)
{
    (void)nd;
    if (deadline_ns >= sampi_now_ns())
        fab.ahead++;
    int moved = 0, pending = 0;
    for (int i = 0; i < n; i++) {
        if (reqs[i]->done)
            continue;
        if ((!fab.per_look || moved < fab.per_look) && try_match(reqs[i]->impl.ptr[0]))
            moved++;
        else
            pending++;
    }
    return moved || !pending ? 0 : -ETIMEDOUT;
}

static void fake_cancel(struct sampi_netdev *nd, sampi_netdev_req_t *req)
{
    (void)nd;
    if (req->done)
        return;
    ((struct fake_op *)req->impl.ptr[0])->live = 0;
    req->done = 1;
    req->status = -ECANCELED;
}

static const struct sampi_netdev_ops fake_ops = {
    .name = "fake",
    .isend = fake_isend,
    .irecv = fake_irecv,
    .wait = fake_wait,
    .cancel = fake_cancel,
};

/* Live operations that rank r posted. */
static int live_of(int r)
{
    int n = 0;
    for (int i = 0; i < fab.nops; i++)
        n += fab.ops[i].live && (fab.ops[i].is_recv ? fab.ops[i].dst : fab.ops[i].src) == r;
    return n;
}

/* ------------------------------------------------------------ fake host */

struct rank {
    struct sampi_netdev nd;
    struct sampi_coll_ctx ctx;
    struct sampi_coll_args args;
    struct sampi_stats stats;
    uint64_t seq;
    void *scratch;
    int gave_up, why, released;
    struct sampi_round rounds[MAXROUNDS];
    int nrounds;
    double send[MAXN], recv[MAXN];
    struct sampi_exec x;
};

static struct rank R[MAXP];

static void host_waiter(void *owner, struct sampi_waiter *w, const char *what)
{
    (void)owner;
    sampi_waiter_init(w, what, NULL, NULL, NULL);
}

static void *host_scratch(void *owner, size_t size)
{
    struct rank *k = owner;
    free(k->scratch);
    return k->scratch = malloc(size);
}

/* The peer answers at once with its own notice, as a peer that fails the
 * same call does: the settling never has to wait out a limit. */
static void host_give_up(void *owner, int why, const char *what)
{
    (void)what;
    struct rank *k = owner;
    k->gave_up++;
    k->why = why;
    k->released = 1;
}

static int host_released(void *owner, int peer)
{
    (void)peer;
    return ((struct rank *)owner)->released;
}

static const struct sampi_coll_host host = {
    .waiter = host_waiter,
    .scratch = host_scratch,
    .give_up = host_give_up,
    .released = host_released,
};

/* Rank r of p with `count` doubles (rank r's element i is 100 r + i + 1:
 * sums stay exact), segments of seg_bytes, and its ring schedule. */
static void setup_rank(int r, int p, size_t count, int in_place, size_t seg_bytes)
{
    struct rank *k = &R[r];
    free(k->scratch);
    memset(k, 0, sizeof(*k));
    k->nd = (struct sampi_netdev){.ops = &fake_ops, .rank = r, .size = p};
    k->ctx = (struct sampi_coll_ctx){.rank = r,
                                     .size = p,
                                     .nd = &k->nd,
                                     .seq = &k->seq,
                                     .straggler = -1,
                                     .degraded = -1,
                                     .segment_bytes = seg_bytes,
                                     .stats = &k->stats,
                                     .host = &host,
                                     .owner = k};
    for (size_t i = 0; i < count; i++) {
        k->send[i] = 100.0 * r + (double)i + 1;
        k->recv[i] = in_place ? k->send[i] : -1;
    }
    k->args = (struct sampi_coll_args){
        .sendbuf = in_place ? MPI_IN_PLACE : k->send,
        .recvbuf = k->recv,
        .count = count,
        .dt = {.elem = SAMPI_ELEM_F64, .extent = sizeof(double)},
        .op = SAMPI_OP_SUM,
        .reduce = sampi_reduce_fn_get(SAMPI_OP_SUM, SAMPI_ELEM_F64),
        .ctx = &k->ctx,
    };
    k->nrounds = sampi_ring_schedule(p, r, count, k->rounds, MAXROUNDS);
    ck_assert_int_eq(k->nrounds, sampi_ring_rounds(p));
}

static void start_rank(int r)
{
    struct rank *k = &R[r];
    ck_assert_int_eq(sampi_exec_start(&k->x, &k->args, k->rounds, k->nrounds, 7), 0);
    /* DONE at once only where no round has a peer (empty blocks) */
    ck_assert(k->x.phase == SAMPI_EXEC_RUNNING || k->x.phase == SAMPI_EXEC_DONE);
}

/* Test every rank's call in turn until all are done; the looks it took. */
static int drive(int p)
{
    int done[MAXP] = {0}, finished = 0, looks = 0;
    for (int r = 0; r < p; r++)
        done[r] = R[r].x.phase == SAMPI_EXEC_DONE;
    while (finished < p && looks < 100000) {
        finished = 0;
        for (int r = p - 1; r >= 0; r--) {
            if (!done[r]) {
                ck_assert_int_eq(sampi_exec_test(&R[r].x, &done[r]), 0);
                looks++;
            }
            finished += done[r];
        }
    }
    ck_assert_int_eq(finished, p);
    return looks;
}

static void check_sums(int p, size_t count, int in_place)
{
    uint64_t sent = 0, received = 0;
    for (int r = 0; r < p; r++) {
        for (size_t i = 0; i < count; i++) {
            double want = 0;
            for (int q = 0; q < p; q++)
                want += 100.0 * q + (double)i + 1;
            ck_assert_msg(R[r].recv[i] == want, "rank %d element %zu: %g, want %g", r, i,
                          R[r].recv[i], want);
            if (!in_place) /* sendbuf is only read */
                ck_assert(R[r].send[i] == 100.0 * r + (double)i + 1);
        }
        int done = 0;
        ck_assert_int_eq(sampi_exec_test(&R[r].x, &done), 0); /* DONE stays DONE */
        ck_assert_int_eq(done, 1);
        sent += sampi_stat_get(&R[r].stats.bytes_sent);
        received += sampi_stat_get(&R[r].stats.bytes_received);
        ck_assert_int_eq(live_of(r), 0);
        ck_assert_int_eq(R[r].gave_up, 0);
    }
    /* every round's bytes counted once it completed, at both ends */
    ck_assert_uint_gt(sent, 0);
    ck_assert_uint_eq(sent, received);
}

/* n tests of rank r's call: each succeeds and says the call is not done. */
static void tests_stay_pending(int r, int n)
{
    for (int i = 0; i < n; i++) {
        int done = 1;
        ck_assert_int_eq(sampi_exec_test(&R[r].x, &done), 0);
        ck_assert_int_eq(done, 0);
    }
}

static void free_ranks(int p)
{
    for (int r = 0; r < p; r++) {
        sampi_exec_free(&R[r].x);
        ck_assert_int_eq(R[r].x.phase, SAMPI_EXEC_IDLE);
        free(R[r].scratch);
        R[r].scratch = NULL;
    }
}

/* ------------------------------------------------------------ tests */

/* _i: p = 2, 3, 4, each not in place then in place, with 7 elements
 * (blocks of 1 to 4: short and whole segments of 2) and with 2 (empty
 * blocks, so rounds without a peer); one message per look. */
START_TEST(interleaved_ranks_reduce_exactly)
{
    int p = 2 + _i % 3, in_place = (_i / 3) % 2;
    size_t count = _i < 6 ? 7 : 2;
    fab_reset(1);
    for (int r = 0; r < p; r++)
        setup_rank(r, p, count, in_place, 2 * sizeof(double));
    for (int r = 0; r < p; r++)
        start_rank(r);
    drive(p);
    check_sums(p, count, in_place);
    ck_assert_int_eq(fab.ahead, 0); /* no test ever asked the netdev to block */
    free_ranks(p);
}
END_TEST

/* Everything a look finds moves at once: test carries the call through
 * rounds whose data is already there, without being called again. */
START_TEST(one_test_runs_rounds_already_there)
{
    fab_reset(0);
    setup_rank(0, 2, 8, 0, 4 * sizeof(double));
    setup_rank(1, 2, 8, 0, 4 * sizeof(double));
    start_rank(0);
    start_rank(1);
    int looks = drive(2);
    ck_assert_int_le(looks, 4);
    check_sums(2, 8, 0);
    free_ranks(2);
}
END_TEST

/* A peer that has not started: the test comes back at once, the round
 * stays posted, nothing is reduced; once the peer starts, both finish. */
START_TEST(late_peer_costs_a_test_nothing)
{
    fab_reset(1);
    setup_rank(0, 2, 6, 0, sizeof(double));
    setup_rank(1, 2, 6, 0, sizeof(double));
    start_rank(0);
    tests_stay_pending(0, 100);
    ck_assert_int_eq(R[0].x.round, 0);
    ck_assert_int_eq(R[0].x.st.reduced[0], 0);
    ck_assert_int_eq(fab.writes_to[0], 0);
    start_rank(1);
    drive(2);
    check_sums(2, 6, 0);
    ck_assert_int_eq(fab.ahead, 0);
    free_ranks(2);
}
END_TEST

/* executor.c's example: p = 3, rank 0, 6 doubles, segments of one. */
START_TEST(worked_example)
{
    fab_reset(1);
    for (int r = 0; r < 3; r++)
        setup_rank(r, 3, 6, 0, sizeof(double));
    for (int r = 0; r < 3; r++)
        start_rank(r);
    struct sampi_exec *x = &R[0].x;
    ck_assert_int_eq(x->phase, SAMPI_EXEC_RUNNING);
    ck_assert_int_eq(x->round, 0);
    /* round 0: C (elements 4, 5) from rank 2, A (0, 1) to rank 1 */
    ck_assert_int_eq(x->st.nrecv, 2);
    ck_assert_int_eq(x->st.nsend, 2);
    ck_assert_int_eq(R[0].rounds[0].recv.offset, 4);
    int done = 1;
    ck_assert_int_eq(sampi_exec_test(x, &done), 0);
    ck_assert_int_eq(done, 0);
    ck_assert_int_eq(x->round, 0);
    ck_assert_int_eq(x->st.reduced[0], 1); /* C's segment 0 landed and was reduced */
    ck_assert_int_eq(x->st.reduced[1], 0);
    ck_assert(R[0].recv[4] == R[0].send[4] + R[2].send[4]);
    ck_assert(R[0].recv[5] == -1); /* not brought in before it is needed */
    /* until ranks 1 and 2 move on, rank 0 cannot pass round 1 */
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(sampi_exec_test(x, &done), 0);
    ck_assert_int_eq(done, 0);
    ck_assert_int_eq(x->round, 1);
    drive(3);
    check_sums(3, 6, 0);
    free_ranks(3);
}
END_TEST

/* Rank 1 runs with 8 elements where rank 0 has 6: rank 0's second segment
 * from rank 1 has the wrong size.  Rank 0's call fails with -EBADMSG while
 * its sends are posted: it gives up (its sends are let go once rank 1 says
 * it takes nothing more), every later test says the same, and rank 1's
 * further progress never writes into rank 0's buffers. */
START_TEST(failure_settles_the_round)
{
    fab_reset(1);
    setup_rank(0, 2, 6, 0, 2 * sizeof(double));
    setup_rank(1, 2, 8, 0, 2 * sizeof(double));
    start_rank(0);
    start_rank(1);
    int done = 0, rc = 0;
    for (int i = 0; i < 10 && !rc; i++)
        rc = sampi_exec_test(&R[0].x, &done);
    ck_assert_int_eq(rc, -EBADMSG);
    ck_assert_int_eq(R[0].x.phase, SAMPI_EXEC_FAILED);
    ck_assert_int_eq(R[0].gave_up, 1);
    ck_assert_int_eq(R[0].why, -EBADMSG);
    ck_assert_int_eq(live_of(0), 0);
    for (size_t i = 0; i < R[0].x.st.posted; i++)
        ck_assert(R[0].x.st.reqs[i].done);
    ck_assert_int_eq(sampi_exec_test(&R[0].x, &done), -EBADMSG);
    ck_assert_int_eq(done, 0);

    double before[MAXN];
    memcpy(before, R[0].recv, sizeof(before));
    int landed = fab.writes_to[0];
    tests_stay_pending(1, 20);
    ck_assert_int_eq(fab.writes_to[0], landed);
    ck_assert(memcmp(before, R[0].recv, sizeof(before)) == 0);

    /* rank 1 gives up too: its receives are cancelled; its sends were
     * all taken, so there is nothing to wait for and no notice to send
     * from here (the caller's error path revokes) */
    sampi_exec_abort(&R[1].x, -ECANCELED);
    ck_assert_int_eq(R[1].x.phase, SAMPI_EXEC_FAILED);
    ck_assert_int_eq(R[1].x.rc, -ECANCELED);
    ck_assert_int_eq(R[1].gave_up, 0);
    ck_assert_int_eq(live_of(1), 0);
    ck_assert_int_eq(sampi_exec_test(&R[1].x, &done), -ECANCELED);
    sampi_exec_abort(&R[1].x, -EIO); /* settled once: the first cause stays */
    ck_assert_int_eq(R[1].x.rc, -ECANCELED);
    free_ranks(2);
}
END_TEST

/* Freeing a call still running aborts it first: nothing stays posted. */
START_TEST(free_aborts_a_running_call)
{
    fab_reset(1);
    setup_rank(0, 2, 6, 1, sizeof(double));
    setup_rank(1, 2, 6, 1, sizeof(double));
    start_rank(0);
    ck_assert_int_gt(live_of(0), 0);
    sampi_exec_free(&R[0].x);
    ck_assert_int_eq(R[0].x.phase, SAMPI_EXEC_IDLE);
    ck_assert_int_eq(R[0].gave_up, 1);
    ck_assert_int_eq(R[0].why, -ECANCELED);
    ck_assert_int_eq(live_of(0), 0);
    free(R[0].scratch);
    R[0].scratch = NULL;
}
END_TEST

/* Rounds without peers are skipped, and a schedule of none is done at
 * start: recvbuf gets the rank's own value. */
START_TEST(no_rounds_is_done_at_start)
{
    fab_reset(0);
    setup_rank(0, 2, 5, 0, sizeof(double));
    struct sampi_round idle = {.send = {.peer = -1}, .recv = {.peer = -1}};
    R[0].rounds[0] = idle;
    ck_assert_int_eq(sampi_exec_start(&R[0].x, &R[0].args, R[0].rounds, 1, 1), 0);
    ck_assert_int_eq(R[0].x.phase, SAMPI_EXEC_DONE);
    int done = 0;
    ck_assert_int_eq(sampi_exec_test(&R[0].x, &done), 0);
    ck_assert_int_eq(done, 1);
    for (size_t i = 0; i < 5; i++)
        ck_assert(R[0].recv[i] == R[0].send[i]);
    ck_assert_int_eq(fab.nops, 0);
    free_ranks(1);
}
END_TEST

/* Four calls in flight at once on each of three ranks, one communicator:
 * each with its own scratch (sampi_exec_start_own) and sequence number,
 * started in the same order everywhere (MPI's rule for collectives) but
 * tested in different orders - rank 0 oldest first, rank 1 newest first,
 * rank 2 one call at a time to the end - with one message per look.  Each
 * call ends with its own exact sum; no call's data lands in another's.
 * Sharing the communicator's scratch instead, rank 0's first call ends with
 * 3309 where 309 is due: another call's segment reduced into it. */
START_TEST(several_calls_in_flight_reduce_exactly)
{
    enum { P = 3, CALLS = 4, N = 7 };
    static struct {
        double send[N], recv[N];
        struct sampi_coll_args args;
        struct sampi_exec x;
        int done;
    } call[P][CALLS];
    fab_reset(1);
    for (int r = 0; r < P; r++) {
        setup_rank(r, P, N, 0, 2 * sizeof(double));
        for (int j = 0; j < CALLS; j++) {
            for (size_t i = 0; i < N; i++) {
                call[r][j].send[i] = 100.0 * r + 1000.0 * j + (double)i + 1;
                call[r][j].recv[i] = -1;
            }
            call[r][j].args = R[r].args;
            call[r][j].args.sendbuf = call[r][j].send;
            call[r][j].args.recvbuf = call[r][j].recv;
            call[r][j].done = 0;
            ck_assert_int_eq(sampi_exec_start_own(&call[r][j].x, &call[r][j].args, R[r].rounds,
                                                  R[r].nrounds, 40 + (uint64_t)j),
                             0);
            ck_assert_ptr_nonnull(call[r][j].x.own_scratch);
        }
    }
    int left = P * CALLS;
    for (int look = 0; left > 0 && look < 100000; look++) {
        for (int r = 0; r < P; r++) {
            for (int k = 0; k < CALLS; k++) {
                int j = r == 1 ? CALLS - 1 - k : k;
                if (call[r][j].done)
                    continue;
                ck_assert_int_eq(sampi_exec_test(&call[r][j].x, &call[r][j].done), 0);
                left -= call[r][j].done;
                if (r == 2)
                    break; /* rank 2 tests only its oldest call not done */
            }
        }
    }
    ck_assert_int_eq(left, 0);
    ck_assert_int_eq(fab.ahead, 0);
    for (int r = 0; r < P; r++) {
        for (int j = 0; j < CALLS; j++) {
            for (size_t i = 0; i < N; i++) {
                double want = 0;
                for (int q = 0; q < P; q++)
                    want += 100.0 * q + 1000.0 * j + (double)i + 1;
                ck_assert_msg(call[r][j].recv[i] == want,
                              "rank %d call %d element %zu: %g, want %g", r, j, i,
                              call[r][j].recv[i], want);
            }
            sampi_exec_free(&call[r][j].x);
            ck_assert_ptr_null(call[r][j].x.own_scratch);
        }
        ck_assert_int_eq(live_of(r), 0);
        ck_assert_ptr_null(R[r].scratch); /* the communicator's buffer was never asked for */
    }
    free_ranks(P);
}
END_TEST

Suite *sampi_executor_suite(void)
{
    return UNIT_SUITE(
        "executor",
        {.name = "call object",
         UNIT_LOOPS({interleaved_ranks_reduce_exactly, 0, 12}),
         UNIT_TESTS(one_test_runs_rounds_already_there, late_peer_costs_a_test_nothing,
                    worked_example, failure_settles_the_round, free_aborts_a_running_call,
                    no_rounds_is_done_at_start, several_calls_in_flight_reduce_exactly)});
}
