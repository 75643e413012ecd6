"""The hypergeometric probability of drawing exactly one record of a class, as ARX's Zayatz model
computes it (``ModelZayatz``: commons-math 3.6.1's ``HypergeometricDistribution(N, K, n)
.probability(1)``, i.e. Catherine Loader's saddle-point expansion, ``SaddlePointExpansion``),
over arrays: the same operations in the same order, so the values are commons-math's up to the
last bit of a logarithm or exponential (numpy's against Java's ``FastMath``).

Every argument is an integer (as ARX passes them), so Stirling's error below 15 is always
commons-math's table, never its log-gamma branch.
"""

from __future__ import annotations

import numpy as np

TWO_PI = 2 * np.pi  # MathUtils.TWO_PI
# SaddlePointExpansion.EXACT_STIRLING_ERRORS (at 0, 0.5, 1, ..., 15)
_EXACT_STIRLING = np.array([
    0.0, 0.1534264097200273452913848, 0.0810614667953272582196702,
    0.0548141210519176538961390, 0.0413406959554092940938221, 0.03316287351993628748511048,
    0.02767792568499833914878929, 0.02374616365629749597132920, 0.02079067210376509311152277,
    0.01848845053267318523077934, 0.01664469118982119216319487, 0.01513497322191737887351255,
    0.01387612882307074799874573, 0.01281046524292022692424986, 0.01189670994589177009505572,
    0.01110455975820691732662991, 0.010411265261972096497478567, 0.009799416126158803298389475,
    0.009255462182712732917728637, 0.008768700134139385462952823, 0.008330563433362871256469318,
    0.007934114564314020547248100, 0.007573675487951840794972024, 0.007244554301320383179543912,
    0.006942840107209529865664152, 0.006665247032707682442354394, 0.006408994188004207068439631,
    0.006171712263039457647532867, 0.005951370112758847735624416, 0.005746216513010115682023589,
    0.005554733551962801371038690,
])  # fmt: skip


def stirling_error(z: np.ndarray) -> np.ndarray:
    """getStirlingError at integers z >= 0."""
    z = np.asarray(z, dtype=np.float64)
    small = z < 15.0
    with np.errstate(all="ignore"):
        z2 = z * z
        series = (
            0.083333333333333333333
            - (
                0.00277777777777777777778
                - (
                    0.00079365079365079365079365
                    - (0.000595238095238095238095238 - 0.0008417508417508417508417508 / z2) / z2
                )
                / z2
            )
            / z2
        ) / z
    index = np.where(small & (z >= 0), 2.0 * z, 0).astype(np.int64)  # (z < 0: outside the support)
    return np.where(small, _EXACT_STIRLING[index], series)


def deviance_part(x: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """getDeviancePart(x, mu): its series where |x - mu| < 0.1 (x + mu), summed term by term
    until a term no longer changes the sum (per element, as commons-math's loop), else
    x log(x / mu) + mu - x."""
    x, mu = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(mu, dtype=np.float64))
    with np.errstate(all="ignore"):
        near = np.abs(x - mu) < 0.1 * (x + mu)
        out = x * np.log(x / mu) + mu - x
    idx = np.flatnonzero(near)
    if idx.size:
        xs, ms = x.ravel()[idx], mu.ravel()[idx]
        d = xs - ms
        v = d / (xs + ms)
        s1 = v * d
        ej = 2.0 * xs * v
        v = v * v
        s = np.full(idx.size, np.nan)
        j, live = 1, np.arange(idx.size)
        while live.size:  # one step of every element still summing
            s[live] = s1[live]
            ej[live] = ej[live] * v[live]
            s1[live] = s[live] + ej[live] / (j * 2 + 1)
            j += 1
            live = live[s1[live] != s[live]]
        out = out.copy()
        out.ravel()[idx] = s1
    return out


def log_binomial(x: np.ndarray, n: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """logBinomialProbability(x, n, p, q) over arrays (x, n integers as floats)."""
    x, n, p, q = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (x, n, p, q)))
    with np.errstate(all="ignore"):
        general = (
            stirling_error(n)
            - stirling_error(x)
            - stirling_error(n - x)
            - deviance_part(x, n * p)
            - deviance_part(n - x, n * q)
        )
        general = -0.5 * np.log((TWO_PI * x * (n - x)) / n) + general
        zero = np.where(p < 0.1, -deviance_part(n, n * q) - n * p, n * np.log(q))
        full = np.where(q < 0.1, -deviance_part(n, n * p) - n * q, n * np.log(p))
    return np.where(x == 0, zero, np.where(x == n, full, general))


def probability_one(total: int, good: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """HypergeometricDistribution(total, good, drawn).probability(1) (commons-math 3.6.1):
    0 where 1 is outside the support; NaN where commons-math refuses the distribution
    (good or drawn outside [0, total])."""
    good, drawn = np.broadcast_arrays(
        np.asarray(good, dtype=np.int64), np.asarray(drawn, dtype=np.int64)
    )
    total_f = float(total)
    drawn_f = drawn.astype(np.float64)
    p = drawn_f / total_f
    q = (total - drawn).astype(np.float64) / total_f
    p1 = log_binomial(1, good, p, q)
    p2 = log_binomial(drawn - 1, total - good, p, q)
    p3 = log_binomial(drawn, total, p, q)
    with np.errstate(all="ignore"):
        value = np.exp(p1 + p2 - p3)
    lower = np.maximum(0, good - (total - drawn))
    upper = np.minimum(good, drawn)
    value = np.where((lower > 1) | (upper < 1), 0.0, value)
    refused = (good < 0) | (drawn < 0) | (good > total) | (drawn > total) | (total <= 0)
    return np.where(refused, np.nan, value)
