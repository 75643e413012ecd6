"""What a privacy model is (after ARX's ``PrivacyCriterion``): an object that says, for the
equivalence classes of one node, which classes it keeps.

A model declares what per-class statistics it needs (class sizes only, or the distribution of
one sensitive attribute per class) and whether it is monotone with suppression: if a node
passes it, does every generalisation of the node pass it too? Only then may the search tag
nodes predictively on it. The search, the per-chunk baseline, the risk figures and the check
of the written release all ask the models through ``PrivacyPolicy`` and see neither k nor any
other threshold directly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ClassTable:
    """The equivalence classes of one node: their sizes and, per sensitive attribute that a
    model needs, the counts per (class, value) (``core.sensitive.ClassValues``)."""

    sizes: np.ndarray  # int, one per class (any order shared by `values`)
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n_classes(self) -> int:
        return int(self.sizes.size)

    @property
    def n_records(self) -> int:
        return int(self.sizes.sum(dtype=np.int64))

    def subset(self, mask: np.ndarray) -> ClassTable:
        """The classes where `mask` holds, with their distributions."""
        index = np.flatnonzero(mask)
        return ClassTable(self.sizes[index], {a: v.subset(index) for a, v in self.values.items()})


class PrivacyModel(ABC):
    """One privacy criterion. Subclasses are frozen dataclasses of their settings."""

    #: the settings-table name of the model's threshold (``k``, ``l``, ``t``)
    name: str = ""
    #: a pass stays a pass when classes merge and suppression changes (predictive tagging)
    monotone: bool = True
    #: the sensitive attribute whose per-class distribution `keeps` reads (None: sizes only)
    attribute: str | None = None

    @abstractmethod
    def keeps(self, table: ClassTable) -> np.ndarray:
        """Bool per class: the class satisfies this criterion (else it is suppressed)."""

    @abstractmethod
    def describe(self) -> dict:
        """The criterion and its settings, JSON-safe (manifest, asset events, logs)."""

    @abstractmethod
    def figure(self, kept: ClassTable) -> dict:
        """The figure reached over the kept classes (e.g. the smallest class size)."""

    def violation(self, table: ClassTable, where: str) -> str | None:
        """One line saying why released classes break the criterion (None if none does)."""
        bad = ~self.keeps(table)
        if not bad.any():
            return None
        return f"{where} violates {self.label()}: {int(bad.sum())} class(es)"

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.describe().items())

    def at_risk(self, kept: ClassTable, top: int = 5) -> list[dict]:
        """The kept classes closest to breaking this criterion, each with its size and the
        counts of its sensitive values by rank (most frequent first; never a value)."""
        return []
