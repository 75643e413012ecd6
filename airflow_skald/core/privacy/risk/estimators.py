"""Population-uniqueness estimators as ARX 3.9 computes them (``risk/ModelZayatz``,
``ModelPitman``, ``ModelSNB``, ``RiskModelPopulationUniqueness``), from a class-size histogram.

Every function takes a batch of histograms at once: `counts[b, j]` classes of size `sizes[j]`
in problem b (`sizes` ascending, shared), so the search can ask for many prefixes of one
node's classes in one vectorised solve (`population_uniqueness`). Pitman's model is in
`pitman`, the Newton-Raphson solver (ARX's) in `newton`. An estimate that is not found is NaN
("unavailable"); ARX reports it as 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from airflow_skald.core.privacy.risk.histograms import Histograms
from airflow_skald.core.privacy.risk.hypergeometric import probability_one
from airflow_skald.core.privacy.risk.newton import solve_batch
from airflow_skald.core.privacy.risk.pitman import pitman

# scipy is imported where an estimator runs (Pitman): importing scipy costs start-up to every
# run, most of which never estimate population uniqueness (issue 23).

MODELS = ("zayatz", "pitman", "snb", "dankar")
__all__ = ["MODELS", "Histograms", "estimate"]


def zayatz(h: Histograms) -> np.ndarray:
    """Zayatz (1991), ModelZayatz: population uniques estimated from the sample uniques and the
    hypergeometric chance of drawing one record of each class size (closed form), computed as
    ARX computes it: commons-math's pmf (`hypergeometric.probability_one`, the population and
    the records cast to int), the terms summed size by size in ascending order."""
    pop = min(int(h.population), 2**31 - 1)  # ARX casts to int (and caps)
    n = np.minimum(h.records.astype(np.int64), 2**31 - 1)
    c = h.classes
    one = probability_one(pop, h.sizes[None, :], n[:, None])  # (B, S)
    with np.errstate(all="ignore"):
        terms = np.where(h.counts > 0, h.counts / c[:, None] * one, 0.0)
        temp = np.cumsum(terms, axis=1)[:, -1]  # ARX's loop: a sum in order, not pairwise
        c1 = h.of_size(1)
        uniqueness = (c1 / c) * probability_one(pop, 1, n) / temp
        return c1 * uniqueness / h.fraction


def snb(h: Histograms) -> np.ndarray:
    """The shifted negative binomial model (Chen 1998), ModelSNB: the number of non-empty
    population classes by Shlosser's estimator, alpha and beta by Newton-Raphson from (1, 1)."""
    c1, c2, f = h.of_size(1), h.of_size(2), h.fraction
    k = _shlosser(h, c1)
    a, b = solve_batch(partial(_snb_system, k, f, c1, c2), np.ones((2, len(h))))
    with np.errstate(all="ignore"):
        return k * np.power(b, a)


def _shlosser(h: Histograms, c1: np.ndarray) -> np.ndarray:
    """Shlosser's estimate of the non-empty population classes (ModelSNB's K)."""
    u, f = h.classes, h.fraction
    s = h.sizes.astype(np.float64)[None, :]
    cnt = h.counts.astype(np.float64)
    ff = f[:, None]
    with np.errstate(all="ignore"):
        v2 = np.power(1 - ff, s) * cnt
        var1 = (s * ff * ff * np.power(1 - ff * ff, s - 1) * cnt).sum(axis=1)
        var2 = (v2 * np.power(1 + ff, s) - 1).sum(axis=1)  # ARX subtracts 1 per size
        var3 = v2.sum(axis=1)
        var4 = (s * ff * np.power(1 - ff, s - 1) * cnt).sum(axis=1)
        return u + c1 * (var1 / var2) * (var3 / var4) * (var3 / var4)


def _snb_system(
    k: np.ndarray,
    f: np.ndarray,
    c1: np.ndarray,
    c2: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    rows: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """ModelSNB's two equations in (alpha, beta) and their partial derivatives, for `rows`."""
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
