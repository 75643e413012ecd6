"""A batch of class-size histograms, the input of every population-uniqueness estimator
(`estimators`, `pitman`): `counts[b, j]` classes of size `sizes[j]` in problem b."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Histograms:
    """A batch of class-size histograms over shared ascending `sizes`, each with the population
    size it is estimated against."""

    sizes: np.ndarray  # (S,) int, ascending, > 0
    counts: np.ndarray  # (B, S) classes of each size
    population: float  # ARXPopulationModel.getPopulationSize

    @property
    def classes(self) -> np.ndarray:
        return self.counts.sum(axis=1).astype(np.float64)

    @property
    def records(self) -> np.ndarray:
        return (self.counts * self.sizes).sum(axis=1).astype(np.float64)

    def of_size(self, size: int) -> np.ndarray:
        hit = np.flatnonzero(self.sizes == size)
        return self.counts[:, hit[0]].astype(np.float64) if hit.size else np.zeros(len(self))

    @property
    def fraction(self) -> np.ndarray:
        """The sampling fraction: records over the population size."""
        return self.records / self.population

    def __len__(self) -> int:
        return int(self.counts.shape[0])

    @classmethod
    def of(cls, class_sizes: np.ndarray, population: float) -> Histograms:
        """One histogram, of the given class sizes."""
        sizes, counts = np.unique(np.asarray(class_sizes, dtype=np.int64), return_counts=True)
        return cls(sizes, counts[None, :], float(population))
