"""The interval builder (docs/design.md §3a, core/data/builders/intervals.py): cut points, groups, labels
below and above the cuts, decimals, bad rules."""

from __future__ import annotations

from fractions import Fraction

import pytest

from airflow_skald.core.data.builders.intervals import build_intervals, parse_interval_rule
from airflow_skald.core.errors import ConfigError, DataError


def rows(h) -> list[list[str]]:
    return h.table.tolist()


def test_intervals_age_example():
    rule = parse_interval_rule(
        "age",
        {"min_width": 1, "bins": [0, 18, 30, 45, 65, 90], "group": [2], "above": "90+"},
        Fraction(1),
    )
    lows = [Fraction(x) for x in (17, 18, 44, 45, 64, 65, 89, 90, 97)]
    values = [f"[{x}-{x}]" for x in lows]
    h = build_intervals("age", rule, Fraction(1), values, lows)
    assert rows(h) == [
        ["[17-17]", "[0-18)", "[0-30)", "*"],
        ["[18-18]", "[18-30)", "[0-30)", "*"],
        ["[44-44]", "[30-45)", "[30-65)", "*"],
        ["[45-45]", "[45-65)", "[30-65)", "*"],
        ["[64-64]", "[45-65)", "[30-65)", "*"],
        ["[65-65]", "[65-90)", "[65-90)", "*"],
        ["[89-89]", "[65-90)", "[65-90)", "*"],
        ["[90-90]", "90+", "90+", "*"],
        ["[97-97]", "90+", "90+", "*"],
    ]


def test_intervals_decimals_below_and_bad_rules():
    rule = parse_interval_rule(
        "bmi", {"min_width": 0.1, "bins": [18.5, 25, 30], "below": "<18.5"}, Fraction("0.1")
    )
    lows = [Fraction("17.0"), Fraction("18.5"), Fraction("29.9")]
    h = build_intervals("bmi", rule, Fraction("0.1"), ["a", "b", "c"], lows)
    assert rows(h) == [["a", "<18.5", "*"], ["b", "[18.5-25.0)", "*"], ["c", "[25.0-30.0)", "*"]]
    with pytest.raises(DataError, match="'bmi' rule bins: values lie at or above the last cut"):
        build_intervals("bmi", rule, Fraction("0.1"), ["x"], [Fraction(30)])
    bad = [
        ({"min_width": 1, "bins": [0, 30, 18]}, "cuts must strictly increase"),
        ({"min_width": 5, "bins": [0, 18]}, "cut 18 is not a whole number of min_width 5"),
        ({"bins": [0, 18]}, "needs min_width"),
        ({"min_width": 1, "bins": [0, 18], "group": [1]}, "whole numbers >= 2"),
    ]
    for item, what in bad:
        with pytest.raises(ConfigError, match=f"quasi-identifier 'x' rule .*{what}"):
            parse_interval_rule("x", item, Fraction(item.get("min_width", 1)))
