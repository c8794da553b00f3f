"""tbrun.py - run sampi_bench phases on one testbed namespace (for the tables).

A Testbed object owns one namespace made by ./testbed: up() at the start,
shape() between phases (tc class change, the namespace and its addresses
stay), down() at the end, also on errors and signals (use it as a context
manager).  phase() runs sampi_bench once inside it through "testbed mpirun"
(one MPMD context per rank, so that Open MPI's tcp transport is shaped too)
and returns sampi_bench's JSON rows plus what the phase cost in CPU:

  cpu_ranks   CPU time of everything the phase started (mpirun and the
              ranks: user + system, from the children's rusage), as a
              fraction of wall time x cores
  cpu_machine busy fraction of all cores over the phase, from /proc/stat
              (includes whatever else runs on the machine)

Both say whether the cores, not the caps, could have set the pace.
"""

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "testbed")


class SetupError(Exception):
    """The testbed could not be made; .status is testbed's exit status."""

    def __init__(self, msg, status):
        super().__init__(msg)
        self.status = status


def parse_bytes(text):
    """'64M', '16m', '1G', '4096' -> bytes (powers of 1024)."""
    t = text.strip()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:].lower(), 1)
    num = t[:-1] if mult > 1 else t
    if not num.isdigit() or int(num) == 0:
        raise ValueError("'%s' is not a size (bytes, optionally with k, M or G)" % text)
    return int(num) * mult


def human_bytes(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def find_bench(explicit):
    """sampi_bench: --bench, $SAMPI_BENCH, the build tree above us, PATH."""
    for cand in (explicit, os.environ.get("SAMPI_BENCH"),
                 os.path.join(HERE, "..", "..", "sampi_bench")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return os.path.abspath(cand)
    found = shutil.which("sampi_bench")
    if found:
        return found
    raise SetupError("cannot find sampi_bench: give --bench PATH or set SAMPI_BENCH", 2)


def _cpu_stat():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields), idle


class Testbed:
    def __init__(self, p, rate, base=10, name=None, log=sys.stderr):
        self.p, self.rate, self.base = p, rate, base
        self.name = name or "sampi-tb-%d" % os.getpid()
        self.log = log
        self.is_up = False

    def _tb(self, *args):
        cmd = [TESTBED] + list(args)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            raise SetupError(r.stderr.strip() or "%s failed" % " ".join(cmd), r.returncode)
        if r.stderr.strip():
            print("# " + r.stderr.strip(), file=self.log)
        return r

    def _args(self, degraded, l):
        return ["--name", self.name, "--p", str(self.p), "--rate", str(self.rate),
                "--base", str(self.base), "--degraded", str(degraded), "--l", str(l)]

    def up(self, degraded=-1, l=1):
        # Marked first: a signal during set-up must still tear down what
        # "testbed up" made (the name carries our pid, so it is ours).
        self.is_up = True
        self._tb("up", *self._args(degraded, l))

    def shape(self, degraded=-1, l=1):
        self._tb("shape", *self._args(degraded, l))

    def down(self):
        if self.is_up:
            self.is_up = False
            subprocess.run([TESTBED, "down", "--name", self.name])

    def __enter__(self):
        # SIGTERM (timeout, kill) must still tear the namespace down.
        self._old_term = signal.signal(signal.SIGTERM, _raise_exit)
        return self

    def __exit__(self, *exc):
        self.down()
        signal.signal(signal.SIGTERM, self._old_term)
        return False

    def phase(self, label, bench, algos, nbytes, iters, warmup, env=None, timeout=900,
              extra=()):
        """Run sampi_bench once; returns (rows by --algos entry, info dict)."""
        cmd = [TESTBED, "exec", "--name", self.name, "--p", str(self.p), "--base",
               str(self.base), "--", TESTBED, "mpirun", "--", bench,
               "-m", "%d:%d" % (nbytes, nbytes), "-i", str(iters), "-x", str(warmup),
               "--algos", ",".join(algos), "--json"] + list(extra)
        full_env = dict(os.environ)
        for k in list(full_env):
            # Only what the phase says: an inherited SAMPI_* setting would
            # change what the entries run.
            if k.startswith("SAMPI_") and k not in ("SAMPI_BENCH",):
                del full_env[k]
        full_env.update({"SAMPI_TIMEOUT_MS": "900000"})
        full_env.update(env or {})
        shown = " ".join("%s=%s" % kv for kv in sorted((env or {}).items()))
        print("# phase %s: %s%s" % (label, shown + " " if shown else "", " ".join(cmd)),
              file=self.log)
        self.log.flush()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        st0 = _cpu_stat()
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=full_env, timeout=timeout)
        wall = time.monotonic() - t0
        st1 = _cpu_stat()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        ncpu = os.cpu_count() or 1
        cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        total, idle = st1[0] - st0[0], st1[1] - st0[1]
        info = {
            "wall_s": wall,
            "cpu_ranks": cpu / (wall * ncpu) if wall > 0 else None,
            "cpu_machine": (total - idle) / total if total > 0 else None,
        }
        rows = {}
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                row = json.loads(line)
                rows[row["algo"]] = row
        notes = [l for l in r.stderr.splitlines() if l.startswith("#") or "warning" in l]
        info["notes"] = notes
        info["stderr"] = r.stderr  # all of it, for a table that parses the library's log
        if r.returncode or any(a not in rows for a in algos):
            raise SetupError("phase %s failed (exit %d):\n%s" % (label, r.returncode,
                                                                  r.stderr.strip()[-3000:]), 1)
        print("# phase %s: %.0f s, CPU of the ranks %.0f%% of %d cores, machine busy %.0f%%" %
              (label, wall, 100 * info["cpu_ranks"], ncpu, 100 * info["cpu_machine"]),
              file=self.log)
        for n in notes:
            if n.startswith("# ") and ": ran " in n:
                print("#   " + n[2:], file=self.log)
            elif "warning" in n:
                print("#   " + n, file=self.log)
        self.log.flush()
        return rows, info


def _raise_exit(signum, frame):
    raise SystemExit(128 + signum)


def preflight():
    """The testbed's own checks, without making anything: 77 when it cannot run."""
    if os.geteuid() != 0:
        raise SetupError("cannot run here: needs root (network namespaces and tc); "
                         "run it as root", 77)
    for tool in ("ip", "tc"):
        if not shutil.which(tool):
            raise SetupError("cannot run here: no '%s' command (install iproute2)" % tool, 77)
