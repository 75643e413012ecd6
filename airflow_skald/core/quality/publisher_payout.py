"""ARX's publisher-payout objective (``MetricSDNMPublisherPayout``, ADR 0046): the payout the
publisher forgoes. A kept class of c records costs g x c x (benefit - its payout per record), a
suppressed one s x c x benefit; the payout per record is that of the profitability models
(benefit x (1 - the class's entropy-based loss), less the publisher's loss x the adversary's
success where attacking pays: `settings.cost_benefit`), success 1 / c (prosecutor) or 1 / the
class's population records (journalist, with a research subset). Not monotone. The cost/benefit
parameters and the attacker are those of the configured `privacy.profitability` entry, else
ARX's defaults and the prosecutor (`QualitySettings`).

A float, as ARX's: the classes' terms (each ARX's double, bit for bit) summed exactly and
rounded once (`math.fsum`), so the figure depends on the terms alone, never on the classes'
order (ARX adds them one by one in its classes' order, which can break a tie of two nodes with
the same terms, e.g. two that split the records alike, by a last bit); ties go by the tie order
(docs/design.md §4d: the smaller sum of levels first). Bounds: every term is at least
min(g, s) x c x benefit x loss (a kept class's payout is at most benefit (1 - loss), a
suppressed class's loss at most 1), and the records' losses only grow up the lattice: from the
node's classes (`lower_bound`) or, before any roll-up, from the labels' records alone
(`node_bounds`: sum over records of loss = N + sum_i sum_L B_L log10(share_L) / maxIL).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from airflow_skald.core.lattice import HEIGHT_FIRST, Lattice
from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.privacy.profitability import success_probability
from airflow_skald.core.quality.context import BLOCK, QualityContext
from airflow_skald.core.quality.entropy_loss import class_loss, level_loss, max_loss
from airflow_skald.core.quality.exact import round_down
from airflow_skald.core.quality.metric import Metric, Scored


class PublisherPayout(Metric):
    name = "publisher_payout"
    ties = HEIGHT_FIRST  # docs/design.md §4d: the smaller sum of levels first
    needs_keys = True
    reads_label_loss = True

    def __init__(self, ctx: QualityContext):
        self.ctx = ctx
        s = ctx.settings
        self.cost = s.cost_benefit
        self.journalist = s.attacker == "journalist"
        self.g, self.s = float(s.g_factor), float(s.s_factor)
        self.benefit = float(self.cost.publisher_benefit)

    def _loss(
        self, table: ClassTable, scored: Scored | None = None, part: slice = slice(None)
    ) -> np.ndarray | None:
        """The classes' losses (those of `part`), None without labels' losses or keys."""
        if table.label_loss is not None:
            return table.label_loss[part]
        if scored is None or scored.keys is None:
            return None
        return class_loss(self.ctx, scored.keys[part], scored.node)

    def value(self, scored: Scored) -> float:
        table = scored.table
        if table.label_loss is None and scored.keys is None:
            raise ValueError("publisher payout needs the classes' keys")
        terms = (memoryview(self._terms(scored, lo)) for lo in range(0, table.n_classes, BLOCK))
        # rounded once (the same terms, the same figure), summed as each block's terms come
        return math.fsum(itertools.chain.from_iterable(terms))

    def _terms(self, scored: Scored, lo: int) -> np.ndarray:
        """The terms of the `BLOCK` classes from `lo` (each class's alone)."""
        table, part = scored.table, slice(lo, lo + BLOCK)
        loss = self._loss(table, scored, part)
        population = None if table.population is None else table.population[part]
        block = ClassTable(table.sizes[part], population=population)
        journalist = self.journalist and table.population is not None
        payout = self.cost.payout(loss, success_probability(block, journalist))
        sizes = block.sizes.astype(np.float64)
        kept = scored.judgement.kept[part]
        return np.where(
            kept, self.g * sizes * (self.benefit - payout), self.s * sizes * self.benefit
        )

    def payout(self, scored: Scored) -> float:
        """ARX's "Publisher payout": the kept records' payout."""
        table = scored.table
        loss = self._loss(table, scored)
        journalist = self.journalist and table.population is not None
        payout = self.cost.payout(loss, success_probability(table, journalist))
        kept = scored.judgement.kept
        return float((table.sizes[kept] * payout[kept]).sum())

    def _factor(self) -> float:
        return min(self.g, self.s) * self.benefit

    def lower_bound(self, table: ClassTable) -> float | None:
        if table.label_loss is None:
            return None
        total = float((table.sizes * table.label_loss).sum())  # (no BLAS call per node)
        return round_down(self._factor() * total)

    def node_bounds(self, lattice: Lattice) -> np.ndarray | None:
        top = max_loss(self.ctx)
        if top == 0 or math.isnan(top) or math.isinf(top):
            return None
        tables = [
            np.asarray([level_loss(self.ctx, i, lv) / top for lv in range(lo, up + 1)])
            for i, (lo, up) in enumerate(zip(lattice.lower, lattice.upper, strict=True))
        ]
        total = self.ctx.n_records + lattice.grid_sum(tables, dtype=np.float64)
        bound = self._factor() * np.clip(total, 0.0, None)
        return bound - np.abs(bound) * 1e-9 - 1e-9

    def display(self, value: Any) -> float:
        return float(value)
