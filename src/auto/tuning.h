/*
 * tuning.h - the tuning file: what `auto` learned (autosel.h), kept between
 * runs so that a later run starts where this one ended.
 *
 * The table holds one entry per (communicator size, message-size bucket,
 * regime): the algorithm the selector converged on and its median cost, the
 * runner-up and its median, and how many measured calls stand behind it.
 * The pure part (parse, format, put, seed, collect, hashes) uses no MPI, no
 * files and no clocks, so Check tests it exhaustively; load and save are a
 * thin layer of file I/O on top.
 *
 * THE FORMAT (format 1), one line each, fields separated by spaces or tabs:
 *
 *   # SAMPI tuning file, format 1
 *   layout 9f3a21c07b5e11d2   # the machine/job layout it was learned on
 *   # ranks  bytes     regime     algorithm  cost_us   next    next_cost_us  samples
 *   4        1048576   none       rhd        812.4     ring    870.2         37
 *   4        1048576   straggler  stragglar  905.0     ring    1350.0        12
 *   8        65536     none       native     41.5      -       -             3
 *
 *   - `#` starts a comment that runs to the end of the line; blank lines and
 *     comments are ignored (so is a trailing carriage return).
 *   - `layout HEX`, at most once: the layout signature (sampi_tuning_layout,
 *     1 to 16 hexadecimal digits) of the job the table was learned in.  A
 *     file with another layout is ignored when loaded; a file without a
 *     layout line (written by hand) applies to any layout.
 *   - An entry has 8 fields:
 *       ranks         communicator size, 1 to INT_MAX;
 *       bytes         any byte count from 1 to 2^47; it stands for its
 *                     bucket ceil(log2(bytes)) (sampi_autosel_bucket), that
 *                     is calls of (2^(b-1), 2^b] bytes, and is written back
 *                     as 2^b (65536 and 40000 both mean bucket 16);
 *       regime        none | straggler | degraded (sampi_regime_names);
 *       algorithm     an exact algorithm auto may choose: native, ring, rhd,
 *                     stragglar, optcc (never auto, never optireduce);
 *       cost_us       its median cost in microseconds, a decimal number
 *                     (digits, optionally a point and more digits: no sign,
 *                     no exponent, always a point whatever the locale),
 *                     below 10^12;
 *       next          the runner-up, or `-` when there is none;
 *       next_cost_us  its median, `-` exactly when next is `-`;
 *       samples       the measured calls behind the entry, a whole number.
 *   - Two lines with the same (ranks, bytes' bucket, regime): the later line
 *     wins, so an entry appended by hand overrides one written before it.
 *   - Costs are written with one decimal (0.1 us), so a table read back
 *     differs from the one written by at most 0.05 us per cost.
 *
 * Using it (the library's part, not done here): when the library starts,
 * sampi_tuning_load with this job's sampi_tuning_layout_here(); each new
 * communicator's selector gets sampi_tuning_seed for its size; at
 * MPI_Finalize, MPI_COMM_WORLD rank 0 adds each live selector with
 * sampi_tuning_collect, sets the table's layout, and calls sampi_tuning_save.
 * Every rank loads the file on its own, so the library compares
 * sampi_tuning_hash across ranks before seeding (docs/design.md, 'Decisions are agreed': a seeded
 * choice is a decision, and ranks that read different files would disagree).
 */
#ifndef SAMPI_TUNING_H
#define SAMPI_TUNING_H

#include "autosel.h"

#include <stddef.h>
#include <stdint.h>

#define SAMPI_TUNING_FORMAT 1
/* Largest cost a file may hold (microseconds, exclusive): 11 days a call. */
#define SAMPI_TUNING_COST_MAX_US 1e12

struct sampi_tuning_entry {
    int ranks;                /* communicator size */
    int bucket;               /* sampi_autosel_bucket of the calls' bytes */
    enum sampi_regime regime; /* none, straggler, degraded */
    int algo;                 /* an algorithm id with SAMPI_CAP_AUTO */
    double cost_ns;           /* its median cost */
    int next;                 /* the runner-up's id with SAMPI_CAP_AUTO, or -1 */
    double next_ns;           /* its median (ignored, stored as 0, when next is -1) */
    uint64_t samples;         /* measured calls behind the entry */
};

/* e is kept sorted by (ranks, bucket, regime), one entry per key: change it
 * only through sampi_tuning_put and sampi_tuning_parse. */
struct sampi_tuning {
    uint64_t layout; /* the layout line, when has_layout */
    int has_layout;
    struct sampi_tuning_entry *e;
    size_t n, cap;
};

/* Every function below takes an initialised table. */
void sampi_tuning_init(struct sampi_tuning *t);
/* Frees the entries and leaves t empty (initialised). */
void sampi_tuning_free(struct sampi_tuning *t);

/* Replace t's content with the table in `text` (NUL-terminated).  0, or
 * -EINVAL with one line in err naming the line number and what is wrong
 * (-ENOMEM without a line number); on any error t is left empty. */
int sampi_tuning_parse(const char *text, struct sampi_tuning *t, char *err, size_t errlen);

/* The table as text in the format above, entries sorted by ranks, bucket,
 * regime; *text is malloc'd.  0, -ENOMEM, or -EINVAL for an entry that
 * sampi_tuning_put would refuse. */
int sampi_tuning_format(const struct sampi_tuning *t, char **text);

/* Insert e, or replace the entry of its key: when both exist, the one with
 * more samples stays (on a tie, e), so that adding every communicator of one
 * size keeps the best-measured cell.  0; -EINVAL when e is not a valid entry
 * (ranks < 1, bucket or regime out of range, algo or next not an algorithm
 * auto may choose, next == algo, a cost negative, not finite or too large);
 * -ENOMEM. */
int sampi_tuning_put(struct sampi_tuning *t, const struct sampi_tuning_entry *e);

/* The entry of a key, or NULL. */
const struct sampi_tuning_entry *sampi_tuning_get(const struct sampi_tuning *t, int ranks,
                                                  int bucket, enum sampi_regime regime);

/* The layout signature: FNV-1a (64 bits) of the text
 * "world=W local=L cores=C cpu=MODEL" (cpu_model NULL counts as "").  A
 * different machine, or the same job spread differently, learns different
 * costs, so a file is only trusted on the layout it was learned on. */
uint64_t sampi_tuning_layout(int world_size, int local_size, const char *cpu_model, int cores);

/* The facts behind a layout, as this process sees them without communicating
 * (every rank computes them alone): world size and ranks on this host from
 * Open MPI's launcher (OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE; 0
 * when unset or not a number), the first "model name" of cpuinfo (blanks
 * around it trimmed; "" when there is none, as on some non-x86 kernels) and
 * the online cores (sysconf(_SC_NPROCESSORS_ONLN)).  cpuinfo NULL means
 * /proc/cpuinfo (tests pass their own file). */
struct sampi_tuning_facts {
    int world_size, local_size, cores;
    char cpu_model[128];
};
void sampi_tuning_facts(struct sampi_tuning_facts *f, const char *cpuinfo);
/* sampi_tuning_layout of sampi_tuning_facts(NULL). */
uint64_t sampi_tuning_layout_here(void);

/* Seed a selector of a communicator of `ranks` ranks with the table's
 * entries of that size (sampi_autosel_seed: converged on the entry's
 * algorithm at its cost, first re-check after SAMPI_AUTOSEL_RECHECK_MIN
 * calls, so that a machine that changed since is noticed early).  Returns
 * how many cells were seeded, or a negative errno. */
int sampi_tuning_seed(const struct sampi_tuning *t, int ranks, struct sampi_autosel *s);

/* Add a selector's converged cells (sampi_autosel_ranking) as entries of
 * size `ranks`, samples = the cell's measured calls, through
 * sampi_tuning_put.  Cells exploring, empty, or never measured (seeded and
 * not measured since: the table they came from still holds them) add
 * nothing.  An entry that cannot be stored (no memory) is skipped: the file
 * is an optimisation, the run does not depend on it. */
void sampi_tuning_collect(struct sampi_tuning *t, int ranks, const struct sampi_autosel *s);

/* A hash of the entries as they would be written (costs to 0.1 us), so that
 * a table and the same table read back from its file hash alike.  The layout
 * is not part of it: two tables that seed alike hash alike. */
uint64_t sampi_tuning_hash(const struct sampi_tuning *t);

/* Read the file at `path` into t (emptied first) for a job of layout
 * `layout`.  0: loaded, or no such file (t empty: the first run creates
 * it).  Otherwise t is left empty, exactly one warning line went through
 * sampi_log_warn naming the file, and the run learns from scratch:
 * -ESTALE the file has another layout (the warning names both), -EINVAL the
 * file is malformed (the warning names the line), another negative errno
 * when it cannot be read.  A caller may leave a malformed file alone rather
 * than overwrite what a user wrote by hand. */
int sampi_tuning_load(const char *path, uint64_t layout, struct sampi_tuning *t);

/* Write t to `path` atomically: the text goes to a temporary file beside it
 * ("<path>.tmp.<host>.<pid>", unique so that two jobs finishing at once
 * never write into one file), is flushed to disk, then renamed over path;
 * a reader sees the old file or the new one, never a part.  0, or a
 * negative errno after one warning line naming the file (no temporary file
 * is left behind). */
int sampi_tuning_save(const char *path, const struct sampi_tuning *t);

/* Whether a file may be written beside `path` (its name with a suffix):
 * path is a regular file, in a directory this process owns and may write.
 * Never beside a device, a FIFO or a directory (/dev/null.new), nor in a
 * directory of somebody else's. */
int sampi_tuning_may_write_beside(const char *path);

#endif
