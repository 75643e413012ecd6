"""Each class's first input row, a mergeable minimum (core/count/first_rows.py): however the
rows are cut into chunks and at whichever chain node the partials were counted, the merged
first rows equal the first occurrence of each class in the whole input."""

from __future__ import annotations

import numpy as np
import pytest

from airflow_skald.core.count.first_rows import ROW_BITS, FirstRows, chunk_codes


class _Dim:
    """A QID of two levels: 6 values, then value // 2 (3 labels)."""

    cards = [6, 3]

    def level_map(self, src: int, dst: int) -> np.ndarray:
        return np.arange(6) // 2 if (src, dst) == (0, 1) else np.arange(self.cards[src])


DIMS = [_Dim(), _Dim()]


def _global_first(keys: np.ndarray, cut: list[int]) -> dict[int, int]:
    """Expected: per key, the code (chunk << 32 | row in chunk) of its first occurrence."""
    out, starts = {}, np.r_[0, np.cumsum(cut)]
    for c, (lo, hi) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
        for r, k in enumerate(keys[lo:hi]):
            out.setdefault(int(k), (c << ROW_BITS) + r)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_merged_partials_give_the_first_row_of_every_class(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 6, 200), rng.integers(0, 6, 200)
    keys0 = a * 6 + b  # node (0, 0)
    cut = [50, 70, 80]
    parts, lo = [], 0
    for c, n in enumerate(cut):
        node = (0, 0) if c != 1 else (1, 0)  # one partial counted higher on the chain
        k = keys0[lo : lo + n] if node == (0, 0) else (a[lo : lo + n] // 2) * 6 + b[lo : lo + n]
        part = FirstRows(node)
        part.add(DIMS, node, *chunk_codes(c, k))
        parts.append(part)
        lo += n
    merged = FirstRows.merge(DIMS, parts)
    assert merged.node == (1, 0)
    expected = _global_first((a // 2) * 6 + b, cut)
    assert dict(zip(merged.keys.tolist(), merged.codes.tolist(), strict=True)) == expected
    top = np.array(sorted({int(x) for x in (a // 2) * 3 + b // 2}))
    at_top = merged.at(DIMS, (1, 1), top)
    assert at_top.tolist() == [
        min(v for k, v in expected.items() if (k // 6) * 3 + (k % 6) // 2 == t) for t in top
    ]


def test_round_trip_and_missing_classes():
    part = FirstRows((0, 0))
    part.add(DIMS, (0, 0), *chunk_codes(2, np.array([7, 3, 7, 1])))
    back, rest = FirstRows.split(part.to_bytes() + b"tail")
    assert rest == b"tail" and back.node == (0, 0)
    assert back.keys.tolist() == [1, 3, 7]
    assert back.codes.tolist() == [(2 << ROW_BITS) + r for r in (3, 1, 0)]
    assert FirstRows.split(b"other") == (None, b"other")
    with pytest.raises(ValueError, match="without a first row"):
        back.at(DIMS, (0, 0), np.array([2]))
