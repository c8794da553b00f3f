#!/bin/sh
# dgram-netns.sh - run a command inside a private network namespace where
# each MPI rank has its own veth, for the `dpdk` datagram transport over the
# af_packet PMD.
#
#   dgram-netns.sh [-n RANKS] [-m MTU] [-r RATE] [-R RANK:RATE] -- command [args...]
#
# Inside a new namespace: lo up (mpirun's own traffic stays on loopback), a
# bridge sdbr, and for rank i = 0..RANKS-1 a veth pair sd<i> (the rank's side,
# which sampi_dpdk_vdev's default "net_af_packet0,iface=sd%r" opens) and
# sdp<i> (enslaved to the bridge).  IPv6 is off in the namespace so the
# kernel sends nothing of its own on the veths.  -m MTU sets the MTU of
# every veth and of the bridge (default: the kernel's, 1500; 9000 for jumbo
# frames, which the `dpdk` transport then uses: sampi_dpdk_mtu reads the
# interface's MTU).  -r RATE caps every sd<i>'s
# egress with tc tbf (e.g. 1gbit: an emulated NIC speed); -R RANK:RATE caps
# one rank (repeatable), after -r.  The af_packet PMD bypasses the qdisc
# unless opened with qdisc_bypass=0, which sampi_dpdk_vdev's default does.  The command runs in the namespace
# (ip netns exec), typically a whole mpirun: PMIx cannot reach ranks started
# in different namespaces.  The namespace, and with it every veth and the
# bridge, is deleted on exit, failure or signal.  The command's exit status
# is returned; 77 (the automake skip code) when this cannot run: not root, or
# no `ip`.
set -u
ranks=2
mtu=
rate=
rank_rates=
usage() {
    echo "usage: $0 [-n RANKS] [-m MTU] [-r RATE] [-R RANK:RATE]... -- command [args...]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    -n) [ $# -ge 2 ] || usage; ranks=$2; shift 2 ;;
    -m) [ $# -ge 2 ] || usage; mtu=$2; shift 2 ;;
    -r) [ $# -ge 2 ] || usage; rate=$2; shift 2 ;;
    -R) [ $# -ge 2 ] || usage; rank_rates="$rank_rates $2"; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
    esac
done
[ $# -ge 1 ] || usage
case $ranks in '' | *[!0-9]*) usage ;; esac
case $mtu in *[!0-9]*) usage ;; esac

if [ "$(id -u)" -ne 0 ]; then
    echo "dgram-netns.sh: needs root (network namespaces and veths); not run" >&2
    exit 77
fi
if ! command -v ip >/dev/null 2>&1; then
    echo "dgram-netns.sh: the 'ip' command (iproute2) is missing; not run" >&2
    exit 77
fi

ns="sampi-dg-$$"
cleanup() {
    ip netns del "$ns" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

fail() {
    echo "dgram-netns.sh: $*" >&2
    exit 1
}
in_ns() {
    ip netns exec "$ns" "$@"
}
# ip/tc/bridge -n: much cheaper than one "ip netns exec" per command.
nip() {
    ip -n "$ns" "$@"
}

ip netns add "$ns" || fail "ip netns add $ns failed"
nip link set lo up || fail "lo up failed"
in_ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
    >/dev/null 2>&1 || true
nip link add sdbr type bridge || fail "creating the bridge failed"
if [ -n "$mtu" ]; then
    nip link set sdbr mtu "$mtu" || fail "MTU $mtu on the bridge failed"
fi
nip link set sdbr up || fail "bridge up failed"
# Interface indexes: DPDK 22.11's af_packet PMD names its PACKET_FANOUT group
# (getpid() ^ ifindex) & 0xffff, and two ranks whose groups collide on
# different interfaces fail to probe (EINVAL).  With rank i's index at
# 4096 + (i << 11), a collision needs two rank pids equal in their low 11
# bits, i.e. started 2048 or more pids apart.  The bridge learns nothing:
# each rank's MAC is entered as a static FDB entry, so no frame is flooded
# to every rank (flooding at start-up overflowed the ranks' receive rings).
i=0
while [ "$i" -lt "$ranks" ]; do
    idx=$((4096 + (i << 11)))
    nip link add "sd$i" index "$idx" type veth peer name "sdp$i" index $((idx + 1)) ||
        fail "creating veth sd$i failed"
    if [ -n "$mtu" ]; then
        # both ends: a veth drops frames larger than its peer's MTU
        nip link set "sd$i" mtu "$mtu" || fail "MTU $mtu on veth sd$i failed"
        nip link set "sdp$i" mtu "$mtu" || fail "MTU $mtu on veth sdp$i failed"
    fi
    nip link set "sdp$i" master sdbr || fail "enslaving sdp$i failed"
    nip link set "sdp$i" type bridge_slave learning off flood off ||
        fail "configuring bridge port sdp$i failed"
    mac=$(nip -br link show dev "sd$i" | awk '{print $3}')
    [ -n "$mac" ] || fail "reading the MAC of sd$i failed"
    bridge -n "$ns" fdb replace "$mac" dev "sdp$i" master static || fail "static FDB entry for sd$i failed"
    nip link set "sdp$i" up || fail "sdp$i up failed"
    nip link set "sd$i" up || fail "sd$i up failed"
    if [ -n "$rate" ]; then
        tc -n "$ns" qdisc add dev "sd$i" root tbf rate "$rate" burst 64kb latency 50ms ||
            fail "tc tbf rate $rate on sd$i failed"
    fi
    i=$((i + 1))
done
for rr in $rank_rates; do
    r=${rr%%:*}
    v=${rr#*:}
    tc -n "$ns" qdisc replace dev "sd$r" root tbf rate "$v" burst 64kb latency 50ms ||
        fail "tc tbf rate $v on sd$r failed"
done

in_ns "$@"
