/*
 * argcheck.c - sampi_check_args (argcheck.h).
 *
 * Example, 3 ranks, rank 0 passes count 1000 and the others 1001: the
 * vector is (count, -count, ...); MAX gives (1001, -1000, ...), and
 * 1001 != 1000 on every rank, so every rank returns MPI_ERR_COUNT.
 */
#include "argcheck.h"
#include "comm.h"
#include "revoke.h"
#include "rollcall.h"
#include "sampi_internal.h"
#include "wait.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The check's messages on c->ctl never meet a notice or a roll call's */
_Static_assert((SAMPI_P2P_TAG(SAMPI_P2P_SUB_CHECK, 0) & 31) != SAMPI_REVOKE_TAG &&
                   (SAMPI_P2P_TAG(SAMPI_P2P_SUB_CHECK, 0) & 31) != SAMPI_ROLLCALL_TAG &&
                   SAMPI_P2P_TAG(SAMPI_P2P_SUB_BARRIER, ~0u) <= 32767,
               "the p2p tags' sub-kinds 0 and 1 are the notices' and the roll call's");

/* The cause each field's mismatch becomes (err.h); sampi_errno_to_mpi maps
 * them to the MPI error class Open MPI uses for the same kind of argument. */
static const enum sampi_err fields[SAMPI_ARGCHECK__COUNT] = {
    [SAMPI_ARGCHECK_COUNT] = SAMPI_EMISMATCH_COUNT,
    [SAMPI_ARGCHECK_DATATYPE] = SAMPI_EMISMATCH_TYPE,
    [SAMPI_ARGCHECK_OP] = SAMPI_EMISMATCH_OP,
    [SAMPI_ARGCHECK_ALGORITHM] = SAMPI_EMISMATCH_PATTERN,
    [SAMPI_ARGCHECK_SETTINGS] = SAMPI_EMISMATCH_PATTERN,
};

int sampi_argcheck_judge(const long long *out)
{
    for (int f = 0; f < SAMPI_ARGCHECK__COUNT; f++)
        if (out[2 * f] != -out[2 * f + 1])
            return -(int)fields[f];
    return 0;
}

int sampi_argcheck_post(struct sampi_comm *c, const struct sampi_coll_args *args,
                        enum sampi_algo_id algo, uint32_t settings)
{
    struct sampi_argcheck *k = &c->check;
    k->posted = k->judged = 0;
    k->verdict = 0;
    if (!sampi_cvar_int(SAMPI_CVAR_CHECK_ARGS))
        return 0;
    long long v[SAMPI_ARGCHECK__COUNT] = {
        [SAMPI_ARGCHECK_COUNT] = (long long)args->count,
        [SAMPI_ARGCHECK_DATATYPE] = (long long)args->dt.elem * 65536 + (long long)args->dt.extent,
        [SAMPI_ARGCHECK_OP] = args->op,
        [SAMPI_ARGCHECK_ALGORITHM] = algo,
        [SAMPI_ARGCHECK_SETTINGS] = (long long)settings,
    };
    long long in[2 * SAMPI_ARGCHECK__COUNT];
    for (int f = 0; f < SAMPI_ARGCHECK__COUNT; f++) {
        in[2 * f] = v[f];
        in[2 * f + 1] = -v[f];
    }
    int rc = sampi_p2p_allreduce_start(&k->x, in, 2 * SAMPI_ARGCHECK__COUNT, MPI_LONG_LONG, MPI_MAX,
                                       c->ctl, SAMPI_P2P_TAG(SAMPI_P2P_SUB_CHECK, k->seq++));
    if (rc)
        return rc == -ENOMEM ? rc : -EIO;
    k->posted = 1;
    return 0;
}

static void judge(struct sampi_argcheck *k)
{
    k->judged = 1;
    k->verdict = sampi_argcheck_judge(sampi_p2p_allreduce_result(&k->x));
}

int sampi_argcheck_poll(struct sampi_argcheck *k)
{
    if (!k->posted)
        return 0;
    if (!k->judged) {
        int rc = sampi_p2p_allreduce_test(&k->x, NULL);
        if (rc <= 0)
            return rc;
        judge(k);
    }
    return k->verdict;
}

int sampi_argcheck_pending(const struct sampi_argcheck *k)
{
    return k->posted && !k->judged;
}

int sampi_argcheck_finish(struct sampi_argcheck *k, struct sampi_waiter *w)
{
    if (!k->posted)
        return 0;
    if (!k->judged) {
        int rc = sampi_waiter_p2p(w, &k->x);
        if (rc)
            return rc;
        judge(k);
    }
    return k->verdict; /* kept until the next post: a later finish in the call says it again */
}

void sampi_argcheck_init(struct sampi_argcheck *check)
{
    *check = (struct sampi_argcheck){0};
    sampi_p2p_allreduce_init(&check->x);
}

void sampi_argcheck_release(struct sampi_argcheck *check)
{
    sampi_p2p_allreduce_release(&check->x);
}
