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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from airflow_skald.core.privacy.at_risk import AtRiskClass


@dataclass(frozen=True)
class ClassTable:
    """The equivalence classes of one node: their sizes and, per sensitive attribute that a
    model needs, the counts per (class, value) (``core.sensitive.ClassValues``)."""

    sizes: np.ndarray  # int, one per class (any order shared by `values`)
    values: Mapping[str, Any] = field(default_factory=dict)
    # each class's first input row, when known (at least for the classes of the size where
    # the sample-based models' prefix ends): their order among classes of one size (else the
    # classes' own order, by key)
    first_rows: np.ndarray | None = None
    # with a research subset (docs/design.md §4e): `sizes` are the subset's records of each class and
    # this the population's records of the same class (δ-presence, exact k-map)
    population: np.ndarray | None = None
    # with a research subset: the node's population classes holding no subset record (not
    # classes of this table: nothing of them is released or can be suppressed; δ-presence
    # with min > 0 fails the node on them, docs/design.md §4e)
    unreleased: int = 0
    # the objective's order of classes of one size (docs/design.md §4c; None: none): given indices of
    # classes of one size, a rank of each one's loss (the sample-based models suppress the
    # smaller first, then by first row); set by the search, never carried to `subset`
    class_order: Callable[[np.ndarray], np.ndarray] | None = None
    # each class's entropy-based information loss (ARX's, ADR 0046), set by the search where a
    # model (`PrivacyModel.reads_label_loss`) or the objective reads it
    label_loss: np.ndarray | None = None

    @property
    def n_classes(self) -> int:
        return int(self.sizes.size)

    @property
    def n_records(self) -> int:
        return int(self.sizes.sum(dtype=np.int64))

    def subset(self, mask: np.ndarray) -> ClassTable:
        """The classes where `mask` holds, with their distributions."""
        index = np.flatnonzero(mask)
        first = None if self.first_rows is None else self.first_rows[index]
        values = {a: v.subset(index) for a, v in self.values.items()}
        population = None if self.population is None else self.population[index]
        loss = None if self.label_loss is None else self.label_loss[index]
        return ClassTable(self.sizes[index], values, first, population, label_loss=loss)


@dataclass(frozen=True)
class ParseContext:
    """What a model's config entries are checked against: the sensitive attributes they may
    name, and the config file's folder (relative hierarchy files)."""

    sensitive: tuple[str, ...] = ()
    base_dir: Path | None = None
    research_subset: str | None = (
        None  # the column marking the released records (docs/design.md §4e)
    )


@dataclass(frozen=True)
class RebuildContext:
    """What `skald verify` has to rebuild a model from its manifest entry: the distributions
    of the sensitive attributes (the release's own, or over all input records for those in
    `overall`: ``core.release.check.archive``), whether suppressed rows were dropped, the
    hierarchies the release archives (by SHA-256), and whether it keeps its classes' population
    counts (``core.release.check.population_counts``)."""

    sensitive: Mapping[str, Any] = field(default_factory=dict)
    dropped: bool = False
    n_records: int | None = None  # the run's input records (a population from its fraction)
    overall: frozenset[str] = frozenset()  # attributes whose distribution is over ALL records
    hierarchies: Mapping[str, Any] = field(default_factory=dict)  # sha256 -> Hierarchy
    # the release keeps its classes' population counts (population_counts.json, docs/design.md §4e)
    population: bool = False

    def without_overall(self, attribute: str) -> str | None:
        """Why a criterion comparing classes with `attribute`'s distribution over all input
        records cannot be re-checked (None: it can)."""
        if self.dropped and attribute not in self.overall:
            return (
                "not re-checked from the release: suppressed records were dropped and it keeps "
                "no distribution over all input records (sensitive_counts.json)"
            )
        return None


class PrivacyModel(ABC):
    """One privacy criterion (after ARX's ``PrivacyCriterion``). Subclasses are frozen
    dataclasses of their settings, listed once in ``core.privacy.registry``; everything that
    reads, applies, reports or re-checks a criterion asks the model, never its class.

    The protocol, in the order a run meets it:
    - ``config_key`` / ``parse``: its entry under ``privacy:`` in the YAML, validated once;
      ``settings_value``: how it is written back in the effective settings (the config hash);
    - ``thresholds`` / ``with_threshold``: the settings-table rows a run may override;
    - ``attribute``: the sensitive attribute whose (class, value) counts it needs (None: class
      sizes only); ``bind``: the model with what phase 1 learnt about that attribute;
    - ``monotone``: a pass stays a pass when classes merge and suppression changes (only then
      may the search tag nodes predictively); ``min_class_size``: ARX's getMinimalClassSize;
      ``smallest_kept``: a size below which no class can pass (the search's class-count bound);
    - ``keeps`` (vectorised over a node's classes), ``figure``, ``describe`` (manifest entry),
      ``label``, ``violation``, ``at_risk``;
    - ``manifest_models`` / ``rebuild``: the model again from its manifest entry, for
      ``skald verify``;
    - capability answers (ARX's ``isLocalRecodingSupported()`` style): ``engine_refusal``
      (why a SQL engine cannot run it, or None), ``with_research_subset``,
      ``with_differential_privacy``, ``by_size``, ``data_independent``, ``randomised``,
      ``default_objective``, ``game``: whoever asks, asks the model, never its class.
    """

    #: the settings-table name of the model's main threshold (``k``, ``l``, ``t``)
    name: str = ""
    #: its key under ``privacy:`` in the config
    config_key: ClassVar[str] = ""
    #: settings-table rows a run may override (CLI flags, DAG params)
    thresholds: ClassVar[tuple[str, ...]] = ()
    #: the ``model`` names its manifest entries carry
    manifest_models: ClassVar[tuple[str, ...]] = ()
    #: a pass stays a pass when classes merge and suppression changes (predictive tagging)
    monotone: bool = True
    #: the sensitive attribute whose per-class distribution `keeps` reads (None: sizes only)
    attribute: str | None = None
    #: compares classes with its attribute's distribution over ALL input records (a release
    #: dropping suppressed records keeps that distribution: ``core.release.check.archive``)
    needs_overall: ClassVar[bool] = False
    #: judges the distribution of the classes left, suppressing a prefix of them
    #: (``core.privacy.sample_based``), after every class-based model (docs/design.md §4c)
    sample_based: ClassVar[bool] = False
    #: compares classes with a population table: reads `ClassTable.population` (docs/design.md §4e)
    population_based: ClassVar[bool] = False
    #: reads each class's entropy-based information loss (`ClassTable.label_loss`, ADR 0046)
    reads_label_loss: ClassVar[bool] = False
    #: what no count of released records can show (a randomised mechanism's draws): `skald
    #: verify` and `skald audit` name it, with this reason, beside what they re-check
    unverifiable: ClassVar[str | None] = None
    #: judges a research subset's records of each class as it judges a table's (ADR 0045;
    #: a `population_based` model reads the subset anyway): else refused with one
    with_research_subset: ClassVar[bool] = False
    #: combines with differential privacy: what it suppresses beside SafePub's k is covered by
    #: SafePub's proof (docs/design.md §4e); else refused with it
    with_differential_privacy: ClassVar[bool] = False
    #: keeps exactly the classes of at least `min_class_size` records, known from the class
    #: sizes alone: a search may judge it from sizes it counts itself (`search.recoded_table`)
    by_size: ClassVar[bool] = False
    #: its guarantee covers what the config fixes, nothing read from the data (SafePub,
    #: docs/design.md §4e, ADR 0027): no hierarchy level built or dropped by the data, no input
    #: column released as it is, the search from the lattice's bottom (no root measured)
    data_independent: ClassVar[bool] = False
    #: its release is one random draw of the run's (a keyed sample): no rerun replaces it or
    #: is replaced by it (the draws compose)
    randomised: ClassVar[bool] = False
    #: the objective its own search scores by when the config names none (said so); None: the
    #: settings table's default
    default_objective: ClassVar[str | None] = None

    @classmethod
    @abstractmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        """The models its config entry asks for (`raw` is None when the key is absent)."""

    @classmethod
    def settings_value(cls, models: tuple[PrivacyModel, ...]) -> Any:
        """Its entry in the effective settings (what the config hash covers)."""
        return [m.settings_entry() for m in models]

    def archived(self) -> dict:
        """What the effective config (effective.json, kept with the release) adds to the
        settings entry so that `skald verify` can rebuild the model (a hierarchy's table)."""
        return {}

    def settings_entry(self) -> dict:
        """One criterion as configured (its manifest entry without the model name)."""
        return {k: v for k, v in self.describe().items() if k != "model"}

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        """This model with a run's value of one of its `thresholds`."""
        return replace(self, **{key: value})

    def bind(self, sensitive: Mapping[str, Any], where: str) -> PrivacyModel:
        """The model with phase 1's statistics of its attribute (``SensitiveStats``); checks
        that need the data fail here, one line each starting with `where` (its config entry)."""
        return self

    def with_records(self, n_records: int) -> PrivacyModel:
        """The model knowing the input's record count (k-map's k' from a population size)."""
        return self

    @classmethod
    @abstractmethod
    def check_entry(cls, entry: dict) -> str | None:
        """What is wrong with a manifest entry of this model, as the rest of a line after the
        entry's place (".l must be an integer >= 2"); None if `rebuild` can read it."""

    @classmethod
    @abstractmethod
    def rebuild(cls, entry: dict, ctx: RebuildContext) -> PrivacyModel | str:
        """The model from its manifest entry, or why the release alone cannot re-check it."""

    def engine_refusal(self, engine: str) -> str | None:
        """Why the SQL engine named `engine` cannot run this model, as the whole one-line
        refusal (``settings.execution.not_yet``), or None: the engine's counts carry its
        figures exactly (docs/design.md §2b)."""
        return None

    @property
    def game(self) -> Any | None:
        """The publisher's and the adversary's game it plays (``ProfitabilitySettings``: the
        cost/benefit and the attacker, ADR 0046), which `publisher_payout` scores by; None."""
        return None

    @property
    def numeric_attribute(self) -> bool:
        """Its attribute must be numerical (phase 1 refuses a text column)."""
        return False

    @property
    def min_class_size(self) -> int:
        """The smallest class this model lets through (ARX's getMinimalClassSize; 1: none)."""
        return 1

    @property
    def smallest_kept(self) -> int:
        """A size below which this model keeps no class, whatever the class holds (the search
        bounds a passing node's class count by it). At least `min_class_size`; a model whose
        test reads distributions may know a larger one (t-closeness: no class of fewer records
        can be that close to the whole table's distribution). Never reported as k."""
        return self.min_class_size

    @abstractmethod
    def keeps(self, table: ClassTable) -> np.ndarray:
        """Bool per class: the class satisfies this criterion (else it is suppressed)."""

    def judged(self, table: ClassTable) -> tuple[np.ndarray, float]:
        """`keeps`, and a lower bound of the records this model suppresses at this node and
        at every node below it (finer), never above the true count: the monotone part of a
        model that is not monotone (0: none known). A node where it exceeds the suppression
        limit fails, and so does every node below it."""
        return self.keeps(table), 0.0

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

    def at_risk(self, kept: ClassTable, top: int = 5) -> list[AtRiskClass]:
        """The kept classes closest to breaking this criterion, each with its size and the
        counts of its sensitive values by rank (most frequent first; never a value)."""
        return []


def is_int(value: object, minimum: int) -> bool:
    """A JSON integer (not a boolean) >= minimum."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def decimal_of(value: object) -> Fraction | None:
    """A number written as a JSON number or decimal text, None if it is neither (or not
    finite)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        return None


def is_column(value: object) -> bool:
    return isinstance(value, str) and bool(value)
