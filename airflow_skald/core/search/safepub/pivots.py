"""SafePub's node choice (ARX's ``DataDependentEDDPAlgorithm``, docs/design.md §4e) over the classes of
the sampled records, rolled up from phase 2's root counts (no pass over the data).

The pivot starts at the top node. Each step adds the pivot's direct predecessors to the
candidates (each scored once), removes the pivot, and draws the next pivot by the exponential
mechanism with ε_step = search_budget / search_steps; the best-scoring pivot visited (the first
of equal scores) is released. The draws are the run's keyed search stream, draw s at position s:
a retry draws the same pivots, another run fresh ones. Candidates are ordered by node, so the
draw does not depend on a hash order. ARX's lattice starts at level 0; ours at the root the
counts are at (level 0 whenever its classes fit N_RAM), so predecessors stop there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from airflow_skald.core.search.safepub.scores import NodeClasses, predecessors
from airflow_skald.core.transform.differential_privacy import keys, mechanism

Node = tuple[int, ...]


@dataclass(frozen=True)
class SearchOutcome:
    node: Node
    score: Fraction
    pivots: int  # steps drawn
    scored: int  # nodes scored


def safepub_search(
    top: Node,
    floor: Node,
    classes_of: Callable[[Node], NodeClasses],
    score: Callable[[NodeClasses], Fraction],
    steps: int,
    epsilon_step: float,
    search_key: int,
) -> SearchOutcome:
    scores: dict[Node, Fraction] = {}  # every node scored below the top (each once)
    pivot = top
    candidates = {pivot: score(classes_of(pivot))}
    best, best_score = pivot, candidates[pivot]
    uniforms = keys.uniforms(search_key, 0, steps)
    drawn = 0
    for step in range(steps):
        for p in predecessors(pivot, floor):
            if p not in candidates:
                if p not in scores:
                    scores[p] = score(classes_of(p))
                candidates[p] = scores[p]
        del candidates[pivot]
        if not candidates:  # every node above the floor has been a pivot
            break
        order = sorted(candidates)
        pick = mechanism.draw([candidates[n] for n in order], epsilon_step, float(uniforms[step]))
        pivot = order[pick]
        drawn += 1
        if candidates[pivot] > best_score:
            best, best_score = pivot, candidates[pivot]
    return SearchOutcome(best, best_score, drawn, 1 + len(scores))  # the top, then the rest
