#!/usr/bin/env bash
# benchmarks/devbench/nb16.sh - a devbench plan (../shared/devbench/README.md) for nonblocking
# allreduce on the 16-core remote (sampi(7) NONBLOCKING):
#   nb-pe2.json   8 ranks, each bound to 2 cores (--map-by slot:PE=2: a free PU per rank, so
#                 auto runs progress threads): sampi_bench --nonblocking (post, compute about
#                 the call's own time, wait; pure communication, overall time and overlap %),
#                 Open MPI's own (pmpi) against SAMPI's ring and auto, 1, 16 and 64 MiB;
#   nb-late.json  the same layout, rank 7 late by 20 ms, every rank computing 25 ms after its
#                 post, 16 MiB: the on-time ranks' time from the end of their compute to
#                 completion (after_compute_us), Open MPI's against auto's;
#   nb-core.json  16 ranks, one per core (no free PU: auto leaves the calls to Open MPI, so
#                 SAMPI must cost nothing): pmpi against auto, 1 and 16 MiB, with and without
#                 MPI_Test during the compute;
#   nb-small.json 8 B, one rank per core: MPI_Iallreduce + MPI_Wait, pmpi against auto.
# Local check in the root, oversubscribed (shows the plan runs, not how fast anything is):
#   OUT=/tmp/x DEVRUN_PLAN=plans/nb16.sh DEVRUN_DRY=1 bash .devbench/run.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NP=$(np_list 16); NP=${NP%% *}
HALF=$(( NP / 2 ))
begin $NP
PE2="--map-by slot:PE=2 --bind-to core"

step_begin 120 nb-pe2
for size in 1M 16M 64M; do
  XMPI="$PE2" run1 nb-pe2 $HALF $size "$(fit_iter 2 5 50 10)" 5 pmpi,ring,auto --nonblocking
done
step_begin 60 nb-late
XMPI="$PE2" run1 nb-late $HALF 16M 20 5 pmpi,auto --nonblocking --straggler $(( HALF - 1 )) \
  --delay-ms 20 --compute-ms 25
step_begin 80 nb-core
for size in 1M 16M; do
  run1 nb-core $NP $size 20 5 pmpi,auto --nonblocking
  run1 nb-core $NP $size 20 5 pmpi,auto --nonblocking --test-during-compute
done
step_begin 40 nb-small
run1 nb-small $NP 8 3000 300 pmpi,auto --nonblocking
finish
