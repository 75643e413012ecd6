"""k-map's derived k' (ARX's ``KMap.calculateKPoisson`` / ``calculateKZeroPoisson``): the class size
that, at significance `alpha`, guarantees k matching records in the population when population cell
sizes follow a Poisson (El Emam and Dankar 2008: D3, Pannekoek 1999) or zero-truncated Poisson (D4)
distribution of mean lambda = sampling fraction * k.

ARX sums the distribution in doubles; here every term is a 60-digit decimal, so the
comparison with 1 - alpha is decided correctly wherever doubles could round either way.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

ESTIMATORS = ("poisson", "zero_truncated_poisson")
_DIGITS = 60


def _dec(x: Fraction) -> Decimal:
    return Decimal(x.numerator) / Decimal(x.denominator)


def derived_k(k: int, fraction: Fraction, alpha: Fraction, estimator: str, n_records: int) -> int:
    """k' for k-map with sampling fraction `fraction` = records / population, capped at the
    records and at k (KMap.initialize)."""
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        lam = _dec(Fraction(fraction) * k)
        threshold = 1 - _dec(Fraction(alpha))
        p0 = (-lam).exp()
        if estimator == "poisson":
            term, value, counter = p0, Decimal(0), 0
            cdf = Decimal(0)
            while value < threshold:
                cdf += term  # P(X <= counter)
                value = cdf
                counter += 1
                term = term * lam / counter
                if counter >= k:
                    value = Decimal(1)
                    break
            out = counter + 1
        elif estimator == "zero_truncated_poisson":
            v2 = 1 - p0
            term, value, counter = p0 * lam, Decimal(0), 1  # P(X = 1)
            while value < threshold:
                value += term / v2
                counter += 1
                term = term * lam / counter
                if counter >= k:
                    value = Decimal(1)
                    break
            out = counter
        else:
            raise ValueError(f"unknown estimator {estimator!r}")
    return min(k, min(out, n_records))
