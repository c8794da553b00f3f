# lib.sh - the run and verdict code every test/mpi/*.test script shares, so
# that each script keeps only what it asserts.  Sourced after `set -u`:
#
#     . "${top_srcdir:-.}/test/mpi/lib.sh"
#     t_init NAME [SUMMARY_NAME]
#
# NAME names the script in its messages ("NAME.test: ..."); SUMMARY_NAME
# (default NAME) begins its last line, "SUMMARY_NAME: N passed, M failed",
# the line scripts/test collects.  After t_init:
#   $builddir $srcdir  the build and source trees (make check exports them)
#   $mpirun_sh         test/mpi/mpirun.sh
#   $tmp $log          a directory removed on exit, and a file in it
#   $passed $failed    the case counters
# Exit status: 0 when every case passed (t_done), 1 when one failed or the
# script cannot run its cases (t_need: a program not built), and 77, the
# automake skip, only through t_skip, which prints why.

t_init() {
    t_name=$1
    t_label=${2:-$1}
    builddir=${top_builddir:-.}
    srcdir=${top_srcdir:-.}
    mpirun_sh="$srcdir/test/mpi/mpirun.sh"
    passed=0
    failed=0
    tmp=$(mktemp -d)
    # shellcheck disable=SC2064 # $tmp is fixed now
    trap "rm -rf '$tmp'" EXIT
    log="$tmp/log"
    : >"$log"
    # what t_run reads: see there
    t_summary='^$'
    t_ok=', 0 failed$'
    t_show=
}

# ---------------------------------------------------------------- preconditions
# t_skip REASON: the test cannot run here; say why and exit 77.
t_skip() {
    echo "$t_name.test: SKIP: $*"
    exit 77
}

# t_need FILE...: each must be an executable that the build made (exit 1).
t_need() {
    for t_f in "$@"; do
        if [ ! -x "$t_f" ]; then
            echo "$t_name.test: $t_f was not built"
            exit 1
        fi
    done
}

# t_need_root WHAT: skip unless root, saying what needs it.
t_need_root() {
    [ "$(id -u)" -eq 0 ] || t_skip "needs root for $*"
}

# t_need_cmd COMMAND...: skip unless every command is on PATH.
t_need_cmd() {
    for t_c in "$@"; do
        command -v "$t_c" >/dev/null 2>&1 || t_skip "no $t_c on PATH"
    done
}

# t_need_dpdk: skip unless configure found DPDK.
t_need_dpdk() {
    grep -q '^#define SAMPI_HAVE_DPDK 1' "$builddir/sampi_autoconf.h" 2>/dev/null ||
        t_skip "SAMPI was configured without DPDK (--with-dpdk=no, or pkg-config found no libdpdk)"
}

# t_default_timeout SECONDS: mpirun.sh's time limit unless the caller set one.
t_default_timeout() {
    SAMPI_TEST_TIMEOUT=${SAMPI_TEST_TIMEOUT:-$1}
    export SAMPI_TEST_TIMEOUT
}

# ---------------------------------------------------------------- verdicts
t_pass() {
    passed=$((passed + 1))
    echo "PASS $*"
}
t_fail() {
    failed=$((failed + 1))
    echo "FAIL $*"
}

# t_because REASON: one more reason why the current case fails ($why, which
# the case sets empty first).
t_because() {
    why="${why:+$why; }$*"
}

# t_verdict LABEL: the current case passes when $why is empty.
t_verdict() {
    if [ -z "$why" ]; then t_pass "$1"; else t_fail "$1: $why"; fi
}

# t_status STATUS LABEL [DETAIL_FILE]: a case that passes on status 0; on a
# failure the first lines of DETAIL_FILE, when it has any, follow.
t_status() {
    if [ "$1" -eq 0 ]; then
        t_pass "$2"
    else
        t_fail "$2"
        [ $# -ge 3 ] && [ -s "$3" ] && head -20 "$3" | sed 's/^/    /'
    fi
    return 0
}

# t_expect COUNT PATTERN DESCRIPTION: $log holds COUNT lines matching
# PATTERN (COUNT "+": at least one); otherwise say what was found and fail.
t_expect() {
    t_n=$(grep -c -- "$2" "$log")
    if { [ "$1" = "+" ] && [ "$t_n" -ge 1 ]; } || [ "$t_n" = "$1" ]; then
        return 0
    fi
    echo "  expected $1 line(s) with $3 ($2), found $t_n"
    return 1
}

# t_done: the summary line; exit 0 when no case failed, 1 otherwise.
t_done() {
    echo "$t_label: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] || exit 1
    exit 0
}

# ---------------------------------------------------------------- runs
# t_mpirun MPIRUN_SH_ARGS...: start a program under mpirun.sh, its output in
# $log, its exit status in $rc; t_secs then says how long it took.
t_mpirun() {
    t_start=$(date +%s)
    sh "$mpirun_sh" "$@" >"$log" 2>&1
    rc=$?
}
t_secs() {
    echo $(($(date +%s) - t_start))
}

# t_checks: a script's own conditions on the run t_run just made (it may
# print why it fails); none by default.
t_checks() {
    return 0
}

# t_run LABEL MPIRUN_SH_ARGS...: one case, the common shape.  It passes when
# the program exits 0, its summary line (the lines of $log matching the ERE
# $t_summary) matches the ERE $t_ok (", 0 failed$" by default) and t_checks
# agrees.  On a pass the lines matching the ERE $t_show (when set) are shown,
# on a failure the whole log; then "PASS|FAIL LABEL: SUMMARY (exit RC, N s)".
t_run() {
    t_l=$1
    shift
    t_mpirun "$@"
    t_judge "$t_l"
}

# t_judge LABEL: t_run's verdict on the run already in $log and $rc.
t_judge() {
    summary=$(grep -E -- "$t_summary" "$log")
    if [ "$rc" -eq 0 ] && printf '%s\n' "$summary" | grep -Eq -- "$t_ok" && t_checks; then
        passed=$((passed + 1))
        t_v=PASS
        [ -z "$t_show" ] || grep -E -- "$t_show" "$log"
    else
        failed=$((failed + 1))
        t_v=FAIL
        cat "$log"
    fi
    echo "$t_v $1: ${summary:-no summary line} (exit $rc, $(t_secs) s)"
}
