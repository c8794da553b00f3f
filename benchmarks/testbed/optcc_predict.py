"""optcc_predict.py - what the OptCC model says a run on the testbed should take.

Pure functions, no I/O, in units of T0 (the fault-free ring time, 2(p-1)n/p
element-times on a healthy link), from the OptCC spec (OptCC paper, sections
4.5-4.6 and Theorem 6):

  lower bound (Thm 6):  pl/((p-2)l+2) for l <= 2,  lp/(2(p-1)) for l >= 2
  optcc, k segments:    F_k = l n (k+1)/k                          for l >= 2
                        F_k = 2(p-1) l n/((p-2)l+2) (k+l-1)/k      for l < 2
                        (bubble filling), divided by T0
  ring through the degraded rank: every step waits for its link, l

k is chosen as coll_algos/optcc.c chooses it: the largest multiple of 4 in
[4, 32] that keeps sections (count/(k(p-1)) elements) at least 8 KiB.

Worked example: p = 8, l = 2, 64 MiB of floats: k = 32, bound 16/14 = 1.143,
optcc 1.143 * 33/32 = 1.179, ring 2.
"""

MIN_SECTION_BYTES = 8192
MAX_K = 32


def optcc_k(p, count, extent):
    """Segments optcc uses for count elements of extent bytes on p ranks."""
    per = (p - 1) * MIN_SECTION_BYTES // (extent or 1)
    kk = count // per if per else MAX_K
    if kk > MAX_K:
        return MAX_K
    if kk < 4:
        return 4
    return kk // 4 * 4


def lower_bound(p, l):
    """Theorem 6 lower bound on T/T0 for one rank slowed down by l."""
    if l <= 2:
        return p * l / ((p - 2) * l + 2)
    return l * p / (2.0 * (p - 1))


def optcc_model(p, l, k):
    """F_k/T0: the schedule's time in the model (latency ignored)."""
    t0 = 2.0 * (p - 1) / p
    if l >= 2:
        f = l * (k + 1.0) / k
    else:
        f = 2.0 * (p - 1) * l / ((p - 2) * l + 2) * (k + l - 1.0) / k
    return f / t0


def ring_model(p, l):
    """A ring through the degraded rank: each of its 2(p-1) steps waits l."""
    return float(l)


def model_for(algo, p, l, k):
    """Model T/T0 for what ran (sampi_bench's "ran" name); None: no model."""
    if algo == "optcc":
        return optcc_model(p, l, k)
    if algo == "ring":
        return ring_model(p, l)
    return None
