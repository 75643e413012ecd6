"""Test oracle for a research subset of a population table (docs/design.md §4e), written from docs/design.md
alone: δ-presence and exact k-map. Brute force in pandas: at every node the population's
records are grouped; a class is released from the subset's records only; it is kept iff it
holds at least k subset records, its subset / population ratio is within [dmin, dmax] and it
holds at least `kmap` population records, and satisfies the l-diversity / t-closeness criteria
over its subset records (t against the subset's distribution; ordered distance over every
value of the population, as ARX: ADR 0045). With dmin > 0 a population class without any subset
record (δ = 0: nothing of it to suppress) fails the node, k or not: δ-presence bounds every
class of the population. Suppressed records, the limit and DM* count the subset's records
only."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from oracle import Criteria, _class_distributions, _prepare, max_suppressed, search_nodes


def subset_search(
    df, subset, qids, k, limit, priority, delta=None, kmap=None, root=None, criteria=None
) -> dict:
    """The best node above `root` (DM* = sum of kept subset classes squared + s^2, then
    precision, then qid_priority levels, as docs/design.md §4), with its figures."""
    flags = np.asarray(subset, dtype=bool)
    n = int(flags.sum())
    released_df = df[flags].reset_index(drop=True)
    judged = Criteria(**(criteria or {}), inputs=released_df, domain=df)

    def judge(node: dict, ids: list[int]):
        ids = np.asarray(ids)
        pop = np.bincount(ids)
        sub = np.bincount(ids[flags], minlength=pop.size)
        released = sub > 0
        ok = released & (sub >= (k or 1))
        if delta is not None:
            lo, hi = Fraction(str(delta[0])), Fraction(str(delta[1]))
            ok &= np.array(
                [lo <= Fraction(int(s), int(p)) <= hi for s, p in zip(sub, pop, strict=True)]
            )
        if kmap is not None:
            ok &= pop >= kmap
        if judged:  # each class's subset records
            dists = {
                a: _class_distributions(ids[flags], pop.size, released_df[a].tolist())
                for a in judged.attributes
            }
            keeps = [  # a class without a subset record is not released: nothing to judge
                bool(released[c]) and judged.keeps({a: dists[a][c] for a in dists})
                for c in range(pop.size)
            ]
            ok &= np.asarray(keeps, dtype=bool)
        s = int(sub[released & ~ok].sum())
        if delta is not None and Fraction(str(delta[0])) > 0 and not released.all():
            s = n + 1  # a population class without a subset record: δ = 0, unsuppressible
        return (
            sub[ok].tolist(),
            s,
            lambda: {
                "min_population_count": int(pop[ok].min()) if ok.any() else 0,
                "n_records": n,
            },
        )

    prepared = _prepare(df, qids)
    allowed = max_suppressed(limit, n)
    return search_nodes(prepared, qids, priority, root, allowed, judge)[0]
