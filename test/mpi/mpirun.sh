#!/bin/sh
# mpirun.sh - start an MPI test program the same way on every machine.
#
#   mpirun.sh -np N [-x VAR=VAL ...] program [args...]
#
# Runs $MPIRUN (default: mpirun) with:
#   --oversubscribe       the tests use more ranks than CI has cores;
#   --allow-run-as-root   only when running as root (CI containers);
#   loopback only         btl self,vader,tcp with tcp and the runtime's own
#                         out-of-band channel on "lo", pml ob1 (so UCX and
#                         the ofi MTL, which would pick a NIC, stay out), and
#                         FI_TCP_IFACE / FI_SOCKETS_IFACE=lo for SAMPI's own
#                         libfabric endpoints.  No test traffic leaves the host.
#   --mca op ^avx         Open MPI 4.1's AVX reduction component saturates
#                         8- and 16-bit integer MPI_SUM once a buffer holds
#                         16 (int8) or 8 (int16) elements, while its scalar
#                         code, and C, wrap (open-mpi/ompi#8045, closed as
#                         wontfix).  The tests use PMPI_Allreduce as the
#                         reference for overflowing sums, so it must give one
#                         answer whatever the count.
#   a time limit          timeout -k 10 $SAMPI_TEST_TIMEOUT (default 300 s):
#                         a hang fails the test instead of blocking CI.
# Verified with Debian 12's Open MPI 4.1.4.  Extra -x options are forwarded
# (after the fixed ones, so they win), and the command is printed first.
set -u

usage() {
    echo "usage: $0 -np N [-x VAR=VAL ...] program [args...]" >&2
    exit 2
}

# Single-quote $1 for eval: values such as SAMPI_OFI_PROVIDER=tcp;ofi_rxm
# hold shell metacharacters.
quote() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

mpirun=${MPIRUN:-mpirun}
limit=${SAMPI_TEST_TIMEOUT:-300}
cmd="timeout -k 10 $(quote "$limit") $(quote "$mpirun") --oversubscribe"
[ "$(id -u)" -eq 0 ] && cmd="$cmd --allow-run-as-root"
cmd="$cmd --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
cmd="$cmd --mca pml ob1 --mca op ^avx -x FI_TCP_IFACE=lo -x FI_SOCKETS_IFACE=lo"

np=
while [ $# -gt 0 ]; do
    case $1 in
    -np | -n)
        [ $# -ge 2 ] || usage
        np=$2
        shift 2
        ;;
    -x)
        [ $# -ge 2 ] || usage
        cmd="$cmd -x $(quote "$2")"
        shift 2
        ;;
    --)
        shift
        break
        ;;
    -*) usage ;;
    *) break ;;
    esac
done
if [ -z "$np" ] || [ $# -lt 1 ]; then usage; fi

cmd="$cmd -np $(quote "$np")"
for a in "$@"; do
    cmd="$cmd $(quote "$a")"
done
echo "+ $cmd"
eval "exec $cmd"
