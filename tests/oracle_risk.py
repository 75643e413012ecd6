"""Naive reference for the risk-based privacy models (docs/design.md §4c), written from docs/design.md alone
(and, where it defers to ARX, from ARX's definitions), sharing no code with the product.

Plain Python, one node, one class, one prefix, one Newton step at a time: the exhaustive
search generalises the raw records at every node (tests/oracle.py), applies the class-based
tests (k, l, t, b-likeness, d-disclosure, k-map's k'), then each sample-based model in order
suppresses the shortest prefix of the classes left (size ascending, then first record) that
makes it hold, walking every prefix; the top node's class is left out of what they see.

The population estimators are scalar ports of ARX's: Zayatz's closed form, Pitman's and the
SNB model's Newton-Raphson (ARX's start value, then its 16 prepared start values, up to 1000
steps each, |F| <= 1e-6), Dankar's rule; an estimate not found is None (unavailable).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from fractions import Fraction

import pandas as pd
from oracle import (
    Criteria,
    _class_distributions,
    _class_ids,
    _lattice,
    _prepare,
    _priority_order,
    max_suppressed,
    precision,
    sensitive_value,
)
from scipy import special, stats

warnings.filterwarnings("ignore", category=RuntimeWarning, module="oracle_risk")

ACC = 1e-6
STARTS = [(a * 0.33, b * 0.33) for a in range(4) for b in range(4)]


def _trigamma(x: float) -> float:
    if x > 0:
        return float(special.polygamma(1, x))
    return (math.pi / math.sin(math.pi * x)) ** 2 - float(special.polygamma(1, 1 - x))


def _newton(fun, start, constraint=None):
    """ARX's NewtonRaphson2D: tries `start`, then STARTS; None if no try converges."""
    total = 0
    for x0 in [start, *STARTS]:
        if total > 17 * 1000:
            break
        x, y = x0
        steps = 0
        while True:
            total += 1
            try:
                (f1, f2), ((a, b), (c, d)) = fun(x, y)
            except (ZeroDivisionError, OverflowError, ValueError):
                break
            if math.isnan(f1) or math.isnan(f2):
                f1 = f2 = math.nan
            if abs(f1) <= ACC and abs(f2) <= ACC:
                return x, y
            det = a * d - b * c
            if det == 0 or math.isnan(det) or math.isinf(det):
                break
            x, y = x - (d * f1 - b * f2) / det, y - (-c * f1 + a * f2) / det
            if math.isnan(x) or math.isnan(y) or steps >= 1000:
                break
            steps += 1
            if constraint is not None and not constraint(x, y):
                break
    return None


def _div(a: float, b: float) -> float:
    """a / b as a double divides (Java): +-inf or NaN for b = 0."""
    if b != 0:
        return a / b
    return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)


def _hist(sizes: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for s in sizes:
        out[s] = out.get(s, 0) + 1
    return out


def zayatz(sizes: list[int], pop: float) -> float | None:
    h, n, u = _hist(sizes), sum(sizes), len(sizes)
    c1 = h.get(1, 0)
    p_int, f = int(pop), n / pop
    temp = sum(cnt / u * stats.hypergeom.pmf(1, p_int, s, n) for s, cnt in h.items())
    cond = (c1 / u) * stats.hypergeom.pmf(1, p_int, 1, n) / temp
    return c1 * cond / f


def pitman(sizes: list[int], pop: float) -> float | None:
    h, n, u = _hist(sizes), float(sum(sizes)), float(len(sizes))
    c1, c2 = h.get(1, 0), h.get(2, 0) or 1
    c = c1 * (c1 - 1) / c2
    t0 = _div(n * u * c - c1 * (n - 1) * (2 * u + c), 2 * c1 * u + c1 * c - n * c)
    a0 = (t0 * (c1 - n) + (n - 1) * c1) / (n * u)
    dg = special.digamma

    def fun(t, a):
        v1 = dg(u + t / a)
        v2 = _trigamma(u + t / a)
        v3 = _trigamma(t / a + 1)
        v4 = dg(t / a + 1)
        o1 = (v1 - v4) / a
        o2 = dg(n + t) - dg(t + 1)
        o3 = (-t * v1 + a * (u - 1) + t * v4) / (a * a)
        o4 = sum(cnt * (dg(s - a) - dg(1 - a)) for s, cnt in h.items() if s != 1)
        d1 = (v3 - v2) / (a * a)
        d2 = _trigamma(t + 1) - _trigamma(n + t)
        d3 = (a * a * (u - 1) - t * t * v2 + t * t * v3 - 2 * a * t * v1 + 2 * a * t * v4) / a**4
        d4 = sum(cnt * (_trigamma(1 - a) - _trigamma(s - a)) for s, cnt in h.items() if s != 1)
        d5 = (a * v1 + t * v2 - a * v4 - t * v3) / a**3
        return (o1 - o2, o3 - o4), ((d2 - d1, -d5), (-d5, -d3 - d4))

    found = _newton(fun, (t0, a0), constraint=lambda t, a: t >= 0)
    if found is None or found[1] == 0:
        return None
    t, a = found
    out = []
    if t + 1 > 0 and t + a > 0:
        with contextlib.suppress(OverflowError):
            out.append(math.exp(math.lgamma(t + 1) - math.lgamma(t + a)) * pop**a)
    with contextlib.suppress(OverflowError, ZeroDivisionError):
        out.append(float(special.gamma(t + 1) / special.gamma(t + a)) * pop**a)
    out = [v for v in out if 0 <= v <= pop]
    return max(out) if out else None


def snb(sizes: list[int], pop: float) -> float | None:
    h, n, u = _hist(sizes), sum(sizes), len(sizes)
    c1, c2 = h.get(1, 0), h.get(2, 0)
    f = n / pop
    v1 = sum(s * f * f * (1 - f * f) ** (s - 1) * cnt for s, cnt in h.items())
    v2 = sum((1 - f) ** s * cnt * (1 + f) ** s - 1 for s, cnt in h.items())
    v3 = sum((1 - f) ** s * cnt for s, cnt in h.items())
    v4 = sum(s * f * (1 - f) ** (s - 1) * cnt for s, cnt in h.items())
    k = u + c1 * (v1 / v2) * (v3 / v4) ** 2

    def pw(x, e):
        if x < 0 and e != int(e):
            return math.nan
        return x**e

    def fun(a, b):
        dv = (1 - f) * (1 - b)
        fx = k * f * pw(b / (1 - dv), a) * (a * dv / (1 - dv) + 1) - c1
        fy = k * a * pw(b, a) * f * f * (1 - b) / 2 * pw(1 - dv, a + 2) * (2 - (1 - a) * dv) - c2
        # ARX's derivative formulas (ModelSNB.getDerivatives), term by term
        w0 = (b - 1) * (f - 1)
        w1, w2 = w0 - 1, 1 - w0
        w3 = a * w0 / w1 - 1
        w4 = pw(-b / w1, a)
        w7 = pw(b, a)
        w9 = a * w7 * f * f * k
        w10 = 2 * pw(w2, a + 2)
        w19 = (a - 1) * w0 + 2
        w20 = f * f * k * w19

        def lg(x):
            return math.log(x) if x > 0 else math.nan

        x1 = -f * k * lg(-b / w1) * w3 * w4 - (f * k * w4 * w0) / w1
        x2 = a * f * k * (1 / w1 - b * (f - 1) / w1**2) * w3 * pw(-b / w1, a - 1) - f * k * w4 * (
            a * (f - 1) / w1 - a * (b - 1) * (f - 1) ** 2 / w1**2
        )
        y1 = (
            w9 * lg(w2) * w19 * (b - 1) / w10
            - w9 * (b - 1) ** 2 * (f - 1) / w10
            - w7 * w20 * (b - 1) / w10
            - a * w7 * f * f * k * lg(b) * w19 * (b - 1) / w10
        )
        y2 = (
            -w9 * w19 / w10
            - a * a * pw(b, a - 1) * w20 * (b - 1) / w10
            - a * w7 * f * f * k * (a - 1) * w0 / w10
            - a * w7 * w20 * (a + 2) * w0 / (2 * pw(w2, a + 3))
        )
        return (fx, fy), ((x1, x2), (y1, y2))

    found = _newton(fun, (1.0, 1.0))
    if found is None:
        return None
    a, b = found
    value = k * pw(b, a)
    return None if math.isnan(value) or value == 0 else value


def uniques(sizes: list[int], pop: float, model: str, fallback: bool) -> float | None:
    """Population uniques (records) by `model`; 0 when no class has size 1."""
    if 1 not in sizes:
        return 0.0
    f = sum(sizes) / pop

    def ok(x):
        return x is not None and not math.isnan(x) and x != 0

    def clean(x):
        return x if ok(x) else None

    if model == "zayatz":
        return clean(zayatz(sizes, pop))
    if model == "pitman":
        return clean(pitman(sizes, pop))
    if model == "snb":
        return clean(snb(sizes, pop))
    if f <= 0.1:
        p = clean(pitman(sizes, pop))
        return p if p is not None or not fallback else clean(zayatz(sizes, pop))
    z, s = clean(zayatz(sizes, pop)), clean(snb(sizes, pop))
    if s is None:
        return z
    return z if z is not None and z < s else s


# ------------------------------------------------------------------------------- models


def population_size(entry: dict, n_input: int) -> float:
    if "population" in entry:
        return float(entry["population"])
    return float(Fraction(n_input) / Fraction(str(entry["sampling_fraction"])))


def k_prime(entry: dict, n_input: int) -> int:
    """ARX's k' of k-map: terms of the (zero-truncated) Poisson distribution summed until
    they reach 1 - alpha, or k; Poisson: one more than the terms; capped at k and N."""
    k = int(entry["k"])
    alpha = float(Fraction(str(entry.get("alpha", "0.01"))))
    lam = n_input / population_size(entry, n_input) * k
    dist = stats.poisson(lam)
    if entry.get("estimator", "poisson") == "poisson":
        counter, value = 0, 0.0
        while value < 1 - alpha:
            value = dist.cdf(counter)
            counter += 1
            if counter >= k:
                break
        out = counter + 1
    else:
        counter, value, rest = 1, 0.0, 1 - dist.pmf(0)
        while value < 1 - alpha:
            value += dist.pmf(counter) / rest
            counter += 1
            if counter >= k:
                break
        out = counter
    return min(k, out, n_input)


def b_likeness_ok(dist: dict, glob: dict, beta: Fraction, variant: str) -> bool:
    n, big_n = sum(dist.values()), sum(glob.values())
    for v, c in dist.items():
        p = Fraction(glob[v], big_n)
        d = (Fraction(c, n) - p) / p
        if d > beta:
            return False
        if variant == "enhanced" and float(d) > -math.log(p):
            return False
    return True


def d_disclosure_ok(dist: dict, glob: dict, delta: Fraction) -> bool:
    n, big_n = sum(dist.values()), sum(glob.values())
    return all(abs(math.log2(Fraction(c * big_n, n * glob[v]))) < delta for v, c in dist.items())


def average_risk_ok(sizes: list[int], entry: dict) -> bool:
    if not sizes:
        return True
    n = sum(sizes)
    if Fraction(len(sizes), n) > Fraction(str(entry["max"])):
        return False
    if "highest" not in entry:
        return True
    h = Fraction(str(entry["highest"]))
    m = math.floor(1 / h)
    if Fraction(1, m) - h >= h / 100:
        m += 1
    small = sum(s for s in sizes if s < m)
    return Fraction(small, n) <= Fraction(str(entry["records_at_risk"]))


def sample_uniqueness_ok(sizes: list[int], entry: dict) -> bool:
    if not sizes:
        return True
    return Fraction(sizes.count(1), sum(sizes)) <= Fraction(str(entry["max"]))


def population_uniqueness_ok(sizes: list[int], entry: dict, n_input: int) -> bool:
    if not sizes or 1 not in sizes:
        return True
    pop = population_size(entry, n_input)
    u = uniques(sizes, pop, entry.get("model", "dankar"), fallback=False)
    return u is not None and 0 < u / pop <= float(Fraction(str(entry["max"])))


# ----------------------------------------------------------------------------- search


def judge(sizes, dists, glob, privacy: dict, limit, n: int, top: bool):
    """(kept class indices, suppressed records) of one node under docs/design.md §4c."""
    criteria: Criteria = privacy["_criteria"]
    kmin = max(
        int(privacy.get("k") or 1), k_prime(privacy["k_map"], n) if "k_map" in privacy else 1
    )
    kept = []
    for i, size in enumerate(sizes):
        if size < kmin:
            continue
        one = {a: d[i] for a, d in dists.items()}
        if criteria and not criteria.keeps(one):
            continue
        if any(
            not b_likeness_ok(one[c["attribute"]], glob[c["attribute"]],
                              Fraction(str(c["beta"])), c.get("variant", "enhanced"))
            for c in privacy.get("b_likeness", [])
        ):  # fmt: skip
            continue
        if any(
            not d_disclosure_ok(
                one[c["attribute"]], glob[c["attribute"]], Fraction(str(c["delta"]))
            )
            for c in privacy.get("d_disclosure", [])
        ):
            continue
        kept.append(i)
    allowed = max_suppressed(limit, n)
    tests = []
    if "average_risk" in privacy:
        tests.append(lambda s: average_risk_ok(s, privacy["average_risk"]))
    if "sample_uniqueness" in privacy:
        tests.append(lambda s: sample_uniqueness_ok(s, privacy["sample_uniqueness"]))
    if "population_uniqueness" in privacy:
        tests.append(lambda s: population_uniqueness_ok(s, privacy["population_uniqueness"], n))
    if tests and not top:
        order = sorted(kept, key=lambda i: (sizes[i], i))  # i: classes by first record
        base = n - sum(sizes[i] for i in kept)
        p = 0
        for test in tests:
            for q in range(p, len(order) + 1):
                if base + sum(sizes[i] for i in order[:q]) > allowed:
                    return [], n  # no prefix within the limit: the node fails
                if test([sizes[i] for i in order[q:]]):
                    p = q
                    break
        gone = set(order[:p])
        kept = [i for i in kept if i not in gone]
    return kept, n - sum(sizes[i] for i in kept)


def exhaustive_risk_search(df: pd.DataFrame, qids, privacy: dict, limit, qid_priority) -> dict:
    """The best node of the whole lattice (least DM*, then precision, then priority)."""
    prepared = _prepare(df, qids)
    privacy = dict(privacy)
    lt = {key: privacy.get(key, []) for key in ("l_diversity", "t_closeness")}
    privacy["_criteria"] = Criteria(**lt, inputs=df)
    attrs = list(
        dict.fromkeys(
            [*privacy["_criteria"].attributes]
            + [
                c["attribute"]
                for key in ("b_likeness", "d_disclosure")
                for c in privacy.get(key, [])
            ]
        )
    )
    glob = {a: _class_distributions([0] * len(df), 1, df[a].tolist())[0] for a in attrs}
    tops = {name: p["top"] for name, p in prepared.items()}
    order = _priority_order(qids, qid_priority)
    n = len(df)
    allowed = max_suppressed(limit, n)
    best, best_key = None, None
    for node in _lattice(tops, None):
        ids = _class_ids(prepared, node)
        sizes = [int(x) for x in pd.Series(ids).value_counts(sort=False).sort_index()]
        dists = {a: _class_distributions(ids, len(sizes), df[a].tolist()) for a in attrs}
        kept, s = judge(sizes, dists, glob, privacy, limit, n, node == tops)
        if s > allowed:
            continue
        ks = [sizes[i] for i in kept]
        key = (
            sum(x * x for x in ks) + s * s,
            -precision(node, tops),
            tuple(node[q] for q in order),
        )
        if best_key is None or key < best_key:
            best_key = key
            kept_set = set(kept)
            best = {
                "node": node,
                "dm_star": key[0],
                "n_suppressed": s,
                "kept_sizes": ks,
                "top": node == tops,
                "suppressed_rows": [r for r, c in enumerate(ids) if c not in kept_set],
            }
    return best or {"node": None}


__all__ = ["exhaustive_risk_search", "sensitive_value", "uniques", "k_prime"]
