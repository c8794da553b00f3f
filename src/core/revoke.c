/*
 * revoke.c - revocation of a communicator's SAMPI state (revoke.h).
 *
 * Example, 4 ranks, sampi_timeout_ms = 5000, rank 3 stuck in its own work at
 * call 17: ranks 0-2 hear nothing from it for 5 s, give up, each send the
 * other three a notice {cause ETIMEDOUT, rank, call 17} and return the
 * revoked error.  When rank 3 enters call 17 an hour later, its first look
 * at the notice receive finds rank 0's (or 1's, or 2's) notice and it
 * returns the same error without sending a byte; so do everybody's later
 * calls on that communicator.
 *
 * Every rank that marks the communicator revoked, whether it gave up or
 * heard that another did, sends the notice on to every other rank: it also
 * says "this rank takes nothing more of this communicator's data", which a
 * rank whose sends are still pending waits for before it returns
 * (sampi_revoke_released).  In the example, rank 0 gave up with a 256 KiB
 * segment for rank 1 still pending: rank 0 returns only once rank 1 has
 * taken it or rank 1's notice came, so nothing reads rank 0's buffer after
 * its MPI_Allreduce returned.  p ranks send p - 1 notices each, once per
 * revoked communicator.
 */
#include "revoke.h"
#include "comm.h"
#include "p2p_allreduce.h"
#include "sampi_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A notice names the communicator by its agreed id: Open MPI reuses a freed
 * communicator's context id, and a notice still in flight when its
 * communicator was freed is then delivered to the next communicator with
 * that id (seen here); it must not revoke that one. */
enum {
    NOTICE_CAUSE, /* why the first rank gave up (a positive errno) */
    NOTICE_RANK,  /* that rank */
    NOTICE_CALL,  /* and its call number */
    NOTICE_ID_LO,
    NOTICE_ID_HI,
    NOTICE_FROM, /* the rank that sent this notice */
    NOTICE_WORDS
};
_Static_assert(NOTICE_WORDS <= sizeof(((struct sampi_comm *)0)->revoke_msg) / sizeof(int),
               "c->revoke_msg must hold a notice");

/* Which peers have said they take nothing more (their notice came). */
struct sampi_release {
    unsigned char *heard; /* per rank */
    MPI_Request *rx;      /* per rank: the receive for its notice, once asked */
    int (*msg)[NOTICE_WORDS];
};

static int revoked_code = MPI_ERR_OTHER;
static pthread_once_t code_once = PTHREAD_ONCE_INIT;

static void register_code(void)
{
    int code;
    if (PMPI_Add_error_code(MPI_ERR_OTHER, &code) != MPI_SUCCESS)
        return;
    /* Open MPI keeps its own copy of the string */
    char text[] = "SAMPI revoked its state on this communicator (a peer did not answer "
                  "within sampi_timeout_ms, a data path failed, or the ranks passed "
                  "different arguments): free it and use a new communicator";
    PMPI_Add_error_string(code, text);
    revoked_code = code;
}

int sampi_revoked_code(void)
{
    pthread_once(&code_once, register_code);
    return revoked_code;
}

/* `own`: this rank's cause, whose limit is this rank's sampi_timeout_ms;
 * a cause learnt from a notice was the sender's limit, each rank's own. */
static const char *cause_text(int why, int own, char *buf, size_t len)
{
    if (why == -ETIMEDOUT && !own)
        snprintf(buf, len, "no progress within its sampi_timeout_ms");
    else if (why == -ETIMEDOUT)
        snprintf(buf, len, "no progress within sampi_timeout_ms=%lld ms",
                 sampi_cvar_int(SAMPI_CVAR_TIMEOUT_MS));
    else if (sampi_errno_is_mismatch(why))
        snprintf(buf, len, "%s", sampi_strerror(why)); /* "the ranks passed different ops" */
    else
        snprintf(buf, len, "a data path error (%s)", sampi_strerror(why));
    return buf;
}

static uint64_t notice_id(const int *msg)
{
    return (uint64_t)(uint32_t)msg[NOTICE_ID_LO] | (uint64_t)(uint32_t)msg[NOTICE_ID_HI] << 32;
}

/* The notice to every other rank (msg's cause, first rank and call; this
 * rank as its sender).  Small enough to go eagerly: each send completes
 * locally and is let go, whatever the peer is doing. */
static void notify(struct sampi_comm *c, int *msg)
{
    msg[NOTICE_ID_LO] = (int)(uint32_t)c->id;
    msg[NOTICE_ID_HI] = (int)(uint32_t)(c->id >> 32);
    msg[NOTICE_FROM] = c->rank;
    for (int r = 0; r < c->size; r++) {
        MPI_Request req;
        if (r != c->rank && PMPI_Isend(msg, NOTICE_WORDS, MPI_INT, r, SAMPI_REVOKE_TAG, c->ctl,
                                       &req) == MPI_SUCCESS)
            PMPI_Request_free(&req);
    }
}

static void release_free(struct sampi_release *rel)
{
    if (!rel)
        return;
    free(rel->heard);
    free(rel->rx);
    free(rel->msg);
    free(rel);
}

/* The release state, with what the notice receive already heard (`heard_from`,
 * -1: nothing).  The receive for any rank's notice is cancelled: from now on
 * each peer's notice is received on its own (sampi_revoke_released). */
static void release_start(struct sampi_comm *c, int heard_from)
{
    struct sampi_release *rel = calloc(1, sizeof(*rel));
    if (rel) {
        rel->heard = calloc((size_t)c->size, 1);
        rel->rx = malloc((size_t)c->size * sizeof(*rel->rx));
        rel->msg = malloc((size_t)c->size * sizeof(*rel->msg));
    }
    if (!rel || !rel->heard || !rel->rx || !rel->msg) {
        release_free(rel); /* released() then answers 1: nothing to wait for */
        rel = NULL;
    }
    for (int r = 0; rel && r < c->size; r++)
        rel->rx[r] = MPI_REQUEST_NULL;
    if (sampi_request_cancel(&c->revoke_rx) && notice_id(c->revoke_msg) == c->id)
        heard_from = c->revoke_msg[NOTICE_FROM];
    if (rel && heard_from >= 0 && heard_from < c->size)
        rel->heard[heard_from] = 1;
    c->release = rel;
}

/* `msg` the notice to pass on: its first three words are the cause. */
static void mark(struct sampi_comm *c, int why, const char *how, int *msg, int heard_from)
{
    c->revoked = why ? why : -SAMPI_EREVOKED;
    if (c->ctl != MPI_COMM_NULL) {
        release_start(c, heard_from);
        notify(c, msg);
    }
    sampi_stat_add(&c->stats.errors, 1);
    sampi_stat_add(&sampi_process_stats.errors, 1);
    sampi_stat_add(&sampi_process_stats.revocations, 1);
    char where[160];
    sampi_comm_describe(c, where, sizeof(where));
    sampi_log_warn("%s: %s; every later MPI_Allreduce on it returns MPI_ERR_OTHER at once "
                   "(free it and use a new communicator, for example MPI_Comm_dup of "
                   "MPI_COMM_WORLD, to go on)",
                   where, how);
}

void sampi_revoke(struct sampi_comm *c, int why, const char *what)
{
    if (c->revoked)
        return;
    char cause[160], how[320];
    snprintf(how, sizeof(how), "SAMPI gave up on it in %s: %s", what ? what : "a call",
             cause_text(why, 1, cause, sizeof(cause)));
    /* before the join (no ctl) nobody is listening yet: join.c tells them */
    int notice[NOTICE_WORDS] = {[NOTICE_CAUSE] = -why,
                                [NOTICE_RANK] = c->rank,
                                [NOTICE_CALL] = (int)(c->calls & 0x7fffffff)};
    mark(c, why, how, notice, -1);
}

int sampi_revoke_arm(struct sampi_comm *c)
{
    return PMPI_Irecv(c->revoke_msg, NOTICE_WORDS, MPI_INT, MPI_ANY_SOURCE, SAMPI_REVOKE_TAG,
                      c->ctl, &c->revoke_rx) == MPI_SUCCESS
               ? 0
               : -EIO;
}

int sampi_revoke_poll(struct sampi_comm *c)
{
    if (c->revoked)
        return c->revoked;
    if (c->revoke_rx == MPI_REQUEST_NULL)
        return 0;
    for (;;) {
        int flag = 0;
        if (PMPI_Test(&c->revoke_rx, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag)
            return 0;
        if (notice_id(c->revoke_msg) == c->id)
            break;
        /* another (freed) communicator's notice: not ours */
        if (sampi_revoke_arm(c))
            return 0;
    }
    int why = -c->revoke_msg[NOTICE_CAUSE];
    if (why >= 0)
        why = -SAMPI_EREVOKED;
    char cause[160], how[320];
    snprintf(how, sizeof(how), "rank %d gave up on it at its call %d: %s",
             c->revoke_msg[NOTICE_RANK], c->revoke_msg[NOTICE_CALL],
             cause_text(why, 0, cause, sizeof(cause)));
    int notice[NOTICE_WORDS];
    memcpy(notice, c->revoke_msg, sizeof(notice));
    mark(c, why, how, notice, c->revoke_msg[NOTICE_FROM]);
    return c->revoked;
}

int sampi_revoke_released(struct sampi_comm *c, int peer)
{
    struct sampi_release *rel = c->release;
    if (!rel || peer < 0 || peer >= c->size || peer == c->rank)
        return 1;
    while (!rel->heard[peer]) {
        int flag = 0;
        if (rel->rx[peer] == MPI_REQUEST_NULL &&
            PMPI_Irecv(rel->msg[peer], NOTICE_WORDS, MPI_INT, peer, SAMPI_REVOKE_TAG, c->ctl,
                       &rel->rx[peer]) != MPI_SUCCESS)
            return 1;
        if (PMPI_Test(&rel->rx[peer], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return 1;
        if (!flag)
            return 0;
        /* a freed communicator's notice (see above) is not this one's */
        rel->heard[peer] = notice_id(rel->msg[peer]) == c->id;
    }
    return 1;
}

void sampi_revoke_disarm(struct sampi_comm *c)
{
    sampi_request_cancel(&c->revoke_rx);
    struct sampi_release *rel = c->release;
    for (int r = 0; rel && r < c->size; r++)
        sampi_request_cancel(&rel->rx[r]);
    release_free(rel);
    c->release = NULL;
}
