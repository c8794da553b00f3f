/*
 * select.h - which algorithm runs a call.
 *
 * `auto` is a table of rules checked in order, first match wins (Open MPI's
 * tuned rules file and UCC's score ranges work the same way).  Every input is
 * the same on all ranks (message size, communicator size, settings), so every
 * rank picks the same algorithm without talking.
 */
#ifndef SAMPI_SELECT_H
#define SAMPI_SELECT_H

#include "algos.h"
#include "config.h"

#include <stddef.h>

/* A rule: messages of at most the value of `max_bytes` (a SIZE variable;
 * SAMPI_CVAR__COUNT: no limit) from communicators of at least `min_ranks`
 * ranks use `algo`. */
struct sampi_select_rule {
    enum sampi_cvar_id max_bytes;
    int min_ranks;
    enum sampi_algo_id algo;
};

extern const struct sampi_select_rule sampi_auto_rules[];
extern const int sampi_auto_rule_count;

/* What `auto` picks for a message of `bytes` on `comm_size` ranks. */
enum sampi_algo_id sampi_select_auto(size_t bytes, int comm_size);

/* What the communicator's history says (src/auto/tracker.c), identical on every
 * rank.  A zeroed struct with straggler = degraded = -1 says nothing. */
struct sampi_select_hints {
    int straggler;         /* the rank predicted (or set) to arrive last, -1: none */
    double lateness_ns;    /* its typical delay behind the second-last arrival */
    double stragglar_gain; /* the fraction of a ring's time stragglar saved on average
                            * over the recent calls (predict.h), for this size */
    double beta;           /* the data path's ns per byte, 0: not measured yet */
    int stragglar_rounds;  /* rounds of StragglAR's matching phase on n ranks, 0: unknown */
    int degraded;          /* the rank whose link is slow, -1: none */
    double slowdown;       /* how many times slower (l) */
    int optcc_k;           /* segments optcc would run this call with, 0: it cannot */
};

/* Before the size table, `auto` asks each algorithm that exploits a known
 * straggler or degraded link whether it pays for this call, in table order;
 * `pays` returns non-zero when its model predicts a time at least
 * SAMPI_SELECT_MARGIN below the algorithm the size table would run. */
struct sampi_select_hint_rule {
    enum sampi_algo_id algo;
    int (*pays)(size_t bytes, int n, const struct sampi_select_hints *h);
};
#define SAMPI_SELECT_MARGIN 0.05

extern const struct sampi_select_hint_rule sampi_hint_rules[];
extern const int sampi_hint_rule_count;

/* What `auto` picks for a message of `bytes` on n ranks given the hints
 * (NULL: none). */
enum sampi_algo_id sampi_select_auto_hinted(size_t bytes, int n,
                                            const struct sampi_select_hints *h);

/* Non-zero when the model rules `algo` out for a call of `bytes` on n ranks
 * (auto then never measures it there); 0 for an algorithm it has no model of. */
int sampi_select_hopeless(enum sampi_algo_id algo, size_t bytes, int n);

/* The algorithm for a call, given the setting in force (an algorithm id, or
 * SAMPI_ALGO_AUTO) and the hints (NULL: none).  Never returns
 * SAMPI_ALGO_AUTO. */
enum sampi_algo_id sampi_select(int setting, size_t bytes, int comm_size,
                                const struct sampi_select_hints *h);

#endif
