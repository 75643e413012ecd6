"""The decision of a differentially private run (docs/design.md §4e): the node (given, or SafePub's
search), its classes over the sampled records judged by the privacy models, and the figures
over all input records (records the sample left out count as suppressed)."""

from __future__ import annotations

import numpy as np

from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.errors import ConfigError, DataError
from airflow_skald.core.lattice import Lattice
from airflow_skald.core.privacy import Judgement, PrivacyPolicy
from airflow_skald.core.privacy.differential_privacy import COMPOSE, DifferentialPrivacy
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.quality.metric import Scored
from airflow_skald.core.quality.registry import objective as configured_objective
from airflow_skald.core.search.class_source import ClassSource
from airflow_skald.core.search.decide import Decision, node_fields, quality_figures
from airflow_skald.core.search.figures import NodeFigures, class_size_histogram, risk
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
    source = ClassSource(plan, counts, policy.attributes)
    # the policy's k: a larger explicit k is judged as it stands (SafePub's δ only falls as k
    # grows, so the guarantee holds; ADR 0027)
    k = max(m.min_class_size for m in policy.models)

    def classes(node: tuple[int, ...]) -> tuple[NodeClasses, Judgement, object]:
        keys, table = source.keyed(node)
        j = policy.judge(table, top=node == tops)
        return NodeClasses(node, table.sizes, j.kept, keys, n_input, n_sampled), j, table

    ctx = QualityContext(plan.dims, plan.root, counts.classes, quality, None, k)
    search: dict = {"mode": "fixed" if model.node is not None else "searched"}
    if model.node is not None:
        best = fixed_node(plan, model)
        nodes_scored = 0
    else:
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
        score = scorer(quality.objective, ctx, k)
        outcome = safepub_search(
            tops,
            tuple(plan.root),
            lambda node: classes(node)[0],
            score,
            model.search_steps,
            model.epsilon_per_step,
            search_key,
        )
        best, nodes_scored = outcome.node, outcome.scored
        if objective_default:
            search["objective_chosen"] = OBJECTIVE_DEFAULT
        search |= {
            "objective": quality.objective,  # the score itself is not published: an exact
            "pivots_drawn": outcome.pivots,  # figure of the sampled records (ADR 0027)
        }
    node_classes, j, table = classes(best)
    kept_records = node_classes.kept_records
    judgement = Judgement(j.kept, n_input, n_input - kept_records, n_input, True, True)
    figures = NodeFigures.of(table, policy, best, tops, judgement=judgement)
    kept = table.sizes[j.kept]
    lattice = Lattice(plan.root, tops)
    section = {
        **model.describe(),
        **search,
        "node": plan.levels(best),
        "records_input": n_input,
        "records_sampled": n_sampled,
        "records_released": kept_records,
        "records_suppressed": n_input - kept_records,
        "composition": COMPOSE,
    }
    section.pop("model", None)
    objective = configured_objective(ctx)
    return Decision(
        **node_fields(plan, best),
        figures=figures,
        privacy={"models": policy.describe(), "suppression_limit": decimal_text(1)},
        lattice={
            "nodes": len(lattice),
            "evaluated": nodes_scored,
            "passing": nodes_scored,
            "pruned": 0,
        },
        risk=risk(kept, k),
        class_size_histogram=class_size_histogram(kept),
        at_risk=policy.at_risk(table.subset(j.kept)),
        suppressed_keys=node_classes.keys[~j.kept].astype(np.int64),
        quality=quality_figures(
            ctx, objective, Scored(table, judgement, best, tops, node_classes.keys), k, False
        ),
        dp=section,
    )
