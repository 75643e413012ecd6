"""The utility sample: the same records however the input is cut, and exactly the records of
smallest key (bottom-k), merged across workers through its byte form."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from airflow_skald.core.utility.sample import Sample, key_bound, row_keys

N = 5000


def table(n: int = N) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "age": rng.integers(17, 90, n),
            "city": pa.array([f"c{i % 37}" for i in range(n)]).dictionary_encode(),
        }
    )


def drawn(capacity: int, cuts: list[int], workers: int = 1, n: int = N) -> Sample:
    """The sample of `table()` read in chunks ending at `cuts`, by `workers` groups."""
    whole = table(n)
    bounds = [0, *cuts, n]
    chunks = [(a, whole.slice(a, b - a)) for a, b in zip(bounds, bounds[1:], strict=False)]
    groups = [chunks[i::workers] for i in range(workers)]
    parts = []
    for group in groups:
        s = Sample.empty(capacity, seed=11, bound=key_bound(capacity, n))
        for first, chunk in group:
            s.offer(first, chunk)
        parts.append(Sample.from_bytes(s.to_bytes(), capacity, 11, s.bound))
    return Sample.merge(parts)


@pytest.mark.parametrize("capacity", [1, 100, 999, N, 2 * N])
def test_sample_is_the_records_of_smallest_key(capacity):
    rows, sampled = drawn(capacity, [1200, 1201, 3000]).ordered()
    keys = row_keys(np.arange(N), 11)
    expected = np.argsort(keys, kind="stable")[: min(capacity, N)]
    assert rows.tolist() == expected.tolist()  # in key order: a random order of the records
    whole = table()
    assert sampled.column("age").to_pylist() == whole.column("age").take(expected).to_pylist()
    assert sampled.column("city").to_pylist() == whole.column("city").take(expected).to_pylist()


@pytest.mark.parametrize(
    "cuts,workers", [([], 1), ([17], 1), ([500, 1000, 4999], 2), (list(range(250, N, 250)), 3)]
)
def test_sample_does_not_depend_on_chunking_or_workers(cuts, workers):
    base_rows, base = drawn(300, [2500]).ordered()
    rows, other = drawn(300, cuts, workers).ordered()
    assert rows.tolist() == base_rows.tolist()
    assert other.equals(base)


def test_the_bound_lets_each_chunk_offer_few_rows_and_loses_none():
    capacity, n = 50, 200_000
    bound = key_bound(capacity, n)
    below = int(np.count_nonzero(row_keys(np.arange(n), 11) < np.uint64(bound)))
    assert capacity <= below < 4 * capacity + 200  # a few times the sample, not the chunk
    s = Sample.empty(capacity, 11, bound)
    s.offer(0, pa.table({"x": np.arange(n)}))
    expected = np.argsort(row_keys(np.arange(n), 11), kind="stable")[:capacity]
    assert s.ordered()[0].tolist() == expected.tolist()
