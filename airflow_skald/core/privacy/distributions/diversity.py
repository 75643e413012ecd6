"""l-diversity over per-class distributions (docs/design.md §4b): distinct, entropy and recursive (c,l),
decided exactly (see the package's docstring)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

import numpy as np

from airflow_skald.core.privacy.distributions.class_values import (
    EPS,
    INT64_SAFE,
    ClassValues,
    Verdict,
    as_fraction,
)

_BIGINT_BITS = 1 << 17  # entropy ties: compare the integer powers directly up to this many bits
_TOP_BY_PASSES = 2  # recursive (c,l): the l-1 largest counts by repeated maxima up to this l-1


def _check_l(ell: int) -> int:
    if isinstance(ell, bool) or int(ell) != ell or ell < 1:
        raise ValueError(f"l must be a positive integer, got {ell!r}")
    return int(ell)


def distinct_l(cv: ClassValues, ell: int) -> Verdict:
    """Distinct l-diversity: m >= l. Figure: the distinct count m (int64)."""
    m = cv.distinct()
    return Verdict(m >= _check_l(ell), m.copy())


def entropy_l(cv: ClassValues, ell: int) -> Verdict:
    """Entropy l-diversity: -sum p ln p >= ln l, decided as l^n * prod n_i^n_i <= n^n.

    Figure: exp(entropy), the class's "effective number of values" (nan for an empty class).
    A class spread evenly over exactly l values passes (its entropy is exactly ln l).
    """
    ell = _check_l(ell)
    n = cv.sizes()
    m = cv.distinct()
    nf = n.astype(np.float64)
    c = cv.count.astype(np.float64)
    s = cv.class_sum(c * np.log(c))  # sum n_i ln n_i
    with np.errstate(divide="ignore", invalid="ignore"):
        ln_n = np.log(nf)
        entropy = ln_n - s / nf
        figure = np.exp(entropy)
        ln_l = math.log(ell)
        slack = nf * (ln_n - ln_l) - s  # >= 0 iff the class passes
        bound = 8 * EPS * (m + 4) * nf * (ln_n + ln_l + 1)
    ok = (m >= ell) & (slack >= 0)
    # a class spread evenly over its m values has entropy exactly ln m: it passes when m >= l
    # (decided here, vectorised: the commonest exact ties, e.g. two records of two values),
    # and its figure is m itself, not a float a hair above or below (an auditor reads it)
    spread = (n > 0) & (cv.class_max(cv.count, 0) == -cv.class_max(-cv.count, 0))
    figure[spread] = m[spread]
    # other classes whose entropy l is exactly a whole number q (counts 8,1,1,1,1: exactly 3)
    with np.errstate(invalid="ignore"):
        whole = np.rint(figure)
        near = np.flatnonzero(~spread & (np.abs(figure - whole) <= 1e-9 * whole))
    for i in near.tolist():
        if entropy_l_is(cv.distribution(i).values(), int(whole[i])):
            figure[i] = whole[i]
    even = (m >= ell) & spread
    ok |= even
    near = np.flatnonzero((m >= ell) & (np.abs(slack) <= bound) & ~even)
    for i in near.tolist():
        ok[i] = entropy_passes_exact(cv.distribution(i).values(), ell)
    return Verdict(ok, figure)


def entropy_l_is(counts: Iterable[int], q: int) -> bool:
    """Exactly whether counts n_1..n_m (n their sum) have entropy l = q, i.e. entropy ln q:
    q^n * prod n_i^n_i == n^n, decided on prime exponents (after the gcd d of n and the
    counts, as d-th roots), never on floats."""
    cs = [int(c) for c in counts if int(c) > 0]
    if q < 1 or not cs:
        return False
    n = sum(cs)
    d = math.gcd(n, *cs)
    e = n // d
    exps: dict[int, int] = {}
    for base, power, sign in [(q, e, 1), (n, e, -1)] + [(c, c // d, 1) for c in cs]:
        for p, k in factor(base):
            exps[p] = exps.get(p, 0) + sign * k * power
    return not any(exps.values())


def entropy_passes_exact(counts: Iterable[int], ell: int) -> bool:
    """Exactly whether counts n_1..n_m (n their sum) satisfy l^n * prod n_i^n_i <= n^n.

    With d = gcd(n, n_1, .., n_m) both sides are compared as d-th roots (an even spread over
    l values shrinks to l^l * a^l vs (l*a)^l). Up to _BIGINT_BITS the integers are compared
    directly; beyond, exact equality is decided on prime exponents and otherwise the sign of
    the log difference is found with Decimal logs at doubling precision until it exceeds a
    rigorous error bound (it is nonzero, so this ends).
    """
    cs = [int(c) for c in counts if int(c) > 0]
    if len(cs) < ell:
        return False
    n = sum(cs)
    d = math.gcd(n, *cs)
    e = n // d
    if e * (n.bit_length() + ell.bit_length()) <= _BIGINT_BITS:
        lhs = ell**e
        for c in cs:
            lhs *= c ** (c // d)
        return lhs <= n**e
    if entropy_l_is(cs, ell):
        return True  # exactly equal: entropy == ln l
    prec = 40
    while True:
        with localcontext() as ctx:
            ctx.prec = prec
            ln_n, ln_l = Decimal(n).ln(), Decimal(ell).ln()
            diff = e * (ln_n - ln_l) - sum((c // d) * Decimal(c).ln() for c in cs)
            bound = Decimal(10) ** (3 - prec) * (len(cs) + 4) * e * (ln_n + ln_l + 1)
            if abs(diff) > bound:
                return diff > 0
        prec *= 2


@lru_cache(maxsize=1 << 16)
def factor(x: int) -> tuple[tuple[int, int], ...]:
    """Prime factorisation of a positive integer by trial division over 2, 3 and 6k +- 1
    (counts, class sizes and hierarchy counts: up to ~1e12). Exact entropy l here and exact
    NU-entropy (`quality.exact`) both read logarithms of integers through it."""
    out = []

    def take(p: int) -> None:
        nonlocal x
        k = 0
        while x % p == 0:
            x //= p
            k += 1
        if k:
            out.append((p, k))

    take(2)
    take(3)
    p = 5
    while p * p <= x:
        take(p)
        take(p + 2)
        p += 6
    if x > 1:
        out.append((x, 1))
    return tuple(out)


def recursive_cl(cv: ClassValues, c: Fraction | str | int, ell: int) -> Verdict:
    """Recursive (c,l)-diversity: m >= l and n_1 < c * (n_l + ... + n_m), exactly.

    `c` is taken as an exact decimal (a Fraction, an int, or a decimal string such as "2.5";
    a float is read through its shortest repr). Figure: n_1 / (n_l + ... + n_m), inf when the
    tail is empty (m < l), nan for an empty class.
    """
    ell = _check_l(ell)
    c = as_fraction(c)
    if c <= 0:
        raise ValueError(f"c must be > 0, got {c}")
    n = cv.sizes()
    m = cv.distinct()
    n1, top = _top_counts(cv, ell - 1)
    tail = n - top  # n_l + ... + n_m (0 when m < l)
    with np.errstate(divide="ignore", invalid="ignore"):
        figure = n1.astype(np.float64) / tail.astype(np.float64)
    figure[n == 0] = np.nan
    num, den = c.numerator, c.denominator
    big = int(n.max(initial=0)) * max(num, den)
    if big < INT64_SAFE:
        strict = n1 * den < num * tail
    else:
        strict = n1.astype(object) * den < tail.astype(object) * num
    ok = (m >= ell) & np.asarray(strict, dtype=bool)
    return Verdict(ok, figure)


def _top_counts(cv: ClassValues, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Per class: the largest count n_1 and the sum of the j largest counts (int64)."""
    n1 = cv.class_max(cv.count, 0)
    if j <= 0:
        return n1, np.zeros(cv.n_classes, dtype=np.int64)
    if j <= _TOP_BY_PASSES:
        top = np.zeros(cv.n_classes, dtype=np.int64)
        left = np.full(cv.n_classes, j, dtype=np.int64)
        work = cv.count.copy()
        mx = n1
        for step in range(j):
            if step:
                mx = cv.class_max(work, 0)
            hit = work == mx[cv.cls]
            take = np.minimum(cv.class_sum(hit.astype(np.int64)), left)
            top += take * mx
            left -= take
            if step + 1 < j and left.any():
                work[hit] = 0
            else:
                break
        return n1, top
    # many: sort each class's counts, largest first, and sum the first j
    width = int(n1.max(initial=0)) + 1
    if cv.n_classes * width < INT64_SAFE:
        packed = np.sort(cv.cls * width + (width - 1 - cv.count))
        counts = width - 1 - packed % width
    else:
        counts = cv.count[np.lexsort((-cv.count, cv.cls))]
    rank = np.arange(cv.cls.size, dtype=np.int64) - cv._starts[cv.cls]
    return n1, cv.class_sum(np.where(rank < j, counts, 0))
