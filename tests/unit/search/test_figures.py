"""A node's figures (core/search/figures.py): counts, metrics and risk from the class sizes
alone, checked against sums written out by hand."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from airflow_skald.core.privacy import ClassTable, PrivacyPolicy
from airflow_skald.core.search.figures import NodeFigures, class_size_histogram, risk


def test_figures_of_a_node_with_suppression():
    sizes = np.array([1, 2, 5, 7, 12])  # k = 3: the 1 and the 2 are suppressed (3 of 27)
    policy = PrivacyPolicy.k_anonymity(3, Fraction(1, 5))
    fig = NodeFigures.of(ClassTable(sizes), policy, node=(1, 0), tops=(2, 2))
    assert (fig.n_records, fig.n_suppressed, fig.max_suppressed) == (27, 3, 5)
    assert (fig.n_classes, fig.min_class_size, fig.passes) == (3, 5, True)
    assert (
        fig.dm_star == 5**2 + 7**2 + 12**2 + 3**2
    )  # the suppressed as one class (docs/design.md §4)
    assert fig.dm == 5**2 + 7**2 + 12**2 + 27 * 3  # kept |E|^2 + N * s
    assert NodeFigures.from_dict(fig.to_dict()) == fig


def test_a_node_that_suppresses_too_much_fails():
    policy = PrivacyPolicy.k_anonymity(5, Fraction(0))
    fig = NodeFigures.of(ClassTable(np.array([4, 10])), policy, node=(0,), tops=(1,))
    assert not fig.passes and fig.n_suppressed == 4 and fig.max_suppressed == 0


def test_risk_of_kept_classes():
    r = risk(np.array([2, 4, 10]), min_class_size=3)
    assert r["prosecutor_risk_max"] == 0.5
    assert r["prosecutor_risk_avg"] == 3 / 16
    assert r["share_below_2k"] == (2 + 4) / 16
    assert risk(np.array([], dtype=np.int64), 3)["prosecutor_risk_max"] == 0.0


def test_class_size_histogram_in_powers_of_two():
    assert class_size_histogram(np.array([1, 2, 3, 3, 9, 16])) == {
        "1-1": 1,
        "2-3": 3,
        "8-15": 1,
        "16-31": 1,
    }
    assert class_size_histogram(np.array([], dtype=np.int64)) == {}
