#!/usr/bin/env python3
"""demo.py - the scenes of scripts/demo (run it through scripts/demo, which
builds and installs SAMPI first).

  demo.py --prefix PREFIX [--quick] [--out DIR] [--loopback]

Every scene is one sampi_bench run (or one per straggler delay) with its
entries interleaved call by call, so that their ratios are measured side by
side.  T is sampi_bench's time from the last rank's arrival to completion
(last_arrival_*): the part of the call an algorithm can shorten.

The network tail of scene (d): this kernel has no netem, so optireduce's
datagrams meet their late arrivals in SAMPI's fault injector
(SAMPI_OPTIREDUCE_FAULT: each datagram received is held back with
probability 1% by 9 T_ref, i.e. a call that waits for it takes about 10x),
and the reliable entries (native, ring, auto) in sampi_bench's emulation
(--net-tail: a call returns 9 T_ref later on a rank when any of the
datagrams it would receive is late), as benchmarks/tail-table does.  T_ref is
ring's median at that size in scene (a), measured in the same demo.

Scene (e) runs on a cluster in a box (benchmarks/testbed/box): 4 emulated
hosts of 2 ranks that Open MPI sees as 4 nodes, every host's link at
400 Mbit/s, the last rank late by 20 ms, 1 MiB; hier joins the entries when
sampi_info lists it.  It needs what the testbed needs plus UTS namespaces;
--quick and the loopback version skip it, saying so.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTBED_DIR = os.path.join(ROOT, "benchmarks", "testbed")
TESTBED = os.path.join(TESTBED_DIR, "testbed")
BOX = os.path.join(TESTBED_DIR, "box")
MPIRUN_LOCAL = os.path.join(ROOT, "scripts", "mpirun-local")
sys.path.insert(0, TESTBED_DIR)
import boxrun  # noqa: E402
import tbrun  # noqa: E402

TAIL_PCT = 1.0      # percent of datagrams late
TAIL_FACTOR = 10.0  # a call that waits for one takes about this many T_ref


def mib(n):
    return tbrun.human_bytes(n)


class Scene:
    """One table: its runs (one sampi_bench each) and how to show them."""

    def __init__(self, key, letter, title, short, runs, env=None, shape=(-1, 1),
                 first_col="size"):
        self.key, self.letter, self.title, self.short = key, letter, title, short
        self.runs = runs  # [(sizes "MIN:MAX", iters, warmup, algos, extra args)]
        self.env = env or {}
        self.shape = shape  # (degraded rank, l) on the testbed
        self.first_col = first_col
        self.rows = []
        self.seconds = 0.0


def plan(mode, quick):
    """The scenes: sizes, calls and delays chosen to fit ~3 (--quick ~1) minutes
    on 2 shared cores.  auto needs warm-up calls to converge (it explores its
    arms a few calls each, and in (b) and (c) first finds the late rank or the
    slow link): 30-40 here, as measured."""
    tb = mode == "testbed"
    p = 8 if tb else 4
    last = p - 1
    exact = "native,ring@ofi,auto@ofi" if tb else "native,ring,auto"
    where = "%d ranks at %d Mbit/s each" % (p, RATE) if tb else "%d ranks on this host" % p
    if tb:
        a_sizes, b_size, c_size, d_size = ("256k:1M" if quick else "256k:2M"), "1M", \
            ("1M" if quick else "2M"), "256k"
        delays = [20] if quick else [5, 20, 50]
    else:
        # one host, shared memory: larger messages (Open MPI's own allreduce
        # is quick here; at 256 KiB a 10x late datagram costs less than
        # optireduce's own overhead)
        a_sizes, b_size, c_size, d_size = ("1M:16M" if quick else "1M:64M"), "16M", None, "1M"
        delays = [20] if quick else [5, 20, 50]
    d_bytes = tbrun.parse_bytes(d_size)
    scenes = [
        Scene("uniform", "a", "(a) uniform network: %s" % where,
              "(a) uniform network (%s)" % where,
              [(a_sizes, 10 if quick else 20, 20 if quick else 30, exact, [])]),
        Scene("straggler", "b",
              "(b) one compute straggler: rank %d sleeps D ms before every call; %s, %s" %
              (last, mib(tbrun.parse_bytes(b_size)), where),
              "(b) rank %d late by D ms before every call (%s)" %
              (last, mib(tbrun.parse_bytes(b_size))),
              [("%s:%s" % (b_size, b_size), 10 if quick else 20, 35 if quick else 40, exact,
                ["--straggler", str(last), "--delay-ms", "%g" % d]) for d in delays],
              first_col="D (ms)"),
    ]
    if tb:
        scenes.append(Scene(
            "degraded", "c",
            "(c) one degraded link: rank %d's egress and ingress at %g Mbit/s (l = 2); %s, %s" %
            (last, RATE / 2, mib(tbrun.parse_bytes(c_size)), where),
            "(c) rank %d's link at l = 2 (%s)" % (last, mib(tbrun.parse_bytes(c_size))),
            [("%s:%s" % (c_size, c_size), 10 if quick else 20, 30, exact, [])],
            shape=(last, 2)))
    scenes.append(Scene(
        "tail", "d",
        "(d) long network tail: %g%% of datagrams %gx late; %s, %s; optireduce opted in" %
        (TAIL_PCT, TAIL_FACTOR, mib(d_bytes), where),
        "(d) %g%% of datagrams %gx late (%s)" % (TAIL_PCT, TAIL_FACTOR, mib(d_bytes)),
        [("%s:%s" % (d_size, d_size), (60 if quick else 120) * (1 if tb else 2), 25,
          exact + ",optireduce",
          ["--samples"])],
        env={"SAMPI_OPTIREDUCE_NETDEV": "ofi-udp", "SAMPI_FALLBACK": "silent",
             # allowed from the scene's size (the default starts at 1 MiB)
             "SAMPI_OPTIREDUCE_MIN_BYTES": d_size}))
    return scenes


RATE = 400  # Mbit/s per rank: 8 ranks reached 96% of it here (ring over ofi)

BOX_HOSTS, BOX_RANKS = 4, 2  # scene (e)
BOX_SECONDS = 20  # what scene (e) adds, about: 14 s measured on 2 busy cores


def box_scene(hier):
    """Scene (e): four nodes, one of them late (on the box)."""
    p = BOX_HOSTS * BOX_RANKS
    algos = "native,ring@ofi,auto@ofi" + (",hier" if hier else "")
    where = "%d hosts x %d ranks that Open MPI sees as %d nodes, %d Mbit/s per host" % (
        BOX_HOSTS, BOX_RANKS, BOX_HOSTS, RATE)
    return Scene("box", "e",
                 "(e) four nodes, one of them late: rank %d (on h%d) sleeps 20 ms before every "
                 "call; 1 MiB, %s" % (p - 1, BOX_HOSTS - 1, where),
                 "(e) four nodes, rank %d late by 20 ms (1 MiB)" % (p - 1),
                 [("1M:1M", 10, 30, algos, ["--straggler", str(p - 1), "--delay-ms", "20"])])


def fmt_ms(us):
    return "-" if us is None else "%.1f" % (us / 1e3)


def fmt_ratio(x):
    return "-" if x is None else "%.2f" % x


def table(scene, out):
    """The scene's rows as one readable table."""
    rows = scene.rows
    lines = ["", scene.title]
    head = "  %-7s %-11s %-22s %8s %8s %10s %10s %8s" % (
        scene.first_col, "algorithm", "ran", "P50 ms", "P99 ms", "P50 vs", "P99 vs", "paired")
    lines += [head, "  %-7s %-11s %-22s %8s %8s %10s %10s %8s" % (
        "", "", "", "", "", "native", "native", "ratio"), "  " + "-" * (len(head) - 2)]
    native = {}
    for r in rows:
        if r["algo"] == "native":
            native[(r["bytes"], r.get("delay_ms"))] = r
    for r in rows:
        first = ("%g" % r["delay_ms"]) if scene.first_col.startswith("D") else mib(r["bytes"])
        n = native.get((r["bytes"], r.get("delay_ms")), {})
        p50, p99 = r.get("last_arrival_p50_us"), r.get("last_arrival_p99_us")
        n50, n99 = n.get("last_arrival_p50_us"), n.get("last_arrival_p99_us")
        lines.append("  %-7s %-11s %-22s %8s %8s %10s %10s %8s" % (
            first, r["algo"], r.get("ran", "?"), fmt_ms(p50), fmt_ms(p99),
            fmt_ratio(p50 / n50 if p50 and n50 else None),
            fmt_ratio(p99 / n99 if p99 and n99 else None), fmt_ratio(r.get("ratio_vs_native"))))
    lines.append("  (%d s; T = time from the last arrival to completion, %d calls per entry; "
                 "paired = median over calls of T / native's T in the same iteration)" %
                 (round(scene.seconds), rows[0]["iters"] if rows else 0))
    text = "\n".join(lines)
    print(text)
    sys.stdout.flush()
    out.write(text + "\n")


class Runner:
    def __init__(self, mode, bench, log, tb=None):
        self.mode, self.bench, self.log, self.tb = mode, bench, log, tb
        # the box of scene (e) (a boxrun.Box) when mode is "box"

    def run(self, label, sizes, iters, warmup, algos, extra, env):
        bench = [self.bench, "-m", sizes, "-i", str(iters), "-x", str(warmup), "--algos", algos,
                 "--json"] + list(extra)
        if self.mode == "testbed":
            cmd = [TESTBED, "exec", "--name", self.tb.name, "--p", str(self.tb.p), "--base",
                   str(self.tb.base), "--", TESTBED, "mpirun", "--"] + bench
        elif self.mode == "box":
            cmd = [BOX, "exec", "--name", self.tb.name, "--", BOX, "mpirun", "--"] + bench
        else:
            cmd = [MPIRUN_LOCAL, "-np", str(NP_LOOPBACK)] + bench
        full = {k: v for k, v in os.environ.items() if not k.startswith("SAMPI_")}
        full.update(env)
        self.log.write("# %s: %s %s\n" % (label, " ".join("%s=%s" % kv for kv in
                                                         sorted(env.items())), " ".join(cmd)))
        self.log.flush()
        t0 = time.monotonic()
        r = subprocess.run(["nice"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=full, timeout=900)
        self.log.write(r.stderr)
        self.log.write("# %s: %.1f s, exit %d\n" % (label, time.monotonic() - t0, r.returncode))
        self.log.flush()
        rows = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        if r.returncode or not rows:
            raise RuntimeError("%s failed (exit %d); last lines of its output:\n%s" %
                               (label, r.returncode, "\n".join(r.stderr.splitlines()[-15:])))
        return rows


NP_LOOPBACK = 4


def t_ref_us(scenes, nbytes):
    """ring's median at nbytes in scene (a): the unit of 'F x late'."""
    for r in scenes[0].rows:
        if r["bytes"] == nbytes and r["algo"].split("@")[0] == "ring":
            return r["last_arrival_p50_us"]
    return None


def run_scenes(scenes, runner, tb, mode, out_dir, tables):
    for sc in scenes:
        t0 = time.monotonic()
        env = dict(sc.env)
        if sc.key == "tail":
            nbytes = tbrun.parse_bytes(sc.runs[0][0].split(":")[0])
            ref = t_ref_us(scenes, nbytes)
            if ref is None:
                raise RuntimeError("scene (a) did not measure ring at %s" % mib(nbytes))
            late_ms = (TAIL_FACTOR - 1) * ref / 1e3
            env["SAMPI_OPTIREDUCE_FAULT"] = "late=%g,delay=%.0fus,seed=1" % (TAIL_PCT / 100,
                                                                            late_ms * 1e3)
            sc.runs = [(s, i, w, a, x + ["--net-tail", "%g:%.3f" % (TAIL_PCT, late_ms)])
                       for s, i, w, a, x in sc.runs]
            sc.title += "\n    (late = +%.1f ms = 9 x ring's %.1f ms median in (a); datagrams " \
                        "of 64 KiB; optireduce's by SAMPI's fault injector, the others' " \
                        "emulated by sampi_bench --net-tail)" % (late_ms, ref / 1e3)
        if tb is not None and mode == "testbed":
            tb.shape(*sc.shape)
        for n, (sizes, iters, warmup, algos, extra) in enumerate(sc.runs):
            label = "scene %s run %d" % (sc.letter, n + 1)
            for row in runner.run(label, sizes, iters, warmup, algos, extra, env):
                row.update({"scene": sc.key, "scene_title": sc.title.split("\n")[0],
                            "scene_short": sc.short,
                            "mode": mode, "l": sc.shape[1],
                            "degraded_rank": sc.shape[0] if sc.shape[0] >= 0 else None})
                if mode in ("testbed", "box"):
                    row["rate_mbit"] = RATE
                if mode == "box":
                    row.update({"hosts": BOX_HOSTS, "ranks_per_host": BOX_RANKS})
                sc.rows.append(row)
        sc.seconds = time.monotonic() - t0
        with open(os.path.join(out_dir, "%s-%s.jsonl" % (sc.letter, sc.key)), "w") as f:
            for row in sc.rows:
                f.write(json.dumps(row) + "\n")
        table(sc, tables)


def box_scenes(a, mode, bench, log, out_dir, tables):
    """Scene (e) on the box, or one line saying why not; its scenes run."""
    title = "(e) four nodes, one of them late"
    if mode != "testbed":
        print("demo: %s: skipped: the loopback version has no box (it needs root, ip, tc and "
              "namespaces)" % title)
        return []
    if a.quick:
        print("demo: %s: skipped by --quick (it adds about %d s)" % (title, BOX_SECONDS))
        return []
    try:
        boxrun.preflight()
    except tbrun.SetupError as e:
        print("demo: %s: skipped: %s" % (title, str(e).replace("cannot run here: ", "")))
        return []
    sc = box_scene(boxrun.has_hier(bench))
    try:
        with boxrun.Box(BOX_HOSTS, BOX_RANKS, RATE, "sampi-demo-box-%d" % os.getpid(),
                        log=log) as box:
            box.up()
            print("demo: %s, on a cluster in a box (%d hosts x %d ranks, %d Mbit/s per host)" %
                  (title, BOX_HOSTS, BOX_RANKS, RATE))
            sys.stdout.flush()
            run_scenes([sc], Runner("box", bench, log, box), box, "box", out_dir, tables)
    except tbrun.SetupError as e:
        if sc.rows:
            raise RuntimeError(str(e))
        print("demo: %s: skipped: the box cannot run here: %s" % (title, e))
        return []
    return [sc]


def plots(prefix, out_dir, scenes):
    plot = os.path.join(prefix, "bin", "sampi-plot")
    if not os.access(plot, os.X_OK):
        print("demo: no pictures: %s is not installed" % plot)
        return []
    chk = subprocess.run([plot, "--check"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    if chk.returncode:
        print("demo: no pictures: " + chk.stdout.strip())
        return []
    by = {sc.key: os.path.join(out_dir, "%s-%s.jsonl" % (sc.letter, sc.key)) for sc in scenes}
    short = {sc.key: sc.short for sc in scenes}
    jobs = [("demo", [os.path.join(out_dir, "demo.jsonl")], "demo.png",
             ["--title", "SAMPI against Open MPI's MPI_Allreduce: time from the last arrival "
              "(lower is better)"])]
    if "uniform" in by:
        jobs.append(("size", [by["uniform"]], "uniform-size.png",
                     ["--p99", "--title", short["uniform"]]))
    if "straggler" in by and len(scenes[1].runs) > 1:
        jobs.append(("delay", [by["straggler"]], "straggler-delay.png",
                     ["--p99", "--title", short["straggler"]]))
    if "degraded" in by:
        jobs.append(("slowdown", [by["uniform"], by["degraded"]], "degraded-slowdown.png",
                     ["--title", short["degraded"]]))
    if "tail" in by:
        jobs.append(("cdf", [by["tail"]], "tail-cdf.png", ["--title", short["tail"]]))
    made = []
    for kind, files, name, extra in jobs:
        path = os.path.join(out_dir, name)
        r = subprocess.run([plot, kind] + files + ["-o", path] + extra, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            print("demo: %s: %s" % (name, r.stdout.strip()))
        else:
            made.append(path)
    return made


def main():
    ap = argparse.ArgumentParser(prog="scripts/demo")
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.environ.get("SAMPI_DEMO_OUT", "demo-out"))
    ap.add_argument("--loopback", action="store_true")
    a = ap.parse_args()
    # scripts/demo's start (wall clock, before its set-up), else ours
    start = time.monotonic() - max(0.0, time.time() - float(
        os.environ.get("SAMPI_DEMO_START") or time.time()))
    bench = os.path.join(a.prefix, "bin", "sampi_bench")
    out_dir = os.path.abspath(a.out)
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):
        if name.endswith((".jsonl", ".png")) or name in ("tables.txt", "log.txt"):
            os.unlink(os.path.join(out_dir, name))

    mode = "testbed"
    if a.loopback:
        mode, why = "loopback", "--loopback given"
    else:
        try:
            tbrun.preflight()
        except tbrun.SetupError as e:
            mode, why = "loopback", str(e).replace("cannot run here: ", "")
    log = open(os.path.join(out_dir, "log.txt"), "w")
    tables = open(os.path.join(out_dir, "tables.txt"), "w")
    scenes = None
    try:
        if mode == "testbed":
            try:
                with tbrun.Testbed(8, RATE, log=log) as tb:
                    tb.up()
                    scenes = plan(mode, a.quick)
                    print("demo: %d scenes on the shaped testbed (%d ranks, %d Mbit/s per rank), "
                          "native = Open MPI, ring and auto = SAMPI; output in %s" %
                          (len(scenes), tb.p, RATE, out_dir))
                    sys.stdout.flush()
                    run_scenes(scenes, Runner(mode, bench, log, tb), tb, mode, out_dir, tables)
            except tbrun.SetupError as e:
                if scenes and any(sc.rows for sc in scenes):
                    raise
                mode, why = "loopback", "the testbed cannot run here: %s" % e
        if mode == "loopback":
            scenes = plan(mode, a.quick)
            print("demo: %s: running the loopback version (%d ranks on this host, scenes "
                  "(a), (b), (d); (c) needs the shaped testbed); output in %s" %
                  (why, NP_LOOPBACK, out_dir))
            sys.stdout.flush()
            run_scenes(scenes, Runner(mode, bench, log), None, mode, out_dir, tables)
        scenes += box_scenes(a, mode, bench, log, out_dir, tables)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print("demo: %s\n(full log: %s)" % (e, os.path.join(out_dir, "log.txt")),
              file=sys.stderr)
        return 1
    finally:
        log.close()
        tables.close()
    with open(os.path.join(out_dir, "demo.jsonl"), "w") as f:
        for sc in scenes:
            for row in sc.rows:
                f.write(json.dumps(row) + "\n")
    made = plots(a.prefix, out_dir, scenes)
    print("\ndemo: done in %d s: tables.txt, demo.jsonl (and one .jsonl per scene)%s in %s" %
          (round(time.monotonic() - start),
           "".join(", " + os.path.basename(m) for m in made), out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
