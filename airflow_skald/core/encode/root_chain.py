"""The root chain (docs/design.md §4a, ADR 0012): the nodes phase 2's adaptive root may end at.

From the dimensions alone, a chain of nodes from the all-zeros node up to paper mode's root P
(`root_chain`): each step raises one QID by one level, the one losing the least precision
(1/top_i), ties: the larger reduction of possible bins (card[l]/card[l+1]), then the later QID
in `qid_priority` order. Nodes whose keys would not fit int64 (`KEY_LIMIT`) are left out of
its start.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from airflow_skald.core.encode.dimensions import Dimension

# Keys (class key * m + value code) are int64: chain nodes with more possible bins than this
# are left out of the chain's start (the search cannot hold such a root either).
KEY_LIMIT = 1 << 62

Node = tuple[int, ...]


def root_chain(
    dims: Sequence[Dimension], upper: Node, priority: Sequence[int], factor: int = 1
) -> tuple[Node, ...]:
    """The chain from the all-zeros node up to `upper` (paper mode's root), one level of one
    QID per step; nodes whose keys would not fit int64 are dropped from its start."""
    later = {q: r for r, q in enumerate(priority)}  # a larger rank is raised first on ties
    node = [0] * len(dims)
    chain = [tuple(node)]

    def better(i: int, j: int) -> bool:
        """Raising QID i loses less than raising QID j (or ties and i goes first)."""
        ti, tj = dims[i].top, dims[j].top
        if ti != tj:  # precision lost: 1/top, smaller first
            return ti > tj
        ci, cj = dims[i].cards, dims[j].cards
        li, lj = node[i], node[j]
        ri, rj = ci[li] * cj[lj + 1], cj[lj] * ci[li + 1]  # card[l]/card[l+1], exactly
        if ri != rj:
            return ri > rj
        return later[i] > later[j]

    while tuple(node) != tuple(upper):
        best = None
        for i in range(len(dims)):
            if node[i] < upper[i] and (best is None or better(i, best)):
                best = i
        node[best] += 1
        chain.append(tuple(node))
    start = 0
    while start < len(chain) - 1 and possible_bins(dims, chain[start]) * factor > KEY_LIMIT:
        start += 1
    return tuple(chain[start:])


def possible_bins(dims: Sequence[Dimension], node: Node) -> int:
    return math.prod(d.cards[level] for d, level in zip(dims, node, strict=True))
