"""ARX's cost/benefit arithmetic of the profitability models (ADR 0046): the no-attack k,
the payout, and the class sizes below which no class can be kept (the monotone part the
search tags on), each against ARX's formulas written out here."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from oracle_profitability import no_attack_k

from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.privacy.profitability import Profitability
from airflow_skald.core.privacy.profitability_settings import ProfitabilitySettings
from airflow_skald.core.settings.cost_benefit import CostBenefit

CONFIGS = [  # benefit, loss, gain, cost (ARX's defaults and its test's four configurations)
    (1200, 300, 300, 4),
    (1200, 300, 1200, 2),
    (1200, 3000, 120, 20),
    (1000, 10, 100, 10),
    (1200, 1200, 1200, 3),
    (5, 300, 300, Fraction(7, 3)),
    (0, 300, 300, 4),
    (1200, 300, 0, 4),
]


def _cost(b, lo, g, c) -> CostBenefit:
    return CostBenefit(Fraction(b), Fraction(lo), Fraction(g), Fraction(c))


@pytest.mark.parametrize("config", CONFIGS)
def test_no_attack_k_and_smallest_keepable_are_arxs(config) -> None:
    b, lo, g, c = (float(x) for x in config)
    cost = _cost(*config)
    assert cost.no_attack_k() == no_attack_k(g, c)
    smallest = cost.smallest_keepable()
    for size in range(1, min(smallest, 10_000)):  # below it: no payout > 0, even at loss 0
        p = 1 / size
        assert b * (1 - 0.0) - (lo * p if g * p - c > 0 else 0.0) <= 0, size
    if b > 0:  # at it: some class (of loss 0) is kept
        p = 1 / smallest
        assert b - (lo * p if g * p - c > 0 else 0.0) > 0


def test_payout_is_arxs_risk_model() -> None:
    cost = _cost(1200, 3000, 120, 20)
    loss = np.array([0.0, 0.25, 0.5, 0.1, 1.0])
    success = 1 / np.array([1.0, 4.0, 5.0, 6.0, 100.0])
    expected = [
        1200 * (1 - x) - (3000 * p if 120 * p - 20 > 0 else 0.0)
        for x, p in zip(loss, success, strict=True)
    ]
    assert cost.payout(loss, success).tolist() == expected


def test_journalist_floor_counts_classes_too_small_in_the_population() -> None:
    """Subset records of classes whose population is below the smallest keepable size are
    suppressed at this node and every finer one: the judged floor."""
    model = Profitability(ProfitabilitySettings("journalist", True, _cost(1200, 3000, 120, 20)))
    assert model.settings.cost.smallest_keepable() == 3
    table = ClassTable(
        np.array([1, 2, 2, 5]),
        population=np.array([2, 3, 9, 5]),
        label_loss=np.array([0.0, 0.1, 0.9, 0.2]),
    )
    keeps, floor = model.judged(table)
    assert floor == 1  # the class of population 2
    p = 1 / table.population
    expected = 1200 * (1 - table.label_loss) - np.where(120 * p - 20 > 0, 3000 * p, 0.0) > 0
    assert keeps.tolist() == expected.tolist()
    prosecutor = Profitability(
        ProfitabilitySettings("prosecutor", True, _cost(1200, 3000, 120, 20))
    )
    assert prosecutor.smallest_kept == 3 and prosecutor.judged(table)[1] == 0.0
