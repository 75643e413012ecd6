"""Phase 2 with local recoding (SPEC §4f): the global decision, then the search run again on
the records each node suppressed (`core.transform.local_recoding`), and the release's figures
after the steps (its classes as the written release groups them)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.privacy import PrivacyPolicy
from airflow_skald.core.privacy.registry import bind_models
from airflow_skald.core.search.decide import Decision, search_lattice
from airflow_skald.core.search.figures import class_size_histogram, risk
from airflow_skald.core.transform import local_recoding as LR

#: the figures the manifest gives before and after the steps
SHOWN = ("n_suppressed", "n_equivalence_classes", "min_class_size", "dm_star", "dm")


def local_recoding(
    config: SkaldConfig,
    plan: Plan,
    counts: RootCounts,
    decision: Decision,
    policy: PrivacyPolicy,
    sensitive: dict | None = None,
) -> Decision:
    """`decision` (made under `policy`) with its local recoding steps and the release's
    figures after them. `sensitive`: the criteria attributes' statistics the models were
    bound to (default phase 1's; a chunk's own for `--per-chunk`)."""
    settings = config.local_recoding
    quality = config.quality
    if settings.gs_factor is not None:
        quality = replace(quality, gs_factor=settings.gs_factor)
    n = plan.stats.n_rows
    sensitive = plan.stats.sensitive if sensitive is None else sensitive
    k = policy.min_class_size

    def policy_of(sub: RootCounts, limit: Fraction) -> PrivacyPolicy:
        distributions = {a: LR.value_counts(h) for a, h in sub.values.items()}
        step = LR.step_sensitive(sensitive, distributions)
        return PrivacyPolicy(bind_models(policy.models, step, n), limit)

    def search(step_plan: Plan, sub: RootCounts, policy: PrivacyPolicy) -> Decision:
        return search_lattice(
            step_plan, sub, policy, config.priority_order(), quality=quality, subset=True
        )

    steps = LR.recode(settings, plan, counts, decision, k, policy_of, search)
    out = with_steps(plan, counts, decision, steps, settings.describe())
    released = out.recoded_sizes
    figures_risk = risk(released, k)
    if "analysis" in decision.risk:
        seen = released if tuple(decision.node) != tuple(plan.tops) else released[:0]
        figures_risk["analysis"] = config.risk_settings.analyse(seen, n)
    return replace(out, risk=figures_risk, recoded_sizes=None)


def with_steps(
    plan: Plan, counts: RootCounts, decision: Decision, steps: list, settings: dict
) -> Decision:
    """The decision with the steps and the figures of the release they make: its classes
    (each step's kept classes, merged where their output strings coincide), the records
    left suppressed or released at the top node."""
    node = tuple(decision.node)
    keys, sizes = LR.kept_classes(plan, counts, node, decision.suppressed_keys)
    if node == tuple(plan.tops):
        keys, sizes = keys[:0], sizes[:0]
    parts = [(node, decision.radices, keys, sizes)]
    parts += [(s.node, s.radices, s.kept_keys, s.kept_sizes) for s in steps if not s.at_top]
    released = LR.release_sizes(plan.dims, parts)
    n = counts.n_records
    s = n - int(released.sum(dtype=np.int64))
    square = int((released.astype(object) ** 2).sum()) if released.size else 0
    f = decision.figures
    before = {**_shown(decision), "records": f.n_records}
    quality = {**f.quality, "dm_star": square + s * s, "dm": square + s * n}
    quality["dm_star_arx"] = quality["dm_star"]  # the suppressed records as one class
    figures = replace(
        f,
        n_suppressed=s,
        n_classes=int(released.size),
        min_class_size=int(released.min()) if released.size else 0,
        quality=quality,
    )
    scores = {**decision.quality.get("scores", {})}
    scores.update({key: quality[key] for key in ("dm_star", "dm") if key in scores})
    out = replace(
        decision,
        figures=figures,
        steps=steps,
        class_size_histogram=class_size_histogram(released),
        quality={**decision.quality, "scores": scores} if decision.quality else {},
    )
    out.recoding = {"settings": settings, "before": before, "after": _shown(out)}
    out.recoded_sizes = released
    return out


def _shown(decision: Decision) -> dict:
    d = decision.to_dict()
    return {key: d[key] for key in SHOWN}
