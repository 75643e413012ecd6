"""Phase 2's decision: the node of the sub-lattice above the RAM root with minimal DM*.

Each evaluated node's class sizes come from rolling the global root histogram up (no data is
re-read). The chosen node's suppressed classes are kept as sorted keys for phase 3.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from airflow_skald.core.config import SkaldConfig
from airflow_skald.core.dimensions import paper_notation
from airflow_skald.core.errors import DataError
from airflow_skald.core.histogram import Histogram
from airflow_skald.core.lattice import Lattice, search_optimal
from airflow_skald.core.metrics import ClassStats, max_suppressed, precision, risk
from airflow_skald.core.plan import Plan
from airflow_skald.core.rollups import RollUps


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


def search_lattice(
    config: SkaldConfig,
    plan: Plan,
    root_hist: Histogram,
    class_sizes: Callable[[tuple[int, ...]], np.ndarray] | None = None,
) -> Decision:
    """Search the sub-lattice above the root for the optimal node (exactly as exhaustive).

    `class_sizes(node)`, if given, returns the node's class sizes in place of rolling the root
    histogram up (a cache shared across several k, e.g. `baseline.RollUpCache`).
    """
    n = root_hist.n_records
    if n != plan.stats.n_rows:
        raise DataError(
            f"the histogram counts {n} records but phase 1 saw {plan.stats.n_rows}: "
            "the input changed between passes, or chunks are missing"
        )
    lattice = Lattice(plan.root, tuple(plan.tops))
    rollups = RollUps(plan, root_hist)
    cache: dict[int, ClassStats] = {}

    def evaluate(i: int) -> tuple[bool, int, int]:
        node = lattice.node(i)
        cs = ClassStats.of(
            class_sizes(node) if class_sizes else rollups.sizes(node),
            config.k,
            config.suppression_limit,
        )
        cache[i] = cs
        return cs.passes, cs.dm_star, cs.dm_star_arx

    outcome = search_optimal(lattice, evaluate, plan.tops, config.priority_order())
    best = lattice.node(outcome.best)
    hist = rollups.get(best)
    cs = cache[outcome.best]
    return Decision(
        node=best,
        levels=plan.levels(best),
        node_paper=paper_notation(plan.dims, best),
        radices=hist.radices,
        stats=cs,
        precision=precision(best, plan.tops),
        max_suppressed=max_suppressed(config.suppression_limit, n),
        lattice={
            "nodes": len(lattice),
            "evaluated": outcome.evaluated,
            "passing": outcome.passing,
            "pruned": outcome.pruned,
            "root_bins_nonempty": root_hist.n_bins,
        },
        risk=risk(hist.counts, config.k),
        class_size_histogram=class_size_histogram(hist.counts[hist.counts >= config.k]),
        suppressed_keys=hist.keys[hist.counts < config.k],
    )
