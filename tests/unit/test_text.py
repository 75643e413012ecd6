"""Exact numbers as people wrote them, ranks in text order (core/text.py)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from airflow_skald.core.text import decimal_text, rank_names


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Fraction(1, 100), "0.01"),
        (Fraction(5), "5"),
        (Fraction(-3, 8), "-0.375"),
        (Fraction(1, 20), "0.05"),
        (Fraction(123, 1000), "0.123"),
        (Fraction(1, 3), "1/3"),
        (Fraction(0), "0"),
    ],
)
def test_decimal_text(value, text):
    assert decimal_text(value) == text
    if "/" not in text:
        assert Fraction(text) == value


@pytest.mark.parametrize("n", [1, 9, 10, 99, 100, 1234])
def test_rank_names_sort_as_ranks(n):
    names = rank_names(n)
    assert len(names) == n and names[0].startswith("value #0")
    assert sorted(names) == names
    assert int(names[-1].split("#")[1]) == n
