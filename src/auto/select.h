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
 * rank: each modelled algorithm's gain on the call (its row's model,
 * algos.h).  A zeroed struct says nothing. */
struct sampi_select_hints {
    int informed; /* 0: no hint at all (learning frozen): only the algorithms that need none */
    double gain[SAMPI_ALGO__COUNT]; /* the fraction of a ring's time each would save, 0: none */
};

/* Before the size table, `auto`'s model takes the algorithm whose gain is
 * the largest, if it exceeds SAMPI_ALGO_GAIN_MARGIN (algos.h). */
/* What `auto` picks for a message of `bytes` on n ranks given the hints
 * (NULL: none). */
enum sampi_algo_id sampi_select_auto_hinted(size_t bytes, int n,
                                            const struct sampi_select_hints *h);

/* Non-zero when `algo`'s model rules it out for a call of `bytes` on n ranks
 * (auto then never measures it there); 0 for an algorithm without one. */
int sampi_select_hopeless(enum sampi_algo_id algo, size_t bytes, int n);

/* The algorithm for a call, given the setting in force (an algorithm id, or
 * SAMPI_ALGO_AUTO) and the hints (NULL: none).  Never returns
 * SAMPI_ALGO_AUTO. */
enum sampi_algo_id sampi_select(int setting, size_t bytes, int comm_size,
                                const struct sampi_select_hints *h);

#endif
