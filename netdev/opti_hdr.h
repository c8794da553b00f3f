/*
 * opti_hdr.h - optireduce's datagram header: pack, parse, validate.
 *
 * Every optireduce datagram starts with this fixed 32-byte, little-endian
 * header (our own layout, with the
 * reserved word used as a per-job key so that two jobs sharing a port, or a
 * restarted job, never mix their data):
 *
 *   off size field
 *     0  2   magic 0x4F52 ('OR')
 *     2  1   version (1)
 *     3  1   flags: bit0 GATHER (stage 2), bit1 LAST_PCTL (tail of a flow),
 *            bit2 FIN (last packet of a flow), bit3 CALIB; others must be 0
 *     4  4   job key (agreed at communicator set-up)
 *     8  4   communicator id (agreed at communicator set-up)
 *    12  4   call sequence number (per communicator, identical on all ranks)
 *    16  2   source rank
 *    18  2   payload floats in this datagram
 *    20  4   element offset inside the flow
 *    24  4   elements in the whole flow (sender -> receiver, this stage)
 *    28  2   sender's stage-time estimate t_C, units of 100 us
 *    30  1   sender's incast vote
 *    31  1   sender's last observed loss, per mille (255: unknown)
 *
 * The payload that follows is `nelem` IEEE-754 binary32 values.  Pure code: no
 * I/O, no clocks, so that the parser can be unit-tested and fuzzed.  The
 * transport moves opaque bytes; nothing here trusts them.
 */
#ifndef SAMPI_OPTI_HDR_H
#define SAMPI_OPTI_HDR_H

#include <stddef.h>
#include <stdint.h>

#define SAMPI_OPTI_HDR_BYTES 32
#define SAMPI_OPTI_MAGIC     0x4F52u
#define SAMPI_OPTI_VERSION   1u

enum sampi_opti_flags {
    SAMPI_OPTI_F_GATHER = 1u << 0,
    SAMPI_OPTI_F_LAST_PCTL = 1u << 1,
    SAMPI_OPTI_F_FIN = 1u << 2,
    SAMPI_OPTI_F_CALIB = 1u << 3,
    SAMPI_OPTI_F__ALL = 0x0fu,
};

struct sampi_opti_hdr {
    uint8_t version;
    uint8_t flags;
    uint32_t job_key;
    uint32_t comm_id;
    uint32_t seq;
    uint16_t src;
    uint16_t nelem;
    uint32_t elem_off;
    uint32_t flow_nelem;
    uint16_t t_est_100us;
    uint8_t incast_want;
    uint8_t loss_pm;
};

/* Why a datagram was refused (0: accepted).  The receiver counts these. */
enum sampi_opti_verdict {
    SAMPI_OPTI_OK = 0,
    SAMPI_OPTI_TRUNCATED,    /* shorter than the header, or than header + payload */
    SAMPI_OPTI_OVERSIZED,    /* longer than header + payload */
    SAMPI_OPTI_BAD_MAGIC,    /* not an optireduce datagram */
    SAMPI_OPTI_BAD_VERSION,  /* another header version */
    SAMPI_OPTI_BAD_FLAGS,    /* reserved flag bits set */
    SAMPI_OPTI_WRONG_KEY,    /* another job */
    SAMPI_OPTI_WRONG_COMM,   /* another communicator */
    SAMPI_OPTI_STALE,        /* an earlier call (late packet) */
    SAMPI_OPTI_FUTURE,       /* a later call (this rank is behind) */
    SAMPI_OPTI_WRONG_STAGE,  /* the other stage of the armed call */
    SAMPI_OPTI_BAD_SRC,      /* source rank is this rank or not in the communicator */
    SAMPI_OPTI_BAD_FLOW,     /* flow length differs from what this rank expects */
    SAMPI_OPTI_OUT_OF_RANGE, /* offset/length outside the flow or off the packet grid */
    SAMPI_OPTI_VERDICT__COUNT
};

extern const char *const sampi_opti_verdict_names[SAMPI_OPTI_VERDICT__COUNT];

/* What the receiver has armed: anything else is refused. */
struct sampi_opti_expect {
    uint32_t job_key, comm_id, seq;
    int gather;       /* armed stage: 0 scatter-reduce, 1 gather */
    int size;         /* ranks in the communicator */
    int self;         /* this rank */
    uint32_t per_pkt; /* floats per full packet: offsets lie on this grid */
    /* flow_nelem[src]: elements this rank expects from src in the armed stage */
    const uint32_t *flow_nelem;
};

/* Write h (version and magic are filled in) into out[0..32).  Pure. */
void sampi_opti_hdr_pack(const struct sampi_opti_hdr *h, void *out);

/* Decode the header of a datagram of len bytes and check it on its own:
 * length (exactly header + 4 * nelem), magic, version, reserved flags, and
 * elem_off + nelem <= flow_nelem without overflow.  Pure; never reads
 * beyond buf[len). */
enum sampi_opti_verdict sampi_opti_hdr_parse(const void *buf, size_t len, struct sampi_opti_hdr *h);

/* Check a parsed header against the armed call: key, communicator, sequence,
 * stage, source, flow length, and the packet grid (elem_off a multiple of
 * per_pkt, nelem = min(per_pkt, flow - elem_off)), so that packet index
 * elem_off / per_pkt names each packet once. */
enum sampi_opti_verdict sampi_opti_hdr_check(const struct sampi_opti_hdr *h,
                                             const struct sampi_opti_expect *e);

/* parse then check, as the receive path does. */
enum sampi_opti_verdict sampi_opti_hdr_accept(const void *buf, size_t len,
                                              const struct sampi_opti_expect *e,
                                              struct sampi_opti_hdr *h);

#endif
