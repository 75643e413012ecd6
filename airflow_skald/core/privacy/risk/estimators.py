"""Population-uniqueness estimators as ARX 3.9 computes them (``risk/ModelZayatz``,
``ModelPitman``, ``ModelSNB``, ``RiskModelPopulationUniqueness``), from a class-size histogram.

Every function takes a batch of histograms at once: `counts[b, j]` classes of size `sizes[j]`
in problem b (`sizes` ascending, shared), so the search can ask for many prefixes of one
node's classes in one vectorised solve (`population_uniqueness`). The Newton-Raphson solver is
ARX's (``de.linearbits.newtonraphson.NewtonRaphson2D`` as ``ARXSolverConfiguration`` sets it
up): the model's own start value, then ARX's 16 prepared start values, each tried for up to
1000 iterations, converged when both object functions are within 1e-6 of zero; a try ends on a
NaN or a broken constraint. ARX's wall-clock limits (100 ms a try, 1 s in all) are left out,
so the answer is the same on any machine. An estimate that is not found is NaN ("unavailable");
ARX reports it as 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# scipy is imported where an estimator runs: importing scipy.stats costs ~1-2 s of start-up to
# every run, most of which never estimate population uniqueness (issue 23).

ACCURACY = 1e-6  # ARXSolverConfiguration.getDefaultAccuracy
ITERATIONS_PER_TRY = 1000  # ... getDefaultIterationsPerTry
# A try whose next point equals one of its last CYCLE points (bit for bit) is in a cycle of
# points that did not converge: it would run to ITERATIONS_PER_TRY and fail, so it fails now.
CYCLE = 8
# ARX's prepared tries run in waves of this many ranks (its start values' rows of equal d1):
# on Adult the second or third try wins nearly always, so the twelve after them mostly never run
WAVE = 4


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

MODELS = ("zayatz", "pitman", "snb", "dankar")


def _trigamma_positive(x: np.ndarray) -> np.ndarray:
    """psi'(x) for x > 0: the recurrence psi'(x) = psi'(x + 1) + 1/x^2 up to x >= 6, then the
    asymptotic series (relative error ~1e-9 at x = 6, measured against scipy's polygamma, and
    falling fast as x grows; commons-math, which ARX uses, recurses up to x >= 49, so a value
    can differ from ARX's in its last digits); polygamma(1, x) (Hurwitz zeta) is ~10x slower."""
    x = np.array(x, dtype=np.float64)
    out = np.zeros_like(x)
    low = np.flatnonzero(x < 6)  # the recurrence on these only (the same steps, in order)
    if low.size:
        xl, ol = x[low], out[low]
        for _ in range(6):
            small = xl < 6
            if not small.any():
                break
            ol[small] += 1.0 / (xl[small] * xl[small])
            xl[small] += 1.0
        x[low], out[low] = xl, ol
    return out + _trigamma_series(x)


def _trigamma_series(x: np.ndarray) -> np.ndarray:
    """The asymptotic series of psi'(x), for x >= 6."""
    inv = 1.0 / x
    inv2 = inv * inv
    return inv * (
        1 + inv * (0.5 + inv * (1 / 6 + inv2 * (-1 / 30 + inv2 * (1 / 42 + inv2 * (-1 / 30)))))
    )


def trigamma(x: np.ndarray) -> np.ndarray:
    """psi'(x), for negative non-integers too (reflection), as commons-math's recurrence is."""
    x = np.asarray(x, dtype=np.float64)
    large = x >= 6  # the series alone (the same values as below)
    if large.all():
        return _trigamma_series(x)
    if large.any():
        out = np.empty(x.shape)
        out[large] = _trigamma_series(x[large])
        out[~large] = trigamma(x[~large])
        return out
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        pos = x > 0
        out[pos] = _trigamma_positive(x[pos])
        neg = (x <= 0) & np.isfinite(x)
        if neg.any():
            xn = x[neg]
            out[neg] = (np.pi / np.sin(np.pi * xn)) ** 2 - _trigamma_positive(1 - xn)
    return out


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
    ranks side by side at a time, the earliest converging one winning; a later wave only for
    the problems no earlier try solved (each try's steps are its own: the same answer as all
    sixteen side by side, without running the later ranks while an early one converges).
    ARX's cap of (tries x 1000) iterations in all never cuts a try short (16 failed tries
    take at most 16 x 1001), so it needs no counting here. NaN where no try converges."""
    n_problems = start.shape[1]
    result = _newton(system, start, np.arange(n_problems), np.zeros(n_problems), constraint)
    left = np.flatnonzero(np.isnan(result).any(axis=0))
    starts = np.asarray(START_VALUES, dtype=np.float64).T  # (2, tries)
    for first in range(0, starts.shape[1], WAVE):
        if not left.size:
            break
        wave = starts[:, first : first + WAVE]
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
    return result


@dataclass(frozen=True)
class Histograms:
    """A batch of class-size histograms over shared ascending `sizes`, each with the population
    size it is estimated against."""

    sizes: np.ndarray  # (S,) int, ascending, > 0
    counts: np.ndarray  # (B, S) classes of each size
    population: float  # ARXPopulationModel.getPopulationSize

    @property
    def classes(self) -> np.ndarray:
        return self.counts.sum(axis=1).astype(np.float64)

    @property
    def records(self) -> np.ndarray:
        return (self.counts * self.sizes).sum(axis=1).astype(np.float64)

    def of_size(self, size: int) -> np.ndarray:
        hit = np.flatnonzero(self.sizes == size)
        return self.counts[:, hit[0]].astype(np.float64) if hit.size else np.zeros(len(self))

    @property
    def fraction(self) -> np.ndarray:
        """The sampling fraction: records over the population size."""
        return self.records / self.population

    def __len__(self) -> int:
        return int(self.counts.shape[0])

    @classmethod
    def of(cls, class_sizes: np.ndarray, population: float) -> Histograms:
        """One histogram, of the given class sizes."""
        sizes, counts = np.unique(np.asarray(class_sizes, dtype=np.int64), return_counts=True)
        return cls(sizes, counts[None, :], float(population))


def hypergeom_one(total: int, good: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """scipy.stats.hypergeom.pmf(1, total, good, drawn), the same values: scipy.stats computes
    it with scipy.special's `_hypergeom_pmf` (Boost), called here directly so that a run need
    not import scipy.stats (~1 s); where that gives NaN (outside its domain, or where scipy.stats
    answers 0) scipy.stats answers."""
    good, drawn = np.broadcast_arrays(np.asarray(good), np.asarray(drawn))
    try:
        from scipy.special._ufuncs import _hypergeom_pmf
    except ImportError:  # pragma: no cover - another scipy layout
        _hypergeom_pmf = None
    out = np.full(good.shape, np.nan)
    if _hypergeom_pmf is not None:
        with np.errstate(all="ignore"):
            out = np.asarray(_hypergeom_pmf(1, good, drawn, total), dtype=np.float64)
    bad = np.isnan(out)
    if bad.any():
        from scipy import stats

        out = out.copy()
        out[bad] = stats.hypergeom.pmf(1, total, good[bad], drawn[bad])
    return out


def zayatz(h: Histograms) -> np.ndarray:
    """Zayatz (1991), ModelZayatz: population uniques estimated from the sample uniques and the
    hypergeometric chance of drawing one record of each class size (closed form)."""
    pop = min(int(h.population), 2**31 - 1)  # ARX casts to int (and caps)
    n = np.minimum(h.records.astype(np.int64), 2**31 - 1)
    c = h.classes
    one = hypergeom_one(pop, h.sizes[None, :], n[:, None])  # (B, S)
    temp = (h.counts / c[:, None] * one).sum(axis=1)
    c1 = h.of_size(1)
    with np.errstate(all="ignore"):
        uniqueness = (c1 / c) * hypergeom_one(pop, np.ones_like(n), n) / temp
        return c1 * uniqueness / h.fraction


# Pitman's sums over class sizes, for |alpha| <= 1: the terms i < NEAR directly, the rest as a
# power series in alpha of TERMS terms (each term of it at most 1/NEAR of the one before)
NEAR, TERMS = 8, 20


class SizeSums:
    """For classes of integer sizes s_j >= 2 (`counts` c_j of each, `sizes` ascending), as
    functions of alpha: psi_sum(a) = sum_j c_j (psi(s_j - a) - psi(1 - a)) and
    trigamma_sum(a) = sum_j c_j (psi'(1 - a) - psi'(s_j - a)). By psi(x + 1) = psi(x) + 1/x
    they are sum_{i >= 1} G_i / (i - a) and sum_i G_i / (i - a)^2, G_i the classes of size
    > i: the terms i < NEAR directly, the others by 1/(i - a) = sum_k a^k / i^(k+1), their
    moments M_k = sum_{i >= NEAR} G_i / i^(k+1) summed once per histogram (truncated after
    TERMS: below 1e-18 of the sum for |a| <= 1). No special function per class size and step;
    the same values to rounding. Elsewhere (a Newton try's stray steps) the digamma and
    trigamma differences, as ARX writes them."""

    def __init__(self, sizes: np.ndarray, counts: np.ndarray) -> None:
        self.sizes, self.counts = sizes.astype(np.float64), counts.astype(np.float64)
        top = int(sizes[-1]) if sizes.size else 1
        i = np.arange(1, max(top, NEAR + 1), dtype=np.int64)
        cum = np.r_[0.0, np.cumsum(self.counts)]
        g = cum[-1] - cum[np.searchsorted(sizes, i, side="right")]  # classes of size > i
        self.i_near, self.g_near = i[: NEAR - 1].astype(np.float64), g[: NEAR - 1]
        far, inv = g[NEAR - 1 :], 1.0 / i[NEAR - 1 :].astype(np.float64)
        moments, power = [], inv.copy()
        for _ in range(TERMS + 1):
            moments.append((far * power).sum())
            power *= inv
        m = np.asarray(moments)  # M_0 .. M_TERMS
        self.psi_terms = m[1:]  # of a^1 .. a^TERMS (M_0 added alone)
        self.tri_terms = np.arange(2, TERMS + 1) * m[2:]  # (k+1) M_(k+1) of a^1 .. a^(TERMS-1)
        self.m0, self.m1 = m[0], m[1]

    def __call__(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(psi_sum(a), trigamma_sum(a)) for each a (row by row: a batch's other rows never
        change a row's value)."""
        powers = np.cumprod(np.broadcast_to(a[:, None], (a.size, TERMS)), axis=1)
        r = 1.0 / (self.i_near[None, :] - a[:, None])
        psi_sum = (powers * self.psi_terms).sum(axis=1) + self.m0 + (r * self.g_near).sum(axis=1)
        tri_sum = (powers[:, : TERMS - 1] * self.tri_terms).sum(axis=1) + self.m1
        tri_sum += (r * r * self.g_near).sum(axis=1)
        stray = ~(np.abs(a) <= 1)
        if stray.any() and self.sizes.size:
            from scipy import special

            b = a[stray]
            shifted = (self.sizes[None, :] - b[:, None]).ravel()
            di = special.digamma(np.concatenate([1 - b, shifted]))
            tri = trigamma(np.concatenate([1 - b, shifted]))
            k = b.size
            psi_sum[stray] = (self.counts * (di[k:].reshape(k, -1) - di[:k, None])).sum(axis=1)
            tri_sum[stray] = (self.counts * (tri[:k, None] - tri[k:].reshape(k, -1))).sum(axis=1)
        return psi_sum, tri_sum


def pitman(h: Histograms) -> np.ndarray:
    """Pitman's model (Hoshino 2001), ModelPitman: theta and alpha by Newton-Raphson from ARX's
    start value (closed forms with polygamma functions, theta >= 0), then the uniques."""
    from scipy import special

    c1, c2, u, n = h.of_size(1), h.of_size(2), h.classes, h.records
    c2 = np.where(c2 != 0, c2, 1.0)
    with np.errstate(all="ignore"):
        c = c1 * (c1 - 1) / c2
        t = (n * u * c - c1 * (n - 1) * (2 * u + c)) / (2 * c1 * u + c1 * c - n * c)
        a = (t * (c1 - n) + (n - 1) * c1) / (n * u)
    big = h.sizes != 1
    sizes, counts = h.sizes[big], h.counts[:, big]
    # the prefixes the search asks about remove classes of size 1 only: one shared row
    if len(counts) and (counts == counts[0]).all():
        sums = SizeSums(sizes, counts[0])
        rows_sums = None
    else:
        sums, rows_sums = None, [SizeSums(sizes, row) for row in counts]

    def size_sums(a: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if sums is not None:
            return sums(a)
        out = np.empty((2, a.size))
        for r in np.unique(rows):
            at = rows == r
            out[:, at] = rows_sums[r](a[at])
        return out[0], out[1]

    def system(t: np.ndarray, a: np.ndarray, rows: np.ndarray):
        uu, nn = u[rows], n[rows]
        m = t.size
        val0 = uu - 1
        ta = t / a
        # every digamma and trigamma of the step in one call each (the same values)
        tri = trigamma(np.concatenate([(a + t + a * val0) / a, ta + 1, t + 1, nn + t]))
        val2, val3, tri_t1, tri_nt = tri.reshape(4, m)
        di = special.digamma(np.concatenate([val0 + ta + 1, ta + 1, nn + t, t + 1]))
        val1, val4, di_nt, di_t1 = di.reshape(4, m)
        val5 = a * a
        d1 = (val3 - val2) / val5
        d5 = (a * val1 + t * val2 - a * val4 - t * val3) / (val5 * a)
        tt = t * t
        d3 = (val5 * val0 - tt * val2 + tt * val3 - 2 * a * t * val1 + 2 * a * t * val4) / (
            val5 * val5
        )
        o1 = (val1 - val4) / a
        o3 = (-t * val1 + a * val0 + t * val4) / val5
        o4, d4 = size_sums(a, rows)
        return o1 - (di_nt - di_t1), o3 - o4, (tri_t1 - tri_nt) - d1, -d5, -d5, -d3 - d4

    t, a = solve_batch(system, np.stack([t, a]), constraint=lambda t, a: t >= 0)
    p = h.population
    with np.errstate(all="ignore"):
        ok = ~np.isnan(t) & ~np.isnan(a) & (a != 0)
        log_ok = ok & (t + 1 > 0) & (t + a > 0)
        v1 = np.where(
            log_ok,
            np.exp(
                special.gammaln(np.where(log_ok, t + 1, 1))
                - special.gammaln(np.where(log_ok, t + a, 1))
            )
            * np.power(p, a),
            np.nan,
        )
        v2 = special.gamma(t + 1) / special.gamma(t + a) * np.power(p, a)
    v1 = np.where((v1 >= 0) & (v1 <= p), v1, np.nan)
    v2 = np.where(ok & (v2 >= 0) & (v2 <= p), v2, np.nan)
    return np.where(np.isnan(v1), v2, np.where(np.isnan(v2), v1, np.maximum(v1, v2)))


def snb(h: Histograms) -> np.ndarray:
    """The shifted negative binomial model (Chen 1998), ModelSNB: the number of non-empty
    population classes by Shlosser's estimator, alpha and beta by Newton-Raphson from (1, 1)."""
    c1, c2, u = h.of_size(1), h.of_size(2), h.classes
    f = h.fraction
    s = h.sizes.astype(np.float64)[None, :]
    cnt = h.counts.astype(np.float64)
    ff = f[:, None]
    with np.errstate(all="ignore"):
        v2 = np.power(1 - ff, s) * cnt
        var1 = (s * ff * ff * np.power(1 - ff * ff, s - 1) * cnt).sum(axis=1)
        var2 = (v2 * np.power(1 + ff, s) - 1).sum(axis=1)  # ARX subtracts 1 per size
        var3 = v2.sum(axis=1)
        var4 = (s * ff * np.power(1 - ff, s - 1) * cnt).sum(axis=1)
        k = u + c1 * (var1 / var2) * (var3 / var4) * (var3 / var4)

    def system(a: np.ndarray, b: np.ndarray, rows: np.ndarray):
        kk, fr, n1, n2 = k[rows], f[rows], c1[rows], c2[rows]
        dv = (1 - fr) * (1 - b)
        fx = kk * fr * np.power(b / (1 - dv), a) * ((a * dv) / (1 - dv) + 1) - n1
        fy = (
            kk * a * np.power(b, a) * (fr * fr) * (1 - b) / 2
            * np.power(1 - dv, a + 2) * (2 - (1 - a) * dv)
            - n2
        )  # fmt: skip
        val0 = (b - 1) * (fr - 1)
        val1 = val0 - 1
        val2 = 1 - val0
        val3 = a * val0 / val1 - 1
        val4 = np.power(-b / val1, a)
        val6 = fr * fr
        val7 = np.power(b, a)
        val8 = val7 * val6 * kk
        val9 = a * val8
        val10 = 2 * np.power(val2, a + 2)
        val11 = val1 * val1
        val13 = fr * kk
        val14 = fr - 1
        val15 = a - 1
        val16 = b - 1
        val17 = val15 * val0
        val18 = val6 * kk
        val19 = val17 + 2
        val20 = val18 * val19
        x1 = -val13 * np.log(-b / val1) * val3 * val4 - (val13 * val4 * val0) / val1
        x2 = a * val13 * (1 / val1 - (b * val14) / val11) * val3 * np.power(
            -b / val1, val15
        ) - val13 * val4 * ((a * val14) / val1 - (a * val16 * val14 * val14) / val11)
        y1 = (
            (val9 * np.log(val2) * val19 * val16) / val10
            - (val9 * val16 * val16 * val14) / val10
            - (val7 * val20 * val16) / val10
            - (a * val7 * val18 * np.log(b) * val19 * val16) / val10
        )
        y2 = (
            -(val9 * val19) / val10
            - (a * a * np.power(b, val15) * val20 * val16) / val10
            - (a * val7 * val18 * val17) / val10
            - (a * val7 * val20 * (a + 2) * val0) / (2 * np.power(val2, a + 3))
        )
        return fx, fy, x1, x2, y1, y2

    a, b = solve_batch(system, np.ones((2, len(h))))
    with np.errstate(all="ignore"):
        return k * np.power(b, a)


@dataclass(frozen=True)
class Uniques:
    """Estimated population uniques (records) per model, NaN where unavailable; `dankar` by
    Dankar et al.'s rule and the model it picked (per problem)."""

    zayatz: np.ndarray
    pitman: np.ndarray
    snb: np.ndarray
    dankar: np.ndarray
    dankar_model: np.ndarray  # str per problem


def _valid(x: np.ndarray) -> np.ndarray:
    return ~np.isnan(x) & (x != 0)


def estimate(h: Histograms, models: tuple[str, ...] = MODELS, fallback: bool = True) -> Uniques:
    """The estimates `models` ask for (the others NaN), as RiskModelPopulationUniqueness gives
    them: 0 for every model where no class has size 1. Dankar's rule: at a sampling fraction
    <= 0.1 Pitman (else, with `fallback`, Zayatz); above, the smaller of Zayatz and SNB when
    SNB is available, else Zayatz. Without `fallback` (the privacy model) Dankar is NaN where
    Pitman is."""
    b = len(h)
    c1 = h.of_size(1)
    some = c1 > 0
    small = h.fraction <= 0.1
    need = set(models)
    if "dankar" in need:
        need |= {"pitman", "zayatz", "snb"}
    nan = np.full(b, np.nan)
    out = {}
    for name, fn in (("pitman", pitman), ("snb", snb), ("zayatz", zayatz)):
        if name not in need:
            out[name] = nan
            continue
        rows = some.copy()
        if name == "pitman" and "dankar" in models and name not in models:
            rows &= small
        if name == "snb" and "dankar" in models and name not in models:
            rows &= ~small
        if name == "zayatz" and name not in models:  # Dankar's: above 0.1, or its fallback
            rows &= ~small | (fallback & ~_valid(out["pitman"]))
        value = np.zeros(b)
        if rows.any():
            sub = Histograms(h.sizes, h.counts[rows], h.population)
            value[rows] = fn(sub)
        value[~rows & some] = np.nan
        out[name] = np.where(some, np.where(_valid(value), value, np.nan), 0.0)
    z, p, s = out["zayatz"], out["pitman"], out["snb"]
    if "dankar" in models:
        low = np.where(_valid(p), p, z if fallback else np.nan)
        low_model = np.where(_valid(p), "pitman", "zayatz" if fallback else "none")
        high = np.where(_valid(s), np.where(z < s, z, s), z)
        high_model = np.where(_valid(s), np.where(z < s, "zayatz", "snb"), "zayatz")
        dankar = np.where(small, low, high)
        picked = np.where(small, low_model, high_model)
        dankar = np.where(some, dankar, 0.0)
        picked = np.where(some, picked, "dankar")
    else:
        dankar, picked = nan, np.full(b, "none")
    return Uniques(z, p, s, dankar, picked)
