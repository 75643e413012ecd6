"""Phase 2's decision: the node of the sub-lattice above the RAM root with the least loss.

The lattice search (`lattice.search_optimal`) asks `evaluate.NodeEvaluator` for each node's
verdict, loss and bound; it sees neither k nor DM*. The chosen node is judged once more, with
its figures; its suppressed classes are kept as sorted keys for phase 3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.dimensions import paper_notation
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.errors import DataError
from airflow_skald.core.lattice import (
    MONOTONE,
    PARTLY_MONOTONE,
    Lattice,
    SearchOutcome,
    search_optimal,
)
from airflow_skald.core.privacy import ClassTable, Judgement, PrivacyPolicy, max_suppressed
from airflow_skald.core.privacy.risk.analysis import RiskSettings
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.quality.entropy_loss import label_losses
from airflow_skald.core.quality.metric import Metric, Scored
from airflow_skald.core.quality.registry import objective as configured_objective
from airflow_skald.core.search.class_source import ClassSource
from airflow_skald.core.search.decision import Decision, LatticeCounts, PolicyUnder
from airflow_skald.core.search.evaluate import (
    LabelLoss,
    NodeEvaluator,
    class_order,
    with_label_loss,
)
from airflow_skald.core.search.figures import ClassSizeHistogram, NodeFigures, RiskFigures
from airflow_skald.core.search.quality_figures import quality_figures
from airflow_skald.core.search.recoded_table import StepNodes
from airflow_skald.core.settings.quality import QualitySettings
from airflow_skald.core.text import decimal_text
from airflow_skald.core.transform.research_subset.classes import subset_classes

# (node, sorted class keys of it) -> each class's first input row (docs/design.md §4c)
FirstRowsOf = Callable[[tuple[int, ...], np.ndarray], np.ndarray]


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
    table: StepNodes | None = None,
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
    `table`: every node of the lattice judged at once over those records (`recoded_table`):
    the exhaustive search in arrays where it applies (the same node).
    """
    classes = _released_classes(plan, counts, policy, subset)
    n = classes.n_records
    lattice = Lattice(plan.root, tuple(plan.tops))
    source = source or ClassSource(plan, counts, policy.attributes, policy.subset)
    limit = max_suppressed(policy.suppression_limit, n)
    ctx = QualityContext(plan.dims, plan.root, classes, quality, limit, _kept_size(policy))
    objective = objective or configured_objective(ctx)
    losses = label_losses(ctx, policy.models, objective)  # ADR 0046 (None: nothing reads them)
    outcome = _search(plan, lattice, source, policy, objective, priority, n, losses, table)
    if outcome.best is None:
        raise _nothing_passes(source, policy, lattice.upper, n, losses)
    best = lattice.node(outcome.best)
    chosen = _chosen(source, best, objective, policy, lattice.upper, first_rows, losses)
    del source  # its roll-ups (ours, or the caller's to keep) not held under the figures
    searched = LatticeCounts(
        len(lattice),
        outcome.evaluated,
        outcome.passing,
        outcome.pruned,
        counts.bounded_bins,  # what N_RAM bounds (docs/design.md §4b)
    )
    return _decision(plan, policy, ctx, objective, best, chosen, searched, analysis, n)


def _search(
    plan: Plan,
    lattice: Lattice,
    source: ClassSource,
    policy: PrivacyPolicy,
    objective: Metric,
    priority: Sequence[int],
    n: int,
    losses: LabelLoss | None,
    table: StepNodes | None,
) -> SearchOutcome:
    """The search's outcome: every node judged in arrays (`table`, where it applies), else
    the lattice walked node by node (`search_optimal`)."""
    if table is not None and losses is None:
        outcome = table.search(lattice, policy, objective, plan.tops, priority)
        if outcome is not None:
            return outcome
    return search_optimal(
        lattice,
        NodeEvaluator.of(lattice, source, policy, objective, n, losses),
        plan.tops,
        priority,
        predicate=MONOTONE if policy.all_monotone else PARTLY_MONOTONE,
        ties=objective.ties,
        order=objective.search_order,
        node_bounds=objective.node_bounds(lattice),
    )


def _decision(
    plan: Plan,
    policy: PrivacyPolicy,
    ctx: QualityContext,
    objective: Metric,
    best: tuple[int, ...],
    chosen: _Chosen,
    searched: LatticeCounts,
    analysis: RiskSettings | None,
    n: int,
) -> Decision:
    """The decision of the chosen node: its figures, risk and quality models' figures
    (`n`: the records released or suppressed)."""
    table, judgement = chosen.table, chosen.judgement
    kept = table.sizes[judgement.kept]
    figures_risk = RiskFigures.of(kept, policy.min_class_size)
    if analysis is not None:
        seen = kept if best != tuple(plan.tops) else kept[:0]
        figures_risk = figures_risk.with_analysis(analysis.analyse(seen, n))
    scored = Scored(table, judgement, best, plan.tops, chosen.keys)
    return Decision(
        **node_fields(plan, best),
        figures=NodeFigures.of(table, policy, best, plan.tops, judgement=judgement),
        privacy=PolicyUnder.of(policy, decimal_text(policy.suppression_limit)),
        lattice=searched,
        risk=figures_risk,
        class_size_histogram=ClassSizeHistogram.of(kept),
        at_risk=policy.at_risk(table.subset(judgement.kept)),
        suppressed_keys=chosen.keys[~judgement.kept].astype(np.int64),
        quality=quality_figures(ctx, objective, scored, policy.min_class_size),
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
