"""What a transformation adds to phases 2 and 3 of a run (in ARX, what a transformation's
``ARXConfiguration`` part does around the search and before the result is handed out): the
hooks the runner calls through the registry, in a loop over every registered transformation,
and the typed contexts they are handed (ADR 0060).

The contexts are made by the run layer, which sits above `transform/`: what they carry of it
(the store, phase 2's classes at the chosen node, the staged release's side files) is typed
here by structural protocols the run layer's objects satisfy as they are, so the dependency
points down (as `encoded` and `counted` do).

When each hook is called:

- ``after_search`` (phase 2): once the lattice search decided (``decision.json`` written),
  before phase 3: what the transformation keeps in the run's store for phase 3 and the
  release, counted from phase 2's counts at the chosen node (no pass over the data);
- phase 3, once every part is written and its classes read back, before anything is
  published, on the manifest about to be written, in this order:
  ``checked_release`` (the run's own check of what it wrote, its result in the manifest),
  ``side_files`` (the files kept beside the release so that `skald verify` re-checks it from
  the release alone, named in the manifest), ``released_records`` and ``verified_policy``
  (what the shared check of the staged release counts and judges), the shared check
  (`release.check.verify.verify_release`), then ``after_verify`` (its own check of the
  release after the shared one, and the files that check proves);
- the per-chunk baseline (docs/design.md §6), once per chunk's part read back:
  ``part_policy`` (the policy the shared check judges the part alone under), the shared
  check (`release.check.class_figures`), then ``checked_part`` (its own check of the part).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: no numpy at import (DAG parsing imports the config)
    import numpy as np

    from airflow_skald.core.count.histogram import Histogram
    from airflow_skald.core.privacy import ClassTable, PrivacyPolicy
    from airflow_skald.core.transform.counted import CountedClasses
    from airflow_skald.core.transform.encoded import EncodedPlan


class RunStore(Protocol):
    """Where a run keeps what one phase hands the next (`passes.store.Store`)."""

    def read_bytes(self, name: str) -> bytes: ...
    def write_bytes(self, name: str, data: bytes) -> Any: ...
    def exists(self, name: str) -> bool: ...


class NodeClasses(Protocol):
    """Phase 2's classes at the chosen node, rolled up from the root counts (the search
    layer's `NodeClasses`): `plan` is the counts' plan."""

    plan: EncodedPlan

    def keyed(
        self, attributes: Sequence[str] = (), subset: Any = None
    ) -> tuple[np.ndarray, ClassTable]:
        """The node's class keys and classes, with the (class, value) tables of
        `attributes`; a research subset's view of them when `subset` (its flags) is given."""
        ...

    def sums(self, attribute: str) -> Histogram:
        """A summed attribute's value offsets summed per class at the node."""
        ...


class SideFiles(Protocol):
    """The staged release's side files (the release layer's `StagedSideFiles`)."""

    def keep(self, manifest: Mapping[str, Any], key: str, name: str, data: bytes) -> dict:
        """`data` written beside the staged parts as `name`, and the manifest naming it under
        `key` with its SHA-256 (in the schema's order)."""
        ...


class WrittenRelease(Protocol):
    """Phase 3's result, whatever engine wrote the release (`passes.written.Written`)."""

    classes: CountedClasses  # the written release's classes, read back
    in_sample: int | None  # a DP run: released rows checked against its keyed sample


@dataclass(frozen=True)
class Searched:
    """Phase 2 after the search: the run's config (`SkaldConfig`) and decision (`Decision`),
    the classes at the chosen node, the run's store and the process's cache of what the
    store holds (what phase 3 reads without reading the store again)."""

    config: Any
    decision: Any
    classes: NodeClasses
    store: RunStore
    cache: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Staged:
    """Phase 3, the release staged: the run's config, plan (`Plan`) and decision, the policy
    it was judged under, what the engine wrote (`written`: its classes read back), the run's
    store, the staging folder and its side files."""

    config: Any
    plan: Any
    decision: Any
    policy: PrivacyPolicy
    written: WrittenRelease
    store: RunStore
    staging: str
    files: SideFiles

    @property
    def classes(self) -> CountedClasses:
        """The written release's classes."""
        return self.written.classes


@dataclass(frozen=True)
class ChunkPart:
    """The per-chunk baseline, one chunk's part read back: the chunk's decision and the
    policy its search judged it under, the chunk's own statistics of the criteria's
    attributes (`sensitive`), its records, the plan's dimensions and the part's classes."""

    decision: Any
    policy: PrivacyPolicy
    sensitive: Mapping[str, Any]
    n_records: int
    dims: Sequence[Any]
    classes: CountedClasses


class PhaseHooks:
    """A transformation's part in phases 2 and 3 (see the module's docstring for when each
    hook is called); every default adds nothing. Class-level: a hook reads what it needs of
    the run's config and decision from its context."""

    @classmethod
    def after_search(cls, ctx: Searched) -> None:
        """Phase 2, after the search: what it keeps in the run's store for phase 3."""

    @classmethod
    def checked_release(cls, ctx: Staged, manifest: dict) -> dict:
        """The run's own check of the staged release (VerificationError, one line), and the
        manifest with what it checked."""
        return manifest

    @classmethod
    def side_files(cls, ctx: Staged, manifest: dict) -> dict:
        """The files it keeps beside the release for `skald verify` (`ctx.files`), and the
        manifest naming them."""
        return manifest

    @classmethod
    def released_records(cls, ctx: Staged) -> int | None:
        """The records the release is made of when not every input record (None: all)."""
        return None

    @classmethod
    def verified_policy(cls, ctx: Staged, policy: PrivacyPolicy) -> PrivacyPolicy:
        """The policy the shared check judges the release's classes under."""
        return policy

    @classmethod
    def after_verify(cls, ctx: Staged, manifest: dict) -> dict:
        """Its own check after the shared one (VerificationError, one line), and the
        manifest with the files that check proves."""
        return manifest

    @classmethod
    def part_policy(cls, ctx: ChunkPart, policy: PrivacyPolicy) -> PrivacyPolicy:
        """The per-chunk baseline: the policy the shared check judges one chunk's part under."""
        return policy

    @classmethod
    def checked_part(cls, ctx: ChunkPart) -> None:
        """The per-chunk baseline: its own check of one chunk's part after the shared one
        (VerificationError, one line)."""
