"""k and β of (ε, δ)-DP against ARX 3.9.2's ``ParameterCalculation`` on a grid (values ARX
printed, tests/data/arx_answers/dp-parameters-grid.json, made by benchmarks/dp_arx_fixture.py),
in both modes: a fixed node (all of ε) and a searched one (ε − search budget)."""

from __future__ import annotations

import math
import time

import pytest
from arx_answers import dp_grid

from airflow_skald.core.privacy.dp_parameters import (
    Iv,
    anonymisation_epsilon,
    beta_interval,
    binomial_interval,
    calculate,
    gamma_interval,
    interval_tail,
)

POINTS = dp_grid()


def _epsilon(p: dict) -> float:
    return (
        p["epsilon"]
        if p["mode"] == "fixed"
        else anonymisation_epsilon(p["epsilon"], p["search_budget"])
    )


@pytest.mark.parametrize("p", POINTS, ids=lambda p: f"{p['epsilon']}-{p['delta']}-{p['mode']}")
def test_k_and_beta_as_arx(p: dict) -> None:
    ea = _epsilon(p)
    assert ea == p["epsilon_anonymization"]  # ε − budget: its lower bound, to the bit
    got = calculate(ea, p["delta"])
    assert got.k == p["k"]
    # β is ARX's interval arithmetic to the bit, given the exponential ARX's JVM returned
    lo, hi = p["jvm_exp_of_bounds"]
    jvm = {math.nextafter(-ea, -math.inf): lo, math.nextafter(-ea, math.inf): hi}
    assert beta_interval(ea, exp=jvm.__getitem__).lo == p["beta"]
    if (
        math.exp(lo) == lo and math.exp(hi) == hi or ([math.exp(x) for x in jvm] == [lo, hi])
    ):  # where the C library's e^x is the JVM's, the product's own β is ARX's
        assert got.beta == p["beta"]
    else:  # HotSpot's Math.exp is within one ulp, not correctly rounded: β one ulp apart
        assert abs(got.beta - p["beta"]) == math.ulp(p["beta"])


def test_fast() -> None:
    """ARX needs up to 36 s for k at ε = 3, δ = 1e-6."""
    t0 = time.process_time()
    assert calculate(3.0, 1e-6).k == 272
    assert time.process_time() - t0 < 1.0


def test_tails_agree_with_arx_intervals() -> None:
    """The vectorised tails a_n lie within ARX's own interval of them (a few n)."""
    import numpy as np

    from airflow_skald.core.privacy import dp_parameters as P

    for eps in (0.5, 2.0):
        beta = beta_interval(eps)
        gamma = gamma_interval(eps, beta)
        ns = np.array([3, 40, 117])
        fast = P._tails(ns, 0.5 * (beta.lo + beta.hi), gamma, P._terms(eps))
        for n, value in zip(ns.tolist(), fast.tolist(), strict=True):
            exact = interval_tail(n, beta, gamma)
            width = exact.hi - exact.lo
            assert exact.lo - 4 * width <= value <= exact.hi + 4 * width


def test_interval_binomial_brackets_the_exact_value() -> None:
    from fractions import Fraction

    p = Iv.of(0.3)
    for n, k in ((10, 4), (50, 49), (50, 50), (7, 0)):
        exact = math.comb(n, k) * Fraction(0.3) ** k * (1 - Fraction(0.3)) ** (n - k)
        iv = binomial_interval(n, p, k)
        assert Fraction(iv.lo) <= exact <= Fraction(iv.hi)


def test_refused_parameters() -> None:
    for eps, delta in ((0.0, 1e-5), (-1.0, 1e-5), (1.0, 0.0), (1.0, 1.0)):
        with pytest.raises(ValueError):
            calculate(eps, delta)
