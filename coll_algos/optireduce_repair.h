/*
 * optireduce_repair.h - exact repair of optireduce's stage-2 losses: every
 * rank asks each owner for just the packets of its shard it did not get, over
 * MPI (reliable), and the owner sends those floats back.  The pure part
 * (request building and validation) has no MPI and no I/O; Check tests it.
 *
 * Vocabulary: owner s holds the reduced shard s of shard_len[s] floats;
 * packet k of a shard covers floats [k per_pkt, min((k+1) per_pkt, len)).
 * A run {first, count} names packets [first, first + count) of one shard.
 */
#ifndef SAMPI_OPTIREDUCE_REPAIR_H
#define SAMPI_OPTIREDUCE_REPAIR_H

#include <mpi.h>

#include <stddef.h>
#include <stdint.h>

/* Packets [first, first + count) of one owner's shard; the wire format of a
 * request (two uint32 each, sent as MPI_UINT32_T). */
struct sampi_opti_run {
    uint32_t first, count;
};

/* Floats [off, off + len) of one owner's shard. */
struct sampi_opti_span {
    size_t off, len;
};

/* What a rank received in stage 2.  Bit seen_base[s] + k of `seen` is set
 * when packet k of owner s's shard arrived; seen_base has n + 1 entries and
 * seen_base[n] is the number of bits (optireduce.c's layout).  The own shard
 * (s == me) is complete by definition: its bits are never read. */
struct sampi_opti_repair_map {
    int n, me;
    const size_t *shard_len; /* n */
    uint32_t per_pkt;
    const uint8_t *seen;
    const size_t *seen_base; /* n + 1 */
};

/* Where the next round's request scan starts: owner `owner`, packet `pkt`;
 * {0, 0} before the first round, owner == n once everything was taken. */
struct sampi_opti_repair_cursor {
    int owner;
    uint32_t pkt;
};

/* Sizes of a whole repair from one rank's point of view (all rounds). */
struct sampi_opti_repair_plan {
    uint64_t rounds;     /* rounds this rank needs (0: nothing missing) */
    uint64_t packets;    /* packets missing */
    uint64_t floats;     /* floats missing */
    size_t round_runs;   /* most runs in one round, all owners */
    size_t round_floats; /* most floats in one round, all owners */
    size_t owner_runs;   /* most runs to one owner in one round */
    size_t owner_floats; /* most floats from one owner in one round */
};

/* 0 when the map is usable: n >= 1, 0 <= me < n, per_pkt >= 1, every other
 * owner's packets lie inside the bitmap; -EINVAL otherwise, -E2BIG when a
 * shard has more than UINT32_MAX packets. */
int sampi_opti_repair_map_check(const struct sampi_opti_repair_map *m);

/* Packets of a shard of `len` floats (0 when per_pkt is 0). */
uint64_t sampi_opti_repair_npkts(size_t len, uint32_t per_pkt);

/*
 * One round of requests: scan the missing packets from *cur in (owner,
 * packet) order and take them while the round's floats stay <= budget
 * (budget >= per_pkt, so every round takes at least one packet).  Writes
 * nruns[s] and nfloats[s] for every owner s (0 for s == me) and, when out is
 * not NULL, the runs owner after owner (owner 0's first) into out[0..cap).
 * Runs are maximal: sorted, disjoint and never adjacent.  Advances *cur.
 * Returns 0, -EINVAL (bad map or budget < per_pkt), -ENOBUFS (cap too small).
 */
int sampi_opti_repair_round(const struct sampi_opti_repair_map *m,
                            struct sampi_opti_repair_cursor *cur, size_t budget, size_t *nruns,
                            size_t *nfloats, struct sampi_opti_run *out, size_t cap);

/* All rounds at `budget`, counted without writing runs; nruns and nfloats are
 * n-entry scratch arrays.  Returns 0 or what sampi_opti_repair_round does. */
int sampi_opti_repair_plan(const struct sampi_opti_repair_map *m, size_t budget, size_t *nruns,
                           size_t *nfloats, struct sampi_opti_repair_plan *p);

/*
 * The owner's side: check a received request against its shard of `len`
 * floats and turn it into float spans.  Every run must have count >= 1, lie
 * inside the shard, and start after the previous run's end plus one (sorted,
 * disjoint, maximal, as sampi_opti_repair_round builds them).  spans (nruns
 * entries) may be NULL.  *nfloats gets the floats to send.  Returns 0 or
 * -EINVAL, in which case nothing should be sent from it.
 */
int sampi_opti_repair_serve(const struct sampi_opti_run *runs, size_t nruns, size_t len,
                            uint32_t per_pkt, struct sampi_opti_span *spans, size_t *nfloats);

struct sampi_waiter;

/*
 * The collective (every rank of comm calls it with the same shard_off,
 * shard_len and per_pkt), every exchange nonblocking and waited for through
 * wt (wait.h; NULL: without limit, like blocking calls): afterwards every
 * rank holds the owners' exact bits in every packet it had missed, so all
 * hold identical shards.  w is the working vector, shard s at
 * w + shard_off[s]; the own shard w + shard_off[me] is the reference sent to
 * the others.  *floats_repaired gets the floats this rank received.
 * Returns 0 or a negative errno: -ENOMEM (also when shard_off or shard_len
 * is NULL, so a caller whose allocation of them failed still calls in and
 * its peers learn it), -EINVAL, -E2BIG (agreed by all ranks before any data
 * moves), -EIO (an MPI call failed), the wait's negative errno (the buffers
 * of the exchange still pending are let go; the caller revokes the
 * communicator), -EINVAL after the data exchange when an owner refused a
 * request (then only the ranks concerned return it, and the refused packets
 * are left as they were).  Counts above INT_MAX are split: a round moves at
 * most INT_MAX / (2 (n - 1)) floats per requester, and the rounds repeat
 * until all is repaired (one round for any realistic vector).
 */
int sampi_opti_repair(MPI_Comm comm, struct sampi_waiter *wt, float *w, const size_t *shard_off,
                      const size_t *shard_len, uint32_t per_pkt, const uint8_t *seen,
                      const size_t *seen_base, uint64_t *floats_repaired);

/* The same with a smaller per-round budget (floats per requester; 0 = the
 * default, and never more than it): the tests use it to exercise rounds. */
int sampi_opti_repair_budget(MPI_Comm comm, struct sampi_waiter *wt, float *w,
                             const size_t *shard_off, const size_t *shard_len, uint32_t per_pkt,
                             const uint8_t *seen, const size_t *seen_base, size_t round_floats,
                             uint64_t *floats_repaired);

#endif
