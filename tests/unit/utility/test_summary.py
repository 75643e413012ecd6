"""Per-column figures from value counts merged over chunks equal pandas' on the whole column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_skald.core.utility.summary import Counts, figures, release_figures

rng = np.random.default_rng(3)
N = 4001
NUMBERS = pd.Series(rng.integers(0, 60, N) + rng.choice([0.0, 0.5], N))
TEXT = pd.Series(rng.choice(["a", "b", "c", "d"], N, p=[0.4, 0.3, 0.2, 0.1]))


def merged(series: pd.Series, cuts: list[int], dictionary: bool = False) -> Counts:
    bounds = [0, *cuts, len(series)]
    parts = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        column = pa.array(series.iloc[a:b])
        parts.append(Counts.of(column.dictionary_encode() if dictionary else column))
    return Counts.merge(parts)


@pytest.mark.parametrize("cuts", [[], [1], [1000, 2000, 2001], list(range(100, N, 100))])
def test_number_figures_equal_pandas_whatever_the_chunks(cuts):
    f = figures(merged(NUMBERS, cuts), name_values=True)
    assert f["count"] == NUMBERS.count() and f["distinct"] == NUMBERS.nunique()
    counts = NUMBERS.value_counts()
    assert f["mode_records"] == counts.max()
    assert f["mode"] == min(counts[counts == counts.max()].index)  # ties: the smallest
    assert f["min"] == NUMBERS.min() and f["max"] == NUMBERS.max()
    assert f["median"] == NUMBERS.median()
    assert f["mean"] == pytest.approx(NUMBERS.mean(), rel=1e-12)
    assert f["std"] == pytest.approx(NUMBERS.std(), rel=1e-12)  # n - 1, as pandas
    assert f == figures(merged(NUMBERS, []), name_values=True)  # the same bits


def test_input_figures_name_no_value():
    f = figures(merged(NUMBERS, [7]), name_values=False)
    assert set(f) == {"count", "distinct", "mode_records", "mean", "std"}
    assert f["mean"] == pytest.approx(NUMBERS.mean(), rel=1e-12)
    t = figures(merged(TEXT, [5], dictionary=True), name_values=False)
    assert t == {"count": N, "distinct": 4, "mode_records": int((TEXT == "a").sum())}


def test_release_figures_count_the_top_apart():
    released = pd.concat([TEXT, pd.Series(["*"] * 50)], ignore_index=True)
    f = release_figures(merged(released, [100, 3000], dictionary=True))
    assert f["top_records"] == 50 and f["count"] == N and f["distinct"] == 4
    assert f["mode"] == TEXT.mode()[0] and "mean" not in f
    labels = pd.Series(["17", "18", "18", "*", "40"])
    g = release_figures(merged(labels, [2]))
    assert g["mode"] == 18.0 and g["median"] == 18.0 and g["max"] == 40.0
    assert g["std"] == pytest.approx(pd.Series([17, 18, 18, 40]).std())


def test_counts_survive_their_byte_form():
    c = merged(TEXT, [10], dictionary=True)
    back = Counts.from_bytes(c.to_bytes())
    assert back.values.to_pylist() == c.values.to_pylist()
    assert back.counts.tolist() == c.counts.tolist()


@pytest.mark.parametrize(
    "values, kind",
    [
        ([5, -3, 5, 7, -3, 5], pa.int64()),  # a count table over the range
        ([2, 0, 2, 255], pa.uint8()),
        ([-(2**62), 2**62, 7, 7], pa.int64()),  # a range far wider than the records: hashed
        ([2**64 - 1, 3, 3], pa.uint64()),  # beyond int64: hashed
        ([4, None, 4, 1], pa.int32()),  # a null: hashed, nulls not counted
    ],
)
def test_integer_counts_equal_the_hashed_counts(values, kind):
    column = pa.array(values, kind)
    got = Counts.of(column)
    vc = pc.value_counts(column.drop_null())
    order = np.argsort(vc.field("values").to_numpy(zero_copy_only=False), kind="stable")
    assert got.values.type == kind
    assert got.values.to_pylist() == np.asarray(vc.field("values"))[order].tolist()
    assert got.counts.tolist() == vc.field("counts").to_numpy()[order].tolist()
