"""The decision of a differentially private run (docs/design.md §4e): the node (given, or SafePub's
search), its classes over the sampled records judged by the privacy models, and the figures
over all input records (records the sample left out count as suppressed)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.errors import ConfigError, DataError
from airflow_skald.core.lattice import Lattice
from airflow_skald.core.privacy import ClassTable, Judgement, PrivacyPolicy
from airflow_skald.core.privacy.differential_privacy import COMPOSE, DifferentialPrivacy
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.quality.metric import Scored
from airflow_skald.core.quality.registry import objective as configured_objective
from airflow_skald.core.search.class_source import ClassSource
from airflow_skald.core.search.decide import node_fields
from airflow_skald.core.search.decision import Decision, LatticeCounts, PolicyUnder
from airflow_skald.core.search.dp_selection import DPModelEntry, DPSelection
from airflow_skald.core.search.figures import ClassSizeHistogram, NodeFigures, RiskFigures
from airflow_skald.core.search.quality_figures import quality_figures
from airflow_skald.core.search.safepub.pivots import safepub_search
from airflow_skald.core.search.safepub.scores import OBJECTIVES, NodeClasses, scorer
from airflow_skald.core.settings.quality import QualitySettings
from airflow_skald.core.text import decimal_text

#: what the manifest says when no objective was named (docs/design.md §4e, ADR 0027)
OBJECTIVE_DEFAULT = (
    "no quality.objective was named: the search scores nodes by loss, ARX's default quality "
    "model (the product's own default, dm_star, has no DP score function)"
)


def dp_model(policy: PrivacyPolicy) -> DifferentialPrivacy | None:
    found = [m for m in policy.models if isinstance(m, DifferentialPrivacy)]
    return found[0] if found else None


def fixed_node(plan: Plan, model: DifferentialPrivacy) -> tuple[int, ...]:
    """The configured node in QID order; one line if it is not a node above the root."""
    levels = dict(model.node or ())
    names = [d.name for d in plan.dims]
    unknown = sorted(set(levels) - set(names))
    if unknown:
        raise ConfigError(f"privacy.differential_privacy.node names '{unknown[0]}', not a QID")
    missing = [n for n in names if n not in levels]
    if missing:
        raise ConfigError(f"privacy.differential_privacy.node needs a level for '{missing[0]}'")
    node = tuple(levels[n] for n in names)
    for d, level, lo in zip(plan.dims, node, plan.root, strict=True):
        if level > d.top:
            raise ConfigError(
                f"privacy.differential_privacy.node.{d.name} must be at most {d.top} (its top)"
            )
        if level < lo:
            raise ConfigError(
                f"privacy.differential_privacy.node.{d.name} is below the root's level {lo}: "
                "raise memory.histogram_bins so that phase 2 counts that fine"
            )
    return node


@dataclass(frozen=True)
class SampledClasses:
    """A node's classes over the sampled records, judged by the policy (`NodeClasses` for the
    score functions; the records the sample left out count as suppressed)."""

    source: ClassSource
    policy: PrivacyPolicy
    tops: tuple[int, ...]
    n_input: int
    n_sampled: int

    def judged(self, node: tuple[int, ...]) -> tuple[NodeClasses, Judgement, ClassTable]:
        keys, table = self.source.keyed(node)
        j = self.policy.judge(table, top=node == self.tops)
        return NodeClasses(node, table.sizes, j.kept, keys, self.n_input, self.n_sampled), j, table

    def __call__(self, node: tuple[int, ...]) -> NodeClasses:
        return self.judged(node)[0]


def dp_decision(
    plan: Plan,
    counts: RootCounts,
    policy: PrivacyPolicy,
    quality: QualitySettings,
    search_key: int,
    objective_default: bool = False,
) -> Decision:
    """The node a DP run releases and its figures (`counts`: the sampled records' root counts;
    `search_key`: the run's keyed search stream; `objective_default`: no objective was named,
    the search scores by ARX's default)."""
    model = dp_model(policy)
    n_input, n_sampled = plan.stats.n_rows, counts.n_records
    if n_sampled > n_input:
        raise DataError("the sample holds more records than the input: the input changed")
    tops = tuple(plan.tops)
    sampled = SampledClasses(
        ClassSource(plan, counts, policy.attributes), policy, tops, n_input, n_sampled
    )
    # the policy's minimal class size: a larger explicit k is judged as it stands (SafePub's δ
    # only falls as k grows, so the guarantee holds; ADR 0027)
    min_class_size = max(m.min_class_size for m in policy.models)
    ctx = QualityContext(plan.dims, plan.root, counts.classes, quality, None, min_class_size)
    if model.node is not None:
        best, nodes_scored, search = fixed_node(plan, model), 0, {"mode": "fixed"}
    else:
        best, nodes_scored, search = _searched_node(
            plan, model, ctx, quality, sampled, search_key, objective_default, min_class_size
        )
    node_classes, j, table = sampled.judged(best)
    kept_records = node_classes.kept_records
    judgement = Judgement(j.kept, n_input, n_input - kept_records, n_input, True, True)
    kept = table.sizes[j.kept]
    scored = Scored(table, judgement, best, tops, node_classes.keys)
    return Decision(
        **node_fields(plan, best),
        figures=NodeFigures.of(table, policy, best, tops, judgement=judgement),
        privacy=PolicyUnder.of(policy, decimal_text(1)),
        lattice=LatticeCounts(len(Lattice(plan.root, tops)), nodes_scored, nodes_scored, 0),
        risk=RiskFigures.of(kept, min_class_size),
        class_size_histogram=ClassSizeHistogram.of(kept),
        at_risk=policy.at_risk(table.subset(j.kept)),
        suppressed_keys=node_classes.keys[~j.kept].astype(np.int64),
        quality=quality_figures(ctx, configured_objective(ctx), scored, min_class_size, False),
        dp=DPSelection(
            parameters=DPModelEntry.of(model),
            node=plan.levels(best),
            records_input=n_input,
            records_sampled=n_sampled,
            records_released=kept_records,
            composition=COMPOSE,
            **search,
        ),
    )


def _searched_node(
    plan: Plan,
    model: DifferentialPrivacy,
    ctx: QualityContext,
    quality: QualitySettings,
    sampled: SampledClasses,
    search_key: int,
    objective_default: bool,
    min_class_size: int,
) -> tuple[tuple[int, ...], int, dict]:
    """SafePub's node, the nodes it scored and the search's entries of `DPSelection`."""
    if quality.objective not in OBJECTIVES:
        raise ConfigError(
            "differential privacy's search scores nodes by dm, loss, precision, aecs or "
            f"nu_entropy (ARX's score functions), not {quality.objective}: set "
            "quality.objective"
        )
    if quality.objective == "loss" and ctx.shares_from_data():  # the config refuses it
        raise ConfigError(
            "differential privacy's search may not score by loss weighed by "
            "values found in the whole input (ADR 0027)"
        )
    outcome = safepub_search(
        tuple(plan.tops),
        tuple(plan.root),
        sampled,
        scorer(quality.objective, ctx, min_class_size),
        model.search_steps,
        model.epsilon_per_step,
        search_key,
    )
    search = {
        "mode": "searched",
        "objective_chosen": OBJECTIVE_DEFAULT if objective_default else None,
        "objective": quality.objective,  # the score itself is not published: an exact
        "pivots_drawn": outcome.pivots,  # figure of the sampled records (ADR 0027)
    }
    return outcome.node, outcome.scored, search
