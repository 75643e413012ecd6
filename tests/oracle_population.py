"""Test oracle for a research subset of a population table (SPEC §4e), written from SPEC
alone: δ-presence and exact k-map. Brute force in pandas: at every node the population's
records are grouped; a class is released from the subset's records only; it is kept iff it
holds at least k subset records, its subset / population ratio is within [dmin, dmax] and it
holds at least `kmap` population records. Suppressed records, the limit and DM* count the
subset's records only."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from oracle import _class_ids, _lattice, _prepare, _priority_order, max_suppressed, precision


def subset_search(df, subset, qids, k, limit, priority, delta=None, kmap=None, root=None) -> dict:
    """The best node above `root` (DM* = sum of kept subset classes squared + s^2, then
    precision, then qid_priority levels, as SPEC §4), with its figures."""
    prepared = _prepare(df, qids)
    tops = {name: p["top"] for name, p in prepared.items()}
    order = _priority_order(qids, priority)
    flags = np.asarray(subset, dtype=bool)
    n = int(flags.sum())
    allowed = max_suppressed(limit, n)
    best, best_key = None, None
    for node in _lattice(tops, root):
        ids = np.asarray(_class_ids(prepared, node))
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
        s = int(sub[released & ~ok].sum())
        if s > allowed:
            continue
        kept = sub[ok]
        dm_star = int((kept.astype(object) ** 2).sum()) + s * s
        key = (dm_star, -precision(node, tops), tuple(node[q] for q in order))
        if best_key is None or key < best_key:
            best_key = key
            best = {
                "node": node,
                "dm_star": dm_star,
                "n_suppressed": s,
                "n_classes": int(ok.sum()),
                "min_population_count": int(pop[ok].min()) if ok.any() else 0,
                "n_records": n,
            }
    return best or {"node": None}
