/*
 * optireduce_plan.h - the Transpose AllReduce round plan and packetisation
 * (after OptiReduce's Transpose AllReduce).  Pure: no MPI, no clocks.
 *
 * Each stage (scatter-reduce, then gather) sends one flow to every other
 * rank.  With incast I (1 <= I <= n-1) a stage has R = ceil((n-1)/I) rounds;
 * in round k rank r sends to (r - 1 - k I - m) mod n for m = 0..I-1 (those
 * with k I + m < n-1), so each receiver has at most I senders per round and
 * I = n-1 interleaves every destination, as OptiReduce's code does.
 */
#ifndef SAMPI_OPTIREDUCE_PLAN_H
#define SAMPI_OPTIREDUCE_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* Rounds per stage; incast is clamped to [1, n-1].  0 when n < 2. */
int sampi_tar_rounds(int n, int incast);

/* The destinations of `rank` in round `round` into dest[0..I); returns how
 * many (0 past the last round). */
int sampi_tar_round_dests(int n, int rank, int incast, int round, int *dest);

/* Packets of a flow of `nelem` floats at per_pkt floats per packet. */
uint32_t sampi_tar_npkts(uint32_t nelem, uint32_t per_pkt);

#define SAMPI_TAR_MIN_TAIL 4

/* Packets at the end of a flow marked LAST_PCTL: ceil(pct/100 * npkts), at
 * least min(SAMPI_TAR_MIN_TAIL, npkts / 16) and 1 (0 for an empty flow). */
uint32_t sampi_tar_tail_pkts(uint32_t npkts, double pct);

/* The header flags for packet `idx` of a flow of npkts packets, tail of them
 * tail-marked (SAMPI_OPTI_F_LAST_PCTL, SAMPI_OPTI_F_FIN on the last one). */
unsigned sampi_tar_pkt_flags(uint32_t idx, uint32_t npkts, uint32_t tail);

#endif
