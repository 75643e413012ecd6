"""`Engine`: what the three passes ask of wherever the input's rows are (docs/design.md §2b,
ADR 0050). The chunk reader (`chunks.ChunkEngine`) is one engine; a SQL engine is another
beside it. Everything after an engine's answer is shared and never asks which engine ran: the
root choice (`encode.root.plan_root`), the lattice search, the models and objectives, the
manifest, the release check and the report.

A run's passes, and the engine method each calls (`run.phase_*` finish what it returns):

    phase 0   list_input(run)            -> [ChunkRef]        what the run reads (chunks.json)
    phase 1   domain_stats(run)          -> DomainStats       -> plan_root: the root, plan.json
    phase 2   root_counts(run)           -> RootCounts        -> the search: decision.json
              first_rows(run, plan, node, keys) -> int64 codes  (asked by the search, rarely)
    phase 3   write_release(run)         -> Written           -> verify, manifest, publish

Each method may run in a process of its own (Airflow: one task per phase, retried), so an
engine keeps nothing between methods: what a later pass needs of an earlier one is read from
the run (`run.plan()`, `run.decision()`, `run.microaggregates()`, all persisted in
`run.store`). The engine registered under `execution.engine` is made by `registry.open_engine`
with the run's `ExecutionSettings` and the worker count (`skald run --workers`: the chunk
engine's processes; another engine may ignore it), once per run (`registry.run_engine`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from airflow_skald.core.config.skald_config import SkaldConfig
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.passes.written import Written
from airflow_skald.core.settings.execution import ExecutionSettings

if TYPE_CHECKING:
    from airflow_skald.core.passes.state import Run


class Engine(ABC):
    """Where the passes run. A subclass is registered by name (`registry`); `name` is the
    value of `execution.engine` that picks it."""

    name: ClassVar[str] = ""
    #: whether the mapped DAG's chunk groups (operators' ``mode="partial"``/``"merge"``) apply:
    #: only an engine that reads the rows in chunks has groups of them
    groups: ClassVar[bool] = False
    #: whether it gathers the utility analysis's counts and sample (`utility:`, ADR 0077); an
    #: engine that does not refuses a config asking for the analysis before any work
    utility: ClassVar[bool] = False

    def __init__(self, execution: ExecutionSettings, workers: int = 1) -> None:
        self.execution = execution
        self.workers = max(1, int(workers))

    def input_columns(self, run: Run) -> list[str] | None:
        """The input's columns in its order (the table target's check before phase 1);
        None: the first chunk file's, which `Run.check_target` reads."""
        return None

    def check(self, config: SkaldConfig) -> None:
        """Refuse what this engine cannot do for `config`, before any work: ConfigError, one
        line naming the setting (e.g. a transformation it does not run yet). Default: all."""
        return None

    @abstractmethod
    def list_input(self, run: Run) -> list[ChunkRef]:
        """Phase 0: what the run reads, in input order, as `ChunkRef`s (persisted as
        chunks.json; the manifest's input fingerprint, the target check and the release's
        part names follow from them). Called once per run, after the output was checked.
        The chunk engine: the input files' chunks, or a database input extracted into staged
        chunks (docs/design.md §2a)."""

    @abstractmethod
    def domain_stats(self, run: Run) -> DomainStats:
        """Phase 1 over every input row: per QID its distinct values (or min/max and units:
        `encode.domain.QidStats`), per counted attribute its value statistics
        (`SensitiveStats`: `run.config.counted_attributes`, a keyed research subset's flags
        derived as `config.keyed_subset` says), `n_rows` and the columns read, exactly as
        `encode.domain.scan_domain` over all chunks and `DomainStats.merge` give them.
        The root is chosen from it by the shared `encode.root.plan_root` (paper and adaptive
        mode alike: the possible bins per node follow from the distinct values)."""

    @abstractmethod
    def root_counts(self, run: Run) -> RootCounts:
        """Phase 2 over every input row (a DP run: only the rows `run.row_sample()` keeps),
        with `plan = run.plan()`:

        - `classes`: records per class of the root node, the class key being the mixed-radix
          code of the QIDs' bins (`plan.dims[i].key_part`, strides `histogram.strides_of(
          plan.radices(node))`);
        - `values[a]`: per attribute `a` of `plan.value_attributes(config.counted_attributes)`
          the records per (class, value code), key = class key * m + code (`SensitiveStats`);
        - `sums[a]`: per attribute of `plan.summed` the class's summed value offsets
          (`encode.class_sums.weights`);
        - `node`: the node counted at: `plan.root`, or in adaptive mode (ADR 0012) the first
          node of `plan.counting_chain()` whose non-empty bins fit `plan.n_ram` (the chunk
          engine rolls up as it goes: `encode.adaptive_root.ChainCounts`).

        The same counts as `passes.pipeline.count_histogram` over all chunks, merged."""

    @abstractmethod
    def first_rows(
        self, run: Run, plan: Plan, node: tuple[int, ...], keys: np.ndarray
    ) -> np.ndarray:
        """For the classes `keys` (sorted distinct class keys at `node` of `plan`): the code
        of each one's first input row, `chunk_id << 32 | row in chunk` in input order
        (`count.first_rows`), as int64 in the order of `keys`. The search asks for it only
        when the order among classes of one size decides which are suppressed (§4c)."""

    @abstractmethod
    def write_release(self, run: Run) -> Written:
        """Phase 3: every input row generalised to the node of `run.decision()` (suppressed
        classes masked or dropped per `config.suppression.records`, microaggregates from
        `run.microaggregates()`, pseudonyms, a DP run's sample) and written into
        `run.staging` as `config.output.format` parts named `release.write.commit.part_name(
        chunk_id, format)` for each chunk of `list_input`; returns them with their classes
        read back from the written parts (`release.count.parts.release_classes`). A table
        release is loaded from the staged parts by the shared publish step (§2a)."""
