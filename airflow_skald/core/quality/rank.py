"""ARX's RANK aggregate of a multi-dimensional quality model (`Metric.AggregateFunction.RANK`,
`metric/v2/ILMultiDimensionalRank`, ADR 0043): the per-QID values times their weights, sorted
descending, compared lexicographically (the largest weighted value first, then the next...).
ARX compares those doubles; here the values are exact fractions.

The key is a tuple; `float(key)` is its first (largest) element, a figure monotone in the key,
which is what the search's float bounds are compared with (a node whose largest weighted value
is bounded above the best's first element cannot win) and what the manifest reports."""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction


class RankKey(tuple):
    """Weighted per-QID values, largest first; ordered as tuples (lexicographically)."""

    __slots__ = ()

    def __float__(self) -> float:
        return float(self[0]) if self else 0.0


def rank_key(weighted: Iterable[Fraction]) -> RankKey:
    """The RANK key of weighted per-QID values."""
    return RankKey(sorted(weighted, reverse=True))
