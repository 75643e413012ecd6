"""ARX's Loss (`MetricMDNMLoss`, its GUI's default; Iyengar 2002): per QID, each record's label's
domain share (generalised records count `g * share`, suppressed ones `share + s * (1 - share)`),
summed and normalised by ARX's minimum `g N / U` and maximum `N` (clamped at 0); aggregated by the
geometric mean by default. Exact: per QID a fraction over the integer share numerators.

Its lower bound is Loss with every class kept: it needs only the records per label, so it is
known for every node of the lattice before any roll-up (shares only grow up the lattice)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.quality.class_order import loss_ranks
from airflow_skald.core.quality.metric import Scored
from airflow_skald.core.quality.multidim import MultiDimensional, exact_int_dot


class Loss(MultiDimensional):
    name = "loss"
    default_aggregate = "geometric_mean"
    needs_keys = True
    orders_classes = True

    def _total(self, i: int, level: int) -> int:
        """sum over labels of records * share numerator, at `level` (once per QID and level:
        every node at that level reads it)."""
        totals = self.__dict__.setdefault("_totals", {})
        if (i, level) not in totals:
            totals[i, level] = exact_int_dot(
                self.ctx.marginal(i, level), self.ctx.shares(i)[1][level]
            )
        return totals[i, level]

    def _normalised(self, i: int, raw_u: Fraction) -> Fraction:
        n, u = self.ctx.n_records, self.ctx.shares(i)[0]
        den = n * (u - self.g)
        if den == 0:
            return Fraction(0)
        return max(Fraction(0), (raw_u - self.g * n) / den)

    def qid_values(self, scored: Scored) -> list[Fraction]:
        j = scored.judgement
        s = j.n_suppressed
        out = []
        if s:
            sup = ~j.kept
            sizes = scored.table.sizes[sup].astype(np.int64)
            codes = self.ctx.codes(scored.keys[sup], scored.node)
        for i, level in enumerate(scored.node):
            sup_n = exact_int_dot(sizes, self.ctx.shares(i)[1][level][codes[i]]) if s else 0
            out.append(self.fraction(*self.terms(i, self._total(i, level), sup_n, s)))
        return out

    def terms(self, i: int, total: Any, sup_n: Any, s: Any) -> tuple[Any, int]:
        """QID i's value as a numerator and denominator, from the records times share
        numerators of every record at the node's level (`total`), of the suppressed records
        (`sup_n`) and the suppressed records (`s`): `_normalised(i, g (total - sup_n) + sup_n +
        s (s u - sup_n))` in integers times d (the gs factors' common denominator). Ints, or
        arrays of them (every node of a local recoding step, `recoded_table`)."""
        d, gi, si = self._integer_factors()
        n, u = self.ctx.n_records, self.ctx.shares(i)[0]
        raw = gi * (total - sup_n) + d * sup_n + si * (s * u - sup_n)
        return raw - gi * n, n * (d * u - gi)

    @staticmethod
    def fraction(num: int, den: int) -> Fraction:
        """A QID's value from `terms` (0 where the normalisation clamps it)."""
        return Fraction(num, den) if den and num > 0 else Fraction(0)

    def _integer_factors(self) -> tuple[int, int, int]:
        """d, g d and s d: the gs factor's g and s over their common denominator d."""
        if "_factors" not in self.__dict__:
            d = math.lcm(self.g.denominator, self.s.denominator)
            self._factors = (d, int(self.g * d), int(self.s * d))
        return self._factors

    def class_order(self, keys: np.ndarray, size: int, node: Sequence[int]) -> np.ndarray:
        """ARX's loss of each class alone (`getInformationLossInternal(node, entry)`): per
        QID its records times its label's domain share, aggregated (`class_order`)."""
        codes = self.ctx.codes(keys, node)
        nums = [self.ctx.shares(i)[1][level][codes[i]] for i, level in enumerate(node)]
        domains = [self.ctx.shares(i)[0] for i in range(len(node))]
        return loss_ranks(nums, domains, self.ctx.weights, size, self.how)

    def level_bound(self, i: int, level: int) -> float:
        return float(self._normalised(i, self.g * self._total(i, level)))
