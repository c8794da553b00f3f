/*
 * selective_proto_check.c - the controller rank (sampi-controller) against
 * malformed, spoofed and out-of-order reports.
 *
 *   mpirun -np 3 selective_proto_check /path/to/sampi-controller
 *
 * Not linked with SAMPI's MPI wrappers: the program plays three workers by
 * hand, spawning the controller itself and speaking the wire protocol
 * (src/selective/selective_proto.h) directly, including bytes no real worker sends.
 * Checks that each bad message gets an ERROR naming the right reason, that a
 * DONE out of turn gets no answer, and that the controller goes on serving:
 * valid reports still get their GROUP, and every worker's STOP its
 * acknowledgement.  Prints "selective_proto_check: N checks, F failed".
 */
#include "selective_client.h"
#include "selective_proto.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static MPI_Comm ctl;
static int rank, n, checks, failed;
static int32_t members[8];
static double weights[8];

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failed++;                                                                              \
            printf("selective_proto_check: [rank %d] FAIL line %d: ", rank, __LINE__);             \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            fflush(stdout);                                                                        \
        }                                                                                          \
    } while (0)

static void send_raw(const void *buf, int len)
{
    MPI_Send(buf, len, MPI_BYTE, 0, SAMPI_SEL_TAG_UP, ctl);
}

static void send_msg(const struct sampi_sp_msg *m)
{
    unsigned char buf[SAMPI_SP_SMALL_MAX];
    long len = sampi_sp_encode(m, n, buf, sizeof(buf));
    CHECK(len > 0, "encode failed");
    send_raw(buf, (int)len);
}

static struct sampi_sp_msg ready(int r, uint64_t seq)
{
    return (struct sampi_sp_msg){
        .type = SAMPI_SP_READY,
        .u.ready = {
            .rank = r, .iteration = (int64_t)seq, .t_compute = 0.01, .seq = seq, .bytes = 1000}};
}

/* The next message other than a PING within `ms`; type 0 when none came. */
static struct sampi_sp_msg next(int ms)
{
    struct sampi_sp_msg m = {0};
    unsigned char buf[1024];
    double deadline = MPI_Wtime() + ms / 1000.0;
    while (MPI_Wtime() < deadline) {
        int flag = 0, len = 0;
        MPI_Status st;
        MPI_Iprobe(0, SAMPI_SEL_TAG_DOWN, ctl, &flag, &st);
        if (!flag)
            continue;
        MPI_Get_count(&st, MPI_BYTE, &len);
        MPI_Recv(buf, len, MPI_BYTE, 0, SAMPI_SEL_TAG_DOWN, ctl, MPI_STATUS_IGNORE);
        m.u.group.members = members;
        m.u.group.weights = weights;
        m.u.group.capacity = 8;
        int rc = sampi_sp_decode(buf, (size_t)len, n, &m);
        CHECK(rc == 0, "controller sent an undecodable message: %s", sampi_sp_strerror(rc));
        if (m.type != SAMPI_SP_PING)
            return m;
    }
    m.type = 0;
    return m;
}

static void expect_error(int code, const char *what)
{
    struct sampi_sp_msg m = next(10000);
    CHECK(m.type == SAMPI_SP_ERROR && m.u.error.code == code, "%s: wanted ERROR %d, got %s %d",
          what, code, sampi_sp_type_name(m.type), m.type == SAMPI_SP_ERROR ? m.u.error.code : 0);
}

static void expect_group(int size)
{
    struct sampi_sp_msg m = next(10000);
    CHECK(m.type == SAMPI_SP_GROUP, "wanted a GROUP, got %s", sampi_sp_type_name(m.type));
    if (m.type != SAMPI_SP_GROUP)
        return;
    int me = 0;
    double sum = 0;
    for (int i = 0; i < m.u.group.m; i++) {
        me |= members[i] == rank;
        sum += weights[i];
    }
    CHECK(m.u.group.m == size && me && sum > 0.999999 && sum < 1.000001,
          "GROUP of %d (want %d), member %d, weight sum %g", m.u.group.m, size, me, sum);
}

static void phase_malformed(void)
{
    /* garbage */
    send_raw("hello, controller", 17);
    expect_error(EBADMSG, "garbage");
    /* another protocol version */
    unsigned char buf[SAMPI_SP_SMALL_MAX];
    struct sampi_sp_msg m = ready(0, 1);
    long len = sampi_sp_encode(&m, n, buf, sizeof(buf));
    buf[2] = SAMPI_SP_VERSION + 1;
    send_raw(buf, (int)len);
    expect_error(EPROTONOSUPPORT, "version");
    /* a READY cut short, its length field patched to agree */
    len = sampi_sp_encode(&m, n, buf, sizeof(buf));
    buf[4] = 20;
    send_raw(buf, 20);
    expect_error(EPROTO, "short READY");
    /* rank 0 speaking for rank 1 */
    m = ready(1, 1);
    send_msg(&m);
    expect_error(ERANGE, "spoofed READY");
    /* a gap in the sequence */
    m = ready(0, 3);
    send_msg(&m);
    expect_error(EALREADY, "READY seq 3 first");
    /* DONE while computing: logged and ignored, no answer */
    struct sampi_sp_msg d = {.type = SAMPI_SP_DONE, .u.done = {.id = 77, .rank = 0}};
    send_msg(&d);
    m = next(300);
    CHECK(m.type == 0, "DONE out of turn was answered with %s", sampi_sp_type_name(m.type));
    /* a GROUP from a worker */
    int32_t mem[1] = {0};
    double w[1] = {1};
    struct sampi_sp_msg g = {.type = SAMPI_SP_GROUP,
                             .u.group = {.id = 1, .kind = 0, .m = 1, .members = mem, .weights = w}};
    unsigned char gb[128];
    len = sampi_sp_encode(&g, n, gb, sizeof(gb));
    send_raw(gb, (int)len);
    expect_error(EPROTO, "GROUP from a worker");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2 || n != 3) {
        if (rank == 0)
            printf("usage: mpirun -np 3 selective_proto_check path/to/sampi-controller\n");
        MPI_Finalize();
        return 2;
    }
    char *args[] = {"--set", "selective_scheme=partial",   "--set", "selective_p=2",
                    "--set", "selective_timeout_ms=60000", NULL};
    int err = MPI_SUCCESS;
    MPI_Comm_spawn(argv[1], args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ctl, &err);

    if (rank == 0)
        phase_malformed();
    MPI_Barrier(MPI_COMM_WORLD);

    /* the controller still serves: ranks 0 and 1 form a group of p = 2 */
    struct sampi_sp_msg m;
    if (rank < 2) {
        m = ready(rank, 1);
        send_msg(&m);
        expect_group(2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { /* READY again while syncing */
        m = ready(0, 2);
        send_msg(&m);
        expect_error(EALREADY, "READY while syncing");
    }
    if (rank < 2) {
        struct sampi_sp_msg d = {.type = SAMPI_SP_DONE,
                                 .u.done = {.id = 0, .rank = rank, .seconds = 0.001}};
        send_msg(&d);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* rank 0's refused seq 2 was not counted: seq 2 is still its next */
    if (rank == 0 || rank == 2) {
        m = ready(rank, rank == 0 ? 2 : 1);
        send_msg(&m);
        expect_group(2);
        struct sampi_sp_msg d = {.type = SAMPI_SP_DONE,
                                 .u.done = {.id = 1, .rank = rank, .seconds = 0.001}};
        send_msg(&d);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* leaving: acknowledged once; a second STOP or a READY after it refused */
    struct sampi_sp_msg stop = {.type = SAMPI_SP_STOP, .u.rank = rank};
    if (rank == 0) {
        send_msg(&stop);
        m = next(10000);
        CHECK(m.type == SAMPI_SP_STOP, "STOP not acknowledged (got %s)",
              sampi_sp_type_name(m.type));
        send_msg(&stop);
        expect_error(EALREADY, "second STOP");
        m = ready(0, 3);
        send_msg(&m);
        expect_error(ESRCH, "READY after STOP");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank > 0) {
        send_msg(&stop);
        m = next(10000);
        CHECK(m.type == SAMPI_SP_STOP, "STOP not acknowledged (got %s)",
              sampi_sp_type_name(m.type));
    }
    MPI_Comm_free(&ctl);
    int tot[2] = {checks, failed}, sum[2];
    /* every rank exits with the verdict of all of them */
    PMPI_Allreduce(tot, sum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("selective_proto_check: %d checks, %d failed\n", sum[0], sum[1]);
    MPI_Finalize();
    return sum[1] ? 1 : 0;
}
