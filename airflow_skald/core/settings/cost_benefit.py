"""ARX's cost/benefit configuration of its game-theoretic privacy models (``ARXCostBenefitConfiguration``,
ADR 0046) and its expected payouts (``RiskModelCostBenefit``): the publisher's benefit per
record released unchanged, the publisher's loss per successful re-identification, the
adversary's gain per success and cost per attack. A leaf module: the settings read it, the
profitability models and the publisher-payout objective compute with it.

ARX computes with doubles; so does this module, in ARX's order of operations, so that a class's
payout (and whether it is kept) is ARX's bit for bit where the inputs are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

#: ARX's order of the parameters and its defaults (``ARXCostBenefitConfiguration``)
KEYS = ("publisher_benefit", "publisher_loss", "adversary_gain", "adversary_cost")
DEFAULTS = {
    "publisher_benefit": Fraction(1200),
    "publisher_loss": Fraction(300),
    "adversary_gain": Fraction(300),
    "adversary_cost": Fraction(4),
}
ARX_MAX_INT = 2**31 - 1  # ARX's Integer.MAX_VALUE (an adversary without cost)


@dataclass(frozen=True)
class CostBenefit:
    publisher_benefit: Fraction = DEFAULTS["publisher_benefit"]
    publisher_loss: Fraction = DEFAULTS["publisher_loss"]
    adversary_gain: Fraction = DEFAULTS["adversary_gain"]
    adversary_cost: Fraction = DEFAULTS["adversary_cost"]

    def describe(self) -> dict:
        return {key: _text(getattr(self, key)) for key in KEYS}

    def no_attack_k(self) -> int:
        """The smallest class (of the sample, or of the population for the journalist) in
        which an attack does not pay: size > gain / cost (``ProfitabilityProsecutorNoAttack
        .initialize``: 1 without gain, ARX's largest int without cost)."""
        gain, cost = float(self.adversary_gain), float(self.adversary_cost)
        if gain == 0:
            return 1
        if cost == 0:
            return ARX_MAX_INT
        threshold = gain / cost
        if threshold == math.floor(threshold):
            return int(threshold) + 1
        return math.ceil(threshold)

    def smallest_keepable(self, cap: int = 1 << 20) -> int:
        """The fewest records (or population records, for the journalist) of a class whose
        payout can be > 0 at all (at loss 0, the best case): below it a class is suppressed
        whatever its labels, at every node (its success only grows as classes split). At most
        `cap` (a bound, never above the true figure)."""
        if self.publisher_benefit == 0:
            return cap  # no benefit: no payout is ever > 0
        sizes = np.arange(1, min(self.no_attack_k(), cap) + 1, dtype=np.float64)
        keepable = self.payout(np.zeros(sizes.size), 1.0 / sizes) > 0
        found = np.flatnonzero(keepable)
        return int(found[0]) + 1 if found.size else min(self.no_attack_k(), cap)

    def payout(self, loss: np.ndarray, success: np.ndarray) -> np.ndarray:
        """The publisher's expected payout per record of classes with entropy-based loss
        `loss` and adversary success probability `success` (``getExpectedPublisherPayout``):
        benefit (1 - loss), less loss x success where an attack pays the adversary (gain x
        success - cost > 0)."""
        benefit = float(self.publisher_benefit) * (1.0 - loss)
        attacked = float(self.adversary_gain) * success - float(self.adversary_cost) > 0
        return benefit - np.where(attacked, float(self.publisher_loss) * success, 0.0)


def _text(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else format(float(x), "g")
