"""An exhaustive oracle of ARX's game-theoretic models (ADR 0046), written from ARX's source
alone (``ProfitabilityProsecutor`` / ``Journalist`` (``NoAttack``), ``RiskModelCostBenefit``,
``MetricSDNMEntropyBasedInformationLoss``, ``MetricSDNMPublisherPayout``), over pandas:
every node of the lattice is generalised, grouped, judged and scored; no product code.

Hierarchies are dicts value -> [label at level 1, 2, ...] (level 0: the value), the last
level '*'. A label's domain share: the hierarchy's rows under it over all its rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pandas as pd

DEFAULT = {
    "publisher_benefit": 1200.0,
    "publisher_loss": 300.0,
    "adversary_gain": 300.0,
    "adversary_cost": 4.0,
}


def no_attack_k(gain: float, cost: float) -> int:
    if gain == 0:
        return 1
    if cost == 0:
        return 2**31 - 1
    t = gain / cost
    return int(t) + 1 if t == math.floor(t) else math.ceil(t)


def _shares(hierarchy: dict, level: int) -> dict:
    labels = [([v] + list(ls))[level] for v, ls in hierarchy.items()]
    counts = pd.Series(labels).value_counts()
    return {lab: c / len(hierarchy) for lab, c in counts.items()}


def evaluate(
    df: pd.DataFrame,
    qids: Sequence[tuple[str, dict]],
    node: Sequence[int],
    *,
    model: str,
    cost: dict,
    limit: float,
    subset: str | None = None,
    gs: float = 0.5,
) -> dict:
    """One node: kept classes, suppressed records, whether it passes, its payout loss."""
    b, l_pub = cost["publisher_benefit"], cost["publisher_loss"]
    g_adv, c_adv = cost["adversary_gain"], cost["adversary_cost"]
    labels = []
    for (name, h), level in zip(qids, node, strict=True):
        labels.append(df[name].map(lambda v, h=h, lv=level: ([v] + list(h[v]))[lv]))
    frame = pd.DataFrame({f"q{i}": s for i, s in enumerate(labels)})
    frame["in"] = df[subset].astype(bool) if subset else True
    grouped = frame.groupby([f"q{i}" for i in range(len(qids))], sort=False)
    sizes = grouped["in"].sum()
    pops = grouped["in"].size()
    max_il = math.log10(math.prod(len(h) for _, h in qids))
    shares = [_shares(h, lv) for (_, h), lv in zip(qids, node, strict=True)]
    n = int(frame["in"].sum())
    k = no_attack_k(g_adv, c_adv)
    g = 1.0 if gs <= 0.5 else 1 - 2 * (gs - 0.5)
    s = 2 * gs if gs < 0.5 else 1.0
    suppressed, value = 0, 0.0
    for key, c in sizes.items():
        c = int(c)
        if c == 0:
            continue  # population only: nothing released
        key = key if isinstance(key, tuple) else (key,)
        pop = int(pops[key])
        product = 1.0
        for i, lab in enumerate(key):
            product *= shares[i][lab]
        il = 0.0 if max_il == 0 else min(1.0, max(0.0, math.log10(product) / max_il + 1))
        p = 1 / pop if model.startswith("journalist") else 1 / c
        payout = b * (1 - il) - (l_pub * p if g_adv * p - c_adv > 0 else 0.0)
        if model in ("prosecutor", "journalist"):
            kept = payout > 0
        elif model == "prosecutor-noattack":
            kept = c >= k
        else:
            kept = pop >= k
        if not kept:
            suppressed += c
            value += s * c * b
        else:
            value += g * c * (b - payout)
    allowed = math.floor(limit * n)
    return {"passes": suppressed <= allowed, "suppressed": suppressed, "value": value}


def exhaustive(df, qids, tops, **kw) -> dict:
    """The least payout loss over passing nodes, and every node reaching it (to 1e-9)."""
    results = {
        node: evaluate(df, qids, node, **kw)
        for node in itertools.product(*(range(t + 1) for t in tops))
    }
    passing = {nd: r for nd, r in results.items() if r["passes"]}
    if not passing:
        return {"value": None, "nodes": []}
    best = min(r["value"] for r in passing.values())
    nodes = [nd for nd, r in passing.items() if math.isclose(r["value"], best, rel_tol=1e-9)]
    return {"value": best, "nodes": nodes, "results": results}
