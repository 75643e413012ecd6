"""One run's state (`Run`): its settings, its store, its staging token, its target and what
it has measured; the persisted results of earlier phases read back (never re-derived)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.database.connection import resolve_uri
from airflow_skald.core.data.database.extract import extract, remove_staged
from airflow_skald.core.data.io import ChunkRef, column_names
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.encode.qid_dimensions import build_dimensions
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.generalise.part import released_columns
from airflow_skald.core.passes import pipeline as P
from airflow_skald.core.passes.store import (
    CHUNKS,
    DECISION,
    DOMAIN_STATS,
    MICROAGGREGATES,
    PLAN,
    TARGET,
    TIMINGS,
    MemoryStore,
    Store,
    read_json,
    write_json,
)
from airflow_skald.core.privacy.differential_privacy import DP_KEY_MISSING
from airflow_skald.core.release.table_release import (
    check_table_not_superseded,
    check_table_target,
    table_in_place,
)
from airflow_skald.core.release.write.commit import cli_token, staging_path
from airflow_skald.core.release.write.lease import (
    Lease,
)
from airflow_skald.core.release.write.manifest import (
    RunRecord,
)
from airflow_skald.core.release.write.output_target import (
    ReleaseIdentity,
    check_not_superseded,
    check_output_target,
    release_in_place,
)
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.settings import keyed
from airflow_skald.core.transform import registry as transform_registry
from airflow_skald.core.transform.microaggregation.aggregates import (
    Aggregates,
    aggregates_from_bytes,
)

if TYPE_CHECKING:  # the sample's type only: the transformations draw it (`row_sample`)
    from airflow_skald.core.transform.differential_privacy.sampler import RowSample


@dataclass
class Run:
    """One run: its settings, its store, its staging token and what it has measured."""

    config: SkaldConfig
    store: Store = field(default_factory=MemoryStore)
    token: str = ""
    progress: P.Progress | None = None
    record: RunRecord | None = None
    lease: Lease | None = None  # held while this process writes the output
    # a database input's connection name -> its URI (CLI: the URI or its environment
    # variable; the operators: the Airflow connection)
    resolve_connection: Callable[[str], str] = field(default=resolve_uri, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.token:
            self.token = cli_token()
        if self.record is None:
            self.record = RunRecord(self.token, config=self.config.source)

    @property
    def staging(self) -> str:
        return staging_path(self.config.output.path, self.token)

    # ------------------------------------------------------------------ keyed draws (DP's)
    def secret(self) -> bytes:
        """The DP secret (ConfigError, one line, when there is none)."""
        if self.config.dp_key is None:
            raise ConfigError(DP_KEY_MISSING)
        return self.config.dp_key.secret()

    def check_secrets(self) -> None:
        """Before any work: each secret the run needs can be read, and the pseudonyms' key is
        not the DP key (`keyed.check_apart`); ConfigError, one line naming the setting."""
        secrets = [
            ref.secret() for ref in transform_registry.secrets_of(self.config.transformations)
        ]
        dp = self.secret() if self.config.randomised else None  # the draws' key
        for secret in secrets:
            keyed.check_apart(secret, dp)

    def row_sample(self) -> RowSample | None:
        """The run's keyed sample of the input's rows (a DP run's), asked of the
        transformations (`EngineHooks.row_sample`); None: every row."""
        return transform_registry.row_sample(self)

    def search_key(self) -> int | None:
        """The key of the search's random stream (a DP run's), or None."""
        return transform_registry.search_key(self)

    # ------------------------------------------------------------------ chunk layout
    def layout(self, chunks: Sequence[ChunkRef], chunks_per_group: int = 1) -> list[dict]:
        """What the run reads (phase 0: `chunks`, listed once by its engine,
        `Engine.list_input`), recorded and cut into groups for mapped tasks."""
        ids = [c.chunk_id for c in chunks]
        size = max(1, int(chunks_per_group))
        groups = [
            {"group": g, "chunk_ids": ids[i : i + size]}
            for g, i in enumerate(range(0, len(ids), size))
        ]
        write_json(self.store, CHUNKS, {"chunks": [c.to_dict() for c in chunks], "groups": groups})
        return groups

    def extract(self) -> list[ChunkRef]:
        """The database input read into staged Parquet chunks (any earlier run's replaced)."""
        db = self.config.database
        uri = self.resolve_connection(db.connection)
        return extract(db, uri, self.config.chunk_rows, self.config.input.path)

    def remove_extract(self) -> None:
        """Delete a database input's staged chunks (personal data): committed or abandoned."""
        if self.config.database is not None:
            remove_staged(self.config.input.path)

    def chunks(self, chunk_ids: Sequence[int] | None = None) -> list[ChunkRef]:
        refs = [ChunkRef.from_dict(c) for c in read_json(self.store, CHUNKS)["chunks"]]
        if chunk_ids is None:
            return refs
        wanted = set(chunk_ids)
        return [c for c in refs if c.chunk_id in wanted]

    def groups(self) -> list[dict]:
        return read_json(self.store, CHUNKS)["groups"]

    def check_target_early(self) -> None:
        """Before a database input is read (an extract may take long): a table target's
        schema exists and its table is a skald release; a release that this run may not
        replace whatever its input, or a table whose properties no release can keep, is
        refused now (`check_target` judges again once the input is known)."""
        table, overwrite = self.config.output_table, self.config.overwrite
        if table is None and self.config.database is None:
            return  # files: listed at once, judged by `check_target`
        identity = ReleaseIdentity.of_run(self.config, None, self.token)
        if table is not None:
            check_table_target(table, self.output_uri(), identity, overwrite)
        else:
            check_output_target(self.config.output, self.config.input, identity, overwrite)

    def check_target(self, input_columns: Callable[[Run], list[str] | None] | None = None) -> None:
        """Before phase 1: the output is not the input nor foreign data, and a release there
        is replaced only by a retry of its run, an identical rerun, or with `overwrite`
        (a table release: the release its comment names, and only if the new table can keep
        what the old one has: `table_properties`; `input_columns`: the run's engine's
        `Engine.input_columns`, default the first chunk file's columns)."""
        chunks = self.chunks()
        identity = ReleaseIdentity.of_run(self.config, chunks, self.token)
        table, overwrite = self.config.output_table, self.config.overwrite
        check_output_target(
            self.config.output, self.config.input, None if table else identity, overwrite
        )
        if table is not None:
            names = input_columns(self) if input_columns is not None else None
            if names is None and chunks:
                names = column_names(self.config.input, chunks[0].file)
            columns = released_columns(self.config, names) if names else None
            qids = self.config.qid_names
            check_table_target(
                table,
                self.output_uri(),
                identity,
                overwrite,
                columns,
                qids,
                self.config.min_class_size,
            )
        if not self.store.exists(TARGET):  # the first attempt's view: a retry keeps it
            found = self.release_in_place()
            write_json(
                self.store, TARGET, {"output": self.config.output.path, "predecessor": found}
            )

    def output_uri(self) -> str:
        """A table release's connection as a URI (CLI: the URI or its variable; operators:
        the Airflow connection)."""
        return self.resolve_connection(self.config.output_table.connection)

    def release_in_place(self) -> str | None:
        """The run token of the release at the output now (`output_target.release_in_place`; a
        table release: its table's comment)."""
        if self.config.output_table is not None:
            return table_in_place(self.config.output_table, self.output_uri())
        return release_in_place(self.config.output.path)

    def check_not_superseded(self) -> None:
        """`output_target.check_not_superseded` for this run's output (a folder or a table)."""
        if self.config.output_table is not None:
            target, uri = self.config.output_table, self.output_uri()
            check_table_not_superseded(target, uri, self.token, self.predecessor())
        else:
            check_not_superseded(self.config.output.path, self.token, self.predecessor())

    def predecessor(self) -> str | None:
        """The run token of the release that was at the output when this run began (None:
        none was); only that release or this run's own may be replaced by its commit."""
        if not self.store.exists(TARGET):
            return None
        return read_json(self.store, TARGET).get("predecessor")

    # ------------------------------------------------------------------ persisted results
    def plan(self) -> Plan:
        """Phase 1's plan, read back: the dimensions from the domain statistics, the root
        as phase 1 chose it."""
        if "plan" not in self._cache:
            self._cache["plan"] = self._read_plan()
        return self._cache["plan"]

    def _read_plan(self) -> Plan:
        stats = DomainStats.from_bytes(self.store.read_bytes(DOMAIN_STATS))
        saved = read_json(self.store, PLAN)
        if saved["config_sha256"] != self.config.fingerprint():
            raise ConfigError(
                "the SKALD config or params changed since the encode task (phase 1) of this run "
                f"(config sha256 {saved['config_sha256'][:12]} -> "
                f"{self.config.fingerprint()[:12]}); clear the whole run instead of single tasks"
            )
        return Plan(
            stats=stats,
            dims=build_dimensions(self.config.quasi_identifiers, stats.qids),
            n_ram=saved["histogram_bins"],
            n_ram_derived=saved["histogram_bins_derived"],
            root=tuple(saved["root_levels"]),
            root_bins=saved["root_bins"],
            lattice_nodes=saved["root_lattice"]["nodes"],
            root_evaluated=saved["root_lattice"]["evaluated"],
            root_complying=saved["root_lattice"]["complying"],
            value_factor=saved.get("value_factor", 1),
            root_mode=saved.get("root_mode", "paper"),
            paper_root=tuple(saved.get("paper_root_levels", saved["root_levels"])),
            chain=tuple(tuple(n) for n in saved.get("root_chain", ())),
            root_bins_nonempty=saved.get("root_bins_nonempty"),
            summed=tuple(saved.get("summed_attributes", ())),
        )

    def decision(self) -> Decision:
        if "decision" not in self._cache:
            self._cache["decision"] = Decision.from_bytes(self.store.read_bytes(DECISION))
        return self._cache["decision"]

    def microaggregates(self) -> list[Aggregates]:
        """The microaggregated QIDs' labels per class of the node (none: [])."""
        if "microaggregates" not in self._cache:
            found = self.store.exists(MICROAGGREGATES)
            data = self.store.read_bytes(MICROAGGREGATES) if found else None
            self._cache["microaggregates"] = aggregates_from_bytes(data) if data else []
        return self._cache["microaggregates"]

    def for_worker(self) -> Run:
        """What a worker process needs of this run (not the root histogram)."""
        store = MemoryStore()
        for name in (CHUNKS, DOMAIN_STATS, PLAN, DECISION, MICROAGGREGATES):
            if self.store.exists(name):
                store.write_bytes(name, self.store.read_bytes(name))
        return Run(self.config, store, self.token)

    def measured(self, phase: str, seconds: float | None = None) -> None:
        """Note a phase's seconds and peak memory in the run record, then hand the memory
        the phase freed back to the OS."""
        if seconds is not None:
            self.record.timings_s[phase] = seconds
        P.phase_done(self.record.peak_rss_bytes_by_phase, phase)

    def timed(self, phase: str, seconds: float, group: int | None = None) -> None:
        name = phase if group is None else f"{phase}-group-{group:05d}"
        write_json(self.store, f"{TIMINGS}{name}.json", {"seconds": seconds})

    def seconds(self, phase: str, groups: Sequence[int] | None = None) -> float:
        names = [phase] if groups is None else [f"{phase}-group-{g:05d}" for g in groups]
        return sum(
            read_json(self.store, f"{TIMINGS}{n}.json")["seconds"]
            for n in names
            if self.store.exists(f"{TIMINGS}{n}.json")
        )
