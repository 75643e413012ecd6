"""ARX's entropy-based information loss of each class (``MetricSDNMEntropyBasedInformationLoss
.getEntropyBasedInformationLoss``, ADR 0046): the product of its labels' domain shares
(``DomainShare``: hierarchy rows under the label over all rows, `QualityContext.shares`), as
``log10(product) / log10(product of the domain sizes) + 1``, clamped to [0, 1]; 0 for every
class when the domains hold one value each. 0 for a class of original values, 1 for one
suppressed to '*' everywhere. The profitability models and the publisher-payout objective
read it (`ClassTable.label_loss`), computed once per node from the classes' keys: a few
vector operations per QID, no loop over classes.

ARX multiplies doubles in its order of attributes and takes Java's log10; the same here in
the QIDs' order (a last-bit difference of a product could only matter for a class whose payout
is 0 to 1e-16).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from airflow_skald.core.privacy.model import PrivacyModel
from airflow_skald.core.quality.context import BLOCK, QualityContext


def max_loss(ctx: QualityContext) -> float:
    """ARX's maxIL: log10 of the product of the domain sizes (doubles)."""
    product = 1.0
    for i in range(len(ctx.dims)):
        product *= float(ctx.shares(i)[0])
    return math.log10(product)


def class_loss(ctx: QualityContext, keys: np.ndarray, node: Sequence[int]) -> np.ndarray:
    """Each class's entropy-based loss (float64), the classes given by their `keys` at
    `node`."""
    return ClassLoss(ctx)(keys, tuple(node))


class ClassLoss:
    """`class_loss` for one search: the labels' shares as doubles, per QID and level, made
    once (ARX's `DomainShare` stores them so)."""

    def __init__(self, ctx: QualityContext):
        self.ctx = ctx
        self.top = max_loss(ctx)
        self._shares: dict[tuple[int, int], np.ndarray] = {}

    def _share(self, i: int, level: int) -> np.ndarray:
        key = (i, level)
        if key not in self._shares:
            u, nums = self.ctx.shares(i)
            self._shares[key] = nums[level].astype(np.float64) / float(u)
        return self._shares[key]

    def __call__(self, keys: np.ndarray, node: tuple[int, ...]) -> np.ndarray:
        top = self.top
        if top == 0 or math.isnan(top) or math.isinf(top):
            return np.zeros(keys.size, dtype=np.float64)
        loss = np.empty(keys.size, dtype=np.float64)
        for lo in range(0, keys.size, BLOCK):  # the codes' scratch one block of classes long
            part = keys[lo : lo + BLOCK]
            product = loss[lo : lo + BLOCK]
            product.fill(1.0)
            for i, level in enumerate(node):
                product *= self._share(i, level)[self.ctx.code(part, node, i)]
            with np.errstate(divide="ignore"):
                np.log10(product, out=product)
            product /= top
            product += 1.0
        return np.clip(loss, 0.0, 1.0, out=loss)


def level_loss(ctx: QualityContext, i: int, level: int) -> float:
    """sum over QID i's labels at `level` of records x log10(share): the node's sum over
    records of their classes' losses is N + sum_i level_loss(i, level_i) / maxIL (its lower
    bound before any roll-up: shares only grow up the lattice)."""
    u, nums = ctx.shares(i)
    marginal = ctx.marginal(i, level)
    held = marginal > 0
    share = nums[level][held].astype(np.float64) / float(u)
    return float(np.dot(marginal[held].astype(np.float64), np.log10(share)))


def label_losses(
    ctx: QualityContext, models: Sequence[PrivacyModel], objective: object
) -> Callable[[np.ndarray, tuple[int, ...]], np.ndarray] | None:
    """`class_loss` bound to the search's context where a privacy model or the objective reads
    the classes' losses (`reads_label_loss`), else None."""
    wanted = any(m.reads_label_loss for m in models) or getattr(
        objective, "reads_label_loss", False
    )
    return ClassLoss(ctx) if wanted else None
