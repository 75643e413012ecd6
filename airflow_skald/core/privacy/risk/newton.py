"""ARX's Newton-Raphson solver (``de.linearbits.newtonraphson.NewtonRaphson2D`` as
``ARXSolverConfiguration`` sets it up) over a batch of problems: the model's own start value,
then ARX's 16 prepared start values, each tried for up to 1000 iterations, converged when both
object functions are within 1e-6 of zero; a try ends on a NaN or a broken constraint. ARX's
wall-clock limits (100 ms a try, 1 s in all) are left out, so the answer is the same on any
machine. An answer that is not found is NaN ("unavailable")."""

from __future__ import annotations

import numpy as np

ACCURACY = 1e-6  # ARXSolverConfiguration.getDefaultAccuracy
ITERATIONS_PER_TRY = 1000  # ... getDefaultIterationsPerTry
# A try whose next point equals one of its last CYCLE points (bit for bit) is in a cycle of
# points that did not converge: it would run to ITERATIONS_PER_TRY and fail, so it fails now.
CYCLE = 8
# ARX's prepared tries run in waves of this many ranks (its start values' rows of equal d1):
# on Adult the second or third try wins nearly always, so the twelve after them mostly never run;
# one rank at a time once MANY problems are left (a step then costs by the tries it carries)
WAVE = 4
MANY = 64


def _start_values() -> list[tuple[float, float]]:
    """ARXSolverConfiguration.getDefaultStartValues: d1, d2 = 0, 0.33, ... (<1), summed as ARX
    sums them (in doubles)."""
    out, d1 = [], 0.0
    while d1 < 1.0:
        d2 = 0.0
        while d2 < 1.0:
            out.append((d1, d2))
            d2 += 0.33
        d1 += 0.33
    return out


START_VALUES = _start_values()


def _newton(
    system, x: np.ndarray, problem: np.ndarray, attempt: np.ndarray, constraint=None
) -> np.ndarray:
    """NewtonRaphson2D's tries side by side: `x` (2, m) start points of the problems `problem`
    (m,), `attempt` (m,) each try's rank among its problem's. A try runs up to
    ITERATIONS_PER_TRY steps, converged when both object functions are within ACCURACY of zero,
    ended on a NaN or a broken constraint, and stopped once a try of lower rank of its problem
    converged (it cannot be the answer). Returns the converged points (NaN elsewhere).
    The tries still running are kept packed (their points, problems, ranks and last CYCLE
    points), repacked only when some end: a step costs as many array operations whether
    thousands of tries run or the last few that neither converge nor fail."""
    found = np.full(x.shape, np.nan)
    won = np.full(int(problem.max(initial=-1)) + 1, np.iinfo(np.int64).max)
    at = np.arange(x.shape[1])
    t, a = np.array(x[0], dtype=np.float64), np.array(x[1], dtype=np.float64)
    prob, rank = problem, attempt
    seen = np.full((CYCLE, 2, at.size), np.nan)  # the last CYCLE points of each try
    steps = 0
    with np.errstate(all="ignore"):
        while at.size:
            f0, f1, j00, j01, j10, j11 = system(t, a, prob)
            done = (np.abs(f0) <= ACCURACY) & (np.abs(f1) <= ACCURACY)
            if done.any():
                hit = at[done]
                found[0, hit], found[1, hit] = t[done], a[done]
                np.minimum.at(won, prob[done], rank[done])
            det = j00 * j11 - j01 * j10
            dx = (j11 * f0 - j01 * f1) / det
            dy = (-j10 * f0 + j00 * f1) / det
            nt, na = t - dx, a - dy
            slot = seen[steps % CYCLE]
            slot[0], slot[1] = t, a
            # a point met before (bit for bit) repeats the cycle since: never converges
            cycle = ((seen[:, 0] == nt) & (seen[:, 1] == na)).any(axis=0)
            failed = done | np.isnan(nt) | np.isnan(na) | cycle | (steps >= ITERATIONS_PER_TRY)
            if constraint is not None:
                failed |= ~constraint(nt, na)
            t, a = nt, na
            if failed.any():  # (a try of lower rank converges only then: `won` changes)
                keep = ~failed & (rank < won[prob])
                at, t, a, prob, rank = at[keep], t[keep], a[keep], prob[keep], rank[keep]
                seen = seen[:, :, keep]
            steps += 1
    return found


def solve_batch(system, start: np.ndarray, constraint=None) -> np.ndarray:
    """ARX's NewtonRaphson2D over a batch of problems: `system(x0, x1, rows)` returns the
    object functions F0, F1 and the Jacobian's J00, J01, J10, J11 (each (m,)) at the points
    (x0, x1) of the problems `rows`; `constraint(x0, x1)` whether a step's point is allowed.
    The answer of a problem is its first try, in ARX's order (the given start value (2, B),
    then START_VALUES), that converges. The model's own start value is tried first for every
    problem (it usually converges); only the problems it fails get the prepared tries, WAVE
    ranks side by side at a time (one once MANY problems are left), the earliest converging one
    winning; a later wave only for
    the problems no earlier try solved (each try's steps are its own: the same answer as all
    sixteen side by side, without running the later ranks while an early one converges).
    ARX's cap of (tries x 1000) iterations in all never cuts a try short (16 failed tries
    take at most 16 x 1001), so it needs no counting here. NaN where no try converges."""
    n_problems = start.shape[1]
    result = _newton(system, start, np.arange(n_problems), np.zeros(n_problems), constraint)
    left = np.flatnonzero(np.isnan(result).any(axis=0))
    starts = np.asarray(START_VALUES, dtype=np.float64).T  # (2, tries)
    first = 0
    while first < starts.shape[1] and left.size:
        wave = starts[:, first : first + (1 if left.size >= MANY else WAVE)]
        n_tries = wave.shape[1]
        x = np.repeat(wave[:, None, :], left.size, axis=1).reshape(2, -1)
        problem = np.repeat(left, n_tries)  # try t of left[i] at i * n_tries + t
        attempt = np.tile(np.arange(n_tries), left.size)
        found = _newton(system, x, problem, attempt, constraint).reshape(2, left.size, n_tries)
        ok = ~np.isnan(found).any(axis=0)  # (left, tries)
        first_ok = np.argmax(ok, axis=1)
        hit = ok.any(axis=1)
        result[:, left[hit]] = found[:, np.flatnonzero(hit), first_ok[hit]]
        left = left[~hit]
        first += n_tries
    return result
