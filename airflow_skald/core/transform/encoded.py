"""What a transformation's algorithms read of phase 1's encoding (in ARX, what its
``DataManager`` and ``Dictionary`` hand the transformations), as structural types.

Local recoding's steps and microaggregation's aggregates read encode's `Plan` and its
`Dimension`s (``core.encode.plan``, ``core.encode.dimensions``), which `transform/` cannot
import: it sits below `config/`, which encode reads (ADR 0072). These protocols name exactly
what those algorithms use; `Plan` and `Dimension` satisfy them as they are (no registration),
so the dependency points down and the annotations still say what is passed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: no numpy at import (DAG parsing imports the config)
    import numpy as np


class EncodedDimension(Protocol):
    """One QID's encoding (encode's `Dimension`)."""

    cards: list[int]  # the codes at each level, root to top

    def level_map(self, src: int, dst: int) -> np.ndarray:
        """Each code at level `src` -> its code at level `dst`."""
        ...

    def labels(self, level: int, codes: np.ndarray) -> list[str]:
        """The released strings of `codes` at `level`."""
        ...


class EncodedStats(Protocol):
    """Phase 1's statistics (encode's `DomainStats`): here, the counted attributes' domains."""

    sensitive: Mapping[str, Any]
    n_rows: int


class EncodedPlan(Protocol):
    """The plan later phases follow (encode's `Plan`)."""

    stats: EncodedStats
    dims: Sequence[EncodedDimension]
    root: tuple[int, ...]
    summed: tuple[str, ...]  # microaggregated QIDs counted as a sum per bin (class_sums)

    @property
    def tops(self) -> list[int]: ...

    def radices(self, node: tuple[int, ...]) -> tuple[int, ...]: ...
