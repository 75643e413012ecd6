"""Each class's first input row (core/count/first_rows.py): however the rows are cut into
chunks, and in whatever order the chunks' findings are merged, the result is the first
occurrence of each class asked for in the whole input; the scan is done once every class
asked for has been seen."""

from __future__ import annotations

import numpy as np
import pytest

from airflow_skald.core.count.first_rows import ROW_BITS, FirstRowScan, chunk_first_rows


def _global_first(keys: np.ndarray, cut: list[int]) -> dict[int, int]:
    """Expected: per key, the code (chunk << 32 | row in chunk) of its first occurrence."""
    out, starts = {}, np.r_[0, np.cumsum(cut)]
    for c, (lo, hi) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
        for r, k in enumerate(keys[lo:hi]):
            out.setdefault(int(k), (c << ROW_BITS) + r)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_chunks_merged_in_any_order_give_each_wanted_class_its_first_row(seed):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 40, 500) * 7  # sparse keys
    cut = [int(x) for x in np.diff(np.r_[0, np.sort(rng.choice(499, 4, replace=False)) + 1, 500])]
    present = np.unique(keys)
    wanted = np.sort(rng.choice(present, size=present.size // 2, replace=False))
    scan = FirstRowScan(wanted)
    pieces = np.split(keys, np.cumsum(cut)[:-1])
    for c in rng.permutation(len(pieces)):
        scan.add(*chunk_first_rows(int(c), pieces[c], scan.wanted))
    expected = _global_first(keys, cut)
    assert scan.result().tolist() == [expected[int(k)] for k in wanted]


def test_done_once_every_class_is_seen_in_input_order():
    scan = FirstRowScan(np.array([3, 9]))
    scan.add(*chunk_first_rows(0, np.array([1, 3, 3, 5]), scan.wanted))
    assert not scan.done
    with pytest.raises(ValueError, match="without a first row"):
        scan.result()
    scan.add(*chunk_first_rows(1, np.array([9, 9, 3]), scan.wanted))
    assert scan.done
    assert scan.result().tolist() == [1, (1 << ROW_BITS) + 0]
    # a later chunk never moves a first row
    scan.add(*chunk_first_rows(2, np.array([3, 9]), scan.wanted))
    assert scan.result().tolist() == [1, 1 << ROW_BITS]


def test_no_rows_or_no_classes():
    where, codes = chunk_first_rows(0, np.zeros(0, np.int64), np.array([1]))
    assert where.size == codes.size == 0
    assert FirstRowScan(np.zeros(0, np.int64)).done
