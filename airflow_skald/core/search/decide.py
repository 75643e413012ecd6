"""Phase 2's decision: the node of the sub-lattice above the RAM root with the least loss.

The lattice search (`lattice.search_optimal`) asks `evaluate.NodeEvaluator` for each node's
verdict, loss and bound; it sees neither k nor DM*. The chosen node is judged once more, with
its figures; its suppressed classes are kept as sorted keys for phase 3.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.dimensions import paper_notation
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.errors import DataError
from airflow_skald.core.lattice import MONOTONE, PARTLY_MONOTONE, Lattice, search_optimal
from airflow_skald.core.privacy import ClassTable, Judgement, PrivacyPolicy, max_suppressed
from airflow_skald.core.privacy.research_subset import subset_classes
from airflow_skald.core.privacy.risk.analysis import RiskSettings
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.quality.entropy_loss import label_losses
from airflow_skald.core.quality.metric import Metric, Scored
from airflow_skald.core.quality.registry import objective as configured_objective
from airflow_skald.core.search.class_source import ClassSource
from airflow_skald.core.search.evaluate import (
    LabelLoss,
    NodeEvaluator,
    class_order,
    with_label_loss,
)
from airflow_skald.core.search.figures import NodeFigures, class_size_histogram, risk
from airflow_skald.core.search.quality_figures import quality_figures
from airflow_skald.core.settings.quality import QualitySettings
from airflow_skald.core.text import decimal_text
from airflow_skald.core.transform.local_recoding import Step

# (node, sorted class keys of it) -> each class's first input row (docs/design.md §4c)
FirstRowsOf = Callable[[tuple[int, ...], np.ndarray], np.ndarray]


@dataclass
class Decision:
    """The chosen node, its figures and the privacy settings it was chosen under.

    `to_dict` is small and holds no data values."""

    node: tuple[int, ...]
    levels: dict[str, int]
    node_paper: str
    radices: tuple[int, ...]
    figures: NodeFigures
    privacy: dict  # the policy it was made under: models and suppression limit
    lattice: dict
    risk: dict
    class_size_histogram: dict = field(default_factory=dict)
    at_risk: list = field(default_factory=list)  # criteria's most at-risk classes (no values)
    quality: dict = field(default_factory=dict)  # every quality model's score, per-QID table
    suppressed_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # local recoding (docs/design.md §4f): the steps after this node, and the figures before them
    steps: list[Step] = field(default_factory=list)
    recoding: dict = field(default_factory=dict)
    recoded_sizes: np.ndarray | None = field(default=None, repr=False)  # not persisted
    dp: dict = field(default_factory=dict)  # a DP run's parameters and sample (docs/design.md §4e)

    @property
    def precision(self) -> float:
        return self.figures.precision

    @property
    def max_suppressed(self) -> int:
        return self.figures.max_suppressed

    def to_dict(self) -> dict:
        f = self.figures
        return {
            "node": self.levels,
            "node_levels": list(self.node),
            "node_paper": self.node_paper,
            "radices": list(self.radices),
            "privacy": self.privacy,
            "n_records": f.n_records,
            "n_suppressed": f.n_suppressed,
            "max_suppressed": f.max_suppressed,
            "n_equivalence_classes": f.n_classes,
            "min_class_size": f.min_class_size,
            **f.quality,
            "privacy_models": f.privacy,
            "lattice": self.lattice,
            "risk": self.risk,
            "class_size_histogram": self.class_size_histogram,
            "at_risk_classes": self.at_risk,
            "quality_models": self.quality,
            **({"local_recoding": self.recoding_dict()} if self.recoding else {}),
            **({"differential_privacy": self.dp} if self.dp else {}),
        }

    def recoding_dict(self) -> dict:
        return {**self.recoding, "steps": [s.to_dict() for s in self.steps]}

    def to_bytes(self) -> bytes:
        body = self.to_dict()
        body["figures"] = self.figures.to_dict()
        body["suppressed_keys"] = self.suppressed_keys.tolist()
        body["step_states"] = [s.to_state() for s in self.steps]
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Decision:
        d = json.loads(data)
        return cls(
            node=tuple(d["node_levels"]),
            levels=d["node"],
            node_paper=d["node_paper"],
            radices=tuple(d["radices"]),
            figures=NodeFigures.from_dict(d["figures"]),
            privacy=d["privacy"],
            lattice=d["lattice"],
            risk=d["risk"],
            class_size_histogram=d.get("class_size_histogram", {}),
            at_risk=d.get("at_risk_classes", []),
            quality=d.get("quality_models", {}),
            suppressed_keys=np.asarray(d["suppressed_keys"], dtype=np.int64),
            steps=[Step.from_state(s) for s in d.get("step_states", [])],
            recoding={k: v for k, v in d.get("local_recoding", {}).items() if k != "steps"},
            dp=d.get("differential_privacy", {}),
        )


def search_lattice(
    plan: Plan,
    counts: RootCounts,
    policy: PrivacyPolicy,
    priority: Sequence[int],
    objective: Metric | None = None,
    source: ClassSource | None = None,
    quality: QualitySettings | None = None,
    analysis: RiskSettings | None = None,
    first_rows: FirstRowsOf | None = None,
    subset: bool = False,
) -> Decision:
    """Search the sub-lattice above the root for the optimal node (exactly as exhaustive).

    `counts`: the root's class counts (and (class, value) tables of the policy's attributes);
    `priority`: QID indices in tie-break order; `source`, if given, supplies node classes in
    place of rolling `counts` up (a cache shared by several searches, `baseline.RollUpCache`);
    `quality`: the objective and its settings (docs/design.md §4d; default DM*), unless
    `objective` gives the model itself.
    `analysis`, if given, adds the risk analysis of the kept classes (docs/design.md §4c; the
    top node's one class is left out).
    `first_rows(node, keys)`: the first input row of each class `keys` of `node` (an extra
    pass), asked only when the sample-based models' prefix ends inside a run of classes of one
    size at the chosen node (docs/design.md §4c); without it those classes follow their keys'
    order.
    `subset`: `counts` hold some of the input's records (a local recoding step, docs/design.md §4f).
    """
    classes = _released_classes(plan, counts, policy, subset)
    n = classes.n_records
    lattice = Lattice(plan.root, tuple(plan.tops))
    source = source or ClassSource(plan, counts, policy.attributes, policy.subset)
    limit = max_suppressed(policy.suppression_limit, n)
    ctx = QualityContext(plan.dims, plan.root, classes, quality, limit, _kept_size(policy))
    objective = objective or configured_objective(ctx)
    losses = label_losses(ctx, policy.models, objective)  # ADR 0046 (None: nothing reads them)
    outcome = search_optimal(
        lattice,
        NodeEvaluator.of(lattice, source, policy, objective, n, losses),
        plan.tops,
        priority,
        predicate=MONOTONE if policy.all_monotone else PARTLY_MONOTONE,
        ties=objective.ties,
        order=objective.search_order,
        node_bounds=objective.node_bounds(lattice),
    )
    if outcome.best is None:
        raise _nothing_passes(source, policy, lattice.upper, n, losses)
    best = lattice.node(outcome.best)
    chosen = _chosen(source, best, objective, policy, lattice.upper, first_rows, losses)
    figures = NodeFigures.of(chosen.table, policy, best, plan.tops, judgement=chosen.judgement)
    kept = chosen.table.sizes[chosen.judgement.kept]
    figures_risk = risk(kept, policy.min_class_size)
    if analysis is not None:
        seen = kept if best != lattice.upper else kept[:0]
        figures_risk["analysis"] = analysis.analyse(seen, n)
    return Decision(
        **node_fields(plan, best),
        figures=figures,
        privacy={
            "models": policy.describe(),
            "suppression_limit": decimal_text(policy.suppression_limit),
        },
        lattice={
            "nodes": len(lattice),
            "evaluated": outcome.evaluated,
            "passing": outcome.passing,
            "pruned": outcome.pruned,
            "root_bins_nonempty": counts.bounded_bins,  # what N_RAM bounds (docs/design.md §4b)
        },
        risk=figures_risk,
        class_size_histogram=class_size_histogram(kept),
        at_risk=policy.at_risk(chosen.table.subset(chosen.judgement.kept)),
        suppressed_keys=chosen.keys[~chosen.judgement.kept].astype(np.int64),
        quality=quality_figures(
            ctx,
            objective,
            Scored(chosen.table, chosen.judgement, best, plan.tops, chosen.keys),
            policy.min_class_size,
        ),
    )


def _released_classes(
    plan: Plan, counts: RootCounts, policy: PrivacyPolicy, subset: bool
) -> ClassTable:
    """The root's classes of the records a release holds: all of them, or the research
    subset's (docs/design.md §4e); one line if phase 1 saw another number of records."""
    if counts.n_records != plan.stats.n_rows and not subset:
        raise DataError(
            f"the histogram counts {counts.n_records} records but phase 1 saw "
            f"{plan.stats.n_rows}: the input changed between passes, or chunks are missing"
        )
    if policy.subset is not None:
        return subset_classes(counts.values[policy.subset.column], policy.subset.mask)
    return counts.classes


@dataclass(frozen=True)
class _Chosen:
    """The chosen node's classes (keyed, in the order they are suppressed) and judgement."""

    keys: np.ndarray
    table: ClassTable
    judgement: Judgement


def _chosen(
    source: ClassSource,
    best: tuple[int, ...],
    objective: Metric,
    policy: PrivacyPolicy,
    tops: tuple[int, ...],
    first_rows: FirstRowsOf | None,
    losses: LabelLoss | None = None,
) -> _Chosen:
    """The chosen node judged once more, with its classes' first rows where the order within
    a class size decides which are suppressed (docs/design.md §4c)."""
    keys, table = source.keyed(best)
    table = class_order(table, keys, best, objective, policy)
    table = with_label_loss(table, keys, best, losses)
    judgement = policy.judge(table, top=best == tops)
    if first_rows is not None and judgement.tie_size:  # the order within a class size matters
        tied = table.sizes == judgement.tie_size
        order = np.zeros(table.n_classes, dtype=np.int64)  # the other sizes never tie
        order[tied] = first_rows(best, keys[tied])
        table = replace(table, first_rows=order)
        judgement = policy.judge(table, top=best == tops)
    return _Chosen(keys, table, judgement)


def _nothing_passes(
    source: ClassSource,
    policy: PrivacyPolicy,
    tops: tuple[int, ...],
    n: int,
    losses: LabelLoss | None = None,
) -> DataError:
    top_keys, top_table = source.keyed(tops)
    top_table = with_label_loss(top_table, top_keys, tops, losses)
    top = NodeFigures.of(top_table, policy, judgement=policy.judge(top_table, top=True))
    return DataError(
        f"no generalisation satisfies {_label(policy)}: even the top node suppresses "
        f"{top.n_suppressed} of {n} records (limit {top.max_suppressed})"
    )


def node_fields(plan: Plan, node: tuple[int, ...]) -> dict:
    """A decision's node in its forms: levels, per QID, the paper's notation, radices."""
    return {
        "node": node,
        "levels": plan.levels(node),
        "node_paper": paper_notation(plan.dims, node),
        "radices": plan.radices(node),
    }


def _kept_size(policy: PrivacyPolicy) -> int:
    """The fewest records of a class a node keeps: the monotone models' smallest class size
    (ARX's getMinimalClassSize: k; 1 when no model has one)."""
    return max((m.min_class_size for m in policy.models if m.monotone), default=1)


def _label(policy: PrivacyPolicy) -> str:
    return " and ".join(m.label() for m in policy.models)
