"""Risk-based models (docs/design.md §4c): ARX's parameter translations, k-map's k', the estimators'
conventions, and the shortest-prefix suppression of the sample-based models against a
brute-force walk over every prefix."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from airflow_skald.core.privacy.average_risk import AverageRisk, size_threshold
from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.privacy.policy import PrivacyPolicy
from airflow_skald.core.privacy.population_uniqueness import PopulationUniqueness
from airflow_skald.core.privacy.risk.analysis import PopulationModel, analyse
from airflow_skald.core.privacy.risk.estimators import Histograms, estimate
from airflow_skald.core.privacy.risk.kmap import derived_k
from airflow_skald.core.privacy.risk.pitman import pitman
from airflow_skald.core.privacy.sample_uniqueness import SampleUniqueness
from airflow_skald.core.quality.dm_star import DMStar


@pytest.mark.parametrize(
    "highest,size", [("0.2", 5), ("0.1", 10), ("0.3", 4), ("0.33", 4), ("0.34", 3), ("1", 1)]
)
def test_size_threshold_as_arx_translates_it(highest, size):
    assert size_threshold(Fraction(highest)) == size


def test_k_map_derived_k():
    f = Fraction(1, 10)
    # ARX returns one more than the count of terms summed: lambda = 1 (k = 10, f = 0.1) needs
    # P(X <= 4) = 0.9963 >= 0.99, 5 terms, k' = 6; lambda = 0.1: P(X <= 1) = 0.9953, k' = 3
    assert derived_k(10, f, Fraction(1, 100), "poisson", 10**6) == 6
    assert derived_k(10, Fraction(1, 100), Fraction(1, 100), "poisson", 10**6) == 3
    assert derived_k(5, f, Fraction(1, 100), "poisson", 10**6) == 5  # capped at k
    # zero-truncated, lambda = 1: P(1..4) / (1 - P(0)) = 0.9945 after 4 terms, k' = 5
    assert derived_k(10, f, Fraction(1, 100), "zero_truncated_poisson", 10**6) == 5
    assert derived_k(10, f, Fraction(1, 100), "poisson", 3) == 3  # capped at the records


def test_no_sample_uniques_means_no_population_uniques():
    u = estimate(Histograms.of(np.array([2, 2, 3, 5]), 1000))
    assert u.zayatz[0] == u.pitman[0] == u.snb[0] == u.dankar[0] == 0


def test_pitman_is_deterministic_and_bounded():
    rng = np.random.default_rng(1)
    sizes = rng.geometric(0.4, size=3000)
    h = Histograms.of(sizes, sizes.sum() / 0.01)
    a, b = pitman(h), pitman(h)
    assert np.array_equal(a, b) and 0 < a[0] < h.population


def test_risk_analysis_figures():
    sizes = np.array([1, 1, 2, 4, 10])
    out = analyse(sizes, Fraction(1, 5), PopulationModel(sampling_fraction=Fraction(1, 10)), 18)
    assert out["records"] == 18 and out["classes"] == 5
    assert out["prosecutor"]["highest_risk"] == 1.0
    assert out["prosecutor"]["records_at_risk"] == pytest.approx(8 / 18)  # sizes 1, 1, 2, 4
    assert out["marketer_risk"] == pytest.approx(5 / 18)
    assert out["sample_uniques"] == pytest.approx(2 / 18)
    assert out["population_size"] == 180


def _brute(models, sizes, first, limit):
    """Every class-size-ascending prefix tried in order, per model, as docs/design.md §4c words it."""
    order = np.lexsort((first, sizes))
    s = sizes[order]
    n = int(sizes.sum())
    allowed = int(limit * n)
    p = 0
    for m in models:
        for q in range(p, s.size + 1):
            if s[:q].sum() > allowed:
                return None
            if m.holds_on(s[q:]):
                p = q
                break
    return order[:p]


@pytest.mark.parametrize("seed", range(12))
def test_sample_based_suppress_the_shortest_prefix(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.geometric(0.35, size=int(rng.integers(5, 40))).astype(np.int64)
    first = rng.permutation(sizes.size)
    models = (
        AverageRisk(Fraction(int(rng.integers(2, 6)), 10)),
        SampleUniqueness(Fraction(int(rng.integers(1, 4)), 20)),
        PopulationUniqueness(
            Fraction(int(rng.integers(1, 5)), 10),
            ("zayatz", "pitman", "dankar")[seed % 3],
            PopulationModel(sampling_fraction=Fraction(1, 2)),
        ),
    )
    limit = Fraction(int(rng.integers(0, 6)), 10)
    policy = PrivacyPolicy(models, limit)
    j = policy.judge(ClassTable(sizes, first_rows=first))
    expected = _brute(models, sizes, first, limit)
    if expected is None:
        assert not j.passes
    else:
        assert j.passes
        assert sorted(np.flatnonzero(~j.kept).tolist()) == sorted(expected.tolist())
    # the search's cut: prefixes whose DM* could not beat `best` are not tried; the judgement
    # is the same where its DM* is <= best, a fail where it is above (or the node fails)
    table = ClassTable(sizes, first_rows=first)
    dm = int((sizes[j.kept] ** 2).sum()) + j.n_suppressed**2
    for best in (dm - 1, dm, dm + 1, int(rng.integers(0, 2 * dm + 2))):
        cut = policy.judge(table, within=lambda kept, ordered, b=best: DMStar().longest_prefix(
            table, kept, ordered, b))  # fmt: skip
        if j.passes and dm <= best:
            assert cut.passes and np.array_equal(cut.kept, j.kept)
        else:
            assert not cut.passes


@pytest.mark.parametrize("huge", [False, True])
def test_dm_star_longest_prefix(huge):
    """The longest prefix (sizes ascending) whose suppression keeps DM* <= best, against
    every prefix's DM* computed directly; `huge`: a table beyond int64 squares."""
    rng = np.random.default_rng(int(huge))
    for _ in range(300):
        sizes = rng.integers(1, 9, int(rng.integers(1, 25))).astype(np.int64)
        if huge:
            sizes[0] = 3_000_000_000
        kept = rng.random(sizes.size) < 0.8
        ordered = np.sort(sizes[kept])
        n = int(sizes.sum())
        s0 = n - int(sizes[kept].sum())
        losses = [
            sum(int(e) ** 2 for e in ordered[p:]) + (s0 + sum(int(e) for e in ordered[:p])) ** 2
            for p in range(ordered.size + 1)
        ]
        for best in {losses[0] - 1, *losses, losses[-1] + 1, int(rng.integers(0, losses[-1]))}:
            expected = max((p for p, v in enumerate(losses) if v <= best), default=-1)
            got = DMStar().longest_prefix(ClassTable(sizes), kept, ordered, best)
            assert got == expected


def test_zayatz_hypergeometric_against_scipy_stats_and_exact():
    """Zayatz's pmf (commons-math's, as ARX computes it: tests/unit/privacy/test_zayatz.py):
    0 exactly where scipy.stats' is; within 1e-12 of scipy.stats' where the population is small
    (Boost's pmf is exact there); n / N within 4e-15 for a class of 1 at every population,
    where scipy.stats' is off by up to 4e-7 at 2^31 - 1 (the error the product carried at a
    country's population before ADR 0042)."""
    from scipy import stats

    from airflow_skald.core.privacy.risk.hypergeometric import probability_one

    rng = np.random.default_rng(5)
    for total in (10, 57, 1000, 301_620, 2**31 - 1):
        good = rng.integers(1, total + 1, 500)
        drawn = rng.integers(1, total + 1, 500)
        good[:20], drawn[20:40] = 1, total
        expected = stats.hypergeom.pmf(1, total, good, drawn)
        got = probability_one(total, good, drawn)
        assert np.array_equal(got == 0, expected == 0)
        exact = drawn[:20] / total  # a class of 1: P(X = 1) = n / N
        assert np.all(np.abs(got[:20] - exact) <= 4e-15 * exact)
        if total <= 1000:
            normal = expected > 1e-300
            assert np.allclose(got[normal], expected[normal], rtol=1e-12, atol=0)


@pytest.mark.parametrize("seed", range(3))
def test_size_sums_are_the_digamma_differences(seed):
    """Pitman's sums over class sizes by the recurrence and a power series (|alpha| <= 1)
    equal the digamma and trigamma differences (scipy's polygamma, to rounding); outside,
    they are those differences as ARX writes them."""
    from scipy import special

    from airflow_skald.core.privacy.risk.pitman import SizeSums, trigamma

    rng = np.random.default_rng(seed)
    sizes = np.unique(rng.geometric(0.02, size=60) + 1)
    counts = rng.integers(1, 50, size=sizes.size)
    for a, tri in ((np.linspace(-1, 0.999, 41), lambda x: special.polygamma(1, x)),
                   (np.array([-3.7, 1.5, 2.25]), trigamma)):  # fmt: skip
        psi_sum, tri_sum = SizeSums(sizes, counts)(a)
        shifted = sizes[None, :] - a[:, None]
        want_psi = (counts * (special.digamma(shifted) - special.digamma(1 - a)[:, None])).sum(1)
        want_tri = (counts * (tri(1 - a)[:, None] - tri(shifted))).sum(1)
        assert psi_sum == pytest.approx(want_psi, rel=1e-12)
        assert tri_sum == pytest.approx(want_tri, rel=1e-12)
    assert SizeSums(np.zeros(0, np.int64), np.zeros(0))(a)[0].tolist() == [0.0] * a.size


def _toy_system(threshold: np.ndarray):
    """A try fails (NaN) where x0 is below its problem's threshold and otherwise lands on
    (q, q), q = x0 rounded to 0.01: the point shows which try won."""

    def system(x0, x1, rows):
        q = np.round(x0 * 100) / 100
        bad = x0 < threshold[rows]
        one, zero = np.ones_like(x0), np.zeros_like(x0)
        return np.where(bad, np.nan, x0 - q), np.where(bad, np.nan, x1 - q), one, zero, zero, one

    return system


def test_newton_tries_in_arx_order_across_waves():
    """The model's start value first, then ARX's prepared tries in their order: each problem's
    answer is its first converging try, whichever wave of tries it falls in. Here a try fails
    (NaN) where x0 is below the problem's threshold and otherwise lands on (q, q), q = x0
    rounded to 0.01: the point shows which try won."""
    from airflow_skald.core.privacy.risk.newton import solve_batch

    threshold = np.array([-np.inf, 0.2, 0.5, 0.9, 1.5])

    system = _toy_system(threshold)

    start = np.full((2, threshold.size), -1.0)
    got = solve_batch(system, start)
    assert got[0].tolist()[:4] == [-1.0, 0.33, 0.66, 0.99]
    assert np.isnan(got[:, 4]).all()


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 7])  # (0 and 6 take ~20 s each)
def test_any_prefix_verdict_is_the_shortest_prefix_verdict(seed):
    """`any_prefix` (the search under ARX's DM*, whose loss ignores what is suppressed): the node
    passes exactly when it passes with the shortest prefix, and the prefix it takes holds.
    Pitman on many singletons (hundreds of candidate prefixes, so the estimator's candidates
    are tried in two batches), alone and after average risk."""
    rng = np.random.default_rng(100 + seed)
    sizes = np.concatenate(
        [np.ones(int(rng.integers(50, 400)), np.int64), rng.geometric(0.2, 300) + 1]
    )
    first = rng.permutation(sizes.size)
    table = ClassTable(sizes, first_rows=first)
    pitman_model = PopulationUniqueness(
        Fraction(int(rng.integers(1, 30)), 1000),
        ("pitman", "dankar")[seed % 2],
        PopulationModel(sampling_fraction=Fraction(1, 10)),
    )
    for models in ((pitman_model,), (AverageRisk(Fraction(9, 10)), pitman_model)):
        for limit in (Fraction(1, 100), Fraction(5, 100), Fraction(3, 10)):
            policy = PrivacyPolicy(models, limit)
            shortest = policy.judge(table, verdict_only=True)
            some = policy.judge(table, verdict_only=True, any_prefix=True)
            assert some.passes == shortest.passes
            if some.passes:
                assert pitman_model.holds_on(sizes[some.kept])
                assert some.n_suppressed >= shortest.n_suppressed


def test_waves_one_rank_at_a_time_give_the_same_answers():
    """With MANY problems or more left the prepared tries run one rank at a time: each problem
    keeps its first converging try in ARX's order, as with WAVE ranks side by side."""
    from airflow_skald.core.privacy.risk import newton

    rng = np.random.default_rng(3)
    threshold = rng.choice([-np.inf, 0.2, 0.5, 0.9, 1.5], size=3 * newton.MANY)

    system = _toy_system(threshold)

    start = np.full((2, threshold.size), -1.0)
    many = newton.solve_batch(system, start)
    for i in range(threshold.size):  # one problem at a time: WAVE ranks side by side
        alone = newton.solve_batch(lambda a, b, rows, i=i: system(a, b, rows * 0 + i), start[:, :1])
        assert np.array_equal(many[:, i], alone[:, 0], equal_nan=True)


def test_trigamma_of_a_batch_is_each_value_alone():
    """`trigamma` over a mixed batch (series, recurrence, reflection, NaN, inf) gives each value
    bit for bit as on its own, and scipy's polygamma to ~1e-9 (the series' error at 6)."""
    from scipy import special

    from airflow_skald.core.privacy.risk.pitman import trigamma

    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-50, 50, 400), rng.uniform(0, 8, 200), [np.nan, np.inf, 6.0]])
    batch = trigamma(x)
    alone = np.array([trigamma(np.array([v]))[0] for v in x])
    assert np.array_equal(batch, alone, equal_nan=True)
    finite = np.isfinite(x)
    finite[finite] = x[finite] % 1 != 0
    assert batch[finite] == pytest.approx(special.polygamma(1, x[finite]), rel=1e-8)


@pytest.mark.parametrize("seed", range(6))
def test_dm_star_arx_cut(seed):
    """ARX's DM* counts every class, suppressed or not: the search's cut tries every prefix
    of a node whose DM* is <= best and none above it (the node cannot win there), so the
    judgement is the full one or a fail."""
    from airflow_skald.core.quality.dm_star_arx import DMStarARX

    rng = np.random.default_rng(50 + seed)
    sizes = rng.geometric(0.35, size=int(rng.integers(5, 40))).astype(np.int64)
    table = ClassTable(sizes, first_rows=rng.permutation(sizes.size))
    model = PopulationUniqueness(
        Fraction(int(rng.integers(1, 5)), 10),
        ("zayatz", "pitman", "dankar")[seed % 3],
        PopulationModel(sampling_fraction=Fraction(1, 2)),
    )
    policy = PrivacyPolicy((model,), Fraction(int(rng.integers(0, 6)), 10))
    full = policy.judge(table)
    dm = int((sizes**2).sum())
    for best in (None, dm - 1, dm, dm + 1):
        cut = policy.judge(table, within=lambda kept, ordered, b=best: DMStarARX().longest_prefix(
            table, kept, ordered, b) if b is not None else None)  # fmt: skip
        if best is None or dm <= best:
            assert cut.passes == full.passes and np.array_equal(cut.kept, full.kept)
        else:
            assert not cut.passes
