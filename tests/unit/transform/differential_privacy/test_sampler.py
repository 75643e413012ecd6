"""The DP sample and the exponential mechanism against their exact distributions (fixed
keys), and the sample's independence from how the rows are cut."""

from __future__ import annotations

import math

import numpy as np

from airflow_skald.core.transform.differential_privacy import keys, mechanism
from airflow_skald.core.transform.differential_privacy.sampler import Sampler, threshold

SECRET = b"a fixed test secret, not a real one"


def _chi_square(observed: np.ndarray, expected: np.ndarray) -> float:
    return float(((observed - expected) ** 2 / expected).sum())


# 0.999 quantiles of chi-square with 1 and 4 degrees of freedom
CHI2_999 = {1: 10.828, 4: 18.467}


def test_sample_is_binomial_beta() -> None:
    beta, n = 0.8504313807773647, 200_000
    kept = Sampler.of(SECRET, "run-a", beta).keeps(0, n)
    observed = np.array([kept.sum(), n - kept.sum()], dtype=float)
    expected = np.array([n * beta, n * (1 - beta)])
    assert _chi_square(observed, expected) < CHI2_999[1]


def test_sample_rows_are_independent() -> None:
    """Pairs of neighbouring rows fall in the four cells as independent coins do."""
    beta, n = 0.3, 100_000
    kept = Sampler.of(SECRET, "run-b", beta).keeps(0, 2 * n).reshape(n, 2)
    cells = np.bincount(kept[:, 0] * 2 + kept[:, 1], minlength=4).astype(float)
    p = np.array([(1 - beta) ** 2, (1 - beta) * beta, beta * (1 - beta), beta**2])
    assert _chi_square(cells, n * p) < CHI2_999[4]


def test_sample_does_not_depend_on_the_cut() -> None:
    sampler = Sampler.of(SECRET, "run-c", 0.5)
    whole = sampler.keeps(0, 10_001)
    for cut in ([0, 1, 2, 3, 10_001], [0, 7, 4_096, 4_097, 9_999, 10_001], [0, 5_000, 10_001]):
        parts = [sampler.keeps(a, b - a) for a, b in zip(cut, cut[1:], strict=False)]
        assert np.array_equal(np.concatenate(parts), whole)


def test_another_run_or_secret_draws_another_sample() -> None:
    a = Sampler.of(SECRET, "run-d", 0.5).keeps(0, 1_000)
    assert np.array_equal(a, Sampler.of(SECRET, "run-d", 0.5).keeps(0, 1_000))
    assert not np.array_equal(a, Sampler.of(SECRET, "run-e", 0.5).keeps(0, 1_000))
    assert not np.array_equal(a, Sampler.of(b"another secret", "run-d", 0.5).keeps(0, 1_000))


def test_threshold_is_the_least_multiple_at_or_above_beta() -> None:
    for beta in (0.1, 0.5, 0.8646647167633871, 1 - 2**-53):
        t = threshold(beta)
        assert t / 2**53 >= beta > (t - 1) / 2**53


def test_sampler_repr_hides_the_key() -> None:
    assert str(Sampler.of(SECRET, "run-f", 0.5).key) not in repr(Sampler.of(SECRET, "run-f", 0.5))


def test_exponential_mechanism_distribution() -> None:
    scores = [-3.0, -1.0, 0.0, -2.5, -0.5]
    eps = 1.3
    weights = np.exp([0.5 * eps * s for s in scores])
    p = weights / weights.sum()
    assert np.allclose(mechanism.probabilities(scores, eps), p, rtol=1e-15)
    n = 60_000
    u = keys.uniforms(keys.stream_key(SECRET, "run-g", keys.SEARCH), 0, n)
    drawn = mechanism.draw(scores, eps, u)
    assert drawn[7] == mechanism.draw(scores, eps, float(u[7]))
    observed = np.bincount(drawn, minlength=len(scores)).astype(float)
    assert _chi_square(observed, n * p) < CHI2_999[4]


def test_exponential_mechanism_exact_scores_and_edges() -> None:
    from fractions import Fraction

    scores = [Fraction(-(10**30), 3), Fraction(-(10**30) - 6, 3)]  # differ by 2 far from 0
    p = mechanism.probabilities(scores, 1.0)
    assert math.isclose(p[1] / p[0], math.exp(-1.0), rel_tol=1e-12)
    assert mechanism.draw([0.0, 0.0], 1.0, 0.0) == 0
    assert mechanism.draw([0.0, 0.0], 1.0, 1 - 2**-53) == 1
