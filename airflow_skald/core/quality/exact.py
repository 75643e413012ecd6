"""Exact scores that are not rationals: sums of logarithms of integers (non-uniform entropy).

A `LogScore` is `sum_j c_j ln(x_j)` with rational c_j and positive integers x_j, held as
named components (one per QID and level) whose prime-exponent form is found only when needed.
Two scores are compared on floats when their difference clearly exceeds the rounding error;
otherwise exactly: the difference is `sum_p e_p ln p` over primes p with rational e_p, which is
zero iff every e_p is zero (logarithms of primes are linearly independent over the rationals),
and whose sign, when nonzero, Decimal logarithms at doubling precision settle against a
rigorous error bound. Aggregates of rationals (ARX's geometric mean) are compared through
their products elsewhere (`aggregate`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import total_ordering

from airflow_skald.core.privacy.distributions import factor
from airflow_skald.core.quality.rank import rank_key

_REL_ERR = 1e-12  # relative error bound of a component's float (fsum of terms ~1e-16 each)


class Component:
    """`sum_j m_j ln(x_j)` for integer multiplicities m_j (e.g. sum_L B_L ln B_L), with its
    float and, on first need, its prime exponents."""

    __slots__ = ("_primes", "approx", "err", "terms")

    def __init__(self, terms: Sequence[tuple[int, int]]):
        self.terms = tuple((int(m), int(x)) for m, x in terms if m and x > 1)
        values = [m * math.log(x) for m, x in self.terms]
        self.approx = math.fsum(values)
        self.err = _REL_ERR * math.fsum(abs(v) for v in values) + 1e-300
        self._primes: dict[int, int] | None = None

    def primes(self) -> dict[int, int]:
        if self._primes is None:
            out: dict[int, int] = {}
            for m, x in self.terms:
                for p, k in factor(x):
                    out[p] = out.get(p, 0) + m * k
            self._primes = out
        return self._primes


@total_ordering
class LogScore:
    """`scale * sum_c w_c * component_c` (w_c rational), ordered exactly; `float()` gives its
    value (the caller's unit: nats times `scale`)."""

    __slots__ = ("approx", "err", "parts", "scale")

    def __init__(self, parts: Sequence[tuple[Fraction, Component]], scale: float = 1.0):
        self.parts = tuple((Fraction(w), c) for w, c in parts if w)
        self.scale = scale
        self.approx = math.fsum(float(w) * c.approx for w, c in self.parts)
        self.err = math.fsum(abs(float(w)) * c.err for w, c in self.parts) * 4 + 1e-300

    def __float__(self) -> float:
        return self.approx * self.scale

    def _cmp(self, other: LogScore) -> int:
        diff = self.approx - other.approx
        if abs(diff) > self.err + other.err:
            return 1 if diff > 0 else -1
        return _exact_sign(self.parts, other.parts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LogScore):
            return NotImplemented
        return self._cmp(other) == 0

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, LogScore):
            return NotImplemented
        return self._cmp(other) < 0

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LogScore({float(self):.12g})"


def _exact_sign(
    a: Sequence[tuple[Fraction, Component]], b: Sequence[tuple[Fraction, Component]]
) -> int:
    """Sign of a - b, exactly (components shared by both cancel without factoring)."""
    weights: dict[int, tuple[Fraction, Component]] = {}
    for sign, parts in ((1, a), (-1, b)):
        for w, c in parts:
            prev = weights.get(id(c), (Fraction(0), c))[0]
            weights[id(c)] = (prev + sign * w, c)
    exps: dict[int, Fraction] = {}
    for w, c in weights.values():
        if w:
            for p, e in c.primes().items():
                exps[p] = exps.get(p, Fraction(0)) + w * e
    coeffs = {p: e for p, e in exps.items() if e}
    if not coeffs:
        return 0
    return _sign_of_logs(coeffs)


def _sign_of_logs(coeffs: Mapping[int, Fraction]) -> int:
    """Sign of sum_p e_p ln p (nonzero): Decimal logs at doubling precision."""
    prec = 40
    scale = sum(abs(e) for e in coeffs.values())
    while True:
        with localcontext() as ctx:
            ctx.prec = prec
            total = sum(
                (Decimal(e.numerator) / Decimal(e.denominator)) * Decimal(p).ln()
                for p, e in coeffs.items()
            )
            bound = Decimal(10) ** (5 - prec) * (Decimal(float(scale)) + 1) * (len(coeffs) + 1)
            if abs(total) > bound:
                return 1 if total > 0 else -1
        prec *= 2


def aggregate_key(values: Sequence[Fraction], weights: Sequence[Fraction], how: str) -> Fraction:
    """The exact key an aggregate of per-QID values is compared by (ARX's ILMultiDimensional*):
    geometric mean -> prod((v+1)*w) (its n-th root minus 1 is monotone in it), arithmetic
    mean -> sum(v*w)/n, sum -> sum(v*w), maximum -> max(v*w), rank -> the v*w largest first
    (a `RankKey`, compared lexicographically)."""
    if how == "geometric_mean":  # one Fraction of the products (the same value)
        num, den = 1, 1
        for v, w in zip(values, weights, strict=True):
            v, w = Fraction(v), Fraction(w)
            num *= (v.numerator + v.denominator) * w.numerator
            den *= v.denominator * w.denominator
        return Fraction(num, den)
    weighted = [Fraction(v) * w for v, w in zip(values, weights, strict=True)]
    if how == "arithmetic_mean":
        return sum(weighted, Fraction(0)) / max(len(weighted), 1)
    if how == "sum":
        return sum(weighted, Fraction(0))
    if how == "maximum":
        return max(weighted, default=Fraction(0))
    if how == "rank":
        return rank_key(weighted)  # type: ignore[return-value]  # ordered like a Fraction
    raise ValueError(f"unknown aggregate {how!r}")


def aggregate_value(key: Fraction, n: int, how: str) -> float:
    """The aggregate ARX reports, from `aggregate_key` (geometric: the n-th root minus 1; rank:
    its largest weighted value)."""
    if how == "geometric_mean":
        return float(key) ** (1.0 / max(n, 1)) - 1.0 if key > 0 else -1.0
    return float(key)


def round_down(x: float) -> float:
    """A float never above the exact value it approximates to within ~1e-13 relative."""
    if x == 0 or math.isinf(x):
        return x
    return x - abs(x) * 1e-11 - 1e-300
