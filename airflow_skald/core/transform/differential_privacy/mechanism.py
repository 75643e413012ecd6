"""The exponential mechanism (McSherry and Talwar 2007) as ARX's ``ExponentialMechanism``
draws with it: candidate i with probability proportional to ``exp(0.5 · ε · score_i)``, the
scores already divided by their sensitivity. The uniform of each draw comes from the run's keyed
search stream (`keys`), draw s at position s, so a retry draws the same pivots."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np


def probabilities(scores: Sequence[Fraction | float], epsilon: float) -> np.ndarray:
    """Each candidate's probability (the exponents shifted by their largest, as ARX does, so
    no exponential overflows; differences of exact scores taken exactly)."""
    best = max(scores)
    weights = np.exp([0.5 * epsilon * float(s - best) for s in scores])
    return weights / weights.sum()


def draw(scores: Sequence[Fraction | float], epsilon: float, u: float | np.ndarray) -> Any:
    """The index drawn for the uniform `u` in [0, 1) (an array of them: one index each)."""
    cum = np.cumsum(probabilities(scores, epsilon))
    drawn = np.minimum(np.searchsorted(cum, np.asarray(u) * cum[-1], side="right"), cum.size - 1)
    return int(drawn) if drawn.ndim == 0 else drawn
