"""Pitman's model (Hoshino 2001) as ARX 3.9 computes it (``risk/ModelPitman``): theta and
alpha by ARX's Newton-Raphson solver (`newton`) from the model's start value, then the
population uniques. `pitman_system` gives the object functions and start values alone, so that
`pitman_filter` can look for the same roots without ARX's tries."""

from __future__ import annotations

import numpy as np

from airflow_skald.core.privacy.risk.histograms import Histograms
from airflow_skald.core.privacy.risk.newton import solve_batch

#: Euler-Mascheroni's constant; below SMALL psi(x) = -gamma - 1/x; from SERIES on, the series
EULER, DIGAMMA_SMALL, DIGAMMA_SERIES = 0.5772156649015329, 1e-5, 16.0
#: the asymptotic series' coefficients of x^-2, x^-4, ..., x^-12 (B_2n / 2n)
DIGAMMA_TERMS = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760)


def digamma(x: np.ndarray) -> np.ndarray:
    """psi(x), elementwise and vectorised: reflection for x < 0, -gamma - 1/x near 0, the
    recurrence psi(x) = psi(x + 1) - 1/x up to x >= 16, then the asymptotic series to x^-12
    (truncation below 1e-17 there). The same values as scipy's digamma to ~1e-15 relative,
    without scipy's import (~0.4 CPU-s of every run that reports the risk analysis).
    commons-math's `Gamma.digamma` (ARX's) recurses to 49 and writes its x^-4 term with the
    wrong sign (~3e-9 absolute near 49); the product keeps the exact function, as before."""
    x = np.array(x, dtype=np.float64)
    x0, out = x.copy(), np.zeros_like(x)
    with np.errstate(all="ignore"):
        neg = x < 0
        if neg.any():
            xn = x[neg]  # tan has period pi: its argument reduced exactly first
            out[neg] -= np.pi / np.tan(np.pi * (xn - np.round(xn)))
            x[neg] = 1 - x[neg]
        tiny = (x > 0) & (x <= DIGAMMA_SMALL)
        low = np.flatnonzero(~tiny & (x < DIGAMMA_SERIES))
        if low.size:  # the recurrence on these only
            xl, ol = x[low], out[low]
            for _ in range(int(DIGAMMA_SERIES) + 1):
                small = xl < DIGAMMA_SERIES
                if not small.any():
                    break
                ol[small] -= 1.0 / xl[small]
                xl[small] += 1.0
            x[low], out[low] = xl, ol
        inv = 1.0 / (x * x)
        tail = np.zeros_like(x)
        for c in reversed(DIGAMMA_TERMS):
            tail = inv * (c + tail)
        series = np.log(x) - 0.5 / x - tail
        out = np.where(tiny, out - EULER - 1.0 / x, out + series)
        return np.where(np.isinf(x0), x0, out)


#: Stirling's series of log Gamma: the coefficients of z^-1, z^-3, ..., z^-9 (from z >= 16 on)
LGAMMA_TERMS = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188)
HALF_LOG_2PI = 0.9189385332046728


def _lgamma_positive(x: np.ndarray) -> np.ndarray:
    """log Gamma(x) for x >= 1/2: shifted up to z >= 16 (log Gamma(x) = log Gamma(z) - log of
    x (x + 1) ... (z - 1), a product below 16! that cannot overflow), then Stirling's series
    (truncation below 1e-16 there)."""
    z, shift = x.copy(), np.ones_like(x)
    for _ in range(int(DIGAMMA_SERIES)):
        low = z < DIGAMMA_SERIES
        if not low.any():
            break
        shift[low] *= z[low]
        z[low] += 1.0
    inv, series = 1.0 / z, np.zeros_like(z)
    for c in reversed(LGAMMA_TERMS):
        series = series * inv * inv + c
    return (z - 0.5) * np.log(z) - z + HALF_LOG_2PI + series * inv - np.log(shift)


def gammaln(x: np.ndarray) -> np.ndarray:
    """log |Gamma(x)|, vectorised, with scipy's gammaln's values (~1e-15) and edges (inf at
    0, -1, -2, ... and +inf; -inf at -inf): reflection below 1/2, the argument reduced exactly
    for the sine."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        pole = (x <= 0) & (x == np.floor(x))
        right = (x >= 0.5) & np.isfinite(x)
        left = (x < 0.5) & ~pole & np.isfinite(x)
        out[right] = _lgamma_positive(x[right])
        xl = x[left]
        sine = np.abs(np.sin(np.pi * (xl - np.round(xl))))
        out[left] = np.log(np.pi) - np.log(sine) - _lgamma_positive(1.0 - xl)
        out[pole | (x == np.inf)] = np.inf
        out[x == -np.inf] = -np.inf
    return out


def gamma(x: np.ndarray) -> np.ndarray:
    """Gamma(x), vectorised: its sign times exp(gammaln), scipy's gamma's values (~1e-13
    relative near overflow, less below) and edges (+-inf at +-0, NaN at -1, -2, ... and -inf,
    inf from ~171.6 on)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        odd = np.mod(np.floor(x), 2) != 0
        sign = np.where((x < 0) & odd, -1.0, 1.0)
        out = sign * np.exp(gammaln(x))
        out = np.where((x < 0) & (x == np.floor(x)), np.nan, out)
        out = np.where(x == 0, np.copysign(np.inf, x), out)
    return out


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
    """psi'(x), for negative non-integers too (reflection), as commons-math's recurrence is.
    The series is taken of every value and kept where x >= 6; the others are redone below
    (elementwise: the same values as taking each branch on its own values)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        out = _trigamma_series(x)
        small = ~(x >= 6)
        if not small.any():
            return out
        xs = x[small]
        values = np.full(xs.shape, np.nan)
        pos = xs > 0
        if pos.any():
            values[pos] = _trigamma_positive(xs[pos])
        neg = (xs <= 0) & np.isfinite(xs)
        if neg.any():
            xn = xs[neg]
            values[neg] = (np.pi / np.sin(np.pi * xn)) ** 2 - _trigamma_positive(1 - xn)
        out[small] = values
    return out


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
        powers = np.cumprod(np.repeat(a[:, None], TERMS, axis=1), axis=1)
        r = 1.0 / (self.i_near[None, :] - a[:, None])
        psi_sum = (powers * self.psi_terms).sum(axis=1) + self.m0 + (r * self.g_near).sum(axis=1)
        tri_sum = (powers[:, : TERMS - 1] * self.tri_terms).sum(axis=1) + self.m1
        tri_sum += (r * r * self.g_near).sum(axis=1)
        stray = ~(np.abs(a) <= 1)
        if stray.any() and self.sizes.size:
            b = a[stray]
            shifted = (self.sizes[None, :] - b[:, None]).ravel()
            di = digamma(np.concatenate([1 - b, shifted]))
            tri = trigamma(np.concatenate([1 - b, shifted]))
            k = b.size
            psi_sum[stray] = (self.counts * (di[k:].reshape(k, -1) - di[:k, None])).sum(axis=1)
            tri_sum[stray] = (self.counts * (tri[:k, None] - tri[k:].reshape(k, -1))).sum(axis=1)
        return psi_sum, tri_sum


def pitman(h: Histograms) -> np.ndarray:
    """Pitman's model (Hoshino 2001), ModelPitman: theta and alpha by Newton-Raphson from ARX's
    start value (closed forms with polygamma functions, theta >= 0), then the uniques."""
    system, start = pitman_system(h)
    t, a = solve_batch(system, start, constraint=lambda t, a: t >= 0)
    return pitman_uniques(t, a, h.population)


def pitman_system(h: Histograms):
    """ModelPitman's object functions and Jacobian as `newton` takes them (`system(t, a, rows)`
    for the problems `rows` of `h`) and its start values (2, B)."""
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
        di = digamma(np.concatenate([val0 + ta + 1, ta + 1, nn + t, t + 1]))
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

    return system, np.stack([t, a])


def pitman_uniques(t: np.ndarray, a: np.ndarray, p: float) -> np.ndarray:
    """The population uniques at Pitman's theta `t` and alpha `a` (NaN where not found or out
    of [0, p]), for a population of `p`."""
    with np.errstate(all="ignore"):
        ok = ~np.isnan(t) & ~np.isnan(a) & (a != 0)
        log_ok = ok & (t + 1 > 0) & (t + a > 0)
        v1 = np.where(
            log_ok,
            np.exp(gammaln(np.where(log_ok, t + 1, 1)) - gammaln(np.where(log_ok, t + a, 1)))
            * np.power(p, a),
            np.nan,
        )
        v2 = gamma(t + 1) / gamma(t + a) * np.power(p, a)
    v1 = np.where((v1 >= 0) & (v1 <= p), v1, np.nan)
    v2 = np.where(ok & (v2 >= 0) & (v2 <= p), v2, np.nan)
    return np.where(np.isnan(v1), v2, np.where(np.isnan(v2), v1, np.maximum(v1, v2)))
