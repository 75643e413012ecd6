"""Phase 2's decision: the node of the sub-lattice above the RAM root with the least loss.

Each evaluated node's classes come from rolling the global root histogram up (no data is
re-read); the privacy policy says which classes a node keeps and whether it passes, the
objective metric scores it and bounds the nodes above it. The search sees neither k nor DM*.
A node near a large sparse root, whose roll-up is slow, is first checked against the most
classes a passing node can have (`_most_classes`): a cheap lower bound of its class count
(`ClassSource.fewest_classes`) above that fails it without a roll-up (and without a loss bound,
so the order of later evaluations, never the answer, can differ).
The chosen node's suppressed classes are kept as sorted keys for phase 3.
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
from airflow_skald.core.lattice import Lattice, search_optimal
from airflow_skald.core.privacy import ClassTable, PrivacyPolicy, max_suppressed
from airflow_skald.core.privacy.research_subset import subset_classes
from airflow_skald.core.privacy.risk.analysis import RiskSettings
from airflow_skald.core.quality.context import LOSS_LEFT_OUT, QualityContext
from airflow_skald.core.quality.metric import Metric, Scored
from airflow_skald.core.quality.registry import every_model
from airflow_skald.core.quality.registry import objective as configured_objective
from airflow_skald.core.search.class_source import ClassSource
from airflow_skald.core.search.figures import NodeFigures, class_size_histogram, risk
from airflow_skald.core.settings.quality import QualitySettings
from airflow_skald.core.text import decimal_text, rank_names
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
    `quality`: the objective and its settings (docs/design.md §4d; default DM*), unless `objective`
    gives the model itself.
    `analysis`, if given, adds the risk analysis of the kept classes (docs/design.md §4c; the top node's
    one class is left out).
    `first_rows(node, keys)`: the first input row of each class `keys` of `node` (an extra
    pass), asked only when the sample-based models' prefix ends inside a run of classes of one
    size at the chosen node (docs/design.md §4c); without it those classes follow their keys' order.
    `subset`: `counts` hold some of the input's records (a local recoding step, docs/design.md §4f).
    """
    n = counts.n_records
    if n != plan.stats.n_rows and not subset:
        raise DataError(
            f"the histogram counts {n} records but phase 1 saw {plan.stats.n_rows}: "
            "the input changed between passes, or chunks are missing"
        )
    classes = counts.classes
    if policy.subset is not None:  # the records released are the subset's (docs/design.md §4e)
        classes = subset_classes(counts.values[policy.subset.column], policy.subset.mask)
        n = classes.n_records
    lattice = Lattice(plan.root, tuple(plan.tops))
    source = source or ClassSource(plan, counts, policy.attributes, policy.subset)
    most = _most_classes(policy, n)
    limit = max_suppressed(policy.suppression_limit, n)
    ctx = QualityContext(plan.dims, plan.root, classes, quality, limit, _kept_size(policy))
    objective = objective or configured_objective(ctx)
    # the labels of suppressed classes (Loss): keyed classes whenever a node may suppress
    keyed = objective.needs_keys and policy.suppression_limit > 0
    tops = tuple(plan.tops)

    def evaluate(i: int, best: object = None) -> tuple[bool, bool, object, int | float | None]:
        node = lattice.node(i)
        if most is not None:
            fewest = source.fewest_classes(node, most)
            if fewest is not None and fewest > most:
                return False, False, None, None  # too many classes to pass: no roll-up
        keys, table = source.keyed(node) if keyed else (None, source.table(node))
        table = _class_order(table, keys, node, objective, policy)
        if most is not None and table.n_classes > most:  # too many classes to pass, here and
            return False, False, None, objective.lower_bound(table)  # at every node below
        within = None
        if best is not None:  # prefixes whose loss could not win are not tried

            def within(kept: np.ndarray, ordered: np.ndarray) -> int:
                longest = objective.longest_prefix(table, kept, ordered, best)
                return ordered.size if longest is None else longest

        j = policy.judge(
            table,
            top=node == tops,
            within=within,
            verdict_only=True,
            any_prefix=objective.suppression_blind,
        )
        loss = objective.value(Scored(table, j, node, plan.tops, keys)) if j.passes else None
        return j.monotone_passes, j.passes, loss, objective.lower_bound(table)

    outcome = search_optimal(
        lattice,
        evaluate,
        plan.tops,
        priority,
        all_monotone=policy.all_monotone,
        by_height=objective.by_height,
        node_bounds=objective.node_bounds(lattice),
        top_down=objective.top_down,
        climb_fails=objective.climb_fails,
        beat=bool(policy.sample_based),
    )
    if outcome.best is None:
        top_table = source.table(tops)
        top = NodeFigures.of(top_table, policy, judgement=policy.judge(top_table, top=True))
        raise DataError(
            f"no generalisation satisfies {_label(policy)}: even the top node suppresses "
            f"{top.n_suppressed} of {n} records (limit {top.max_suppressed})"
        )
    best = lattice.node(outcome.best)
    keys, table = source.keyed(best)
    table = _class_order(table, keys, best, objective, policy)
    judgement = policy.judge(table, top=best == tops)
    if first_rows is not None and judgement.tie_size:  # the order within a class size matters
        tied = table.sizes == judgement.tie_size
        order = np.zeros(table.n_classes, dtype=np.int64)  # the other sizes never tie
        order[tied] = first_rows(best, keys[tied])
        table = replace(table, first_rows=order)
        judgement = policy.judge(table, top=best == tops)
    figures = NodeFigures.of(table, policy, best, plan.tops, judgement=judgement)
    kept = table.sizes[judgement.kept]
    figures_risk = risk(kept, policy.min_class_size)
    if analysis is not None:
        seen = kept if best != tops else kept[:0]
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
        at_risk=policy.at_risk(table.subset(judgement.kept)),
        suppressed_keys=keys[~judgement.kept].astype(np.int64),
        quality=quality_figures(
            ctx,
            objective,
            Scored(table, judgement, best, plan.tops, keys),
            policy.min_class_size,
        ),
    )


def node_fields(plan: Plan, node: tuple[int, ...]) -> dict:
    """A decision's node in its forms: levels, per QID, the paper's notation, radices."""
    return {
        "node": node,
        "levels": plan.levels(node),
        "node_paper": paper_notation(plan.dims, node),
        "radices": plan.radices(node),
    }


def quality_figures(
    ctx: QualityContext, objective: Metric, scored: Scored, k: int, before: bool = True
) -> dict:
    """Every quality model's score for the chosen node and the per-QID table (docs/design.md §4d),
    with each QID's distribution before (unless not `before`: a DP release, whose suppressed
    sampled records the figures may not show) and after generalisation (`distributions`)."""
    models = every_model(ctx)
    models[objective.name] = objective
    loss = models["loss"].per_qid(scored) or []
    # under DP (not `before`) no Loss weighed by values found outside the sample (ADR 0027)
    from_data = set() if before else ctx.shares_from_data()
    if from_data:
        models.pop("loss")
    scores = {name: m.display(m.value(scored)) for name, m in models.items()}
    entropy = models["nu_entropy"].per_qid(scored) or []
    after = distributions(ctx, scored, k, before)
    qids = [
        {
            "name": d.name,
            "level": int(level),
            "top": int(d.top),
            "labels": ctx.labels(i, int(level)),
            **({} if i in from_data else {"loss": loss[i]}),
            "nu_entropy": entropy[i],
            "distribution": after[i],
        }
        for i, (d, level) in enumerate(zip(ctx.dims, scored.node, strict=True))
    ]
    return {
        **ctx.settings.describe(),
        "aggregate": getattr(objective, "how", None),
        "scores": scores,
        "nu_entropy_from": {d.name: int(lv) for d, lv in zip(ctx.dims, ctx.root, strict=True)},
        "qids": qids,
        **({"left_out": LOSS_LEFT_OUT} if from_data else {}),
    }


def _kept_size(policy: PrivacyPolicy) -> int:
    """The fewest records of a class a node keeps: the monotone models' smallest class size
    (ARX's getMinimalClassSize: k; 1 when no model has one)."""
    return max((m.min_class_size for m in policy.models if m.monotone), default=1)


def _most_classes(policy: PrivacyPolicy, n: int) -> int | None:
    """The most classes a passing node can have: its kept classes have at least s records each
    (s: the largest `smallest_kept` of the class-based models: k, or the fewest records that
    can be t-close; at most n // s of them) and every other class suppresses at least one
    record, so a node of more than n // s + floor(limit * n) classes fails, and so does every
    node below it (more classes still) (None: s < 2)."""
    smallest = max((m.smallest_kept for m in policy.models if not m.sample_based), default=1)
    if smallest < 2:
        return None
    return n // smallest + max_suppressed(policy.suppression_limit, n)


def _class_order(
    table: ClassTable,
    keys: np.ndarray | None,
    node: tuple[int, ...],
    objective: Metric,
    policy: PrivacyPolicy,
) -> ClassTable:
    """The table with the objective's order of classes of one size, where the sample-based
    models suppress by it (docs/design.md §4c: Loss) and the classes' keys are known."""
    if keys is None or not objective.orders_classes or not policy.sample_based:
        return table

    def ranks(index: np.ndarray) -> np.ndarray:
        return objective.class_order(keys[index], int(table.sizes[index[0]]), node)

    return replace(table, class_order=ranks)


def _label(policy: PrivacyPolicy) -> str:
    return " and ".join(m.label() for m in policy.models)


TOP_LABELS = 10  # labels a distribution lists (the rest summed)


def distributions(ctx: QualityContext, scored: Scored, k: int, before: bool = True) -> list[dict]:
    """Per QID, records per label before generalisation (at the root's level: level 0 when
    the root is) and after (kept records per label at the node, suppressed as '*'): the
    `TOP_LABELS` largest, from counts alone. A label holding fewer than k records is never
    listed (counted in `other`): the figures show no rare value, so no record. Level 0 holds
    the input's own values: they are listed as ranks ("value #01"), never named (manifests
    hold no data value); a generalised level's labels are named."""
    j = scored.judgement
    sup = ~j.kept
    codes = ctx.codes(scored.keys[sup], scored.node) if j.n_suppressed else None
    sizes = scored.table.sizes[sup] if j.n_suppressed else None
    out = []
    for i, (d, level) in enumerate(zip(ctx.dims, scored.node, strict=True)):
        root = ctx.root[i]
        kept = ctx.marginal(i, int(level)).copy()
        if codes is not None:
            kept -= np.bincount(codes[i], weights=sizes, minlength=kept.size).astype(np.int64)
        shown = {}
        if before:
            shown = {"before_level": int(root), "before": _top(d, root, ctx.marginal(i, root), k)}
        out.append(
            shown | {"after": _top(d, int(level), kept, k), "suppressed": int(j.n_suppressed)}
        )
    return out


def _top(dim, level: int, counts: np.ndarray, k: int) -> dict:
    shown = np.flatnonzero(counts >= max(k, 1))
    shown = shown[np.argsort(-counts[shown], kind="stable")][:TOP_LABELS]
    if level == 0:  # the input's values: ranked, not named
        labels = rank_names(shown.size)
    else:
        labels = dim.labels(level, shown) if shown.size else []
    total = int(counts.sum())
    listed = [[str(lab), int(c)] for lab, c in zip(labels, counts[shown].tolist(), strict=True)]
    return {
        "labels": listed,
        "other": total - sum(c for _, c in listed),
        "other_labels": int(np.count_nonzero(counts)) - len(listed),
    }
