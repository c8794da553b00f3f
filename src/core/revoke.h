/*
 * revoke.h - one outcome on every rank: when SAMPI gives up on a
 * communicator (the hard limit fired, a data path failed, the ranks passed
 * different arguments), it revokes its state there on every rank, in the
 * spirit of ULFM's MPI_Comm_revoke.
 *
 * The rank that gives up sends a small notice to every other rank over the
 * communicator's private duplicate (c->ctl, a tag no other exchange uses)
 * and stops all of SAMPI's exchanges on it.  Every rank keeps one receive
 * for such notices posted from the communicator's first call on and looks at
 * it when a call starts and at least every SAMPI_WAIT_POLL_MS while it waits
 * (not at the start of a call after one that only Open MPI's allreduce ran:
 * every rank joined that one, so none had given up, and only SAMPI's own
 * exchanges give up; c->quiet):
 * a rank that waits for the one that gave up, or arrives late at a call the
 * others abandoned, learns of it without waiting out any limit.  From then
 * on every MPI_Allreduce on that communicator returns the same error at once
 * (never PMPI_Allreduce, which would pair with the others' previous call);
 * MPI_Comm_free, other communicators and MPI_Finalize keep working.
 *
 * What stays possible: a rank whose own share of the call had completed
 * before another rank gave up returns that call with a correct result (an
 * allreduce cannot complete on any rank without every rank's data); it
 * learns of the revocation at its next call.
 */
#ifndef SAMPI_REVOKE_H
#define SAMPI_REVOKE_H

#include <stddef.h>

struct sampi_comm;

/* The point-to-point tag of revocation notices on c->ctl.  The mpi netdev's
 * tags keep their kind in the two low bits and never use kind 3 (netdev.h). */
#define SAMPI_REVOKE_TAG 3

/* Post the notice receive: once c->ctl exists (at the join).  0 or -EIO. */
int sampi_revoke_arm(struct sampi_comm *c);

/* Give up on c: mark it revoked on this rank with the cause `why` (a
 * negative errno: -ETIMEDOUT, a data path error, a mismatch), log once what
 * happened and how to go on, and notify the other ranks.  Idempotent. */
void sampi_revoke(struct sampi_comm *c, int why, const char *what);

/* Look for another rank's notice (sampi_comm_poll also asks the argument
 * check and the communicator c is a part of).  0, or the negative errno
 * every call on c now returns. */
int sampi_revoke_poll(struct sampi_comm *c);

/* After c was revoked on this rank: 1 once `peer` has said that it takes
 * nothing more of c's data (its notice came: it gave up, or heard that
 * another rank did), 0 while it has not.  Does not wait. */
int sampi_revoke_released(struct sampi_comm *c, int peer);

/* The error c's calls return once revoked: the MPI error code SAMPI
 * registers for it (class MPI_ERR_OTHER, with its own error string). */
int sampi_revoked_code(void);

/* Cancel the notice receive (the state is being freed). */
void sampi_revoke_disarm(struct sampi_comm *c);

#endif
