"""l-diversity and t-closeness over per-class distributions of one sensitive attribute (SPEC §4b).

Pure numpy, no I/O. A node's classes and the counts of the sensitive attribute's values in each
class are held sparsely as a `ClassValues` (one row per non-empty (class, value) pair, rows in
(class, value) order, the form `histogram.grouped` returns for a key `class * m + value`).
Each criterion returns a `Verdict`: a bool mask of the classes that satisfy it and a figure per
class (distinct count, entropy l, recursive ratio, distance).

Exactness: every decision is exact, as SPEC §4b asks (ARX decides in doubles and can differ on
exact ties; we do not). Each criterion is evaluated for all classes at once in float64, with an
error bound per class that is well above float64's worst case; the few classes whose float
figure lies within that bound of the threshold are decided again exactly: t-closeness by the
same vectorised formulas over Python ints (numpy object arrays), entropy l by integer or
adaptive-precision arithmetic (`entropy_passes_exact`, one Python call per such class), the
others in int64 or Python ints directly. Products such as `N * n` reach 1e18 at 1e9 records,
so nothing exact is computed in int64 unless it provably fits.

Semantics follow ARX's criteria classes (DistinctLDiversity, EntropyLDiversity,
RecursiveCLDiversity, EqualDistanceTCloseness, OrderedDistanceTCloseness,
HierarchicalDistanceTCloseness), with two deliberate differences: ties are decided exactly, and
every product is exact where ARX multiplies Java ints (its hierarchical EMD computes
`count * total` in 32-bit ints, which overflows beyond ~46 thousand records squared).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import NamedTuple

import numpy as np

from airflow_skald.core.count.histogram import changes, run_starts

_EPS = float(np.finfo(np.float64).eps)
_INT64_SAFE = 1 << 62  # an int64 product below this cannot overflow (sums of two stay in range)
_BIGINT_BITS = 1 << 17  # entropy ties: compare the integer powers directly up to this many bits
_DENSE_GROUPS = 4  # hierarchical EMD: a dense (class, node) table up to this many cells per row
_DENSE_MIN = 1 << 20  # ... or up to this many cells
_TOP_BY_PASSES = 2  # recursive (c,l): the l-1 largest counts by repeated maxima up to this l-1


class Verdict(NamedTuple):
    """`ok[i]`: class i satisfies the criterion; `figure[i]`: its figure (see each function)."""

    ok: np.ndarray
    figure: np.ndarray


@dataclass(frozen=True)
class ClassValues:
    """Counts per (class, sensitive value) of ONE sensitive attribute over a node's classes.

    `cls` (int64) is sorted ascending; within a class the rows are in ascending `value` order and
    each (class, value) pair appears once; `count` (int64) > 0. Value codes are 0..m_all-1 (a
    null is a code of its own). Classes 0..n_classes-1 without rows are empty (size 0).
    Build from unsorted or repeated pairs with `ClassValues.from_pairs`.
    """

    n_classes: int
    cls: np.ndarray
    value: np.ndarray
    count: np.ndarray

    def __post_init__(self) -> None:
        cls = np.asarray(self.cls, dtype=np.int64)
        value = np.asarray(self.value)
        count = np.asarray(self.count, dtype=np.int64)
        object.__setattr__(self, "cls", cls)
        object.__setattr__(self, "value", value.astype(np.int64, copy=False))
        object.__setattr__(self, "count", count)
        if not cls.shape == value.shape == count.shape or cls.ndim != 1:
            raise ValueError("cls, value and count must be 1-d arrays of one length")
        if cls.size:
            vmax = int(self.value.max())
            if cls[0] < 0 or cls[-1] >= self.n_classes or int(self.value.min()) < 0:
                raise ValueError("class index or value code out of range")
            if int(count.min()) <= 0:
                raise ValueError("counts must be > 0")
            if self.n_classes * (vmax + 1) < _INT64_SAFE:
                key = cls * (vmax + 1)
                key += self.value
                in_order = bool(np.all(key[1:] > key[:-1]))
            else:
                dc = np.diff(cls)
                in_order = bool(np.all((dc > 0) | ((dc == 0) & (np.diff(self.value) > 0))))
            if not in_order:
                raise ValueError("rows must be in (class, value) order, each pair once")

    @classmethod
    def from_pairs(
        cls_, n_classes: int, cls: np.ndarray, value: np.ndarray, count: np.ndarray | None = None
    ) -> ClassValues:
        """Sum `count` (1 per row when None) per (class, value) pair, in any order and repeated."""
        c = np.asarray(cls, dtype=np.int64)
        v = np.asarray(value, dtype=np.int64)
        w = np.ones(c.size, dtype=np.int64) if count is None else np.asarray(count, np.int64)
        keep = w != 0
        c, v, w = c[keep], v[keep], w[keep]
        order = np.lexsort((v, c))
        c, v, w = c[order], v[order], w[order]
        if c.size == 0:
            return cls_(n_classes, c, v, w)
        new = changes(c)
        new[1:] |= v[1:] != v[:-1]
        starts = np.flatnonzero(new)
        return cls_(n_classes, c[starts], v[starts], np.add.reduceat(w, starts))

    @classmethod
    def of_runs(
        cls_, cls: np.ndarray, value: np.ndarray, count: np.ndarray, starts: np.ndarray
    ) -> ClassValues:
        """Rows already in (class, value) order, each pair once, counts > 0 (int64 arrays, as
        `histogram.grouped` returns keys `class * m + value`), every class 0..len(starts)-1
        non-empty, `starts` its first row: taken as they are, not re-checked (the search's
        hot path builds one per node)."""
        cv = object.__new__(cls_)
        object.__setattr__(cv, "n_classes", int(starts.size))
        object.__setattr__(cv, "cls", cls)
        object.__setattr__(cv, "value", value)
        object.__setattr__(cv, "count", count)
        n_values = np.empty(starts.size, dtype=np.int64)
        np.subtract(starts[1:], starts[:-1], out=n_values[:-1])
        if starts.size:
            n_values[-1] = cls.size - starts[-1]
        cv.__dict__.update(_starts=_frozen(starts), _n_values=_frozen(n_values), _every=True)
        return cv

    # -- per-class layout ---------------------------------------------------------------------

    @cached_property
    def _n_values(self) -> np.ndarray:
        return _frozen(np.bincount(self.cls, minlength=self.n_classes).astype(np.int64))

    @cached_property
    def _starts(self) -> np.ndarray:
        starts = np.zeros(self.n_classes, dtype=np.int64)
        np.cumsum(self._n_values[:-1], out=starts[1:])
        return _frozen(starts)

    @cached_property
    def _nonempty(self) -> np.ndarray:
        return self._n_values > 0

    @cached_property
    def _every(self) -> bool:
        """Every class has rows (no empty class to skip in per-class reductions)."""
        return bool(self._nonempty.all())

    def distinct(self) -> np.ndarray:
        """Number of distinct values per class (int64, length n_classes, read-only)."""
        return self._n_values

    def sizes(self) -> np.ndarray:
        """Records per class n (int64, length n_classes, read-only)."""
        return self._sizes

    @cached_property
    def _sizes(self) -> np.ndarray:
        return _frozen(self.class_sum(self.count))

    def class_sum(self, x: np.ndarray) -> np.ndarray:
        """Per-class sum of a per-row array, in its dtype (exact for ints and Python ints)."""
        if self._every and x.size:
            return np.add.reduceat(x, self._starts)
        out = np.zeros(self.n_classes, dtype=x.dtype)
        if x.size:
            ne = self._nonempty
            out[ne] = np.add.reduceat(x, self._starts[ne])
        return out

    def class_max(self, x: np.ndarray, empty) -> np.ndarray:
        """Per-class maximum of a per-row array; `empty` for classes without rows."""
        if self._every and x.size:
            return np.maximum.reduceat(x, self._starts)
        out = np.full(self.n_classes, empty, dtype=x.dtype)
        if x.size:
            ne = self._nonempty
            out[ne] = np.maximum.reduceat(x, self._starts[ne])
        return out

    def distribution(self, i: int) -> dict[int, int]:
        """Counts per value code of class i (for reports: the classes most at risk)."""
        s = int(self._starts[i])
        e = s + int(self._n_values[i])
        return dict(zip(self.value[s:e].tolist(), self.count[s:e].tolist(), strict=True))

    def subset(self, classes: np.ndarray) -> ClassValues:
        """The classes `classes` (ascending), renumbered 0..len(classes)-1."""
        classes = np.asarray(classes, dtype=np.int64)
        lens = self._n_values[classes]
        first = self._starts[classes]
        total = int(lens.sum())
        offsets = np.r_[0, np.cumsum(lens)[:-1]]
        rows = np.repeat(first - offsets, lens) + np.arange(total, dtype=np.int64)
        new_cls = np.repeat(np.arange(classes.size, dtype=np.int64), lens)
        return ClassValues(int(classes.size), new_cls, self.value[rows], self.count[rows])


FLOOR_MARGIN = 1e-9  # suppression floors: far above the float figures' error (~1e-12)


def suppression_floor(sizes: np.ndarray, shortfall: np.ndarray) -> float:
    """Sum over classes of n * shortfall where the shortfall is positive (nan: an empty
    class, none), lowered by FLOOR_MARGIN: the records a criterion's monotone part says a node
    and every node below it suppress, never above the exact figure when each `shortfall` was
    computed with the margin too (`t_closeness.suppression_floor`,
    `l_diversity.entropy_floor`)."""
    hit = shortfall > 0
    if not hit.any():
        return 0.0
    return max(0.0, float(np.sum(sizes[hit] * shortfall[hit])) * (1 - FLOOR_MARGIN))


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


# -- l-diversity -------------------------------------------------------------------------------


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
        bound = 8 * _EPS * (m + 4) * nf * (ln_n + ln_l + 1)
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
    c = _fraction(c)
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
    if big < _INT64_SAFE:
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
    if cv.n_classes * width < _INT64_SAFE:
        packed = np.sort(cv.cls * width + (width - 1 - cv.count))
        counts = width - 1 - packed % width
    else:
        counts = cv.count[np.lexsort((-cv.count, cv.cls))]
    rank = np.arange(cv.cls.size, dtype=np.int64) - cv._starts[cv.cls]
    return n1, cv.class_sum(np.where(rank < j, counts, 0))


def _fraction(x: Fraction | str | int | float) -> Fraction:
    if isinstance(x, float):
        return Fraction(repr(x))
    return Fraction(x)


# -- t-closeness -------------------------------------------------------------------------------


def _global_counts(cv: ClassValues, global_counts: np.ndarray) -> np.ndarray:
    g = np.asarray(global_counts, dtype=np.int64)
    if g.ndim != 1 or (g.size and int(g.min()) < 0):
        raise ValueError("global counts must be a 1-d array of counts >= 0")
    if cv.value.size:
        if int(cv.value.max()) >= g.size:
            raise ValueError("a class holds a value code beyond the global counts")
        if np.any(g[cv.value] < cv.count):
            raise ValueError("a class holds more records of a value than the whole input")
    return g


def _decide(
    cv: ClassValues, t: Fraction | str | int | float, width: np.ndarray, distance_of
) -> Verdict:
    """Screen `distance_of(cv, exact=False)` in float64 against t; decide again exactly (Python
    ints, `distance_of(sub, exact=True)` -> (num, den) object arrays) every class whose float
    distance lies within its error bound `width` (a distance, per class) of t."""
    t = _fraction(t)
    if not 0 < t <= 1:
        raise ValueError(f"t must be in (0, 1], got {t}")
    num, den = distance_of(cv, exact=False)
    n = cv.sizes()
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = num / den
    dist[n == 0] = np.nan
    tf = float(t)
    ok = dist <= tf
    near = np.flatnonzero((n > 0) & (np.abs(dist - tf) <= width + 2 * _EPS))
    if near.size:
        enum, eden = distance_of(cv.subset(near), exact=True)
        ok[near] = [a * t.denominator <= t.numerator * b for a, b in zip(enum, eden, strict=True)]
    return Verdict(ok, dist)


def _as(x: np.ndarray, exact: bool) -> np.ndarray:
    return x.astype(object) if exact else x.astype(np.float64)


def t_equal(cv: ClassValues, global_counts: np.ndarray, t: Fraction | str | int) -> Verdict:
    """t-closeness with equal ground distance: sum_v |c_v N - g_v n| / (2 N n) <= t.

    `global_counts[v]` = g_v, the records of value v over all N input records (N = their sum);
    values absent from a class count too. Figure: the distance (nan for an empty class).
    """
    g = _global_counts(cv, global_counts)
    width = 16 * _EPS * (cv.distinct() + 8)
    return _decide(cv, t, width, lambda sub, exact: _equal_num_den(sub, g, exact))


def _equal_num_den(cv: ClassValues, g: np.ndarray, exact: bool):
    big_n = int(g.sum())
    n = _as(cv.sizes(), exact)
    gn = _as(g[cv.value], exact) * n[cv.cls]
    terms = np.abs(_as(cv.count, exact) * big_n - gn) - gn
    # the values absent from the class add sum g_v n over them = N n - sum over present g_v n
    num = n * big_n + cv.class_sum(terms)
    return num, n * (2 * big_n)


def t_ordered(cv: ClassValues, global_counts: np.ndarray, t: Fraction | str | int) -> Verdict:
    """t-closeness with ordered distance: sum_i |sum_{j<=i} (c_j N - g_j n)| / (N n (m_all-1)).

    Value codes must be in the attribute's order (numeric order, null last); codes with
    g_v == 0 are skipped, so m_all = the number of values present in the input. 0 when
    m_all == 1. Figure: the distance (nan for an empty class).
    """
    g = _global_counts(cv, global_counts)
    m_all = int(np.count_nonzero(g))
    width = 64 * _EPS * (cv.distinct() + 8)
    return _decide(cv, t, width, lambda sub, exact: _ordered_num_den(sub, g, m_all, exact))


def _ordered_num_den(cv: ClassValues, g: np.ndarray, m_all: int, exact: bool):
    big_n = int(g.sum())
    n_int = cv.sizes()
    n = _as(n_int, exact)
    if m_all <= 1:
        return n * 0, n * 0 + 1
    present = g > 0
    rank = np.cumsum(present) - 1  # code -> position among the values present in the input
    cum_g = np.cumsum(g[present])  # G_i, increasing
    prefix = list(itertools.accumulate(cum_g.tolist(), initial=0))  # P[i] = G_0 + .. + G_(i-1)
    prefix = np.array(prefix, dtype=object if exact else np.float64)
    # row e (value at position r_e, cumulative class count K_e) opens the segment [r_e, b_e)
    # up to the class's next value, where sum_{j<=i} (c_j N - g_j n) = N K_e - n G_i
    ne, starts = cv._nonempty, cv._starts
    cum = np.cumsum(cv.count)
    before = np.zeros(cv.n_classes, dtype=np.int64)
    before[ne] = cum[starts[ne]] - cv.count[starts[ne]]
    k_cum = cum - before[cv.cls]
    a = rank[cv.value]
    b = np.empty_like(a)  # the next value's position in the class, m_all after its last
    b[:-1] = a[1:]
    b[cv._starts[ne] + cv._n_values[ne] - 1] = m_all
    # |N K - n G_i| changes sign once in the segment, at s = #{i: G_i <= N K / n}; then the
    # segment adds (s-a) N K - n (P[s]-P[a]) + n (P[b]-P[s]) - (b-s) N K
    if exact:
        q = (k_cum.astype(object) * big_n) // n_int[cv.cls].astype(object)
        s = np.searchsorted(cum_g, q.astype(np.int64), side="right")
    else:  # a split off by one moves a term |N K - n G_s| within rounding of 0
        ratio = np.zeros(cv.n_classes)
        ratio[ne] = big_n / n_int[ne]
        s = np.searchsorted(cum_g.astype(np.float64), k_cum * ratio[cv.cls], side="right")
    s = np.clip(s, a, b)
    terms = _as(k_cum, exact) * big_n * (2 * s - a - b) + n[cv.cls] * (
        prefix[a] + prefix[b] - 2 * prefix[s]
    )
    head = n * 0  # positions below the class's first value: sum of n G_i
    head[ne] = n[ne] * prefix[a[starts[ne]]]
    return head + cv.class_sum(terms), n * (big_n * (m_all - 1))


@dataclass(frozen=True)
class EmdHierarchy:
    """A sensitive attribute's hierarchy as integers, for the hierarchical EMD.

    `levels[v, L]` is the id of value v's ancestor at level L (ids numbered per level; column 0,
    the value itself, is ignored), for every value code v; H = levels.shape[1] - 1 is the top
    level. It must be functional (a level-L node has one parent at level L+1), as SPEC §3 asks.
    """

    levels: np.ndarray

    def __post_init__(self) -> None:
        lv = np.asarray(self.levels, dtype=np.int64)
        object.__setattr__(self, "levels", lv)
        if lv.ndim != 2 or lv.shape[1] < 2:
            raise ValueError("a hierarchy needs a value column and at least one level above it")
        if lv.size and int(lv.min()) < 0:
            raise ValueError("hierarchy node ids must be >= 0")
        for level in range(1, lv.shape[1] - 1):
            pairs = np.unique(lv[:, level : level + 2], axis=0)
            if np.unique(pairs[:, 0]).size != pairs.shape[0]:
                raise ValueError(f"hierarchy is not functional at level {level}")

    @classmethod
    def from_labels(cls, paths: Sequence[Sequence[object]]) -> EmdHierarchy:
        """From each value code's labels at levels 1..H (`paths[v]`, the top last), e.g. a
        normalised hierarchy's rows without their first column; ids numbered per level."""
        height = len(paths[0]) if len(paths) else 0
        table = np.zeros((len(paths), height + 1), dtype=np.int64)
        table[:, 0] = np.arange(len(paths))
        for level in range(1, height + 1):
            ids: dict[object, int] = {}
            for v, path in enumerate(paths):
                if len(path) != height:
                    raise ValueError("every value needs a label at every level")
                table[v, level] = ids.setdefault(path[level - 1], len(ids))
        return cls(table)

    @property
    def height(self) -> int:
        return self.levels.shape[1] - 1

    @cached_property
    def rank(self) -> np.ndarray:
        """Value code -> position in an order where every node's values are contiguous."""
        lv = self.levels
        keys = [np.arange(lv.shape[0])] + [lv[:, level] for level in range(1, lv.shape[1])]
        order = np.lexsort(keys)
        rank = np.empty(lv.shape[0], dtype=np.int64)
        rank[order] = np.arange(lv.shape[0])
        return rank

    @cached_property
    def widest(self) -> int:
        """The most nodes on any level above the values."""
        return int(self.levels[:, 1:].max(initial=0)) + 1

    @cached_property
    def codes_in_tree_order(self) -> bool:
        """Whether every node's values already have adjacent codes (no sort needed)."""
        return bool(np.all(np.diff(self.rank) > 0))

    @cached_property
    def parents(self) -> list[np.ndarray]:
        """parents[L - 1][id of a node at level L - 1] = id of its parent at level L (at
        level 0 the ids are the value codes)."""
        lv = self.levels
        out = [lv[:, 1]]
        for level in range(2, lv.shape[1]):
            p = np.zeros(int(lv[:, level - 1].max()) + 1, dtype=np.int64)
            p[lv[:, level - 1]] = lv[:, level]
            out.append(p)
        return out

    def subtree_counts(self, g: np.ndarray, level: int) -> np.ndarray:
        """Global records under each node of `level` (int64, indexed by node id)."""
        ids = self.levels[: g.size, level]
        out = np.zeros(int(self.levels[:, level].max()) + 1, dtype=np.int64)
        np.add.at(out, ids, g)
        return out


def t_hierarchical(
    cv: ClassValues, global_counts: np.ndarray, t: Fraction | str | int, hierarchy: EmdHierarchy
) -> Verdict:
    """t-closeness with hierarchical ground distance, as ARX's HierarchicalDistanceTCloseness.

    Leaf extras are e_v = g_v n - c_v N. Each node u at level L >= 1 adds L * min(pos, neg),
    pos / neg the summed positive / negated negative net extras of its children (a child's net
    extra: the sum of the leaf extras below it); the distance is the sum over H N n.

    Only ancestors of the class's values can add anything (elsewhere every extra is >= 0), and
    with net(u) = pos - neg, min(pos, neg) = neg + min(net(u), 0), where neg sums over the
    children that hold class records: each class costs O(m * H). Figure: the distance.
    """
    g = _global_counts(cv, global_counts)
    if hierarchy.levels.shape[0] < g.size:
        raise ValueError("the hierarchy misses value codes of the global counts")
    width = 16 * _EPS * (cv.distinct() + 8) * (hierarchy.height + 1)
    return _decide(cv, t, width, lambda sub, exact: _hier_num_den(sub, g, hierarchy, exact))


def _hier_num_den(cv: ClassValues, g: np.ndarray, hier: EmdHierarchy, exact: bool):
    big_n = int(g.sum())
    n = _as(cv.sizes(), exact)
    cls, node, count = cv.cls, cv.value, cv.count
    # groups: one per (class, node at the current level) holding class records, in (class,
    # node) order; at level 0 one per row. They are merged level by level, in floats through a
    # dense (class, node) table when that is small, else as runs (each node's values adjacent
    # within a class: codes in tree order, or rows sorted so)
    in_order = hier.codes_in_tree_order
    limit = max(_DENSE_GROUPS * cls.size, _DENSE_MIN)
    dense = not exact and cv.n_classes * hier.widest <= limit
    if not (dense or in_order):
        order = _order_within_classes(cv, hier.rank[node])
        cls, node, count = cls[order], node[order], count[order]
    csub = _as(count, exact)
    net = n[cls] * _as(g[node], exact) - csub * big_n  # a group's n * G_sub - N * C_sub
    cost = n * 0
    for level in range(1, hier.height + 1):
        parent = hier.parents[level - 1][node]
        child_neg = np.maximum(-net, 0)
        if dense:
            width = int(hier.levels[:, level].max()) + 1
            key = cls * width + parent
            total = np.bincount(key, weights=csub, minlength=cv.n_classes * width)
            slots = np.flatnonzero(total)
            neg = np.bincount(key, weights=child_neg, minlength=total.size)[slots]
            cls, node, csub = slots // width, slots % width, total[slots]
        else:
            starts = np.flatnonzero(
                np.r_[True, (cls[1:] != cls[:-1]) | (parent[1:] != parent[:-1])]
            )
            neg = np.add.reduceat(child_neg, starts) if starts.size else child_neg
            cls, node = cls[starts], parent[starts]
            csub = np.add.reduceat(csub, starts) if starts.size else csub
        net = n[cls] * _as(hier.subtree_counts(g, level)[node], exact) - csub * big_n
        cost = cost + _sorted_sum(cls, level * (neg + np.minimum(net, 0)), cv.n_classes)
    return cost, n * (big_n * hier.height)


def _order_within_classes(cv: ClassValues, rank: np.ndarray) -> np.ndarray:
    """Row order sorting each class's rows by `rank` (classes stay in order)."""
    width = int(rank.max(initial=0)) + 1
    slots = int(cv._n_values.max(initial=0))
    if cv.n_classes * width * max(slots, 1) < _INT64_SAFE:
        j = np.arange(cv.cls.size, dtype=np.int64) - cv._starts[cv.cls]
        packed = np.sort((cv.cls * width + rank) * slots + j)
        return cv._starts[packed // (width * slots)] + packed % slots
    return np.lexsort((rank, cv.cls))


def _sorted_sum(keys: np.ndarray, x: np.ndarray, size: int) -> np.ndarray:
    """Sum x per key into an array of `size`, keys sorted ascending (exact in x's dtype)."""
    out = np.zeros(size, dtype=x.dtype)
    if keys.size:
        starts = run_starts(keys)
        out[keys[starts]] = np.add.reduceat(x, starts)
    return out


# -- figures over the kept classes (manifest) ---------------------------------------------------

#: For each figure, whether its worst (most at-risk) value is the smallest or the largest.
WORST_IS_SMALLEST = {
    "distinct": True,
    "entropy": True,
    "recursive": False,
    "t_closeness": False,
}


def worst_figure(kind: str, figure: np.ndarray, kept: np.ndarray | None = None) -> float | None:
    """The figure the manifest lists over the kept classes: smallest distinct count, smallest
    entropy l, largest recursive ratio or largest distance (`kind` a key of WORST_IS_SMALLEST);
    None when no class is kept."""
    f = figure if kept is None else figure[kept]
    f = f[~np.isnan(f)] if f.dtype.kind == "f" else f
    if f.size == 0:
        return None
    v = f.min() if WORST_IS_SMALLEST[kind] else f.max()
    return int(v) if f.dtype.kind in "iu" else float(v)


def most_at_risk(
    kind: str, figure: np.ndarray, kept: np.ndarray | None = None, top: int = 5
) -> np.ndarray:
    """Indices of the `top` kept classes with the worst figures, worst first (ties by index)."""
    idx = np.arange(figure.size) if kept is None else np.flatnonzero(kept)
    f = figure[idx].astype(np.float64)
    f = np.where(np.isnan(f), np.inf if WORST_IS_SMALLEST[kind] else -np.inf, f)
    order = np.argsort(f if WORST_IS_SMALLEST[kind] else -f, kind="stable")
    return idx[order[:top]]
