/*
 * optireduce.h - what the rest of SAMPI sees of `optireduce`: its counters
 * (read by the performance variables in src/mpit/pvars.c) and its eligibility.
 */
#ifndef SAMPI_OPTIREDUCE_H
#define SAMPI_OPTIREDUCE_H

#include <stdint.h>

struct sampi_coll_args;
/* optireduce's state on one communicator: the caller's slot for
 * SAMPI_ALGO_OPTIREDUCE (NULL before optireduce first ran there). */
struct sampi_optireduce_state;

/* Per-communicator counters, cumulative unless marked live. */
enum sampi_opti_counter {
    SAMPI_OPTI_C_CALLS,       /* calls that ran over the datagram path */
    SAMPI_OPTI_C_CALIB_CALLS, /* of those, calibration calls */
    SAMPI_OPTI_C_EXPECTED1,   /* bytes expected, scatter-reduce stage */
    SAMPI_OPTI_C_EXPECTED2,   /* bytes expected, gather stage */
    SAMPI_OPTI_C_RECEIVED1,
    SAMPI_OPTI_C_RECEIVED2,
    SAMPI_OPTI_C_LOST1,
    SAMPI_OPTI_C_LOST2,
    SAMPI_OPTI_C_END1_COMPLETE, /* how stage 1 ended */
    SAMPI_OPTI_C_END1_EARLY,
    SAMPI_OPTI_C_END1_HARD,
    SAMPI_OPTI_C_END2_COMPLETE, /* how stage 2 ended */
    SAMPI_OPTI_C_END2_EARLY,
    SAMPI_OPTI_C_END2_HARD,
    SAMPI_OPTI_C_BAD_PKTS,   /* refused by the header check (all reasons) */
    SAMPI_OPTI_C_STALE_PKTS, /* of those, from an earlier call or stage */
    SAMPI_OPTI_C_DUP_PKTS,   /* duplicates */
    SAMPI_OPTI_C_EXCESS,     /* calls above sampi_optireduce_max_drop_ppm */
    SAMPI_OPTI_C_REPAIRED,   /* bytes refetched from their owners (consistency refetch) */
    SAMPI_OPTI_C_DROP_PPM,   /* live: last call's drop fraction on this rank, ppm */
    SAMPI_OPTI_C_TB_US,      /* live: last call's hard stage bound, us */
    SAMPI_OPTI_C_TA_US,      /* live: last call's agreed estimate, us */
    SAMPI_OPTI_C_INCAST,     /* live: incast for the next call */
    SAMPI_OPTI_C_PKT_FLOATS, /* live: floats per datagram on this communicator */
    SAMPI_OPTI_C__COUNT
};

/* Counter `which` of a communicator's state st (0 when st is NULL: optireduce
 * never ran there). */
uint64_t sampi_optireduce_counter(const struct sampi_optireduce_state *st,
                                  enum sampi_opti_counter which);

/* Bytes lost from each peer (both stages) into out[0..n); zeros when none. */
void sampi_optireduce_peer_lost(const struct sampi_optireduce_state *st, uint64_t *out, int n);

/* What the fault injector of st's datagram path did so far: 0, or -ENOENT
 * when optireduce has no fault injector there (or st is NULL).  For tests. */
struct sampi_fault_counts;
int sampi_optireduce_fault_counts(const struct sampi_optireduce_state *st,
                                  struct sampi_fault_counts *out);

int sampi_allreduce_optireduce(const struct sampi_coll_args *args);
int sampi_optireduce_suited(const struct sampi_coll_args *args);

#endif
