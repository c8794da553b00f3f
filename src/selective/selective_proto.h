/*
 * selective_proto.h - the messages between selective-reduce workers and the
 * controller rank (sampi-controller), and their wire encoding.
 *
 * Pure: no MPI, no I/O, no clock.  Every message is a byte string that starts
 * with an 8-byte header {magic "SR" (2 bytes), version (1), type (1), total
 * length (4, little-endian)}; fields follow in little-endian order, doubles as
 * their IEEE-754 bit patterns.  Decoding checks the header, the exact length
 * of the type and the range of every field, so a malformed or foreign message
 * is answered with a clear error instead of being acted upon.
 *
 * The flow (SAMPI's own messages for the information the paper, "Progress and
 * Bandwidth Aware Partial Model Synchronization With Selective Reduce",
 * Sec. III-E, has flow between workers and controller):
 *   worker -> controller  READY  {rank, iteration, compute time, bandwidth, seq, bytes}
 *   controller -> worker  GROUP  {id, kind, iteration after, m, members[m], weights[m]}
 *   controller -> worker  PING   keep-alive while the worker waits in the queue
 *   worker -> controller  DONE   {id, rank, sync seconds, bandwidth}
 *   worker -> controller  STOP   {rank}: the worker finalises and reports no more
 *   controller -> worker  STOP   {rank}: acknowledged; the controller forgets the worker
 *   controller -> worker  ERROR  {code, seq}: the worker's last message was refused
 */
#ifndef SAMPI_SELECTIVE_PROTO_H
#define SAMPI_SELECTIVE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define SAMPI_SP_VERSION    1
#define SAMPI_SP_HEADER     8
#define SAMPI_SP_SMALL_MAX  64 /* longest message other than GROUP */
#define SAMPI_SP_MAX_GROUP  (1 << 20)
#define SAMPI_SP_WEIGHT_EPS 1e-6 /* tolerance on the sum of a group's weights */

enum sampi_sp_type {
    SAMPI_SP_READY = 1,
    SAMPI_SP_GROUP = 2,
    SAMPI_SP_DONE = 3,
    SAMPI_SP_STOP = 4,
    SAMPI_SP_PING = 5,
    SAMPI_SP_ERROR = 6,
    SAMPI_SP__TYPES
};

/* FULL: every worker still running (not all n once some have stopped). */
enum sampi_sp_kind { SAMPI_SP_KIND_PARTIAL = 0, SAMPI_SP_KIND_FULL = 1 };

struct sampi_sp_ready {
    int32_t rank;
    int64_t iteration; /* local iteration count after the round just finished */
    double t_compute;  /* seconds the round took; < 0: unknown */
    double bw_gbps;    /* bandwidth estimate; 0: unknown */
    uint64_t seq;      /* 1, 2, ... per worker: the controller refuses repeats and gaps */
    uint64_t bytes;    /* size of the buffer to reduce (the policy's model size v) */
};

/* members/weights point into caller storage of `capacity` entries. */
struct sampi_sp_group {
    uint64_t id;
    int32_t kind;       /* enum sampi_sp_kind */
    int64_t iter_after; /* iteration count every member adopts afterwards */
    int32_t m;          /* 1..n members, ascending ranks (the ring order) */
    int32_t *members;
    double *weights; /* each in [0, 1], summing to 1 */
    int32_t capacity;
};

struct sampi_sp_done {
    uint64_t id;
    int32_t rank;
    double seconds; /* the sync's duration on this worker */
    double bw_gbps; /* bandwidth measured during it; 0: none */
};

struct sampi_sp_error {
    int32_t code; /* a positive errno value */
    uint64_t seq; /* the refused READY's seq, 0 otherwise */
};

struct sampi_sp_msg {
    enum sampi_sp_type type;
    union {
        struct sampi_sp_ready ready;
        struct sampi_sp_group group;
        struct sampi_sp_done done;
        struct sampi_sp_error error;
        int32_t rank; /* STOP */
    } u;
};

/* Encoded size of a GROUP of m members. */
size_t sampi_sp_group_size(int m);

/* Encode msg into buf[0..cap).  Returns the length, -ENOSPC when cap is too
 * small, or -EINVAL when a field is out of range (the same checks as
 * decoding, with n the number of workers). */
long sampi_sp_encode(const struct sampi_sp_msg *msg, int n, unsigned char *buf, size_t cap);

/* Decode buf[0..len) sent in a system of n workers.  For GROUP, the caller
 * sets msg->u.group.members/weights/capacity first.  Returns 0 or:
 *   -EBADMSG          shorter than a header, bad magic, or length field wrong
 *   -EPROTONOSUPPORT  another protocol version
 *   -EPROTO           unknown type, or a length that does not fit the type
 *   -ERANGE           a field out of range (rank, counts, weights, times)
 *   -ENOSPC           a GROUP larger than the caller's capacity */
int sampi_sp_decode(const unsigned char *buf, size_t len, int n, struct sampi_sp_msg *msg);

/* The type of a message whose header is valid (magic, version, length),
 * without decoding the body; the same negative values as decoding otherwise.
 * Lets a receiver refuse a message it never expects before looking inside. */
int sampi_sp_peek_type(const unsigned char *buf, size_t len);

/* Text for a negative value returned above ("bad magic or length", ...). */
const char *sampi_sp_strerror(int neg_errno);

/* Name of a message type ("READY"), "?" for others. */
const char *sampi_sp_type_name(int type);

#endif
