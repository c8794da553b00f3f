/*
 * optireduce_plan.c - Transpose AllReduce round plan (optireduce_plan.h).
 *
 * Example, n = 4, I = 2: 2 rounds.  Rank 0 sends to 3 and 2 in round 0 and
 * to 1 in round 1; rank 1 to 0, 3 then 2.  Receiver 0 hears from 1 and 2 in
 * round 0 and from 3 in round 1: never more than I senders at once.
 */
#include "optireduce_plan.h"
#include "opti_hdr.h"

static int clamp_incast(int n, int incast)
{
    return incast < 1 ? 1 : incast > n - 1 ? n - 1 : incast;
}

int sampi_tar_rounds(int n, int incast)
{
    if (n < 2)
        return 0;
    int i = clamp_incast(n, incast);
    return (n - 1 + i - 1) / i;
}

int sampi_tar_round_dests(int n, int rank, int incast, int round, int *dest)
{
    if (n < 2 || round < 0)
        return 0;
    int I = clamp_incast(n, incast), k = 0;
    for (int m = 0; m < I; m++) {
        long step = 1 + (long)round * I + m; /* 1..n-1: never rank itself */
        if (step > n - 1)
            break;
        dest[k++] = (int)(((rank - step) % n + n) % n);
    }
    return k;
}

uint32_t sampi_tar_npkts(uint32_t nelem, uint32_t per_pkt)
{
    return per_pkt ? (uint32_t)(((uint64_t)nelem + per_pkt - 1) / per_pkt) : 0;
}

uint32_t sampi_tar_tail_pkts(uint32_t npkts, double pct)
{
    if (npkts == 0)
        return 0;
    double t = pct / 100.0 * npkts;
    uint32_t k = (uint32_t)t;
    if (k < t)
        k++;
    /* A floor of up to SAMPI_TAR_MIN_TAIL, one per 16 packets: with one
     * marked packet, the 1% of flows whose marked packet is late wait for
     * the hard bound (at 64 KiB datagrams a 4 MiB shard is 64 packets, so 1%
     * is a single one).  Short flows keep one: marking 4 of 10 packets let
     * the early timeout cut flows still arriving from a descheduled sender. */
    uint32_t floor = npkts / 16 < SAMPI_TAR_MIN_TAIL ? npkts / 16 : SAMPI_TAR_MIN_TAIL;
    if (k < floor)
        k = floor;
    return k < 1 ? 1 : k > npkts ? npkts : k;
}

unsigned sampi_tar_pkt_flags(uint32_t idx, uint32_t npkts, uint32_t tail)
{
    unsigned f = 0;
    if (idx + tail >= npkts)
        f |= SAMPI_OPTI_F_LAST_PCTL;
    if (idx + 1 == npkts)
        f |= SAMPI_OPTI_F_FIN;
    return f;
}
