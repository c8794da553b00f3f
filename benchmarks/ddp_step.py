#!/usr/bin/env python3
"""ddp_step.py - a data-parallel training step as PyTorch DDP runs it, in mpi4py + numpy.

  mpirun -np P python3 benchmarks/ddp_step.py [--steps 20] [--warmup 3]
      [--buckets 8] [--bucket-mib 2] [--compute-ms 5] [--kernel matmul|spin]
      [--late-rank R --late-ms MS] [--blocking] [--print-steps] [--compute-pu LIST]

A model of --buckets layers, each with one gradient bucket of --bucket-mib MiB
of float32 (default 8 x 2 MiB = 16 MiB).  Every step:

  1. the backward pass runs from the last layer to the first: per layer a
     compute kernel of about --compute-ms, then the layer's gradients are
     written into its bucket and the bucket's MPI_Iallreduce (SUM, in place,
     as DDP's buckets are) is posted at once, so the reductions of the
     layers already done overlap the computation of the next ones;
  2. MPI_Waitall on every bucket's request, which ends the timed step;
  3. the "optimizer": each bucket is divided by the number of ranks (DDP
     averages) and checked exactly against the average the ranks' known
     gradients must give (untimed, so that the check does not dilute the
     comparison of step times).

--blocking posts MPI_Allreduce after each layer instead (no overlap), for
comparison.  --compute-pu LIST (such as 0 or 0,2-3) binds the rank's own
thread to those PUs once MPI has started (SAMPI has read the binding
mpirun gave), so that with SAMPI_PIN naming another PU of that binding the
progress threads have a PU the backward pass does not use, on a machine too
small to give every rank two.  --late-rank R --late-ms MS: rank R sleeps MS at the start of
each step's backward, a straggler whose buckets all come late.

The script itself does not care whether SAMPI is preloaded: run it under
plain Open MPI or with `-x LD_PRELOAD=.../libsampi.so` (and SAMPI_PROGRESS),
as benchmarks/ddp-table does side by side.

Output (rank 0): one line for the configuration,

  ddp_step: np=P mode=iallreduce|allreduce buckets=LxS MiB compute_ms=T
    kernel=K late=R:MS steps=N p50_ms=X mean_ms=Y min_ms=A max_ms=B

where a step's time is the longest of the ranks' times for it (each rank from
the end of a barrier before the step to the end of its Waitall), warm-up
steps left out; with --print-steps a line "ddp_step: steps_ms=t1,t2,..." of
those per-step times; and last the verdict of the checks, agreed by all
ranks:

  ddp_step: np=P, C buckets checked, F failed

Every rank exits 0 when no rank found a wrong bucket, 1 otherwise.
"""

import argparse
import os
import sys
import time
import traceback

# One BLAS thread per rank, as a data-parallel rank has its one device: set
# before numpy loads its BLAS, or a matmul would take every core of the node
# and the ranks (and SAMPI's progress threads) would fight over them.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

# The matrix the matmul kernel multiplies: small enough to stay in cache, so
# its time is the CPU's, not the memory's, and a kernel of a few ms is many
# repetitions (fine-grained calibration).
KERNEL_N = 96


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="ddp_step.py",
        description="A DDP-style training step: per-layer gradient buckets posted "
        "with MPI_Iallreduce as the backward pass produces them.",
    )
    ap.add_argument("--steps", type=int, default=20, help="timed steps (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    ap.add_argument("--buckets", type=int, default=8, help="layers, one bucket each (default 8)")
    ap.add_argument(
        "--bucket-mib",
        type=float,
        default=2.0,
        help="MiB of float32 per bucket (default 2: 16 MiB in all with 8 buckets)",
    )
    ap.add_argument(
        "--compute-ms", type=float, default=5.0, help="backward compute per layer, ms (default 5)"
    )
    ap.add_argument(
        "--kernel",
        choices=("matmul", "spin"),
        default="matmul",
        help="matmul (default): a fixed amount of work calibrated to take --compute-ms, "
        "which takes longer when something else (a progress thread) shares the core; "
        "spin: a busy loop until --compute-ms of wall time passed, whatever shares the core",
    )
    ap.add_argument("--late-rank", type=int, default=-1, help="the straggler's rank (default none)")
    ap.add_argument(
        "--late-ms", type=float, default=0.0, help="its sleep at the start of each backward, ms"
    )
    ap.add_argument(
        "--blocking",
        action="store_true",
        help="MPI_Allreduce after each layer instead of MPI_Iallreduce + MPI_Waitall",
    )
    ap.add_argument(
        "--print-steps", action="store_true", help="also print every timed step's time"
    )
    ap.add_argument(
        "--compute-pu",
        default=None,
        help="bind this rank's thread to these PUs (e.g. 0 or 0,2-3) once MPI has started",
    )
    args = ap.parse_args(argv)
    if args.compute_pu is not None:
        try:
            args.compute_pu = pu_list(args.compute_pu)
        except ValueError:
            ap.error(f"--compute-pu: '{args.compute_pu}' is not a list of PU numbers such as 0 or 0,2-3")
    if args.steps < 1 or args.warmup < 0 or args.buckets < 1:
        ap.error("--steps and --buckets must be at least 1, --warmup at least 0")
    if args.bucket_mib <= 0 or args.compute_ms < 0 or args.late_ms < 0:
        ap.error("--bucket-mib must be positive, --compute-ms and --late-ms not negative")
    return args


def pu_list(text):
    """'0,2-3' -> {0, 2, 3}; ValueError for anything else."""
    pus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        lo, hi = int(lo), int(hi or lo)
        if lo < 0 or hi < lo:
            raise ValueError(text)
        pus.update(range(lo, hi + 1))
    return pus


class Kernel:
    """The backward compute of one layer: about `ms` milliseconds."""

    def __init__(self, comm, kind, ms):
        self.kind = kind
        self.seconds = ms / 1e3
        self.reps = 0
        if kind == "matmul" and ms > 0:
            rng = np.random.default_rng(comm.Get_rank())
            self.a = rng.standard_normal((KERNEL_N, KERNEL_N)).astype(np.float32)
            self.b = rng.standard_normal((KERNEL_N, KERNEL_N)).astype(np.float32)
            self.c = np.empty_like(self.a)
            # Time one matmul, best of several tries (the least disturbed
            # by other load), and take the ranks' fastest: every rank does
            # the same work, as the ranks of a data-parallel job do.
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(20):
                    np.matmul(self.a, self.b, out=self.c)
                best = min(best, (time.perf_counter() - t0) / 20)
            best = comm.allreduce(best, op=MPI.MIN)
            self.reps = max(1, round(self.seconds / best))

    def run(self):
        if self.kind == "matmul":
            for _ in range(self.reps):
                np.matmul(self.a, self.b, out=self.c)
        elif self.seconds > 0:
            end = time.perf_counter() + self.seconds
            while time.perf_counter() < end:
                pass


def offset(rank, layer, step):
    """The constant a rank adds to its gradients of a layer in a step: small
    integers, so that every sum below is exact in float32."""
    return float((rank * 7 + layer * 3 + step) % 17)


def main(argv):
    args = parse_args(argv)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if args.late_rank >= size:
        if rank == 0:
            print(f"ddp_step: --late-rank {args.late_rank} but only {size} ranks", file=sys.stderr)
        return 2

    if args.compute_pu is not None:
        # this thread only (Linux applies it to the caller), after MPI_Init
        try:
            os.sched_setaffinity(0, args.compute_pu)
            bad = 0
        except OSError as e:
            print(f"ddp_step: rank {rank}: --compute-pu: {e}", file=sys.stderr)
            bad = 1
        if comm.allreduce(bad, op=MPI.MAX):
            return 2

    n = max(1, int(args.bucket_mib * (1 << 20)) // 4)
    # The gradients: a pattern shared by all ranks plus a per-rank, per-layer,
    # per-step constant.  Integers from -125 to 141, so that the sum over any
    # practical number of ranks is an exact float32 (below 2^24) and the
    # check can ask for bit-exact equality whatever order the algorithm adds
    # in.
    pattern = (np.arange(n, dtype=np.int64) % 251 - 125).astype(np.float32)
    pattern_sum = pattern * np.float32(size)  # the pattern's part of every sum
    buckets = [np.empty(n, dtype=np.float32) for _ in range(args.buckets)]
    kernel = Kernel(comm, args.kernel, args.compute_ms)
    late = rank == args.late_rank and args.late_ms > 0

    times = np.zeros(args.steps, dtype=np.float64)
    checked = failed = 0
    for step in range(args.warmup + args.steps):
        # A barrier before each step, untimed, so that every step starts
        # together and its time is the step's alone (in a real job the
        # previous step's allreduce synchronises the ranks about as much).
        comm.Barrier()
        t0 = time.perf_counter()
        if late:
            time.sleep(args.late_ms / 1e3)
        requests = []
        # Backward: the last layer's gradients come first.
        for layer in reversed(range(args.buckets)):
            kernel.run()
            np.add(pattern, np.float32(offset(rank, layer, step)), out=buckets[layer])
            if args.blocking:
                comm.Allreduce(MPI.IN_PLACE, buckets[layer], op=MPI.SUM)
            else:
                requests.append(comm.Iallreduce(MPI.IN_PLACE, buckets[layer], op=MPI.SUM))
        MPI.Request.Waitall(requests)
        elapsed = time.perf_counter() - t0
        if step >= args.warmup:
            times[step - args.warmup] = elapsed

        # The optimizer: average, and check against the known average.
        for layer, bucket in enumerate(buckets):
            total = sum(offset(r, layer, step) for r in range(size))
            want = (pattern_sum + np.float32(total)) / np.float32(size)
            got = bucket / np.float32(size)
            checked += 1
            if not np.array_equal(got, want):
                failed += 1
                bad = np.flatnonzero(got != want)
                i = int(bad[0])
                print(
                    f"ddp_step: rank {rank} step {step} layer {layer}: {bad.size} of {n} "
                    f"averaged gradients wrong, first at [{i}]: {got[i]!r}, want {want[i]!r}",
                    file=sys.stderr,
                    flush=True,
                )

    # A step lasts until its last rank finishes it.
    worst = np.zeros_like(times) if rank == 0 else None
    comm.Reduce(times, worst, op=MPI.MAX, root=0)
    checked = comm.allreduce(checked, op=MPI.SUM)
    failed = comm.allreduce(failed, op=MPI.SUM)
    if rank == 0:
        ms = worst * 1e3
        late_txt = f"{args.late_rank}:{args.late_ms:g}ms" if args.late_rank >= 0 else "none"
        mode = "allreduce" if args.blocking else "iallreduce"
        print(
            f"ddp_step: np={size} mode={mode} buckets={args.buckets}x{args.bucket_mib:g}MiB "
            f"compute_ms={args.compute_ms:g} kernel={args.kernel} late={late_txt} "
            f"steps={args.steps} p50_ms={np.median(ms):.2f} mean_ms={ms.mean():.2f} "
            f"min_ms={ms.min():.2f} max_ms={ms.max():.2f}",
            flush=True,
        )
        if args.print_steps:
            print("ddp_step: steps_ms=" + ",".join(f"{t:.3f}" for t in ms), flush=True)
        print(f"ddp_step: np={size}, {checked} buckets checked, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    except Exception:  # noqa: BLE001 - any error: end every rank, not hang the others
        traceback.print_exc()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
    sys.exit(code)
