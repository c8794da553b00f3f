#!/usr/bin/env bash
# benchmarks/devbench/box16.sh - a devbench plan (../shared/devbench/README.md): on the 16-core
# remote, one rank per core,
#   small.json     issue 23's small calls: Open MPI direct (pmpi), SAMPI forced native, auto;
#                  8 B and 1 KiB at p = 16 and p = 2, 3000 calls each;
#   small-check.json  8 B with sampi_check_native=1 (the argument check before native calls);
#   uniform.json   the cluster in a box (benchmarks/testbed/box, copied beside this plan as
#   late.json      sampi-box.sh by ./prepare): H = 4 hosts of K = 4 ranks, every host's link
#   degraded.json  at DEVRUN_BOX_RATE Mbit/s (default 1600: 16 MiB at 400 would not fit the remote's
#                  time); native (Open MPI tuned over tcp between hosts, shared memory inside),
#                  SAMPI ring, hier and auto, at 1 MiB and 16 MiB; late: the last rank 20 ms
#                  late (spinning); degraded: host h3's link at l = 2;
#   han.json       the same three scenes, in that order, with Open MPI's han as native
#                  (--mca coll_han_priority 100) and auto beside it.
# Where the box cannot be made (exit 77: no bridge, no namespaces) the plan says so in run.log
# and runs the scenes on the UTS-only box of ../shared/devbench/plans/box.sh, unshaped (no
# degraded scene there).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BOXSH=$(realpath "$(dirname "${BASH_SOURCE[0]}")/sampi-box.sh")
export SAMPI_BOX_RUNDIR=/tmp/sampi-box
RATE=${DEVRUN_BOX_RATE:-1600}
NP=$(np_list 16); NP=${NP%% *}
begin $NP

# DEVRUN_BOX_ONLY=1: only the box's scenes with tuned (a short follow-up run)
ONLY=${DEVRUN_BOX_ONLY:-0}
[ "$ONLY" = 1 ] || step_begin 45 small
for np in $NP 2; do
  [ "$ONLY" = 1 ] && break
  run1 small $np 8 3000 300 pmpi,native,auto
  run1 small $np 1K 3000 300 pmpi,native,auto
  XMPI="-x SAMPI_CHECK_NATIVE=1" run1 small-check $np 8 3000 300 pmpi,native,auto
done

H=4; [ "$NP" -lt 16 ] && H=2
K=$(( NP / H ))
# DEVRUN_BOX_LAYOUT=HxK (a local check of the plan: 2x2 on 2 cores, oversubscribed)
if [[ ${DEVRUN_BOX_LAYOUT:-} =~ ^([0-9]+)x([0-9]+)$ ]]; then H=${BASH_REMATCH[1]}; K=${BASH_REMATCH[2]}; fi
BNP=$(( H * K ))
SHAPED=1
log "box: $H hosts x $K ranks at $RATE Mbit/s"
if ! bash "$BOXSH" up --name bx --hosts $H --ranks $K --rate "$RATE" > /tmp/box-up.out 2>&1; then
  log "box up failed ($(tail -3 /tmp/box-up.out | tr '\n' ' ')): the unshaped UTS-only box instead"
  SHAPED=0
fi
LAUNCH_SAVED=("${LAUNCH[@]}"); BASE_SAVED=("${BASE[@]}"); PATH_SAVED=$PATH
LAUNCH=()   # the box binds nothing: its hosts' ranks share the node's cores
if [ $SHAPED = 1 ]; then
  # the box's own transport options replace lib.sh's loopback ones
  nb=(); i=0
  while [ $i -lt ${#BASE[@]} ]; do
    case "${BASE[$i]}:${BASE[$((i + 1))]:-}" in
      --mca:pml | --mca:btl | --mca:btl_tcp_if_include | --mca:oob_tcp_if_include) i=$((i + 3)) ;;
      -x:FI_TCP_IFACE=* | -x:FI_SOCKETS_IFACE=*) i=$((i + 2)) ;;
      *) nb+=("${BASE[$i]}"); i=$((i + 1)) ;;
    esac
  done
  BASE=("${nb[@]}")
  # run1's mpirun runs in the box's head namespace with the box's options
  mkdir -p /tmp/boxbin
  printf '#!/bin/bash\nexec bash %s exec --name bx -- bash -c %s mpirun "$@"\n' "$BOXSH" \
    "'exec /usr/bin/mpirun \$SAMPI_BOX_MPIRUN_OPTS \"\$@\"'" > /tmp/boxbin/mpirun
  chmod +x /tmp/boxbin/mpirun
  export PATH=/tmp/boxbin:$PATH
  log "mpirun in the box: $(tail -1 /tmp/boxbin/mpirun)"
  log "map: $(timeout 30 mpirun -np $BNP "${BASE[@]}" --display-map /bin/hostname 2>&1 | grep -cE 'Data for node') nodes"
else
  mkdir -p /tmp/ubox
  printf '#!/bin/bash\nwhile [[ "$1" == -* ]]; do shift; done\nh=$1; shift\nexec unshare -u /bin/bash -c "hostname $h; $*"\n' > /tmp/ubox/agent.sh
  chmod +x /tmp/ubox/agent.sh
  : > /tmp/ubox/hosts; for i in $(seq 0 $((H-1))); do echo "h$i slots=$K" >> /tmp/ubox/hosts; done
  XBOX="--hostfile /tmp/ubox/hosts --mca plm_rsh_agent /tmp/ubox/agent.sh --bind-to none"
fi
scene() {  # scene NAME XMPI ENTRIES [sampi_bench options]
  local name=$1 x=$2 algos=$3; shift 3
  XMPI="${XBOX:-} $x" run1 "$name" $BNP 1M 30 60 "$algos" "$@"
  XMPI="${XBOX:-} $x" run1 "$name" $BNP 16M 6 30 "$algos" "$@"
}
HAN="--mca coll_han_priority 100"
LATE=(--straggler $((BNP - 1)) --delay-ms 20 --straggle-by spin)
step_begin 300 box
scene uniform "" native,ring,hier,auto
[ "$ONLY" = 1 ] || scene han "$HAN" native,auto
scene late "" native,ring,hier,auto "${LATE[@]}"
[ "$ONLY" = 1 ] || scene han "$HAN" native,auto "${LATE[@]}"
if [ $SHAPED = 1 ] && bash "$BOXSH" shape --name bx --rate "$RATE" \
     --degraded h$((H - 1)) --l 2 > /tmp/box-shape.out 2>&1; then
  scene degraded "" native,ring,hier,auto
  [ "$ONLY" = 1 ] || scene han "$HAN" native,auto
else
  log "no degraded scene: $(tail -2 /tmp/box-shape.out 2>/dev/null | tr '\n' ' ')"
fi
export PATH=$PATH_SAVED
[ $SHAPED = 1 ] && bash "$BOXSH" down --name bx > /dev/null 2>&1
LAUNCH=("${LAUNCH_SAVED[@]}"); BASE=("${BASE_SAVED[@]}")
finish
