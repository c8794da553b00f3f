#!/usr/bin/env python3
"""iallreduce_mpi4py.py - MPI_Iallreduce from Python (mpi4py + numpy), as
data-parallel frameworks post it, checked against a reference that uses no
MPI at all.

  mpirun -np P python3 test/mpi/iallreduce_mpi4py.py

Every rank's values are a known function of its rank, so each rank computes
the whole reduction with numpy by itself (the reference: no PMPI in it), and
checks against it

  matrix    comm.Iallreduce for float64, float32, int32 and int64 with SUM,
            MAX and MIN, counts 1 to 65537, not in place (the send buffer
            must come back unchanged) and in place (MPI.IN_PLACE); the calls
            of one datatype and op are all outstanding at once, completed by
            one MPI_Waitall after some numpy work; each result is also
            compared with comm.Allreduce's on the same values;
  mixed     an Iallreduce completed by one Waitall together with a ring of
            Isend/Irecv requests;
  test      an Iallreduce completed by a loop of MPI_Test around numpy work.

The values are small integers, so every sum is exact in float32 too and
every comparison is bit-exact whatever order an algorithm adds in.

Output: a line per failed case (any rank), then on rank 0

  iallreduce_mpi4py: np=P, N cases, F failed

with F the failures of all ranks (agreed by an allreduce of the counts), and
every rank exits 1 when F > 0, 0 otherwise.  An unexpected exception aborts
the job (exit status not 0), so that no rank waits forever on the others.
"""

import sys
import traceback

import numpy as np
from mpi4py import MPI

DTYPES = (np.float64, np.float32, np.int32, np.int64)
OPS = (("SUM", MPI.SUM), ("MAX", MPI.MAX), ("MIN", MPI.MIN))
COUNTS = (1, 7, 1000, 65537)

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
cases = 0
failed = 0


def values(r, n, seed, dtype):
    """Rank r's n values for the call `seed`: integers from -40 to 56."""
    i = np.arange(n, dtype=np.int64)
    return ((i * 7 + seed * 13 + r * 31) % 97 - 40).astype(dtype)


def reference(opname, n, seed, dtype):
    """The reduction over every rank's values, by numpy alone."""
    every = np.stack([values(r, n, seed, np.int64) for r in range(size)])
    if opname == "SUM":
        out = every.sum(axis=0)
    elif opname == "MAX":
        out = every.max(axis=0)
    else:
        out = every.min(axis=0)
    return out.astype(dtype)


def verdict(label, ok, detail=""):
    global cases, failed
    cases += 1
    if not ok:
        failed += 1
        print(f"iallreduce_mpi4py: rank {rank}: FAIL {label}{': ' + detail if detail else ''}",
              flush=True)


def mismatch(got, want):
    """'' when equal, else where they first differ."""
    if np.array_equal(got, want):
        return ""
    bad = np.flatnonzero(got != want)
    i = int(bad[0])
    return f"{bad.size} of {want.size} elements differ, first [{i}]: {got[i]!r}, want {want[i]!r}"


def busy_numpy():
    """Some numpy work while requests are pending, as a training step computes."""
    a = np.arange(40000, dtype=np.float64)
    for _ in range(20):
        a = np.sqrt(a * a + 1.0)
    return a


def matrix():
    seed = 0
    for dtype in DTYPES:
        name = np.dtype(dtype).name
        for opname, op in OPS:
            for in_place in (False, True):
                # Post every count's call, then complete them together.
                posted = []
                for n in COUNTS:
                    seed += 1
                    send = values(rank, n, seed, dtype)
                    if in_place:
                        buf = send.copy()
                        req = comm.Iallreduce(MPI.IN_PLACE, buf, op=op)
                    else:
                        buf = np.full(n, 99, dtype=dtype)  # overwritten by the call
                        req = comm.Iallreduce(send, buf, op=op)
                    posted.append((n, seed, send, buf, req))
                busy_numpy()
                MPI.Request.Waitall([p[4] for p in posted])
                for n, seed_n, send, buf, _ in posted:
                    label = f"{name} {opname} count={n} {'in place' if in_place else 'out of place'}"
                    # The blocking call on the same values, on every rank
                    # whatever this rank found so far: a collective that
                    # only some ranks make would hang the others.
                    blocking = np.empty(n, dtype=dtype)
                    comm.Allreduce(values(rank, n, seed_n, dtype), blocking, op=op)
                    why = mismatch(buf, reference(opname, n, seed_n, dtype))
                    if not why and not in_place:
                        why = mismatch(send, values(rank, n, seed_n, dtype))
                        why = why and "send buffer changed: " + why
                    if not why:
                        why = mismatch(buf, blocking)
                        why = why and "differs from comm.Allreduce: " + why
                    verdict(label, not why, why)


def mixed():
    n = 4099
    send = values(rank, n, 1000, np.float64)
    out = np.empty(n, dtype=np.float64)
    right, left = (rank + 1) % size, (rank - 1) % size
    token = np.array([rank * 10 + 1], dtype=np.int32)
    got = np.zeros(1, dtype=np.int32)
    reqs = [
        comm.Irecv(got, source=left, tag=7),
        comm.Iallreduce(send, out, op=MPI.SUM),
        comm.Isend(token, dest=right, tag=7),
    ]
    busy_numpy()
    MPI.Request.Waitall(reqs)
    why = mismatch(out, reference("SUM", n, 1000, np.float64))
    if not why and got[0] != left * 10 + 1:
        why = f"point-to-point message {got[0]}, want {left * 10 + 1}"
    verdict("mixed with Isend/Irecv in one Waitall", not why, why)


def test_loop():
    n = 30011
    buf = values(rank, n, 2000, np.int32)
    req = comm.Iallreduce(MPI.IN_PLACE, buf, op=MPI.MAX)
    turns = 0
    while not req.Test():
        busy_numpy()
        turns += 1
    why = mismatch(buf, reference("MAX", n, 2000, np.int32))
    verdict(f"completed by MPI_Test ({turns} turns of numpy work)", not why, why)


def main():
    if rank == 0:
        print(f"iallreduce_mpi4py: python {sys.version.split()[0]}, numpy {np.__version__}, "
              f"mpi4py from {MPI.__file__}, thread level {MPI.Query_thread()}", flush=True)
    matrix()
    mixed()
    test_loop()
    total = comm.allreduce(failed, op=MPI.SUM)
    if rank == 0:
        print(f"iallreduce_mpi4py: np={size}, {cases} cases, {total} failed", flush=True)
    return 1 if total else 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception:  # noqa: BLE001 - any error: end every rank, not hang the others
        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(1)
    sys.exit(code)
