"""boxrun.py - run sampi_bench on one cluster in a box (./box), for box-table
and scripts/demo's scene (e).

A Box object owns one box made by ./box: up() at the start, shape() between
runs (tc class change; the namespaces, orteds' hosts and addresses stay),
down() at the end, also on errors and signals (use it as a context manager).
run() starts sampi_bench once through "box mpirun" and returns its JSON
lines.  preflight() raises tbrun.SetupError(77) where a box cannot be made;
has_hier() says whether this SAMPI has an algorithm named hier.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BOX = os.path.join(HERE, "box")
sys.path.insert(0, HERE)
import tbrun  # noqa: E402


def preflight():
    """box's own checks, without making anything: SetupError(77) when it cannot run."""
    if os.geteuid() != 0:
        raise tbrun.SetupError("cannot run here: needs root (network and UTS namespaces, tc); "
                               "run it as root", 77)
    for tool in ("ip", "tc", "unshare"):
        if not shutil.which(tool):
            raise tbrun.SetupError("cannot run here: no '%s' command" % tool, 77)


def has_hier(bench):
    """Whether sampi_info (next to sampi_bench, or on PATH) lists 'hier'."""
    for cand in (os.path.join(os.path.dirname(bench), "sampi_info"), shutil.which("sampi_info")):
        if cand and os.access(cand, os.X_OK):
            r = subprocess.run([cand, "sampi_algorithm"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
            for line in r.stdout.splitlines():
                if line.strip().startswith("enum:"):
                    items = line.split(":", 2)[-1]
                    return "hier" in [x.strip() for x in items.split(",")]
    return False


def _raise_exit(signum, frame):
    raise SystemExit(128 + signum)


class Box:
    """One box made by ./box: up at the start, shape between scenes, down at
    the end, also on errors and signals (a context manager)."""

    def __init__(self, hosts, ranks, rate, name=None, log=sys.stderr):
        self.hosts, self.ranks, self.rate = hosts, ranks, rate
        self.name = name or "sampi-boxtab-%d" % os.getpid()
        self.log = log
        self.is_up = False

    def _box(self, *args):
        cmd = [BOX] + list(args)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            raise tbrun.SetupError(r.stderr.strip() or "%s failed" % " ".join(cmd),
                                   r.returncode)
        if r.stderr.strip():
            print("# " + r.stderr.strip(), file=self.log)

    def up(self):
        self.is_up = True  # first: a signal during set-up must still tear down
        self._box("up", "--name", self.name, "--hosts", str(self.hosts), "--ranks",
                  str(self.ranks), "--rate", str(self.rate))

    def shape(self, degraded=-1, l=1):
        self._box("shape", "--name", self.name, "--rate", str(self.rate), "--degraded",
                  str(degraded), "--l", str(l))

    def down(self):
        if self.is_up:
            self.is_up = False
            subprocess.run([BOX, "down", "--name", self.name])

    def __enter__(self):
        self._old_term = signal.signal(signal.SIGTERM, _raise_exit)
        return self

    def __exit__(self, *exc):
        self.down()
        signal.signal(signal.SIGTERM, self._old_term)
        return False

    def run(self, label, bench, algos, nbytes, iters, warmup, mpirun=(), extra=(),
            env=None, timeout=900):
        """One sampi_bench run; returns (its JSON lines, rows by entry, wall s).
        Only the SAMPI_* variables in env reach it (an inherited setting
        would change what the entries run)."""
        cmd = [BOX, "exec", "--name", self.name, "--", BOX, "mpirun"] + list(mpirun) + [
            "--", bench, "-m", "%d:%d" % (nbytes, nbytes), "-i", str(iters), "-x",
            str(warmup), "--algos", ",".join(algos), "--json"] + list(extra)
        full = {k: v for k, v in os.environ.items()
                if not k.startswith("SAMPI_") or k == "SAMPI_BENCH"}
        full["SAMPI_TIMEOUT_MS"] = "900000"
        full.update(env or {})
        print("# run %s: %s" % (label, " ".join(cmd)), file=self.log)
        self.log.flush()
        st0 = tbrun._cpu_stat()
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=full, timeout=timeout)
        wall = time.monotonic() - t0
        st1 = tbrun._cpu_stat()
        lines = [l.strip() for l in r.stdout.splitlines() if l.strip().startswith("{")]
        rows = {}
        for l in lines:
            row = json.loads(l)
            rows[row["algo"]] = row
        self.stderr = r.stderr
        if r.returncode or any(a not in rows for a in algos):
            raise tbrun.SetupError("run %s failed (exit %d):\n%s" %
                                   (label, r.returncode, r.stderr.strip()[-3000:]), 1)
        # The ranks are the orteds' children, not ours: only the machine's
        # busy fraction (theirs and whatever else runs) can be told.
        total, idle = st1[0] - st0[0], st1[1] - st0[1]
        print("# run %s: %.0f s, machine busy %.0f%% of %d cores" %
              (label, wall, 100 * (total - idle) / total if total else 0,
               os.cpu_count() or 1), file=self.log)
        self.log.flush()
        return lines, rows, wall


