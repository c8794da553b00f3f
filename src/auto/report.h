/*
 * report.h - the end-of-run report's figures (sampi_report): what each
 * communicator's tracked calls said about its ranks, summed as the calls
 * go, and the report's text and JSON made from those sums.
 *
 * Pure code (no MPI, no clocks, no I/O), as predict.h: the tracker of each
 * communicator's rank 0 feeds the accumulator after each tracked call with
 * the durations every rank holds after the tracking exchange (the other
 * ranks would sum the same); pmpi_wrap/report.c keeps that rank's record
 * when the communicator's state is freed, gathers them to MPI_COMM_WORLD rank 0 at
 * MPI_Finalize and writes what sampi_report_format_text/_json make of them.
 *
 * What the figures are, from the durations (a rank's time from entering the
 * call to leaving it, by its own clock; the last to arrive has the shortest):
 *   - lateness of rank i in a call: the median duration minus dur[i], how
 *     long after the median rank it arrived (durations end when every rank
 *     has left the algorithm, tracker.h: exit times differ by one small
 *     exchange's latency, which is in it);  "late in a call": lateness >= SAMPI_REPORT_LATE_NS;
 *   - last in a call: the tracker's rule (predict.h): the shortest duration,
 *     when the gap to the second shortest is at least SAMPI_LATE_THRESHOLD_NS;
 *   - time waited: dur[i] - min(dur), the time rank i spent in the call
 *     before the last rank arrived; its sum over ranks and calls is the time
 *     lost waiting for the last arrival.
 * Memory is fixed per rank: a log-scale histogram of its lateness in the
 * calls it was late, and SAMPI_REPORT_WINDOWS sums over windows of calls
 * that merge pairwise when the run outgrows them.
 */
#ifndef SAMPI_REPORT_H
#define SAMPI_REPORT_H

#include "algos.h"
#include "autosel.h"
#include "stats.h"

#include <stddef.h>
#include <stdint.h>

#define SAMPI_REPORT_WINDOWS 32
/* lateness histogram: 8 buckets per octave from 100 us (bucket 0: below
 * 100 us x 2^(1/8)) up to about 100 s; a quantile is its bucket's middle,
 * within 4.4% of the value */
#define SAMPI_REPORT_HIST_PER_OCTAVE 8
#define SAMPI_REPORT_HIST            160
#define SAMPI_REPORT_HIST_BASE_NS    100000.0
/* A rank is listed as late when it arrived last (the tracker's rule) in at
 * least SAMPI_REPORT_LAST_SHARE of the tracked calls, or when it arrived at
 * least SAMPI_REPORT_LATE_NS after the median rank in at least
 * SAMPI_REPORT_LATE_SHARE of them (the ranks of a late node take turns at
 * being last, often by less than the tracker's threshold); in both cases in
 * at least SAMPI_REPORT_LATE_MIN calls.  The second share is high because a
 * rank descheduled for a few milliseconds on a busy host is late in a few
 * percent of the calls without being a straggler. */
#define SAMPI_REPORT_LATE_NS    1000000.0
#define SAMPI_REPORT_LAST_SHARE 0.05
#define SAMPI_REPORT_LATE_SHARE 0.25
#define SAMPI_REPORT_LATE_MIN   3
/* ... and by the second route only with a median lateness of at least this
 * share of the largest median among the ranks that meet either share (the
 * straggler's): a rank of a late node is as late as the node, while a rank
 * a busy host descheduled for 2 ms in a third of the calls, beside a
 * straggler 50 ms late, is not listed with it. */
#define SAMPI_REPORT_LATE_RELATIVE 0.5
/* auto's cells kept per communicator (bucket x regime) */
#define SAMPI_REPORT_CELLS (SAMPI_AUTOSEL_BUCKETS * SAMPI_REGIME__COUNT)

/* One rank of a communicator, as every rank of it sees it. */
struct sampi_report_rank {
    uint64_t last_calls; /* tracked calls it arrived last in (the tracker's rule) */
    uint64_t late_calls; /* tracked calls it was late in (>= SAMPI_REPORT_LATE_NS) */
    double late_sum_ns;  /* its lateness summed over the calls it was late in */
    double late_max_ns;  /* its largest lateness */
    double waited_ns;    /* its time in tracked calls before their last arrival */
    double caused_ns;    /* in the calls it arrived last: the others' time before it came */
    double inside_ns;    /* its time in tracked calls */
    double window_ns[SAMPI_REPORT_WINDOWS]; /* lateness (>= 0) summed per window of calls */
    uint32_t hist[SAMPI_REPORT_HIST];       /* lateness of its late calls */
};

/* A rank whose link the detector found degraded (detect.h), at some probe. */
#define SAMPI_REPORT_DEGRADED 8 /* ranks kept; later ones are left out */
struct sampi_report_degraded {
    int rank;
    uint32_t probes;     /* probes after which it stood degraded */
    double max_slowdown; /* the largest slowdown the detector gave it */
};

/* The sums that are not per rank (plain data: packed as they are). */
struct sampi_report_totals {
    int n;                                        /* ranks */
    uint64_t tracked;                             /* tracked calls noted */
    uint64_t with_last;                           /* of them, with a rank notably last */
    uint64_t span;                                /* tracked calls per window */
    uint64_t window_calls[SAMPI_REPORT_WINDOWS];  /* calls in each window */
    double lost_ns;                               /* time lost waiting, all ranks */
    uint64_t bucket_calls[SAMPI_AUTOSEL_BUCKETS]; /* tracked calls by size bucket */
    double bucket_bytes[SAMPI_AUTOSEL_BUCKETS];   /* their bytes (per rank's vector) */
    int ndegraded;
    struct sampi_report_degraded degraded[SAMPI_REPORT_DEGRADED];
};

struct sampi_report_acc {
    struct sampi_report_totals tot;
    struct sampi_report_rank *rank; /* n */
    double *scratch;                /* n, for the median */
};

/* 0, or -1 out of memory (acc is then empty and notes nothing). */
int sampi_report_acc_init(struct sampi_report_acc *acc, int n);
void sampi_report_acc_free(struct sampi_report_acc *acc);
/* One tracked call of `bytes` bytes: dur[0..n) as the tracking exchange
 * gave them (a negative one voids the call: nothing noted). */
void sampi_report_acc_note(struct sampi_report_acc *acc, const double *dur, size_t bytes);

/* The median of v[0..n) (n >= 1; the mean of the two middle values when n
 * is even), reordering v: linear on average. */
double sampi_report_median(double *v, int n);

/* After a link probe: `rank`'s link stands degraded, `slowdown` times slower. */
void sampi_report_acc_degraded(struct sampi_report_acc *acc, int rank, double slowdown);

/* The histogram's bucket of a lateness, and a bucket's middle (geometric). */
int sampi_report_hist_bucket(double ns);
double sampi_report_hist_value(int bucket);
/* The q-quantile (0 < q <= 1) of the values in hist (the smallest bucket
 * holding at least ceil(q * count) of them), no more than max_ns; 0 when
 * the histogram is empty. */
double sampi_report_hist_quantile(const uint32_t *hist, double max_ns, double q);

/* Whether a rank last in last_calls and late in late_calls of `tracked`
 * calls is listed. */
int sampi_report_is_late(uint64_t last_calls, uint64_t late_calls, uint64_t tracked,
                         double median_ns, double top_median_ns);

/* auto's view of one cell (a size bucket in a regime) at the end. */
struct sampi_report_cell {
    int bucket, regime;
    uint64_t calls;     /* calls decided in the cell */
    int choice;         /* its winner at the end, -1 none */
    double choice_ns;   /* the winner's median measured cost */
    int native_samples; /* native's measured costs held */
    double native_ns;   /* their median (0: none) */
};

/* One communicator's record, from its rank 0. */
struct sampi_report_comm {
    struct {
        uint64_t label;
        int size;
        int ranks_per_node; /* emulated nodes (sampi_hier_ranks_per_node), 0: the hosts */
        uint64_t calls[SAMPI_STATS_ALGOS_MAX]; /* by the algorithm that ran */
        uint64_t nb_calls;                     /* of calls[], nonblocking ones */
        int degraded; /* the degraded rank at the end, -1 none (tot.degraded: all seen) */
        double slowdown;
        int ncells;
        struct sampi_report_cell cell[SAMPI_REPORT_CELLS];
        struct sampi_report_totals tot; /* tot.n == 0: nothing tracked */
    } h;
    struct sampi_report_rank *rank; /* tot.n, or NULL */
    int *world_rank;                /* size */
};

/* Fill rec's cells from auto's table (s may be NULL). */
void sampi_report_cells_from(const struct sampi_autosel *s, struct sampi_report_comm *rec);

/* A record as bytes and back (the same library on every rank).
 * sampi_report_pack: the size written, or needed when out is NULL.
 * sampi_report_unpack: the bytes used, 0 when they do not make a record;
 * the record's arrays point into buf. */
size_t sampi_report_pack(const struct sampi_report_comm *rec, void *out);
size_t sampi_report_unpack(const void *buf, size_t len, struct sampi_report_comm *rec);

/* The run, as MPI_COMM_WORLD rank 0 gathered it. */
struct sampi_report_run {
    int ranks;
    const char *const *host; /* per world rank */
    const char *mpi_version;
    const char *const *var_names; /* the variables not at their defaults */
    const char *const *var_values;
    int nvars;
};

/* A growing text. */
struct sampi_report_buf {
    char *p;
    size_t len, cap;
    int failed; /* out of memory: p holds what fitted */
};
void sampi_report_printf(struct sampi_report_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s as a JSON string, quotes included. */
void sampi_report_json_string(struct sampi_report_buf *b, const char *s);
void sampi_report_buf_free(struct sampi_report_buf *b);

/* The report. */
void sampi_report_format_text(struct sampi_report_buf *b, const struct sampi_report_run *run,
                              const struct sampi_report_comm *comms, int ncomms);
void sampi_report_format_json(struct sampi_report_buf *b, const struct sampi_report_run *run,
                              const struct sampi_report_comm *comms, int ncomms);

#endif
