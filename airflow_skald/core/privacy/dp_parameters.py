"""k and β of (ε, δ)-differential privacy as ARX 3.9's ``ParameterCalculation`` derives them
(SafePub, Bild, Kuhn and Prasser, PETS 2018; (k, β)-SDGS of Li, Qardaji and Su, 2012).

ARX evaluates every quantity in interval arithmetic (``IntervalArithmeticDouble``: each
operation's bounds widened to the next double outwards) and returns β = the lower bound of
``1 − e^(−ε)`` and k = one more than the smallest k whose δ bound

    δ(k) = max over n >= n_m(k) of a_n,   a_n = P[Binomial(n, β) > floor(n γ)],
    γ = (e^ε − 1 + β) / e^ε,   n_m(k) = ceil(k / γ − 1)

is below δ (its loop increments k after computing δ(k)). ARX walks n upwards for every k until
the running maximum exceeds the Chernoff bound ``c_n = exp(−n (γ ln(γ/β) − (γ − β)))``, which
bounds every later a_n; so δ(k) is the maximum of a_n over all n >= n_m(k) and is
non-increasing in k.

Here β, γ and every integer boundary (n_m, floor(n γ)) are ARX's interval bounds bit for bit;
the binomial tails a_n are Loader's saddle-point terms (the expansion ARX evaluates) computed
once per n, vectorised, instead of once per (k, n) in intervals, and only the `TERMS` largest
of each tail (the rest is below double precision): ARX's seconds become milliseconds. A comparison with δ closer than ``TIE`` (relative) is decided by ARX's own
interval computation of that a_n (`interval_tail`), so k is ARX's wherever ARX decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TIE = 1e-9  # relative distance to δ below which the interval computation decides
BLOCK = 256  # values of n computed at once (at least)
# bits of a tail summed: each term is below ρ = e^-ε / (1 + e^-ε) < 1/2 of the one before (j
# above the mode), so the terms after the first `BITS / -log2 ρ` add less than 2^-BITS
BITS = 64


def _down(x: float) -> float:
    return math.nextafter(x, -math.inf)


def _up(x: float) -> float:
    return math.nextafter(x, math.inf)


@dataclass(frozen=True)
class Iv:
    """A closed interval of doubles with ARX's operations (``IntervalArithmeticDouble``): a
    binary operation takes the extreme of its four corner results and widens both bounds by
    one ulp; a unary one (exp, log, sqrt, pow, 1/x) of its two end results, likewise."""

    lo: float
    hi: float

    @staticmethod
    def of(x: float) -> Iv:
        return Iv(float(x), float(x))

    def _bin(self, other: Iv, op) -> Iv:
        vals = [op(a, b) for a in (self.lo, self.hi) for b in (other.lo, other.hi)]
        if not all(math.isfinite(v) for v in vals):
            raise ArithmeticError("numeric instability")
        return Iv(_down(min(vals)), _up(max(vals)))

    def _un(self, f) -> Iv:
        a, b = f(self.lo), f(self.hi)
        if not (math.isfinite(a) and math.isfinite(b)):
            raise ArithmeticError("numeric instability")
        return Iv(_down(min(a, b)), _up(max(a, b)))

    def __add__(self, o: Iv) -> Iv:
        return self._bin(o, lambda a, b: a + b)

    def __sub__(self, o: Iv) -> Iv:
        return self._bin(o, lambda a, b: a - b)

    def __mul__(self, o: Iv) -> Iv:
        return self._bin(o, lambda a, b: a * b)

    def __truediv__(self, o: Iv) -> Iv:
        return self._bin(o, lambda a, b: a / b)

    def exp(self, exp=math.exp) -> Iv:
        return self._un(exp)

    def log(self) -> Iv:
        return self._un(math.log)

    def sqrt(self) -> Iv:
        return self._un(math.sqrt)

    def inv(self) -> Iv:
        return self._un(lambda x: 1.0 / x)

    def pow(self, n: int) -> Iv:
        return self._un(lambda x: math.pow(x, n))


ONE, MINUS_ONE = Iv.of(1.0), Iv.of(-1.0)
PI = Iv(3.1415926535897932384, 3.1415926535897932385)


def beta_interval(epsilon: float, exp=math.exp) -> Iv:
    """``1 − e^(−ε)`` in ARX's interval arithmetic. `exp`: the exponential of the bounds (the
    C library's, correctly rounded; ARX's JVM returns the other neighbour of e^x now and then,
    HotSpot's ``Math.exp`` being within one ulp only, and β then differs in its last bit)."""
    return ONE - (MINUS_ONE * Iv.of(epsilon)).exp(exp)


def gamma_interval(epsilon: float, beta: Iv) -> Iv:
    """``(e^ε − 1 + β) / e^ε`` in ARX's interval arithmetic."""
    power = Iv.of(epsilon).exp()
    return ((power - ONE) + beta) / power


def anonymisation_epsilon(epsilon: float, search_budget: float | None) -> float:
    """The ε the sample and k are derived from: all of ε for a fixed node, else the lower
    bound of ``ε − search_budget`` (as ``EDDifferentialPrivacy.initialize``)."""
    if search_budget is None:
        return float(epsilon)
    return (Iv.of(epsilon) - Iv.of(search_budget)).lo


def _stirling_error(v: Iv) -> Iv:
    base = (Iv.of(12.0) * v).inv() - (Iv.of(360.0) * v.pow(3)).inv()
    bound = (Iv.of(1260.0) * v.pow(5)).inv()
    offset = max(abs(bound.lo), abs(bound.hi))
    return Iv(_down(base.lo - offset), _up(base.hi + offset))


def binomial_interval(n: int, p: Iv, k: int) -> Iv:
    """ARX's ``binomialProbability`` (Loader's saddle-point expansion) in intervals."""
    if k < 0 or k > n:
        return Iv.of(0.0)
    if k == 0:
        return (ONE - p).pow(n)
    if k == n:
        return p.pow(n)
    ni, ki = Iv.of(float(n)), Iv.of(float(k))
    nk = ni - ki
    dev = ki * (ki / (ni * p)).log() + nk * (nk / (ni * (ONE - p))).log()
    term1 = _stirling_error(ni) - _stirling_error(ki) - _stirling_error(nk)
    term2 = (ni / (Iv.of(2.0) * PI * ki * nk)).sqrt()
    return ((term2.log() + term1) - dev).exp()


def _floor_index(n: np.ndarray, gamma: Iv) -> np.ndarray:
    """floor of the lower bound of ``n · γ`` (ARX's ``floorLowerBoundToInt``)."""
    prod = np.minimum(n * gamma.lo, n * gamma.hi)
    return np.floor(np.nextafter(prod, -np.inf)).astype(np.int64)


def interval_tail(n: int, beta: Iv, gamma: Iv) -> Iv:
    """a_n exactly as ARX computes it (its interval; for near ties only: slow)."""
    start = int(_floor_index(np.asarray([float(n)]), gamma)[0]) + 1
    total = Iv.of(0.0)
    for j in range(start, n + 1):
        total = total + binomial_interval(n, beta, j)
    return total


def _stirling(v: np.ndarray) -> np.ndarray:
    return 1.0 / (12.0 * v) - 1.0 / (360.0 * v**3)


def _terms(epsilon: float) -> int:
    rho = math.exp(-epsilon) / (1.0 + math.exp(-epsilon))
    return math.ceil(BITS / -math.log2(rho)) + 2


def _tails(ns: np.ndarray, p: float, gamma: Iv, terms: int) -> np.ndarray:
    """a_n for each n of `ns` (floats of Loader's terms, ARX's summation bounds; the first
    `terms` terms)."""
    start = _floor_index(ns.astype(np.float64), gamma) + 1
    counts = np.clip(ns - start + 1, 0, terms)
    out = np.zeros(ns.size)
    if not counts.sum():
        return out
    has = counts > 0
    nf, jf = ns[has].astype(np.float64), start[has].astype(np.float64)
    # the first term of each tail by Loader's expansion (p^n when the tail is the one term j = n)
    first = np.empty(nf.size)
    full = jf == nf
    first[full] = p ** nf[full]
    m = ~full
    nn, jj = nf[m], jf[m]
    rest = nn - jj
    dev = jj * np.log(jj / (nn * p)) + rest * np.log(rest / (nn * (1.0 - p)))
    t1 = _stirling(nn) - _stirling(jj) - _stirling(rest)
    first[m] = np.exp(0.5 * np.log(nn / (2.0 * math.pi * jj * rest)) + t1 - dev)
    # the next terms by the ratio pmf(j+1) / pmf(j) = (n - j) / (j + 1) * p / (1 - p)
    cnt = counts[has]
    owner = np.repeat(np.arange(cnt.size), cnt)
    begin = np.cumsum(cnt) - cnt
    step = np.arange(owner.size) - begin[owner]
    j = jf[owner] + step - 1.0  # the term before
    with np.errstate(divide="ignore"):
        ratio = np.log((nf[owner] - j) / (j + 1.0)) + math.log(p / (1.0 - p))
    ratio[begin] = 0.0
    logs = np.cumsum(ratio)
    logs -= np.repeat(logs[begin], cnt)
    terms = first[owner] * np.exp(logs)
    out[has] = np.bincount(owner, weights=terms, minlength=cnt.size)
    return out


def _chernoff(ns: np.ndarray, beta: float, gamma: float) -> np.ndarray:
    d = gamma * math.log(gamma / beta) - (gamma - beta)
    return np.exp(-ns.astype(np.float64) * d)


@dataclass(frozen=True)
class DPParameters:
    """k and β for one anonymisation ε and δ (ARX's ``ParameterCalculation``)."""

    epsilon: float  # the ε they are derived from (ε_anon)
    delta: float
    k: int
    beta: float


def calculate(epsilon: float, delta: float) -> DPParameters:
    """ARX's ``ParameterCalculation(epsilon, delta)``: β to the last bit, k as ARX's loop
    returns it."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError("epsilon must be > 0")
    if not (0 < delta < 1):
        raise ValueError("delta must be in (0, 1)")
    tails = _DeltaOfK(epsilon)
    # δ(k) is non-increasing in k: the smallest k below δ by doubling, then bisection
    lo, hi = 0, 1  # below(lo) is False (lo == 0: not asked)
    while not tails.below(hi, delta):
        lo, hi = hi, max(hi + 1, hi * 5 // 4)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tails.below(mid, delta):
            hi = mid
        else:
            lo = mid
    return DPParameters(float(epsilon), float(delta), hi + 1, tails.beta.lo)


class _DeltaOfK:
    """δ(k) of one ε: the tails a_n and their Chernoff bounds c_n over n, computed in blocks
    as far as a k asks for them."""

    def __init__(self, epsilon: float) -> None:
        self.beta = beta_interval(epsilon)
        self.gamma = gamma_interval(epsilon, self.beta)
        self.p = 0.5 * (self.beta.lo + self.beta.hi)
        self.g = 0.5 * (self.gamma.lo + self.gamma.hi)
        self.a = np.zeros(0)
        self.c = np.zeros(0)
        self.terms = _terms(epsilon)
        self.first = max(self.n_m(1), 0)

    def n_m(self, k: int) -> int:
        return math.ceil(((Iv.of(float(k)) / self.gamma) - ONE).lo)

    def ensure(self, upto: int) -> None:
        first = self.first
        while first + self.a.size <= upto:
            grow = max(BLOCK, self.a.size // 2, upto + 1 - first - self.a.size)
            ns = np.arange(first + self.a.size, first + self.a.size + grow, dtype=np.int64)
            self.a = np.concatenate([self.a, _tails(ns, self.p, self.gamma, self.terms)])
            self.c = np.concatenate([self.c, _chernoff(ns, self.p, self.g)])

    def delta_of(self, k: int) -> tuple[float, int]:
        """δ(k) and the n where it is reached."""
        lo = self.n_m(k) - self.first
        size = BLOCK // 4
        while True:
            self.ensure(self.first + lo + size)
            run = np.maximum.accumulate(self.a[lo : lo + size])
            stop = np.flatnonzero(run > self.c[lo : lo + size] * (1 + 1e-12))
            if stop.size:
                end = lo + int(stop[0]) + 1
                at = lo + int(np.argmax(self.a[lo:end]))
                return float(self.a[at]), self.first + at
            size *= 2

    def below(self, k: int, delta: float) -> bool:
        value, n = self.delta_of(k)
        if abs(value - delta) > TIE * delta:
            return value < delta
        exact = interval_tail(n, self.beta, self.gamma)  # ARX's own interval of this a_n
        if exact.hi < delta:
            return True
        if exact.lo > delta:
            return False
        raise ArithmeticError("delta(k) and delta cannot be told apart (ARX fails as well)")
