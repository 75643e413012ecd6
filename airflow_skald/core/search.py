"""Phase 2's decision: the node of the sub-lattice above the RAM root with minimal DM*.

Each evaluated node's class sizes come from rolling the global root histogram up (no data is
re-read). The chosen node's suppressed classes are kept as sorted keys for phase 3.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from airflow_skald.core.config import SkaldConfig
from airflow_skald.core.dimensions import paper_notation
from airflow_skald.core.errors import DataError
from airflow_skald.core.histogram import Histogram, group_counts, keys_of
from airflow_skald.core.lattice import Lattice, search_optimal
from airflow_skald.core.metrics import ClassStats, max_suppressed, precision, risk
from airflow_skald.core.plan import Plan


def roll_up(
    plan: Plan,
    root_hist: Histogram,
    node: tuple[int, ...],
    root_codes: list[np.ndarray] | None = None,
) -> Histogram:
    """The histogram of `node`, merged from the root histogram's bins."""
    codes = root_codes if root_codes is not None else root_hist.decompose()
    mapped = [
        d.level_map(r, lv)[c] for d, r, lv, c in zip(plan.dims, plan.root, node, codes, strict=True)
    ]
    radices = plan.radices(node)
    n_possible = int(np.prod(np.asarray(radices, dtype=object)))
    keys, counts = group_counts(
        keys_of(mapped, radices), root_hist.counts.astype(np.float64), n_possible
    )
    return Histogram(radices, keys, counts)


@dataclass
class Decision:
    """The chosen node and its figures. `to_dict` is small and holds no data values."""

    node: tuple[int, ...]
    levels: dict[str, int]
    node_paper: str
    radices: tuple[int, ...]
    stats: ClassStats
    precision: float
    max_suppressed: int
    lattice: dict
    risk: dict
    class_size_histogram: dict = field(default_factory=dict)
    suppressed_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def to_dict(self) -> dict:
        return {
            "node": self.levels,
            "node_levels": list(self.node),
            "node_paper": self.node_paper,
            "radices": list(self.radices),
            "n_records": self.stats.n_records,
            "n_suppressed": self.stats.n_suppressed,
            "max_suppressed": self.max_suppressed,
            "n_equivalence_classes": self.stats.n_classes,
            "min_class_size": self.stats.min_class_size,
            "dm_star": self.stats.dm_star,
            "dm_star_arx": self.stats.dm_star_arx,
            "dm": self.stats.dm,
            "precision": self.precision,
            "lattice": self.lattice,
            "risk": self.risk,
            "class_size_histogram": self.class_size_histogram,
        }

    def to_bytes(self) -> bytes:
        body = self.to_dict()
        body["stats"] = vars(self.stats)
        body["suppressed_keys"] = self.suppressed_keys.tolist()
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Decision:
        d = json.loads(data)
        return cls(
            node=tuple(d["node_levels"]),
            levels=d["node"],
            node_paper=d["node_paper"],
            radices=tuple(d["radices"]),
            stats=ClassStats(**d["stats"]),
            precision=d["precision"],
            max_suppressed=d["max_suppressed"],
            lattice=d["lattice"],
            risk=d["risk"],
            class_size_histogram=d.get("class_size_histogram", {}),
            suppressed_keys=np.asarray(d["suppressed_keys"], dtype=np.int64),
        )


def class_size_histogram(sizes: np.ndarray) -> dict:
    """Class sizes binned in powers of two (for the report); no data values."""
    if sizes.size == 0:
        return {}
    edges = 2 ** np.arange(0, int(np.ceil(np.log2(sizes.max() + 1))) + 1)
    counts, _ = np.histogram(sizes, bins=edges)
    return {
        f"{int(a)}-{int(b) - 1}": int(c)
        for a, b, c in zip(edges, edges[1:], counts, strict=False)
        if c
    }


def search_lattice(config: SkaldConfig, plan: Plan, root_hist: Histogram) -> Decision:
    """Search the sub-lattice above the root for the optimal node (exactly as exhaustive)."""
    n = root_hist.n_records
    if n != plan.stats.n_rows:
        raise DataError(
            f"the histogram counts {n} records but phase 1 saw {plan.stats.n_rows}: "
            "the input changed between passes, or chunks are missing"
        )
    lattice = Lattice(plan.root, tuple(plan.tops))
    codes = root_hist.decompose()
    cache: dict[int, ClassStats] = {}

    def evaluate(i: int) -> tuple[bool, int, int]:
        cs = ClassStats.of(
            roll_up(plan, root_hist, lattice.node(i), codes).counts,
            config.k,
            config.suppression_limit,
        )
        cache[i] = cs
        return cs.passes, cs.dm_star, cs.dm_star_arx

    outcome = search_optimal(lattice, evaluate, plan.tops, config.priority_order())
    best = lattice.node(outcome.best)
    hist = roll_up(plan, root_hist, best, codes)
    cs = cache[outcome.best]
    return Decision(
        node=best,
        levels=plan.levels(best),
        node_paper=paper_notation(plan.dims, best),
        radices=hist.radices,
        stats=cs,
        precision=precision(best, plan.tops),
        max_suppressed=max_suppressed(config.suppression_limit, n),
        lattice={"nodes": len(lattice), "evaluated": outcome.evaluated, "passing": outcome.passing},
        risk=risk(hist.counts, config.k),
        class_size_histogram=class_size_histogram(hist.counts[hist.counts >= config.k]),
        suppressed_keys=hist.keys[hist.counts < config.k],
    )
