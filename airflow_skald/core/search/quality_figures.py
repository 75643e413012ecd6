"""The chosen node's quality figures (docs/design.md §4d): every quality model's score, and per
QID its loss, entropy and distribution of records before and after generalisation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from airflow_skald.core.quality.context import LOSS_LEFT_OUT, QualityContext
from airflow_skald.core.quality.metric import Metric, Scored
from airflow_skald.core.quality.registry import every_model
from airflow_skald.core.search.qid_figures import LabelCounts, QidDistribution, QidFigures
from airflow_skald.core.text import rank_names


def quality_figures(
    ctx: QualityContext, objective: Metric, scored: Scored, min_class_size: int, before: bool = True
) -> QualityFigures:
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
    after = distributions(ctx, scored, min_class_size, before)
    qids = [
        QidFigures(
            d.name,
            int(level),
            int(d.top),
            ctx.labels(i, int(level)),
            entropy[i],
            after[i],
            loss=None if i in from_data else loss[i],
        )
        for i, (d, level) in enumerate(zip(ctx.dims, scored.node, strict=True))
    ]
    described = ctx.settings.describe()
    game = {key: described[key] for key in ("cost_benefit", "attacker") if key in described}
    return QualityFigures(
        described["objective"],
        described["gs_factor"],
        described["weights"],
        getattr(objective, "how", None),
        scores,
        {d.name: int(lv) for d, lv in zip(ctx.dims, ctx.root, strict=True)},
        qids,
        **game,
        left_out=LOSS_LEFT_OUT if from_data else None,
    )


TOP_LABELS = 10  # labels a distribution lists (the rest summed)


def distributions(
    ctx: QualityContext, scored: Scored, min_class_size: int, before: bool = True
) -> list[QidDistribution]:
    """Per QID, records per label before generalisation (at the root's level: level 0 when
    the root is) and after (kept records per label at the node, suppressed as '*'): the
    `TOP_LABELS` largest, from counts alone. A label holding fewer than `min_class_size` records
    is never
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
        out.append(
            QidDistribution(
                _top(d, int(level), kept, min_class_size),
                int(j.n_suppressed),
                int(root) if before else None,
                _top(d, root, ctx.marginal(i, root), min_class_size) if before else None,
            )
        )
    return out


def _top(dim, level: int, counts: np.ndarray, min_class_size: int) -> LabelCounts:
    shown = np.flatnonzero(counts >= max(min_class_size, 1))
    shown = shown[np.argsort(-counts[shown], kind="stable")][:TOP_LABELS]
    if level == 0:  # the input's values: ranked, not named
        labels = rank_names(shown.size)
    else:
        labels = dim.labels(level, shown) if shown.size else []
    total = int(counts.sum())
    listed = tuple(
        (str(lab), int(c)) for lab, c in zip(labels, counts[shown].tolist(), strict=True)
    )
    return LabelCounts(
        listed, total - sum(c for _, c in listed), int(np.count_nonzero(counts)) - len(listed)
    )


@dataclass(frozen=True)
class QualityFigures:
    """Every quality model's score for the chosen node and the per-QID table (docs/design.md
    §4d; the manifest's ``quality_models``): the quality settings as described
    (`QualitySettings.describe`, the aggregate the objective used), the scores, the level
    ν-entropy counts from, per QID its level, labels, loss, entropy and distributions."""

    objective: str
    gs_factor: str  # decimal text
    weights: dict[str, str]
    aggregate: str | None
    scores: dict[str, float]
    nu_entropy_from: dict[str, int]
    qids: list[QidFigures]  # per QID: name, level, top, labels, loss, nu_entropy, distribution
    cost_benefit: dict | None = None  # publisher_payout: the profitability model's game
    attacker: str | None = None
    left_out: str | None = None  # DP: why Loss is left out (`quality.context.LOSS_LEFT_OUT`)

    def to_dict(self) -> dict:
        game = {"cost_benefit": self.cost_benefit, "attacker": self.attacker}
        return {
            "objective": self.objective,
            "gs_factor": self.gs_factor,
            "weights": self.weights,
            "aggregate": self.aggregate,
            **(game if self.cost_benefit is not None else {}),
            "scores": self.scores,
            "nu_entropy_from": self.nu_entropy_from,
            "qids": [q.to_dict() for q in self.qids],
            **({"left_out": self.left_out} if self.left_out is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> QualityFigures:
        return cls(
            d["objective"],
            d["gs_factor"],
            d["weights"],
            d["aggregate"],
            d["scores"],
            d["nu_entropy_from"],
            [QidFigures.from_dict(q) for q in d["qids"]],
            d.get("cost_benefit"),
            d.get("attacker"),
            d.get("left_out"),
        )
