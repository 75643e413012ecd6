"""Naive reference for the privacy models beyond k (docs/design.md §4b), written from docs/design.md alone.

Plain Python over one class at a time: a class is a dict {value: count} of its records'
sensitive values, the input's distribution a dict {value: count} over all N input records.
Values are any hashables; None is the null (one more value, last in the order of a numerical
attribute). Every decision is made in exact arithmetic (ints and Fractions); figures that
docs/design.md §4b gives as floats (entropy l) are computed with the math module.

Shares no code with airflow_skald.core.privacy.distributions.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import mpmath


def _counts(cls: dict) -> list[int]:
    return [c for c in cls.values() if c > 0]


def distinct_count(cls: dict) -> int:
    return len(_counts(cls))


def distinct_ok(cls: dict, l: int) -> bool:  # noqa: E741
    """distinct l: m >= l."""
    return distinct_count(cls) >= l


def entropy_ok(cls: dict, l: int) -> bool:  # noqa: E741
    """entropy l: -sum p ln p >= ln l, i.e. l^n * prod n_i^n_i <= n^n (big ints)."""
    counts = _counts(cls)
    n = sum(counts)
    if n == 0:
        return False
    lhs = l**n
    for c in counts:
        lhs *= c**c
    return lhs <= n**n


def entropy_l_figure(cls: dict) -> float:
    """exp of the class's entropy (the figure the manifest lists)."""
    counts = _counts(cls)
    n = sum(counts)
    h = -sum((c / n) * math.log(c / n) for c in counts)
    return math.exp(h)


@cache
def grassberger_g(n: int) -> float:
    """Grassberger's G(n) = psi(n) + (1/2) (-1)^n (psi((n+1)/2) - psi(n/2)) (Grassberger 2003,
    eq. 35), from the digamma function (mpmath, 30 digits)."""
    with mpmath.workdps(30):
        sign = 1 if n % 2 == 0 else -1
        g = (
            mpmath.digamma(n)
            + sign
            * (mpmath.digamma((n + 1) / mpmath.mpf(2)) - mpmath.digamma(n / mpmath.mpf(2)))
            / 2
        )
        return float(g)


def grassberger_h(cls: dict) -> float:
    """Grassberger's entropy estimate of a class: G(n) - (1/n) sum n_i G(n_i)."""
    counts = _counts(cls)
    n = sum(counts)
    return grassberger_g(n) - sum(c * grassberger_g(c) for c in counts) / n


def grassberger_ok(cls: dict, l: int) -> bool:  # noqa: E741
    """entropy l with the Grassberger estimate: at least l values and H >= ln l."""
    return distinct_count(cls) >= l and grassberger_h(cls) >= math.log(l)


def recursive_ratio(cls: dict, l: int) -> Fraction | None:  # noqa: E741
    """n_1 / (n_l + ... + n_m); None when the tail is empty."""
    counts = sorted(_counts(cls), reverse=True)
    tail = sum(counts[l - 1 :])
    if tail == 0:
        return None
    return Fraction(counts[0], tail)


def recursive_ok(cls: dict, c: Fraction, l: int) -> bool:  # noqa: E741
    """recursive (c,l): m >= l and n_1 < c * (n_l + ... + n_m)."""
    counts = sorted(_counts(cls), reverse=True)
    if len(counts) < l:
        return False
    return counts[0] < c * sum(counts[l - 1 :])


def _p(cls: dict, v) -> Fraction:
    n = sum(_counts(cls))
    return Fraction(cls.get(v, 0), n)


def equal_distance(cls: dict, glob: dict) -> Fraction:
    """sum over every input value of |p_v - q_v|, halved."""
    big_n = sum(glob.values())
    return sum((abs(_p(cls, v) - Fraction(g, big_n)) for v, g in glob.items()), Fraction(0)) / 2


def numeric_order(glob: dict, every: bool = False) -> list:
    """The input's values in numeric order, null (None) last (`every`: values of count 0
    too, a research subset's walk over the population's values)."""
    values = [v for v, g in glob.items() if g > 0 or every]
    return sorted(v for v in values if v is not None) + ([None] if None in values else [])


def text_order(glob: dict, listed: list | None = None, every: bool = False) -> list:
    """The input's values as ARX's text types order them: `listed` (ARX's ordered string: a
    value's place in the list; a null at the listed empty text, else last), or ARX's STRING
    (Java's String.compareTo: UTF-16 code units; a null is the empty text, first)."""
    values = [v for v, g in glob.items() if g > 0 or every]
    if listed is None:
        return sorted(values, key=lambda v: b"" if v is None else str(v).encode("utf-16-be"))
    place = {str(v): i for i, v in enumerate(listed)}
    return sorted(values, key=lambda v: place.get("", len(listed)) if v is None else place[str(v)])


def ordered_distance(cls: dict, glob: dict, order: list | None = None) -> Fraction:
    """sum_i |sum_{j<=i} (p_j - q_j)| / (m_all - 1) over the values in `order` (None: numeric
    order, a null last)."""
    order = numeric_order(glob) if order is None else order
    if len(order) <= 1:
        return Fraction(0)
    big_n = sum(glob.values())
    total, running = Fraction(0), Fraction(0)
    for v in order:
        running += _p(cls, v) - Fraction(glob[v], big_n)
        total += abs(running)
    return total / (len(order) - 1)


def hierarchical_distance(cls: dict, glob: dict, paths: dict) -> Fraction:
    """Hierarchical EMD: `paths[v]` = v's labels at levels 1..H (the last, the top, shared).

    A node is (level, label). Each node at level L >= 1 adds L * min(pos, neg) where pos / neg
    are the sums of its children's positive / negative extras (a leaf's extra is p_v - q_v, a
    node's the sum of its children's); the sum is divided by H. Leaves: values with q_v > 0.
    """
    big_n = sum(glob.values())
    leaves = [v for v, g in glob.items() if g > 0]
    height = len(paths[leaves[0]])
    children: dict[tuple, set] = {}
    for v in leaves:
        chain = [(0, v)] + [(i + 1, label) for i, label in enumerate(paths[v])]
        for lower, upper in zip(chain, chain[1:], strict=False):
            children.setdefault(upper, set()).add(lower)
    extra: dict[tuple, Fraction] = {(0, v): _p(cls, v) - Fraction(glob[v], big_n) for v in leaves}
    cost = Fraction(0)
    for level in range(1, height + 1):
        for node, kids in children.items():
            if node[0] != level:
                continue
            pos = sum((extra[k] for k in kids if extra[k] > 0), Fraction(0))
            neg = sum((-extra[k] for k in kids if extra[k] < 0), Fraction(0))
            extra[node] = pos - neg
            cost += level * min(pos, neg)
    return cost / height


def t_ok(distance: Fraction, t: Fraction) -> bool:
    return distance <= t
