"""One chunk of the per-chunk baseline (docs/design.md §6) anonymised alone: its plan (the
global dimensions, the all-zeros root, its own record count), its own optimal node searched
for each k over roll-ups shared by the searches (`RollUpCache`), and the classes it releases,
as `write_parts` writes their labels (`ChunkOutcome`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from airflow_skald.core.config.policy import build_policy
from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.histogram import Histogram
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import DataError
from airflow_skald.core.passes.pipeline import (
    count_histogram,
    first_rows,
)
from airflow_skald.core.privacy import ClassTable, PrivacyPolicy
from airflow_skald.core.search.class_source import ClassSource, chunk_distribution
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.search.phase_two import decide


def chunk_plan(plan: Plan, n_records: int) -> Plan:
    """The global plan's dimensions with the all-zeros root and one chunk's record count.

    An ARX user anonymising one chunk has no RAM bound on it: the lattice searched is the full
    lattice of the shared dimensions, and the suppression limit applies to the chunk's rows.
    """
    zero = tuple(0 for _ in plan.dims)
    stats = replace(plan.stats, n_rows=n_records, n_chunks=1)
    return replace(plan, stats=stats, root=zero, root_bins=plan.bins(zero))


class RollUpCache(ClassSource):
    """Classes of any node above a plan's root, shared by several searches (several k).

    Sizes-only: the class sizes of every node evaluated are kept compressed (distinct sizes and
    their multiplicities), so a search for another k re-uses them instead of rolling up again.
    With criteria the (class, value) tables are rolled up per call (`ClassSource`).
    """

    def __init__(self, plan: Plan, counts: RootCounts, attributes: Sequence[str] = ()):
        super().__init__(plan, counts, attributes)
        self._sizes: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

    def table(self, node: tuple[int, ...]) -> ClassTable:
        if not self.sizes_only:
            return super().table(node)
        hit = self._sizes.get(node)
        if hit is None:
            hit = np.unique(self.rollups.get(tuple(node)).counts, return_counts=True)
            self._sizes[node] = hit
        return ClassTable(np.repeat(*hit))


def released_classes(
    plan: Plan, decision: Decision, source: ClassSource, policy: PrivacyPolicy
) -> Counter:
    """Released QID tuple -> records, for the classes of the decision's node that the policy
    keeps, and (local recoding) the classes each step kept at its own node.

    The strings are the dimensions' output labels, exactly what `write_parts` writes.
    """
    node = tuple(decision.node)
    keys, table = source.keyed(node)
    if any(m.reads_label_loss for m in policy.models):  # the search's verdict (ADR 0046)
        kept = ~np.isin(keys, decision.suppressed_keys)
    else:
        kept = policy.judge(table).kept
    out = _labelled(plan, node, keys[kept], table.sizes[kept])
    for step in decision.steps:
        if not step.at_top:
            out.update(_labelled(plan, step.node, step.kept_keys, step.kept_sizes))
    return out


def _labelled(plan: Plan, node: tuple[int, ...], keys: np.ndarray, sizes: np.ndarray) -> Counter:
    sub = Histogram(plan.radices(node), keys, sizes)
    columns = []
    for dim, level, codes in zip(plan.dims, node, sub.decompose(), strict=True):
        uniq, inverse = np.unique(codes, return_inverse=True)
        labels = np.asarray(dim.labels(level, uniq), dtype=object)
        columns.append(labels[inverse.reshape(-1)])
    return Counter(dict(zip(zip(*columns, strict=True), sub.counts.tolist(), strict=True)))


@dataclass
class ChunkOutcome:
    """One chunk anonymised alone: its decision and its released classes (no data rows)."""

    chunk: ChunkRef
    policy: PrivacyPolicy
    decision: Decision
    classes: Counter  # kept classes: released QID tuple -> records
    seconds: dict
    part: str = ""  # the part file written, once written
    sensitive: dict[str, SensitiveStats] = field(default_factory=dict)  # the chunk's own (§4b)

    @property
    def k(self) -> int:
        return self.policy.min_class_size

    @property
    def n_records(self) -> int:
        return self.decision.figures.n_records

    def summary(self) -> dict:
        d = self.decision
        return {
            "chunk_id": self.chunk.chunk_id,
            "n_records": d.figures.n_records,
            "node": d.levels,
            "node_paper": d.node_paper,
            "dm_star": d.figures.dm_star,
            "n_suppressed": d.figures.n_suppressed,
            "n_equivalence_classes": d.figures.n_classes,
            "min_class_size": d.figures.min_class_size,
            "precision": d.precision,
            "lattice": d.lattice.to_dict(),
            **({"local_recoding": d.local_recoding.to_dict()} if d.local_recoding else {}),
        }


def anonymise_chunk(
    config: SkaldConfig, plan: Plan, chunk: ChunkRef, ks: Sequence[int] | None = None
) -> list[ChunkOutcome]:
    """Search one chunk's own optimal node for each k (default: the config's min_class_size).

    The chunk's level-0 histogram and its roll-ups are shared by the searches for several k.
    """
    t = time.perf_counter()
    smallest = min(ks or [config.min_class_size])
    if chunk.n_rows < smallest:
        raise DataError(
            f"chunk {chunk.chunk_id} ({chunk.where()}) has {chunk.n_rows} records, fewer than "
            f"k={smallest}: no node can release it alone; use a larger chunk_rows"
        )
    zero_plan = chunk_plan(plan, chunk.n_rows)
    counts = count_histogram(config, zero_plan, [chunk])
    cplan = chunk_plan(plan, counts.n_records)
    cache = RollUpCache(cplan, counts, config.criteria_attributes)
    own = chunk_sensitive(
        plan, counts
    )  # t-closeness: the chunk's own distribution (docs/design.md §4b)
    t_hist = time.perf_counter() - t
    out = []
    for k in ks or [config.min_class_size]:
        t = time.perf_counter()
        policy = build_policy(config, own).with_thresholds(k=int(k))
        # the chunk's node, then its suppressed records recoded (when the config asks)
        decision = decide(
            config,
            cplan,
            counts,
            policy,
            own,
            source=cache,
            first_rows=lambda node, keys: first_rows(config, cplan, [chunk], node, keys),
        )
        classes = released_classes(cplan, decision, cache, policy)
        seconds = {"histogram": t_hist, "search": time.perf_counter() - t}
        out.append(ChunkOutcome(chunk, policy, decision, classes, seconds, sensitive=own))
        t_hist = 0.0
    return out


def chunk_sensitive(plan: Plan, counts: RootCounts) -> dict[str, SensitiveStats]:
    """The criteria's attributes as one chunk holds them: the global value codes, the chunk's
    own counts (values it lacks count 0)."""
    own = chunk_distribution(counts)
    return {a: replace(plan.stats.sensitive[a], counts=own[a].tolist()) for a in counts.values}
