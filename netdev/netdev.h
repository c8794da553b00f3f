/*
 * netdev.h - SAMPI's transport vtable.
 *
 * A netdev moves bytes between the ranks of one communicator.  Algorithms never
 * talk to a transport directly: the schedule executor (coll_algos/executor.c) posts
 * tagged nonblocking sends and receives here and waits on them with a deadline.
 *
 * Backends (one file each): mpi.c (PMPI point-to-point on SAMPI's private
 * duplicate of the user's communicator, always available, built into the
 * library) and ofi.c (libfabric RDM tagged messaging), built as the module
 * sampi_netdev_ofi.so.  The library links no libfabric: a module is loaded
 * with dlopen the first time a communicator asks for its backend, found in
 * sampi_module_path or next to libsampi.so or in $(pkglibdir), and reached
 * through the one symbol it exports, its struct sampi_module (module.h), whose
 * ops table is the one below.  Loading is local, opening collective, so the
 * ranks agree that every one of them loaded it before any opens it
 * (sampi_netdev_load_agreed); when one could not, the lowest such rank says
 * why (module, paths, dlerror) and the communicator uses `mpi`.  The table of
 * backends lives in netdev.c; adding one is a new file (a module when it
 * needs a library the core should not map) plus one row there.
 *
 * Contract every backend keeps:
 *  - open() is collective over the communicator and returns the same success or
 *    failure on every rank (a backend that fails on one rank fails everywhere),
 *    so that all ranks agree on the data path.
 *  - Tags are 64-bit (see sampi_netdev_tag); a backend with fewer tag bits folds
 *    them, relying on the fact that collectives on one communicator never
 *    overlap in more than the low bits of the call sequence number.  Two
 *    receives outstanding at once from one peer have different tags (the
 *    mpi backend matches each by its tag, see mpi.c).
 *  - isend()/irecv() take any number of outstanding requests: a backend whose
 *    transport has finite queues keeps the excess itself, in posting order
 *    per direction (messages between two ranks match receives in posting
 *    order), and hands it over from wait() as room frees.
 *  - wait() blocks or backs off; it never busy-spins a shared core dry unless
 *    the user asked for busy polling.
 *  - A receive is posted with its buffer's real size; a message of another
 *    size completes it with -EBADMSG (never a write past the buffer).
 *  - Errors are negative errno values; -ETIMEDOUT when the deadline passes.
 */
#ifndef SAMPI_NETDEV_H
#define SAMPI_NETDEV_H

#include "clock.h"     /* sampi_now_ns: deadlines are on this clock */
#include "wait_mode.h" /* sampi_wait_pause: how a poll loop idles */

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

struct sampi_netdev;
struct sampi_waiter;

/* One outstanding send or receive.  The storage belongs to the caller; the
 * backend keeps its own per-request state in `impl` (an MPI_Request, or a
 * libfabric context and what ofi.c tracks beside it) and sets `done` (and
 * `status`) when it completes. */
typedef struct sampi_netdev_req {
    union {
        MPI_Request mpi;
        void *ptr[9]; /* a struct fi_context2 and one word more (ofi.c) */
    } impl;
    int done;
    int status; /* 0 or negative errno once done */
    size_t len; /* posted length */
    int is_recv;
} sampi_netdev_req_t;

struct sampi_netdev_ops {
    const char *name;
    const char *description;
    /* Collective over comm (SAMPI's private communicator, which the netdev
     * may use but does not own), every wait through w (src/base/wait.h; NULL:
     * blocking).  0; -ENODEV when it cannot open here (the caller agrees on
     * the outcome across ranks); another negative errno when a wait failed
     * (the caller revokes the communicator).  *out is NULL on failure. */
    int (*open)(MPI_Comm comm, struct sampi_waiter *w, struct sampi_netdev **out);
    void (*close)(struct sampi_netdev *nd);
    int (*isend)(struct sampi_netdev *nd, const void *buf, size_t len, int peer, uint64_t tag,
                 sampi_netdev_req_t *req);
    int (*irecv)(struct sampi_netdev *nd, void *buf, size_t len, int peer, uint64_t tag,
                 sampi_netdev_req_t *req);
    /* Drive progress until at least one request of reqs[0..n) that was not
     * done becomes done, or all are done, or deadline_ns (CLOCK_MONOTONIC) has
     * passed.  Returns 0, or -ETIMEDOUT, or another negative errno. */
    int (*wait)(struct sampi_netdev *nd, sampi_netdev_req_t *const *reqs, int n,
                int64_t deadline_ns);
    /* Abandon a request that will never complete (after a timeout). */
    void (*cancel)(struct sampi_netdev *nd, sampi_netdev_req_t *req);
};

/* Fields common to every backend; backends embed this first. */
struct sampi_netdev {
    const struct sampi_netdev_ops *ops;
    int rank;
    int size;
};

/* Tag layout, high to low: kind (2 bits), call sequence number (26 bits),
 * round (20 bits), segment (16 bits).  The kind keeps exchanges of
 * different purposes apart, whatever the ranks run: a receive of one kind
 * never matches a message of another.  Kind 3 is never sent through a
 * netdev: the mpi netdev shares SAMPI's private communicator with the
 * revocation notices, whose MPI tag has kind 3 (src/core/revoke.h). */
enum sampi_tag_kind {
    SAMPI_TAG_DATA = 0,       /* an algorithm's data */
    SAMPI_TAG_PROBE_GO = 1,   /* a link probe's go-ahead (1 byte) */
    SAMPI_TAG_PROBE_DATA = 2, /* a link probe's payload */
    SAMPI_TAG__RESERVED = 3,
};
#define SAMPI_TAG_SEG_BITS 16
/* Segments a round may have: the executor makes segments larger rather
 * than more (the mpi netdev folds the segment index into 12 tag bits). */
#define SAMPI_NETDEV_MAX_SEGMENTS 4096
#define SAMPI_TAG_ROUND_BITS      20
#define SAMPI_TAG_SEQ_BITS        26
#define SAMPI_TAG_KIND_SHIFT      (SAMPI_TAG_SEG_BITS + SAMPI_TAG_ROUND_BITS + SAMPI_TAG_SEQ_BITS)
static inline uint64_t sampi_netdev_tag_kind(enum sampi_tag_kind kind, uint64_t seq, unsigned round,
                                             unsigned seg)
{
    return ((uint64_t)kind << SAMPI_TAG_KIND_SHIFT) |
           ((seq & ((UINT64_C(1) << SAMPI_TAG_SEQ_BITS) - 1))
            << (SAMPI_TAG_SEG_BITS + SAMPI_TAG_ROUND_BITS)) |
           ((uint64_t)(round & ((1u << SAMPI_TAG_ROUND_BITS) - 1)) << SAMPI_TAG_SEG_BITS) |
           (seg & ((1u << SAMPI_TAG_SEG_BITS) - 1));
}
/* An algorithm's data message. */
static inline uint64_t sampi_netdev_tag(uint64_t seq, unsigned round, unsigned seg)
{
    return sampi_netdev_tag_kind(SAMPI_TAG_DATA, seq, round, seg);
}

/* The netdevs this build knows, NULL-terminated: `builtin` is the ops table
 * of one inside the library (mpi), `module` the file name (without .so) of
 * the module that carries one (module.h). */
struct sampi_netdev_entry {
    const char *name;
    const struct sampi_netdev_ops *builtin;
    const char *module;
};
extern const struct sampi_netdev_entry sampi_netdev_table[];

/* The backend `name` ("mpi", "ofi"), loading its module on first use.
 * Local to this process; NULL when unknown or not loadable, with one line
 * saying why in err (which may be NULL). */
const struct sampi_netdev_ops *sampi_netdev_load(const char *name, char *err, size_t errlen);

/* Collective over comm, every wait through w (NULL: blocking): load `name`
 * on every rank and agree on the outcome, before anyone calls its open
 * (which is collective too).  0 and *ops when every rank has it; -ENODEV on
 * every rank otherwise, after the lowest rank that could not load it said
 * why, naming the module, the paths tried and dlerror(), followed by
 * `fallback` (what happens instead; may be NULL), once per process; the
 * wait's negative errno when the agreement itself failed. */
int sampi_netdev_load_agreed(MPI_Comm comm, struct sampi_waiter *w, const char *name,
                             const char *fallback, const struct sampi_netdev_ops **ops);

extern const struct sampi_netdev_ops sampi_netdev_mpi_ops;

/* The data path every rank can always open (built in): where a communicator
 * goes when the one it chose cannot be opened on every rank. */
extern const struct sampi_netdev_ops *const sampi_netdev_fallback;

/* sampi_ofi_bind_base's text: "" (*base = 0: let the provider choose) or an
 * IPv4 address A.B.C.D with D in 1..254; MPI_COMM_WORLD rank r then binds
 * A.B.C.(D+r) (ofi.c).  0, or -EINVAL with a message naming the variable in
 * err. */
int sampi_ofi_bind_parse(const char *text, unsigned long *base, char *err, size_t errlen);

/* The values of sampi_netdev: sampi_netdev_names in that order. */
enum sampi_netdev_choice { SAMPI_NETDEV_AUTO, SAMPI_NETDEV_MPI, SAMPI_NETDEV_OFI };

/* What sampi_netdev=auto means for `comm` (an enum sampi_netdev_choice other
 * than auto).  Collective; the answer is the same on every rank. */
int sampi_netdev_auto_choice(MPI_Comm comm);

/* The name of the backend that the value `choice` of sampi_netdev (or of a
 * communicator's override) means for comm, auto resolved: collective when
 * choice is auto. */
const char *sampi_netdev_choice_name(MPI_Comm comm, int choice);

#endif
