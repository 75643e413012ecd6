"""Microaggregation's per-class aggregates (docs/design.md §4f) against an oracle written from ARX's
definitions with pandas (the whole table grouped by class), and ARX's number formatting."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from airflow_skald.core.count.histogram import Histogram
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.distributions import ClassValues
from airflow_skald.core.settings.microaggregation import parse_microaggregation
from airflow_skald.core.transform.microaggregation.aggregates import (
    NULL,
    Aggregates,
    ValueDomain,
    aggregate_labels,
    aggregates_from_bytes,
    aggregates_to_bytes,
    class_means,
    java_double_text,
    java_round,
)


def _java_round(x: float) -> int:
    return math.floor(x + 0.5)  # exact for the halves and quarters used here


def _oracle(function: str, values: pd.Series, integer: bool) -> str:
    """ARX's DistributionAggregateFunction, read from its definition."""
    v = values.dropna().astype(float)
    if v.empty:
        return NULL
    s = sorted(v)
    n = len(s)
    if function == "interval":
        return f"[{_text(s[0], integer)}, {_text(s[-1], integer)}]"
    if function == "mode":
        counts = v.value_counts()
        return _text(min(counts[counts == counts.max()].index), integer)
    if function == "median":
        x = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    elif function == "mean":
        xbar = sum(s) / n
        x = xbar + sum(a - xbar for a in s) / n
    else:
        x = math.exp(sum(math.log(a + 1) for a in s) / n) - 1
    return _text(_java_round(x) if integer else x, integer)


def _text(x: float, integer: bool) -> str:
    return str(int(x)) if integer else java_double_text(float(x))


def _labels(function: str, cls: np.ndarray, values: list, integer_hint=None):
    stats = SensitiveStats.of_column("age", _arrow(values), numbers=True)
    domain = ValueDomain.of_stats(stats)
    codes = stats.codes(_arrow(values))
    table = ClassValues.from_pairs(int(cls.max()) + 1, cls, codes)
    index, labels = aggregate_labels(function, table, domain)
    return [labels[i] for i in index], domain


def _arrow(values: list):
    import pyarrow as pa

    return pa.array(values)


@pytest.mark.parametrize("function", ["mean", "geometric_mean", "median", "mode", "interval"])
@pytest.mark.parametrize("decimal", [False, True])
def test_aggregates_match_the_oracle(function: str, decimal: bool) -> None:
    rng = np.random.default_rng(7 + decimal)
    n = 800
    cls = rng.integers(0, 25, n)
    ages = rng.integers(17, 91, n).astype(float)
    if decimal:
        ages = np.round(ages + rng.integers(0, 4, n) * 0.25, 2)
    values = [None if i % 97 == 0 else a for i, a in enumerate(ages.tolist())]
    values = [int(v) if (v is not None and not decimal) else v for v in values]
    got, domain = _labels(function, cls, values)
    assert domain.integer is not decimal
    frame = pd.DataFrame({"cls": cls, "v": pd.Series(values, dtype=float)})
    want = {c: _oracle(function, g["v"], not decimal) for c, g in frame.groupby("cls")}
    for c in range(25):
        if function in ("mean", "geometric_mean") and decimal:
            assert float(got[c]) == pytest.approx(float(want[c]), rel=1e-13), c
        else:
            assert got[c] == want[c], c


def test_even_median_and_mean_round_half_up() -> None:
    cls = np.array([0, 0, 1, 1, 2, 2, 2, 2])
    values = [20, 21, -3, -2, 1, 1, 2, 2]
    med, _ = _labels("median", cls, values)
    assert med == ["21", "-2", "2"]  # per class: 20.5 -> 21, -2.5 -> -2, 1.5 -> 2
    mean, _ = _labels("mean", cls, values)
    assert mean == ["21", "-2", "2"]
    mode, _ = _labels("mode", cls, values)
    assert mode == ["20", "-3", "1"]  # ties: the smallest value


def test_means_from_sums_equal_the_value_tables() -> None:
    # phase 2's sums per class (value - smallest) give the labels the (class, value) table
    # gives, halves rounded up, negatives included; a class summing to 0 is absent
    rng = np.random.default_rng(11)
    cls = rng.integers(0, 400, 5000)
    values = rng.integers(-40, 60, cls.size)
    values[cls == 7] = -40  # a class whose offsets sum to 0
    cls = np.r_[cls, 401, 401, 402, 402]
    values = np.r_[values, 20, 21, -3, -2]  # 20.5 -> 21, -2.5 -> -2
    want, _ = _labels("mean", cls, values.tolist())
    keys, sizes = np.unique(cls, return_counts=True)
    sums = np.bincount(cls, weights=values + 40).astype(np.int64)
    present = np.flatnonzero(sums)
    a = class_means("age", keys, sizes, Histogram((403,), present, sums[present]), -40)
    got = dict(zip(keys.tolist(), (a.labels[i] for i in a.index), strict=True))
    assert got[7] == "-40" and got[401] == "21" and got[402] == "-2"
    assert [got[c] for c in keys.tolist()] == [want[c] for c in keys.tolist()]


def test_a_class_of_nulls_is_null() -> None:
    got, _ = _labels("mean", np.array([0, 0, 1]), [None, None, 4])
    assert got == [NULL, "4"]


def test_java_formatting() -> None:
    assert java_double_text(37.5) == "37.5"
    assert java_double_text(38.0) == "38.0"
    assert java_double_text(1e7) == "1.0E7"
    assert java_double_text(12345678.9) == "1.23456789E7"
    assert java_double_text(0.001) == "0.001"
    assert java_double_text(0.0001) == "1.0E-4"
    assert java_double_text(-2.5e-5) == "-2.5E-5"
    assert java_round(np.array([0.5, 1.5, -0.5, -1.5, 2.4999])).tolist() == [1, 2, 0, -1, 2]


def test_aggregates_round_trip_and_lookup() -> None:
    a = Aggregates("age", np.array([3, 9, 40]), np.array([1, 0, 1], np.int32), ["30", "41"])
    (b,) = aggregates_from_bytes(aggregates_to_bytes([a]))
    assert b.name == "age" and b.labels == ["30", "41"]
    assert b.labels_of(np.array([40, 3, 9, 9])).tolist() == [1, 1, 0, 0]
    with pytest.raises(ValueError):
        b.labels_of(np.array([4]))


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"function": "avg", "cluster": True}, "function must be one of"),
        ({"function": "mean"}, "cluster must be true or false"),
        ({"function": "mean", "cluster": True, "x": 1}, "unknown key 'x'"),
        ("mean", "must be a mapping"),
    ],
)
def test_bad_settings_are_one_line(raw, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_microaggregation(raw, "quasi-identifier 'age'")
    assert parse_microaggregation({"function": "median", "cluster": False}, "x").cluster is False
