#!/bin/sh
# mpirun.sh - start an MPI test program: scripts/mpirun-local (oversubscribe,
# run as root, loopback only) plus what only the tests need.
#
#   mpirun.sh -np N [-x VAR=VAL ...] program [args...]
#
#   --mca op ^avx   Open MPI 4.1's AVX reduction component saturates 8- and
#                   16-bit integer MPI_SUM once a buffer holds 16 (int8) or 8
#                   (int16) elements, while its scalar code, and C, wrap
#                   (open-mpi/ompi#8045, closed as wontfix).  The tests use
#                   PMPI_Allreduce as the reference for overflowing sums, so it
#                   must give one answer whatever the count.
#   a time limit    timeout -k 10 $SAMPI_TEST_TIMEOUT (default 900 s): a hang
#                   fails the test instead of blocking CI.  Far above what a run
#                   takes on an idle machine (seconds), because with both
#                   cores busy an 8-rank run took 250 s.
# The command is printed first.
set -u
here=$(cd "$(dirname "$0")" && pwd)
launcher=${top_srcdir:-$here/../..}/scripts/mpirun-local
[ $# -ge 3 ] || {
    echo "usage: $0 -np N [-x VAR=VAL ...] program [args...]" >&2
    exit 2
}
#   sanitizers      ASAN_OPTIONS and UBSAN_OPTIONS, when set (the sanitizer
#                   build of scripts/test), reach every rank.
#   modules         SAMPI_MODULE_PATH, when set (the scripts whose programs
#                   link libsampi_core and so cannot find the data-path
#                   modules next to libsampi.so: netdev.test, dgram.test,
#                   dpdk.test), reaches every rank of every app context.
san=
[ -n "${ASAN_OPTIONS:-}" ] && san="$san -x ASAN_OPTIONS"
[ -n "${UBSAN_OPTIONS:-}" ] && san="$san -x UBSAN_OPTIONS"
[ -n "${SAMPI_MODULE_PATH:-}" ] && san="$san -x SAMPI_MODULE_PATH"
echo "+ mpirun-local --mca op ^avx$san $*"
# shellcheck disable=SC2086 # $san is words on purpose
exec timeout -k 10 "${SAMPI_TEST_TIMEOUT:-900}" "$launcher" --mca op ^avx $san "$@"
