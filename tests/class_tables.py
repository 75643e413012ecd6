"""Random classes of a sensitive attribute and a random coarsening of them, for the tests of
the privacy models' suppression floors (tests/unit/privacy)."""

from __future__ import annotations

import numpy as np


def fine_and_coarse(
    rng: np.random.Generator, concentration: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(fine class per record, coarse class per record, value per record, values m): up to 59
    classes of 1-29 records, each drawn from its own Dirichlet(concentration) distribution
    (some far from the whole, some near), merged about three to one at random."""
    m, n_fine = int(rng.integers(2, 7)), int(rng.integers(2, 60))
    sizes = rng.integers(1, 30, n_fine)
    fine = np.repeat(np.arange(n_fine), sizes)
    skew = rng.dirichlet(np.full(m, concentration), n_fine)
    value = np.concatenate([rng.choice(m, s, p=p) for s, p in zip(sizes, skew, strict=True)])
    merge = np.unique(rng.integers(0, max(1, n_fine // 3), n_fine), return_inverse=True)[1]
    return fine, merge[fine], value, m
