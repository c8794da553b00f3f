/*
 * partial_ring.c - ring allreduce among a subset of a communicator's ranks,
 * for selective reduce's groups.
 *
 * What:     the `ring` schedule (ring.c) built for the m members of a group and
 *           mapped onto their ranks in the communicator, run by the schedule
 *           executor on the communicator's already open netdev.  No
 *           communicator is created per group, and several groups run at
 *           once: each rank is in at most one group at a time, and a group's
 *           messages carry the controller's group id in the tag's sequence
 *           field (with bit 27 set, above any count of exact calls a run
 *           makes), so they can never match another group's or an exact
 *           call's messages.
 * Cost:     2(m-1) alpha + 2 (m-1)/m n beta + (m-1)/m n gamma for a group of m,
 *           bounded by the slowest member's link: the reason Selective Reduce
 *           groups workers by bandwidth.
 * Exactness: within the group as for `ring`: every element is reduced at one
 *           member, then copied, so all members end with identical bits.
 *
 * Example, members {1, 4, 6} of an 8-rank communicator: ring positions 0, 1, 2
 * are ranks 1, 4, 6; position 0's "next" is rank 4 and its "previous" rank 6.
 * Ranks 0, 2, 3, 5, 7 are not involved and may be in other groups meanwhile.
 */
#include "partial_ring.h"
#include "executor.h"
#include "schedule.h"

#include <errno.h>
#include <stdlib.h>

/* Bit 27 of the sequence number marks group traffic (the tag keeps 28 bits of
 * it above the round and segment fields). */
#define GROUP_SEQ_BIT (UINT64_C(1) << 27)

uint64_t sampi_partial_ring_seq(uint64_t group_id)
{
    return GROUP_SEQ_BIT | (group_id & (GROUP_SEQ_BIT - 1));
}

int sampi_partial_ring(const struct sampi_coll_args *args, const int *members, int m,
                       uint64_t group_id)
{
    const struct sampi_coll_ctx *x = args->ctx;
    int me = -1, rc = 0;
    for (int i = 0; i < m; i++)
        if (members[i] == x->rank)
            me = i;
    if (me < 0 || !x->nd)
        return -EINVAL;
    if (m == 1)
        return 0; /* a group of one: nothing to exchange */

    int max = sampi_ring_rounds(m);
    struct sampi_round *rounds = malloc((size_t)max * sizeof(*rounds));
    if (!rounds)
        return -ENOMEM;
    int n = sampi_ring_schedule(m, me, args->count, rounds, max);
    if (n < 0) {
        rc = n;
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        if (rounds[i].send.peer >= 0)
            rounds[i].send.peer = members[rounds[i].send.peer];
        if (rounds[i].recv.peer >= 0)
            rounds[i].recv.peer = members[rounds[i].recv.peer];
    }
    /* Not the context's seq: it counts this rank's calls and so differs between
     * members; the group's id is their agreed number. */
    rc = sampi_execute_rounds_seq(args, rounds, n, sampi_partial_ring_seq(group_id));
fail:
    free(rounds);
    return rc;
}
