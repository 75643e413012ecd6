"""ARX's non-monotone non-uniform entropy (`MetricMDNUNMEntropyPrecomputed`, and
`MetricMDNUNMEntropy`, the same function without ARX's cache; ADR 0044): per QID the monotone
NU-entropy of every record at the node (`nu_entropy`, times g) plus, for the suppressed
records, `s * sum_x c_x log2(S / c_x)`: c_x the suppressed records whose label at the node is
x, S all suppressed records (ARX's `getInformationLossInternal`: the suppressed classes'
labels counted per column, `count * log2(count / suppressed) * sFactor`, sign switched).

`S log S - sum_x c_x log c_x` grows with every record suppressed (its derivative in c_x is
log(S / c_x) >= 0), so the monotone part is a lower bound of every node above (ARX's own
lower bound) and a longer prefix of suppressed classes never lowers the loss."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.quality.exact import Component, LogScore
from airflow_skald.core.quality.metric import Scored
from airflow_skald.core.quality.nu_entropy import _BITS, NUEntropy


class NUNMEntropy(NUEntropy):
    name = "nu_entropy_nm"
    node_only = False
    needs_keys = True

    def _suppressed(self, scored: Scored) -> list[Component | None]:
        """Per QID `S ln S - sum_x c_x ln c_x` over the suppressed records (None: none)."""
        j = scored.judgement
        if not j.n_suppressed:
            return [None] * len(scored.node)
        sup = ~j.kept
        sizes = scored.table.sizes[sup].astype(np.int64)
        total = int(sizes.sum())
        out: list[Component | None] = []
        for codes in self.ctx.codes(scored.keys[sup], scored.node):
            _, inverse = np.unique(codes, return_inverse=True)
            per = np.bincount(inverse.reshape(-1), weights=sizes).astype(np.int64)
            counts, mult = np.unique(per, return_counts=True)
            terms = [(total, total)] + [
                (-int(c) * int(m), int(c)) for c, m in zip(counts, mult, strict=True)
            ]
            out.append(Component(terms))
        return out

    def _s_scale(self) -> Fraction:
        return self.s / (len(self.ctx.dims) if self.how == "arithmetic_mean" else 1)

    def value(self, scored: Scored) -> Any:
        base = super().value(scored)
        f = self._s_scale()
        parts = [(self.ctx.weights[i] * f, c) for i, c in enumerate(self._suppressed(scored)) if c]
        return LogScore([*base.parts, *parts], scale=_BITS)

    def qid_values(self, scored: Scored) -> list[float]:  # type: ignore[override]
        extra = self._suppressed(scored)
        return [
            self._qid(i, lv) + (float(self.s) * c.approx * _BITS if c else 0.0)
            for i, (lv, c) in enumerate(zip(scored.node, extra, strict=True))
        ]
