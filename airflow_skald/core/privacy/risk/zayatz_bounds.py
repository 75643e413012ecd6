"""Zayatz's (1991) estimate, as ARX's ``ModelZayatz`` computes it, over many prefixes of one node's
classes, decided by certain bounds where they decide and by the estimate itself
(`estimators.zayatz`) only where they do not.

A prefix p that leaves sample uniques suppresses p classes of size 1 only (classes ascending
by size), so it leaves c1 = a - p of them and n = m - p records, every other class as it was.
With N the population ARX's pmf uses (`int`, capped at 2^31 - 1) and h(K, n) the chance of
drawing exactly one record of a class of K (hypergeometric: N, K, n), Zayatz's share of
population uniques (estimate / population) is, in exact arithmetic,

    F(p) = c1^2 / (n (c1 + W(n))),   W(n) = sum over the other classes of N h(K, n) / n,

the population size cancelling (h(1, n) = n / N). N h(K, n) / n = K prod_{i<K} (1 - (n-1)/(N-i))
falls as n grows (every factor does, all positive when n + K <= N), so over prefixes whose n
lie in [n_lo, n_hi], W(n_hi) <= W(n) <= W(n_lo): two evaluations of W bound F at every prefix
between them. The bounds are widened by `SLACK` (relative), far more than the rounding of W
and of the estimate (a few 1e-15 a term: commons-math's saddle-point pmf, a sum of at most a
few thousand terms); a prefix whose bounds lie wholly above or below the threshold has the
verdict the estimate would give, and the others get the estimate. The bounds are only used
where h is a normal number at every bound (it is log-concave in n: its least value over an
interval is at an end) and n + K <= N for every class.

The prefixes are bounded all together first (two W evaluations), then those left undecided in
runs of `RUN` (consecutive candidates, one W evaluation per run end): with a large population
nearly every prefix is decided at once; with a small one (W moves more with n) a few more fall
near the threshold and are estimated.
"""

from __future__ import annotations

import numpy as np

from airflow_skald.core.privacy.risk.hypergeometric import probability_one

SLACK = 1e-8  # relative widening of every bound
RUN = 32  # candidates bounded by one pair of W evaluations
TINY = 1e-280  # below this an h is not trusted to its relative rounding (subnormal region)
UNDECIDED, FAILS, HOLDS = -1, 0, 1


def decide(
    values: np.ndarray, counts: np.ndarray, population: float, prefixes: np.ndarray, limit: float
) -> np.ndarray:
    """Per prefix (each < the classes of size 1, `values[0] == 1`): HOLDS where Zayatz's share
    is surely in (0, limit], FAILS where surely not, UNDECIDED where the estimate decides.
    `values`, `counts`: the node's class-size histogram before any prefix. The prefixes are
    bounded first all together (one pair of W evaluations), then those left undecided in runs
    of `RUN`."""
    out = np.full(prefixes.size, UNDECIDED, dtype=np.int8)
    big = values >= 2
    sizes, many = values[big].astype(np.int64), counts[big].astype(np.float64)
    total = min(int(population), 2**31 - 1)
    m = int((values * counts).sum())
    if prefixes.size == 0 or (sizes.size and m + int(sizes[-1]) > total):
        return out
    order = np.argsort(prefixes, kind="stable")
    ranked = prefixes[order]
    verdict = np.full(ranked.size, UNDECIDED, dtype=np.int8)
    for run in (ranked.size, RUN):
        todo = np.flatnonzero(verdict == UNDECIDED)
        if not todo.size:
            break
        got = _bounded(sizes, many, total, m, int(counts[0]), ranked[todo], run, limit)
        if got is None:
            break
        verdict[todo] = got
    out[order] = verdict
    return out


def _bounded(
    sizes: np.ndarray,
    many: np.ndarray,
    total: int,
    m: int,
    a: int,
    ranked: np.ndarray,
    length: int,
    limit: float,
) -> np.ndarray | None:
    """The verdicts the bounds give the prefixes `ranked` (ascending) in runs of `length`
    (None: the bounds are not to be used here)."""
    run = np.arange(ranked.size) // length
    first = ranked[np.r_[0, np.flatnonzero(np.diff(run)) + 1]]  # each run's shortest prefix
    last = ranked[np.r_[np.flatnonzero(np.diff(run)), ranked.size - 1]]  # and longest
    ends = np.unique(np.r_[m - first, m - last])  # the n of every run end
    w, ok = _w(sizes, many, total, ends)
    if not ok:
        return None
    w_low = w[np.searchsorted(ends, m - first)][run] * (1 - SLACK)  # W at the run's largest n
    w_high = w[np.searchsorted(ends, m - last)][run] * (1 + SLACK)  # W at its smallest n
    c1 = (a - ranked).astype(np.float64)
    n = (m - ranked).astype(np.float64)
    lowest = c1 * c1 / (n * (c1 + w_high)) * (1 - SLACK)
    highest = c1 * c1 / (n * (c1 + w_low)) * (1 + SLACK)
    verdict = np.full(ranked.size, UNDECIDED, dtype=np.int8)
    verdict[lowest > limit] = FAILS
    verdict[(highest <= limit) & (lowest > 0)] = HOLDS
    return verdict


def _w(sizes: np.ndarray, many: np.ndarray, total: int, ns: np.ndarray) -> tuple[np.ndarray, bool]:
    """W(n) for each n of `ns` (commons-math's pmf, as the estimate computes it), and whether
    every h is a normal number (else the bounds are not used)."""
    if not sizes.size:
        return np.zeros(ns.size), True
    h = probability_one(total, sizes[None, :], ns[:, None])
    if not (np.isfinite(h).all() and (h > TINY).all()):
        return np.zeros(ns.size), False
    return (many * (total * h)).sum(axis=1) / ns, True
