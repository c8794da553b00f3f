/*
 * auto.h - what `auto` runs for one call of a communicator: the regime its
 * tracker sees (tracker.h), the exact algorithms that can run the call, the
 * alpha-beta model's favourite among them (select.h), and the measured
 * choice among those (autosel.h).  Every input is agreed across ranks, so
 * every rank runs the same algorithm (docs/design.md, 'Decisions are agreed').
 */
#ifndef SAMPI_AUTO_H
#define SAMPI_AUTO_H

#include "algos.h"
#include "autosel.h"

#include <stdint.h>

struct sampi_comm;

/* One call's decision, kept until its cost is known. */
struct sampi_auto_call {
    int active; /* the selector took the decision (else: the model alone) */
    struct sampi_autosel_input in;
    struct sampi_autosel_decision d;
};

/* The algorithm `auto` runs for call args on c; *call says whether to measure
 * it (call->d.measure) and what to tell sampi_auto_learn afterwards. */
enum sampi_algo_id sampi_auto_decide(struct sampi_comm *c, const struct sampi_coll_args *args,
                                     struct sampi_auto_call *call);

/* How many calls after `call` auto decides the same way, unmeasured, if
 * their arguments and c's state are the same (sampi_autosel_repeats); 0
 * where the selector did not take the decision. */
uint64_t sampi_auto_repeats(struct sampi_comm *c, const struct sampi_auto_call *call,
                            uint64_t **calls);

/* The measured cost (time from the last arrival to completion, agreed
 * across ranks) of a call decided by sampi_auto_decide. */
void sampi_auto_learn(struct sampi_comm *c, const struct sampi_auto_call *call, double cost_ns);

/* What the performance variables read (any thread): the algorithm auto
 * runs for calls of `bucket` in the current regime (-1: none yet), its
 * median cost, the explorations so far, the regime of the last call. */
int sampi_auto_pvar_choice(const struct sampi_comm *c, int bucket);
uint64_t sampi_auto_pvar_cost_ns(const struct sampi_comm *c, int bucket);
uint64_t sampi_auto_pvar_explorations(const struct sampi_comm *c);
int sampi_auto_pvar_regime(const struct sampi_comm *c);
/* Times auto measured again because a part of the communicator, or the
 * communicator it is a part of, changed regime (tracker.h). */
uint64_t sampi_auto_pvar_composition_changes(const struct sampi_comm *c);

/* The selector of c (NULL before its first auto call). */
const struct sampi_autosel *sampi_auto_table(const struct sampi_comm *c);

/* Log c's learned table (SAMPI_VERBOSE >= 1, when its state is freed). */
void sampi_auto_log_table(const struct sampi_comm *c);

/* c's state is being freed: log its table, keep what it learned for the
 * tuning file, free the selector. */
void sampi_auto_release(struct sampi_comm *c);

/* The tuning file (sampi_tuning_file, tuning.h): loaded once MPI is up (every
 * rank reads it; the join compares sampi_auto_tuning_hash across ranks),
 * written at MPI_Finalize by MPI_COMM_WORLD rank 0, after every state was
 * released. */
void sampi_auto_tuning_load(void);
uint64_t sampi_auto_tuning_hash(void);
void sampi_auto_tuning_save(void);

#endif
