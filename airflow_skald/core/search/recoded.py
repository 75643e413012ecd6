"""Phase 2 with local recoding (docs/design.md §4f): the global decision, then the search run again on
the records each node suppressed (`core.transform.local_recoding.steps`), and the release's figures
after the steps (its classes as the written release groups them)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.histogram import strides_of
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.lattice import Lattice
from airflow_skald.core.privacy import PrivacyPolicy
from airflow_skald.core.privacy.registry import bind_models
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.quality.exact import aggregate_key
from airflow_skald.core.quality.multidim import exact_int_dot
from airflow_skald.core.quality.registry import build
from airflow_skald.core.search.decide import search_lattice
from airflow_skald.core.search.decision import Decision, LocalRecoding, RecodingFigures
from airflow_skald.core.search.figures import ClassSizeHistogram, RiskFigures
from airflow_skald.core.search.recoded_table import StepNodes, k_only
from airflow_skald.core.transform.local_recoding import LocalRecoding as Settings
from airflow_skald.core.transform.local_recoding import steps as LR
from airflow_skald.core.transform.local_recoding.keys import KeysAt, keys_at, still_suppressed


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
    bound to (default phase 1's; a chunk's own for `--per-chunk`). Unchanged when the config
    does not recode locally."""
    settings = config.transformation(Settings)
    if settings is None:
        return decision
    quality = config.quality
    n = plan.stats.n_rows
    sensitive = plan.stats.sensitive if sensitive is None else sensitive

    def policy_of(sub: RootCounts, limit: Fraction) -> PrivacyPolicy:
        distributions = {a: LR.value_counts(h) for a, h in sub.values.items()}
        step = LR.step_sensitive(sensitive, distributions)
        return PrivacyPolicy(bind_models(policy.models, step, n), limit)

    ctx = QualityContext(plan.dims, plan.root, counts.classes, config.quality)  # both figures'
    tables = StepTables(plan, ctx.shares)

    def search(step_plan: Plan, sub: RootCounts, policy: PrivacyPolicy, gs) -> Decision:
        q = quality if gs is None else replace(quality, gs_factor=gs)
        return search_lattice(
            step_plan,
            sub,
            policy,
            config.priority_order(),
            quality=q,
            subset=True,
            table=tables.of(sub, policy),
        )

    at = KeysAt(plan, counts.classes.keys)
    steps = LR.recode(
        settings, plan, counts, decision, policy, policy_of, search, quality.gs_factor, at
    )
    out, released = with_steps(plan, counts, decision, steps, at)
    recoding = LocalRecoding(
        settings.described(),
        before=RecodingFigures.of(
            decision,
            loss=release_loss(plan, counts, decision, [], ctx, at),
            records=decision.figures.n_records,
        ),
        after=RecodingFigures.of(out, loss=release_loss(plan, counts, decision, steps, ctx, at)),
        steps=steps,
    )
    figures_risk = RiskFigures.of(released, policy.min_class_size)
    if decision.risk.analysis is not None:
        seen = released if tuple(decision.node) != tuple(plan.tops) else released[:0]
        figures_risk = figures_risk.with_analysis(config.risk.analyse(seen, n))
    return replace(out, risk=figures_risk, local_recoding=recoding)


class StepTables:
    """The steps' node tables (`recoded_table.StepNodes`), one per set of records: the
    adaptive mode searches the same records again after a search that released nothing."""

    def __init__(self, plan: Plan, shares) -> None:
        self.plan, self.shares = plan, shares
        self.lattice = Lattice(plan.root, tuple(plan.tops))
        self._last: tuple[RootCounts, StepNodes | None] | None = None

    def of(self, sub: RootCounts, policy: PrivacyPolicy) -> StepNodes | None:
        """The table of `sub`'s records (None: its policy is not k-only, or it is large)."""
        k = k_only(policy)
        if k is None or sub.values:
            return None
        if self._last is None or self._last[0] is not sub:
            fits = StepNodes.fits(sub.classes, self.lattice, self.shares, len(self.plan.dims))
            table = (
                StepNodes(self.plan, sub.classes, self.lattice, k, self.shares) if fits else None
            )
            self._last = (sub, table)
        table = self._last[1]
        return table if table is not None and table.k == k else None


def with_steps(
    plan: Plan,
    counts: RootCounts,
    decision: Decision,
    steps: list,
    at: KeysAt | None = None,
) -> tuple[Decision, np.ndarray]:
    """The decision with the figures of the release the steps make, and its class sizes:
    its classes (each step's kept classes, merged where their output strings coincide), the
    records left suppressed or released at the top node."""
    node = tuple(decision.node)
    at = KeysAt(plan, counts.classes.keys) if at is None else at
    _, keys, sizes = at.kept(counts, node, decision.suppressed_keys)
    if node == tuple(plan.tops):
        keys, sizes = keys[:0], sizes[:0]
    parts = [(node, decision.radices, keys, sizes)]
    parts += [(s.node, s.radices, s.kept_keys, s.kept_sizes) for s in steps if not s.at_top]
    released = LR.release_sizes(plan.dims, parts)
    n = counts.n_records
    s = n - int(released.sum(dtype=np.int64))
    square = int((released.astype(object) ** 2).sum()) if released.size else 0
    f = decision.figures
    quality = {**f.quality, "dm_star": square + s * s, "dm": square + s * n}
    quality["dm_star_arx"] = quality["dm_star"]  # the suppressed records as one class
    figures = replace(
        f,
        n_suppressed=s,
        n_classes=int(released.size),
        min_class_size=int(released.min()) if released.size else 0,
        quality=quality,
    )
    scores = {**decision.quality.scores} if decision.quality is not None else {}
    scores.update({key: quality[key] for key in ("dm_star", "dm") if key in scores})
    out = replace(
        decision,
        figures=figures,
        class_size_histogram=ClassSizeHistogram.of(released),
        quality=replace(decision.quality, scores=scores) if decision.quality else None,
    )
    return out, released


def release_loss(
    plan: Plan,
    counts: RootCounts,
    decision: Decision,
    steps: list,
    ctx: QualityContext,
    at: KeysAt | None = None,
) -> float:
    """ARX's Loss (docs/design.md §4d, as the objective's settings define it) of the release a
    decision and its steps make: each record at the label of the node that released it (a
    step at the top node: its records generalised to the top), the records left suppressed
    as Loss counts suppressed records at the last node. `ctx`: the root counts' (built once for
    the figures before and after the steps)."""
    settings = ctx.settings
    loss = build("loss", ctx, settings.aggregate if settings.objective == "loss" else None)
    node = tuple(decision.node)
    at = KeysAt(plan, counts.classes.keys) if at is None else at
    left, keys, sizes = at.kept(counts, node, decision.suppressed_keys)
    parts, last = [(node, keys, sizes)], node
    for step in steps:
        parts.append((step.node, step.kept_keys, step.kept_sizes))
        left = still_suppressed(plan, counts.classes.keys, left, step.node, step.suppressed_keys)
        last = step.node
    at_last = keys_at(plan, counts.classes.keys[left], last)
    left_sizes = counts.classes.counts[left].astype(np.int64)
    s = int(left_sizes.sum())
    values = []
    for i in range(len(plan.dims)):
        u, nums = ctx.shares(i)
        kept = 0
        for at, k, c in parts:
            code = _digit(k, plan.radices(at), i)
            kept += exact_int_dot(c.astype(np.int64), nums[at[i]][code])
        sup = exact_int_dot(left_sizes, nums[last[i]][_digit(at_last, plan.radices(last), i)])
        raw = loss.g * kept + sup + loss.s * (s * u - sup)
        values.append(loss._normalised(i, raw))
    key = aggregate_key(values, ctx.weights, loss.how)
    scale = loss.scale()
    return loss.display(int(key * scale) if scale is not None else key)


def _digit(keys: np.ndarray, radices: tuple[int, ...], i: int) -> np.ndarray:
    """QID i's code in each mixed-radix key."""
    return (keys // strides_of(radices)[i]) % radices[i]
