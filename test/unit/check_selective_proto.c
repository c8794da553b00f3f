/*
 * check_selective_proto.c - the selective-reduce wire protocol: every message
 * survives a round trip, and every kind of malformed input is refused with
 * its own error (truncation, bad magic, foreign version, unknown type, wrong
 * length, out-of-range fields, groups that are not a valid weighted ring).
 */
#include "selective_proto.h"
#include "suites.h"

#include <errno.h>
#include <math.h>
#include <string.h>

enum { N = 8 };

static long enc(const struct sampi_sp_msg *m, unsigned char *buf, size_t cap)
{
    return sampi_sp_encode(m, N, buf, cap);
}

START_TEST(ready_round_trip)
{
    struct sampi_sp_msg m = {.type = SAMPI_SP_READY,
                             .u.ready = {.rank = 7,
                                         .iteration = 123456789012LL,
                                         .t_compute = 0.25,
                                         .bw_gbps = 9.5,
                                         .seq = 42,
                                         .bytes = 4000000}};
    unsigned char buf[SAMPI_SP_SMALL_MAX];
    long len = enc(&m, buf, sizeof(buf));
    ck_assert_int_eq(len, 52);
    struct sampi_sp_msg d;
    memset(&d, 0, sizeof(d));
    ck_assert_int_eq(sampi_sp_decode(buf, (size_t)len, N, &d), 0);
    ck_assert_int_eq(d.type, SAMPI_SP_READY);
    ck_assert_int_eq(d.u.ready.rank, 7);
    ck_assert(d.u.ready.iteration == 123456789012LL);
    ck_assert(d.u.ready.t_compute == 0.25);
    ck_assert(d.u.ready.bw_gbps == 9.5);
    ck_assert(d.u.ready.seq == 42);
    ck_assert(d.u.ready.bytes == 4000000);
    /* one byte short or long of the size of its type */
    ck_assert_int_eq(sampi_sp_decode(buf, (size_t)len - 1, N, &d), -EBADMSG);
    ck_assert_int_eq(enc(&m, buf, 51), -ENOSPC);
}
END_TEST

START_TEST(group_round_trip)
{
    int32_t mem[3] = {1, 4, 6};
    double w[3] = {0.5, 0.25, 0.25};
    struct sampi_sp_msg m = {.type = SAMPI_SP_GROUP,
                             .u.group = {.id = 99,
                                         .kind = SAMPI_SP_KIND_PARTIAL,
                                         .iter_after = 17,
                                         .m = 3,
                                         .members = mem,
                                         .weights = w}};
    unsigned char buf[256];
    long len = enc(&m, buf, sizeof(buf));
    ck_assert_int_eq(len, (long)sampi_sp_group_size(3));
    int32_t dm[N];
    double dw[N];
    struct sampi_sp_msg d = {.u.group = {.members = dm, .weights = dw, .capacity = N}};
    ck_assert_int_eq(sampi_sp_decode(buf, (size_t)len, N, &d), 0);
    ck_assert_int_eq(d.type, SAMPI_SP_GROUP);
    ck_assert(d.u.group.id == 99);
    ck_assert_int_eq(d.u.group.m, 3);
    ck_assert(d.u.group.iter_after == 17);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(dm[i], mem[i]);
        ck_assert(dw[i] == w[i]);
    }
    /* a receiver with room for 2 only */
    d.u.group.capacity = 2;
    ck_assert_int_eq(sampi_sp_decode(buf, (size_t)len, N, &d), -ENOSPC);
    /* the same bytes in a system of 5 workers: rank 6 does not exist */
    d.u.group.capacity = N;
    ck_assert_int_eq(sampi_sp_decode(buf, (size_t)len, 5, &d), -ERANGE);
    /* a full synchronisation of the 3 workers still running out of N */
    m.u.group.kind = SAMPI_SP_KIND_FULL;
    len = enc(&m, buf, sizeof(buf));
    ck_assert_int_eq(len, (long)sampi_sp_group_size(3));
    ck_assert_int_eq(sampi_sp_decode(buf, (size_t)len, N, &d), 0);
    ck_assert_int_eq(d.u.group.kind, SAMPI_SP_KIND_FULL);
    ck_assert_int_eq(d.u.group.m, 3);
}
END_TEST

/* Groups the encoder must refuse: each one breaks one rule. */
START_TEST(group_invalid)
{
    int32_t up[2] = {1, 2}, down[2] = {2, 1}, dup[2] = {3, 3}, out[2] = {0, N};
    double half[2] = {0.5, 0.5}, bad_sum[2] = {0.5, 0.6}, neg[2] = {1.5, -0.5}, nan2[2] = {NAN, 1};
    struct {
        int32_t *mem;
        double *w;
        int m, kind;
    } cases[] = {
        {down, half, 2, SAMPI_SP_KIND_PARTIAL}, /* not ascending */
        {dup, half, 2, SAMPI_SP_KIND_PARTIAL},  /* repeated member */
        {out, half, 2, SAMPI_SP_KIND_PARTIAL},  /* rank n */
        {up, bad_sum, 2, SAMPI_SP_KIND_PARTIAL},
        {up, neg, 2, SAMPI_SP_KIND_PARTIAL},
        {up, nan2, 2, SAMPI_SP_KIND_PARTIAL},
        {up, half, 0, SAMPI_SP_KIND_PARTIAL},
        {up, half, 2, 7}, /* no such kind */
    };
    unsigned char buf[256];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sampi_sp_msg m = {.type = SAMPI_SP_GROUP,
                                 .u.group = {.id = 1,
                                             .kind = cases[i].kind,
                                             .m = cases[i].m,
                                             .members = cases[i].mem,
                                             .weights = cases[i].w}};
        ck_assert_msg(enc(&m, buf, sizeof(buf)) == -EINVAL, "case %zu accepted", i);
    }
}
END_TEST

/* Bytes from the wire are checked as strictly as the encoder's input: patch a
 * valid GROUP to carry a weight sum of 1.5 and an unsorted member list. */
START_TEST(group_patched_on_wire)
{
    int32_t mem[2] = {0, 5};
    double w[2] = {0.5, 0.5};
    struct sampi_sp_msg m = {
        .type = SAMPI_SP_GROUP,
        .u.group = {.id = 3, .kind = 0, .iter_after = 0, .m = 2, .members = mem, .weights = w}};
    unsigned char buf[128], bad[128];
    long len = enc(&m, buf, sizeof(buf));
    ck_assert_int_gt(len, 0);
    int32_t dm[N];
    double dw[N];
    struct sampi_sp_msg d = {.u.group = {.members = dm, .weights = dw, .capacity = N}};

    memcpy(bad, buf, (size_t)len);
    double one = 1.0; /* second weight 1.0: sum 1.5 */
    uint64_t bits;
    memcpy(&bits, &one, sizeof(bits));
    for (int i = 0; i < 8; i++)
        bad[len - 8 + i] = (unsigned char)(bits >> (8 * i));
    ck_assert_int_eq(sampi_sp_decode(bad, (size_t)len, N, &d), -ERANGE);

    memcpy(bad, buf, (size_t)len);
    bad[32] = 6; /* first member 6 > second member 5 */
    ck_assert_int_eq(sampi_sp_decode(bad, (size_t)len, N, &d), -ERANGE);

    memcpy(bad, buf, (size_t)len);
    bad[28] = 3; /* m = 3 but the bytes hold 2 members */
    ck_assert_int_eq(sampi_sp_decode(bad, (size_t)len, N, &d), -EPROTO);

    memcpy(bad, buf, (size_t)len);
    bad[28] = 0; /* m = 0 */
    ck_assert_int_eq(sampi_sp_decode(bad, (size_t)len, N, &d), -ERANGE);
}
END_TEST

START_TEST(header_errors)
{
    struct sampi_sp_msg m = {.type = SAMPI_SP_STOP, .u.rank = 2}, d;
    unsigned char buf[SAMPI_SP_SMALL_MAX], bad[SAMPI_SP_SMALL_MAX];
    long len = enc(&m, buf, sizeof(buf));
    ck_assert_int_eq(len, 12);
    ck_assert_int_eq(sampi_sp_decode(buf, (size_t)len, N, &d), 0);
    ck_assert_int_eq(d.u.rank, 2);

    ck_assert_int_eq(sampi_sp_decode(buf, 0, N, &d), -EBADMSG);
    ck_assert_int_eq(sampi_sp_decode(buf, 7, N, &d), -EBADMSG);
    memcpy(bad, buf, (size_t)len);
    bad[0] = 'X';
    ck_assert_int_eq(sampi_sp_decode(bad, (size_t)len, N, &d), -EBADMSG);
    memcpy(bad, buf, (size_t)len);
    bad[2] = SAMPI_SP_VERSION + 1;
    ck_assert_int_eq(sampi_sp_decode(bad, (size_t)len, N, &d), -EPROTONOSUPPORT);
    memcpy(bad, buf, (size_t)len);
    bad[3] = 0;
    ck_assert_int_eq(sampi_sp_decode(bad, (size_t)len, N, &d), -EPROTO);
    bad[3] = SAMPI_SP__TYPES;
    ck_assert_int_eq(sampi_sp_decode(bad, (size_t)len, N, &d), -EPROTO);
    /* a STOP header on a READY-sized body: length agrees with the header
     * field, not with the type */
    memcpy(bad, buf, (size_t)len);
    memset(bad + len, 0, 4);
    bad[4] = (unsigned char)(len + 4);
    ck_assert_int_eq(sampi_sp_decode(bad, (size_t)len + 4, N, &d), -EPROTO);
    /* STOP for a rank that does not exist */
    memcpy(bad, buf, (size_t)len);
    bad[8] = N;
    ck_assert_int_eq(sampi_sp_decode(bad, (size_t)len, N, &d), -ERANGE);
    ck_assert_int_eq(sampi_sp_peek_type(buf, (size_t)len), SAMPI_SP_STOP);
    ck_assert_int_eq(sampi_sp_peek_type(buf, (size_t)len - 1), -EBADMSG);
    ck_assert_str_ne(sampi_sp_strerror(-EPROTO), "unknown error");
    ck_assert_str_eq(sampi_sp_type_name(SAMPI_SP_DONE), "DONE");
    ck_assert_str_eq(sampi_sp_type_name(99), "?");
}
END_TEST

START_TEST(small_messages)
{
    unsigned char buf[SAMPI_SP_SMALL_MAX];
    struct sampi_sp_msg d;
    struct sampi_sp_msg done = {.type = SAMPI_SP_DONE,
                                .u.done = {.id = 5, .rank = 3, .seconds = 0.5, .bw_gbps = 2}};
    long len = enc(&done, buf, sizeof(buf));
    ck_assert_int_eq(len, 36);
    ck_assert_int_eq(sampi_sp_decode(buf, (size_t)len, N, &d), 0);
    ck_assert(d.u.done.id == 5 && d.u.done.rank == 3 && d.u.done.seconds == 0.5);

    struct sampi_sp_msg ping = {.type = SAMPI_SP_PING};
    ck_assert_int_eq(enc(&ping, buf, sizeof(buf)), SAMPI_SP_HEADER);
    ck_assert_int_eq(sampi_sp_decode(buf, SAMPI_SP_HEADER, N, &d), 0);
    ck_assert_int_eq(d.type, SAMPI_SP_PING);

    struct sampi_sp_msg err = {.type = SAMPI_SP_ERROR, .u.error = {.code = EALREADY, .seq = 9}};
    len = enc(&err, buf, sizeof(buf));
    ck_assert_int_eq(sampi_sp_decode(buf, (size_t)len, N, &d), 0);
    ck_assert_int_eq(d.u.error.code, EALREADY);

    /* fields out of range: the encoder refuses what the decoder would */
    struct sampi_sp_msg bad[] = {
        {.type = SAMPI_SP_READY, .u.ready = {.rank = -1, .seq = 1}},
        {.type = SAMPI_SP_READY, .u.ready = {.rank = 0, .seq = 0}},
        {.type = SAMPI_SP_READY, .u.ready = {.rank = 0, .seq = 1, .iteration = -1}},
        {.type = SAMPI_SP_READY, .u.ready = {.rank = 0, .seq = 1, .bw_gbps = -1}},
        {.type = SAMPI_SP_READY, .u.ready = {.rank = 0, .seq = 1, .t_compute = INFINITY}},
        {.type = SAMPI_SP_DONE, .u.done = {.rank = 0, .seconds = -1}},
        {.type = SAMPI_SP_STOP, .u.rank = N},
        {.type = SAMPI_SP_ERROR, .u.error = {.code = 0}},
        {.type = (enum sampi_sp_type)0},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(enc(&bad[i], buf, sizeof(buf)) == -EINVAL, "case %zu accepted", i);
}
END_TEST

Suite *sampi_selective_proto_suite(void)
{
    return UNIT_SUITE("selective_proto",
                      {.name = "messages",
                       UNIT_TESTS(ready_round_trip, group_round_trip, group_invalid,
                                  group_patched_on_wire, header_errors, small_messages)});
}
