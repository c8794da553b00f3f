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

/* The algorithm for a call, given the setting in force (an algorithm id, or
 * SAMPI_ALGO_AUTO).  Never returns SAMPI_ALGO_AUTO. */
enum sampi_algo_id sampi_select(int setting, size_t bytes, int comm_size);

#endif
