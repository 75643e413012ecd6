"""One phase runner for every route: `skald run` (serial or `--workers`), `--per-chunk`, and
the Airflow operators (one task per phase, or mapped tasks per chunk group plus a merge).

Each pass is a `Phase`: ``partial`` over some chunks, an exact ``merge`` of partials, and a
``finish`` that turns the merged result into what the next phase reads (as Dask's
reductions are ``chunk`` + ``aggregate``). Partials and results go through a `Store` (the
Airflow run's artifact folder, or memory for a CLI run), so a task that runs one group in a
mapped task instance and a process that runs them all execute the same code. Phase 1's root
choice is persisted (``plan.json``) and read back by the later phases, never re-derived.

The release has one publish step (`publish`): stage, verify, run record, manifest last,
commit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from airflow_skald.core.config.dp_rules import dp_of
from airflow_skald.core.config.policy import build_policy
from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.data.database.connection import resolve_uri
from airflow_skald.core.data.database.extract import extract, remove_staged
from airflow_skald.core.data.io import ChunkRef, filesystem
from airflow_skald.core.encode.adaptive_root import merge_on_chain
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.encode.qid_dimensions import build_dimensions
from airflow_skald.core.encode.root import plan_root
from airflow_skald.core.errors import ConfigError, VerificationError
from airflow_skald.core.privacy.differential_privacy import DP_KEY_MISSING, DifferentialPrivacy
from airflow_skald.core.privacy.dp import keys as dp_keys
from airflow_skald.core.privacy.dp.sampler import RowSample, Sampler, row_offsets
from airflow_skald.core.privacy.research_subset import released_records
from airflow_skald.core.release import population_counts
from airflow_skald.core.release.archive import (
    SENSITIVE_COUNTS,
    overall_attributes,
    sensitive_counts_bytes,
    with_sensitive_counts,
)
from airflow_skald.core.release.classes import ReleaseClasses
from airflow_skald.core.release.commit import (
    ReleaseIdentity,
    check_not_superseded,
    check_output_target,
    cli_token,
    commit,
    discard,
    part_name,
    prepare_staging,
    release_in_place,
    remove_stale_staging,
    staging_path,
    write_bytes_atomic,
)
from airflow_skald.core.release.lease import (
    Judge,
    Lease,
    check_lease_token,
    output_lease,
    release_run_lease,
)
from airflow_skald.core.release.manifest import (
    CONFIG_YAML,
    EFFECTIVE_JSON,
    MANIFEST_JSON,
    REPORT_HTML,
    RUN_JSON,
    RunRecord,
    build_manifest,
    effective_json_bytes,
    input_fingerprint,
    now_iso,
    to_json_bytes,
)
from airflow_skald.core.release.table_release import (
    check_table_not_superseded,
    check_table_target,
    publish_table,
    table_in_place,
)
from airflow_skald.core.release.verify import verify_release
from airflow_skald.core.release.verify_steps import class_local, recoded_figures, verify_steps
from airflow_skald.core.run import pipeline as P
from airflow_skald.core.run import utility_step as U
from airflow_skald.core.run.parallel import chunk_groups, map_groups
from airflow_skald.core.search.decide import Decision
from airflow_skald.core.transform.microaggregation import (
    Aggregates,
    aggregates_from_bytes,
    aggregates_to_bytes,
)
from airflow_skald.core.utility.collect import UtilityPartial

log = logging.getLogger("airflow_skald")

# Artifact names inside a run's store (documented in docs/adr/0101).
CHUNKS = "chunks.json"  # chunk layout and groups (file paths, offsets, row counts)
TARGET = "target.json"  # the output and the release in place when the run began (its run token)
DOMAIN_STATS = "domain_stats.json"  # phase 1 statistics: distinct values = PERSONAL DATA
PLAN = "plan.json"  # phase 1's decision: the RAM root and its figures (no values)
HISTOGRAM = "histogram.bin"  # phase 2 root histogram (counts per bin code)
DECISION = "decision.json"  # chosen node, figures, suppressed class keys (codes, no values)
MICROAGGREGATES = "microaggregates.bin"  # class aggregates at the node: PERSONAL DATA (§4f)
TIMINGS = "timings/"  # wall-clock seconds per task: the only artifacts a retry changes


class Store(Protocol):
    """Where a run keeps its partials and phase results."""

    def read_bytes(self, name: str) -> bytes: ...
    def write_bytes(self, name: str, data: bytes) -> Any: ...
    def exists(self, name: str) -> bool: ...


class MemoryStore:
    """A store for one process (a CLI run): nothing is written anywhere."""

    persistent = False  # artifacts kept only for a later task's retry are not kept here

    def __init__(self) -> None:
        self.items: dict[str, bytes] = {}

    def read_bytes(self, name: str) -> bytes:
        return self.items[name]

    def write_bytes(self, name: str, data: bytes) -> None:
        self.items[name] = data

    def exists(self, name: str) -> bool:
        return name in self.items


def read_json(store: Store, name: str) -> Any:
    return json.loads(store.read_bytes(name))


def write_json(store: Store, name: str, body: Any) -> None:
    store.write_bytes(name, json.dumps(body, sort_keys=True, indent=1).encode() + b"\n")


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

    # ------------------------------------------------------------------ differential privacy
    @property
    def dp(self) -> DifferentialPrivacy | None:
        return dp_of(self.config)

    def secret(self) -> bytes:
        """The DP secret (ConfigError, one line, when there is none)."""
        if self.config.dp_key is None:
            raise ConfigError(DP_KEY_MISSING)
        return self.config.dp_key.secret()

    def row_sample(self) -> RowSample | None:
        """A DP run's sample: keyed by the secret and this run's token (a retry's too)."""
        if self.dp is None:
            return None
        sampler = Sampler.of(self.secret(), self.token, self.dp.beta)
        return RowSample(sampler, row_offsets(self.chunks()))

    def search_key(self) -> int | None:
        if self.dp is None:
            return None
        return dp_keys.stream_key(self.secret(), self.token, dp_keys.SEARCH)

    # ------------------------------------------------------------------ chunk layout
    def layout(self, chunks_per_group: int = 1) -> list[dict]:
        """List the chunks once (phase 0) and cut them into groups for mapped tasks; a
        database input is read here, once, into the staged chunks the passes read."""
        if self.config.pseudonym_key is not None:  # no key: refused before any read
            self.config.pseudonym_key.secret()
        if self.config.output_table is not None:  # no schema, a foreign table: before a read
            check_table_target(self.config.output_table, self.output_uri(), None, False)
        chunks = self.extract() if self.config.database else P.list_chunks(self.config)
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

    def check_target(self) -> None:
        """Before phase 1: the output is not the input nor foreign data, and a release there
        is replaced only by a retry of its run, an identical rerun, or with `overwrite`
        (a table release: the release its comment names)."""
        identity = ReleaseIdentity.of_run(self.config, self.chunks(), self.token)
        table, overwrite = self.config.output_table, self.config.overwrite
        check_output_target(
            self.config.output, self.config.input, None if table else identity, overwrite
        )
        if table is not None:
            check_table_target(table, self.output_uri(), identity, overwrite)
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
        """The run token of the release at the output now (`commit.release_in_place`; a
        table release: its table's comment)."""
        if self.config.output_table is not None:
            return table_in_place(self.config.output_table, self.output_uri())
        return release_in_place(self.config.output.path)

    def check_not_superseded(self) -> None:
        """`commit.check_not_superseded` for this run's output (a folder or a table)."""
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


A = TypeVar("A")  # a phase's partial (additive) result
R = TypeVar("R")  # what the phase's finish returns


class Phase(Generic[A, R]):
    """One pass over the chunks: partial per group, exact merge, finish."""

    name = ""

    def partial(self, run: Run, chunks: Sequence[ChunkRef]) -> A:
        raise NotImplementedError

    def merge(self, parts: Sequence[A]) -> A:
        raise NotImplementedError

    def merge_in(self, run: Run, parts: Sequence[A]) -> A:
        """The merge, given the run (a phase whose merge needs phase 1's plan overrides it)."""
        return self.merge(parts)

    def finish(self, run: Run, merged: A) -> R:
        raise NotImplementedError

    def dump(self, part: A) -> bytes:
        raise NotImplementedError

    def load(self, data: bytes) -> A:
        raise NotImplementedError

    # ------------------------------------------------------------------ drivers
    def partial_name(self, group: int) -> str:
        return f"partials/{self.name}/group-{group:05d}.bin"

    def run_group(self, run: Run, group: int, chunk_ids: Sequence[int]) -> A:
        """A mapped task instance: one group's partial, stored for the merge."""
        t0 = time.perf_counter()
        part = self.partial(run, run.chunks(chunk_ids))
        run.store.write_bytes(self.partial_name(group), self.dump(part))
        run.timed(self.name, time.perf_counter() - t0, group)
        return part

    def run_merge(self, run: Run) -> R:
        """The merge task: every group's stored partial, merged exactly, then finished."""
        groups = [g["group"] for g in run.groups()]
        parts = [self.load(run.store.read_bytes(self.partial_name(g))) for g in groups]
        t0 = time.perf_counter()
        merged = self.merge_in(run, parts)
        seconds = run.seconds(self.name, groups) + time.perf_counter() - t0
        run.timed(self.name, seconds)
        run.measured(self.name, seconds)
        return self.finish(run, merged)

    def run_all(self, run: Run, workers: int = 1) -> R:
        """The whole phase in this process (`workers` > 1: one process per chunk group)."""
        t0 = time.perf_counter()
        chunks = run.chunks()
        if workers > 1 and len(chunk_groups(chunks, workers)) > 1:
            parts = map_groups(_partial_in_worker, (self, run.for_worker()), chunks, workers)
            merged = self.merge_in(run, [self.load(p) for p in parts])
        else:
            merged = self.partial(run, chunks)
        seconds = time.perf_counter() - t0
        run.timed(self.name, seconds)
        run.measured(self.name, seconds)
        return self.finish(run, merged)


def _partial_in_worker(phase: Phase, run: Run, chunks: Sequence[ChunkRef]) -> bytes:
    """A worker process's share (forked from the fork server; the partial comes back in its byte form)."""
    return phase.dump(phase.partial(run, chunks))


class EncodePhase(Phase[DomainStats, Plan]):
    """Phase 1: domain statistics per chunk group, merged; then the RAM root, persisted."""

    name = "encode"

    def partial(self, run: Run, chunks: Sequence[ChunkRef]) -> DomainStats:
        return P.scan_domain(run.config, chunks, run.progress)

    def merge(self, parts: Sequence[DomainStats]) -> DomainStats:
        return DomainStats.merge(list(parts))

    def dump(self, part: DomainStats) -> bytes:
        return part.to_bytes()

    def load(self, data: bytes) -> DomainStats:
        return DomainStats.from_bytes(data)

    def finish(self, run: Run, merged: DomainStats) -> Plan:
        plan = plan_root(run.config, merged)
        run.store.write_bytes(DOMAIN_STATS, merged.to_bytes())
        write_json(run.store, PLAN, plan_summary(run.config, plan))
        run._cache["plan"] = plan
        if plan.root_mode == "adaptive":  # the root used is chosen in phase 2 (logged there)
            log.info(
                "adaptive root: phase 2 picks it on a chain of %d nodes from %s (N_RAM=%d) "
                "over %d records",
                len(plan.chain) or 1,
                plan.levels(plan.root),
                plan.n_ram,
                merged.n_rows,
            )
        else:
            log.info(
                "RAM root %s (%d possible bins, N_RAM=%d) over %d records",
                plan.levels(plan.root),
                plan.root_bins,
                plan.n_ram,
                merged.n_rows,
            )
        return plan


def plan_summary(config: SkaldConfig, plan: Plan) -> dict:
    """Phase 1's decision as persisted (and returned to XCom): levels and counts only."""
    return {
        "n_rows": plan.stats.n_rows,
        "root_node": plan.levels(plan.root),
        "root_levels": list(plan.root),
        "root_bins": plan.root_bins,
        "histogram_bins": plan.n_ram,
        "histogram_bins_derived": plan.n_ram_derived,
        "value_factor": plan.value_factor,
        "root_mode": plan.root_mode,
        "paper_root_levels": list(plan.paper_root or plan.root),
        "root_chain": [list(n) for n in plan.chain],
        "root_bins_nonempty": plan.root_bins_nonempty,
        "root_lattice": {
            "nodes": plan.lattice_nodes,
            "evaluated": plan.root_evaluated,
            "complying": plan.root_complying,
        },
        "config_sha256": config.fingerprint(),
    }


class HistogramPhase(Phase[RootCounts, Decision]):
    """Phase 2: root-node class counts per chunk group, summed; then the lattice search.

    Adaptive mode (ADR 0012): partials may sit at different nodes of phase 1's chain; the
    merge rolls them up to one, and `finish` persists the root it ended at (``plan.json``),
    which phase 3 and the manifest read back."""

    name = "histogram"

    def partial(self, run: Run, chunks: Sequence[ChunkRef]) -> RootCounts:
        return P.count_histogram(run.config, run.plan(), chunks, run.progress, run.row_sample())

    def merge(self, parts: Sequence[RootCounts]) -> RootCounts:
        return RootCounts.merge(list(parts))

    def merge_in(self, run: Run, parts: Sequence[RootCounts]) -> RootCounts:
        return merge_on_chain(run.plan(), list(parts))

    def dump(self, part: RootCounts) -> bytes:
        return part.compact().to_bytes()

    def load(self, data: bytes) -> RootCounts:
        return RootCounts.from_bytes(data)

    def finish(self, run: Run, merged: RootCounts) -> Decision:
        if getattr(run.store, "persistent", True):  # for a retried search task; a CLI run
            run.store.write_bytes(HISTOGRAM, merged.to_bytes())  # would only hold N_RAM twice
        plan = run.plan()
        plan = plan.with_root(merged.node or plan.root, merged.bounded_bins)
        write_json(run.store, PLAN, plan_summary(run.config, plan))
        run._cache["plan"] = plan
        if plan.root_mode == "adaptive":
            log.info(
                "adaptive root %s: %d non-empty bins (N_RAM=%d); paper mode's root %s",
                plan.levels(plan.root),
                plan.root_bins_nonempty,
                plan.n_ram,
                plan.levels(plan.paper_root),
            )
        t0, c0 = time.perf_counter(), time.thread_time()
        decision = P.search_lattice(run.config, plan, merged, search_key=run.search_key())
        run.record.cpu_s["search"] = time.thread_time() - c0
        run.timed("search", time.perf_counter() - t0)
        run.measured("search", time.perf_counter() - t0)
        run.store.write_bytes(DECISION, decision.to_bytes())
        run._cache["decision"] = decision
        if run.config.microaggregations:
            aggregates = P.microaggregate(run.config, plan, merged, decision)
            run.store.write_bytes(MICROAGGREGATES, aggregates_to_bytes(aggregates))
            run._cache["microaggregates"] = aggregates
        counted = population_counts.of_run(run.config, plan, merged, decision)
        if counted is not None:  # a research subset: what verify re-checks δ and k-map from
            run.store.write_bytes(population_counts.POPULATION_COUNTS, counted)
        f = decision.figures
        log.info(
            "chosen node %s %s: DM*=%d, suppressed %d of %d (limit %d), %d/%d nodes evaluated",
            decision.levels,
            decision.node_paper,
            f.dm_star,
            f.n_suppressed,
            f.n_records,
            f.max_suppressed,
            decision.lattice["evaluated"],
            decision.lattice["nodes"],
        )
        return decision


@dataclass
class Written:
    """Parts a group wrote to the staging folder, and their classes as read back."""

    names: list[str]
    classes: ReleaseClasses
    utility: UtilityPartial | None = None  # the utility analysis's share (SPEC §5)


class GeneralisePhase(Phase[Written, dict]):
    """Phase 3: generalise each chunk to the node, write its part, read its classes back;
    then verify the whole staged release and publish it."""

    name = "generalise"

    def partial(self, run: Run, chunks: Sequence[ChunkRef]) -> Written:
        fs, root = filesystem(run.staging)
        fs.makedirs(root, exist_ok=True)
        utility = U.collector(run.config, run.plan(), run.chunks())
        observed: list = []
        names = P.write_parts(
            run.config,
            run.plan(),
            run.decision(),
            chunks,
            run.staging,
            run.progress,
            run.microaggregates(),
            run.row_sample(),
            observe=utility.chunk if utility else None,
            observed=observed,
        )
        classes = P.count_written(run.config, run.staging, names)
        return Written(names, classes, U.merged(observed) if utility else None)

    def merge(self, parts: Sequence[Written]) -> Written:
        return Written(
            [n for p in parts for n in p.names],
            ReleaseClasses.merge([p.classes for p in parts]),
            U.merged([p.utility for p in parts]),
        )

    def dump(self, part: Written) -> bytes:
        classes = part.classes.to_bytes()
        head = {"names": part.names, "classes": len(classes)}
        utility = part.utility.to_bytes() if part.utility else b""
        return json.dumps(head).encode() + b"\n" + classes + utility

    def load(self, data: bytes) -> Written:
        line, _, body = data.partition(b"\n")
        head = json.loads(line)
        size = head["classes"]
        rest = body[size:]
        utility = UtilityPartial.from_bytes(rest) if rest else None
        return Written(head["names"], ReleaseClasses.from_bytes(body[:size]), utility)

    def finish(self, run: Run, merged: Written) -> dict:
        config, plan, decision = run.config, run.plan(), run.decision()
        record_timings(run)
        chunks = run.chunks()
        expected = [part_name(c.chunk_id, config.output.format) for c in chunks]
        if sorted(merged.names) != expected:
            raise VerificationError(f"{len(merged.names)} parts written, {len(expected)} expected")

        def check() -> dict:
            # the manifest about to be written: checked as `skald verify` checks the folder
            # (its every figure, no identifier column in any part), before it is written
            manifest = build_manifest(config, plan, decision, chunks, expected, True, run.token)
            policy = build_policy(config, plan.stats.sensitive, plan.stats.n_rows)
            if decision.steps:  # local recoding: the models' figures over every released class
                args = (merged.classes, policy, plan.stats.sensitive, len(config.qid_names))
                manifest = recoded_figures(manifest, *args)
            overall = overall_attributes(policy.models, config.suppressed_records)
            if overall:  # drop mode: what verify needs to re-check t-closeness & co.
                data = sensitive_counts_bytes(plan.stats.sensitive, overall, plan.stats.n_rows)
                write_bytes_atomic(run.staging.rstrip("/") + "/" + SENSITIVE_COUNTS, data)
                manifest = with_sensitive_counts(manifest, data)
            if run.store.exists(population_counts.POPULATION_COUNTS):  # a research subset
                data = run.store.read_bytes(population_counts.POPULATION_COUNTS)
                write_bytes_atomic(
                    f"{run.staging.rstrip('/')}/{population_counts.POPULATION_COUNTS}", data
                )
                manifest = population_counts.with_population_counts(manifest, data)
            verify_release(
                run.staging,
                qids=config.qid_names,
                n_records=released_records(policy.subset, plan.stats.n_rows, plan.stats.sensitive),
                delimiter=config.output.delimiter,
                claimed_suppressed=decision.figures.n_suppressed,
                classes=merged.classes,
                policy=class_local(policy) if decision.steps else policy,
                sensitive=plan.stats.sensitive,
                at_top=tuple(decision.node) == tuple(plan.tops),
                manifest=manifest,
            )
            if decision.steps:  # local recoding: each step's classes under its own models
                args = (policy, plan.stats.sensitive, decision, plan.stats.n_rows)
                verify_steps(merged.classes, plan.dims, *args)
            if merged.utility is None:
                return manifest
            return U.with_section(manifest, run, merged.utility)

        U.warn_all_top(config, plan, decision)
        return publish(run, check)


def publish(run: Run, verify: Callable[[], dict]) -> dict:
    """The one publish step: verify the staged release (returns its manifest), write the
    report and the run record, the manifest last, and move the release into place."""
    t0 = time.perf_counter()
    committing = False
    try:
        # the run holds the output's lease: no other run commits between this check and ours
        run.check_not_superseded()
        manifest = verify()
        record = run.record
        record.timings_s["verify"] = time.perf_counter() - t0
        record.peak_rss_bytes = P.peak_rss_bytes()
        record.peak_rss_bytes_by_phase.setdefault("verify", record.peak_rss_bytes)
        record.finished_at = now_iso()
        from airflow_skald.core.release.report import write_report

        staged = run.staging.rstrip("/") + "/"
        write_report(manifest, run.staging, run=record.to_dict())
        write_bytes_atomic(staged + RUN_JSON, to_json_bytes(record.to_dict()))
        for name, data in config_files(run.config).items():  # "from which config?"
            write_bytes_atomic(staged + name, data)
        write_bytes_atomic(staged + MANIFEST_JSON, to_json_bytes(manifest))
        if run.config.output_table is not None:  # the rows: into a new table, swapped in
            check = run.lease.check if run.lease is not None else None
            args = (run.staging, manifest, to_json_bytes(manifest), run.predecessor(), check)
            publish_table(run.config.output_table, run.output_uri(), *args)
        committing = True
        commit(run.staging, run.config.output.path, lease=run.lease)
    except BaseException:
        # A commit that failed part-way keeps the verified staging folder: the retry of this
        # run's task completes it (a mapped run's parts exist nowhere else); the CLI's run_local
        # discards it anyway.
        if not committing:
            discard(run.staging)
        raise
    log.info("release committed at %s", run.config.output.path)
    return manifest


def already_published(run: Run, own: bool = False) -> dict | None:
    """The manifest at the output if this run (same config, input and node) committed it:
    a cleared merge task re-publishes instead of failing. `own`: only a release this very run
    made (its token; a table release: the one its table holds), e.g. a task cleared after a
    database input's staged chunks were deleted at the commit."""
    if own and run.release_in_place() != run.token:
        return None
    fs, root = filesystem(run.staging)
    if fs.exists(root):
        return None
    ofs, out = filesystem(run.config.output.path)
    path = out.rstrip("/") + "/" + MANIFEST_JSON
    if not ofs.exists(path):
        return None
    with ofs.open(path, "rb") as fh:
        manifest = json.loads(fh.read())
    same = (
        (run.dp is None or manifest.get("run_token") == run.token)  # a DP release: its run's
        and manifest.get("config_sha256") == run.config.fingerprint()
        and manifest.get("input_fingerprint") == input_fingerprint(run.chunks())
        and manifest.get("node") == run.decision().levels
    )
    return manifest if same else None


def drop_temporaries(staging: str) -> None:
    """Remove ``.*.tmp`` files a killed mapped writer may have left, before commit."""
    fs, root = filesystem(staging)
    if not fs.exists(root):
        return
    for path in fs.ls(root, detail=False):
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if name.startswith(".") and name.endswith(".tmp"):
            log.info("removing %s left by an interrupted attempt", name)
            fs.rm(path)


ENCODE, HISTOGRAM_PHASE, GENERALISE = EncodePhase(), HistogramPhase(), GeneralisePhase()

CONFIG_ARCHIVE = "config/"  # the effective config and hierarchies, and the file as written


def config_files(config: SkaldConfig) -> dict[str, bytes]:
    """The effective config (with this run's settings) and the YAML file as written: kept in
    the release folder and the run's artifacts, for the audit record."""
    files = {EFFECTIVE_JSON: effective_json_bytes(config.effective())}
    if config.source and os.path.isfile(config.source):
        with open(config.source, "rb") as fh:
            files[CONFIG_YAML] = fh.read()
    return files


def archive_config(run: Run) -> None:
    """The config files in the run's artifacts (``config/``), before phase 1."""
    for name, data in config_files(run.config).items():
        run.store.write_bytes(CONFIG_ARCHIVE + name, data)


@contextlib.contextmanager
def claim_output(
    run: Run, ttl_s: float, release: str = "never", judge: Judge | None = None
) -> Iterator[Lease]:
    """The output's lease for a run that spans several task processes: taken (or taken over:
    same token) by its tasks, expiring if none renews it, released when the commit is done.
    It names the Airflow run (``run.record.airflow``); `judge` tells whether another run
    holding it is still running (operators: its DAG run's state)."""
    with output_lease(
        run.config.output,
        run.token,
        ttl_s=ttl_s,
        pid=None,
        release=release,
        holder=dict(run.record.airflow) or None,
        judge=judge,
    ) as lease:
        run.lease = lease
        yield lease


def check_still_current(run: Run) -> None:
    """Before a task's work: the release at the output is still the one this run found when
    it began, or its own (`check_not_superseded`); a stale retry is refused before it
    generalises a chunk, not at its commit. A no-op before the run recorded what it found
    (`Run.check_target`, its first encode)."""
    if not run.store.exists(TARGET):
        return
    run.check_not_superseded()


def check_lease(run: Run, judge: Judge | None = None) -> None:
    """A mapped writer's fence: no other (running) run may hold the output's lease."""
    check_lease_token(run.config.output.path, run.token, judge)


def release_output(run: Run) -> bool:
    """Free the output's lease if this run holds it: the run failed for good."""
    return release_run_lease(run.config.output.path, run.token)


def copy_release_records(run: Run) -> None:
    """The committed release's manifest, run record and report into the run's store."""
    fs, out = filesystem(run.config.output.path)
    for name in (MANIFEST_JSON, RUN_JSON, REPORT_HTML, EFFECTIVE_JSON, CONFIG_YAML):
        path = out.rstrip("/") + "/" + name
        if fs.exists(path):
            with fs.open(path, "rb") as fh:
                run.store.write_bytes(name, fh.read())


def run(
    config: SkaldConfig,
    progress: P.Progress | None = None,
    token: str | None = None,
    workers: int = 1,
) -> dict:
    """All three phases in this process; returns the manifest of the committed release."""
    r = Run(config, token=token or "", progress=progress)
    return run_local(r, (ENCODE, HISTOGRAM_PHASE, GENERALISE), workers)


def run_local(run: Run, phases: Sequence[Phase], workers: int = 1) -> Any:
    """Phases one after the other in this process, the output's lease held throughout; the
    last phase writes the staged release (discarded if anything fails)."""
    check_output_target(run.config)  # before listing chunks: output inside input, a file...
    if run.dp is not None:
        run.secret()  # no secret: refused before any work
    with output_lease(run.config.output, run.token) as lease:
        run.lease = lease
        try:
            run.layout()
            run.check_target()
            remove_stale_staging(run.config.output.path, holder=run.token)  # of killed CLI runs
            for phase in phases[:-1]:
                phase.run_all(run, workers)
            prepare_staging(run.staging)
            try:
                return phases[-1].run_all(run, workers)
            except BaseException:
                discard(run.staging)
                raise
        finally:
            run.remove_extract()  # committed or abandoned: the staged input goes


PHASE_ORDER = ("encode", "histogram", "search", "generalise", "verify")


def record_timings(run: Run) -> None:
    """The run record's timings from the per-phase timing artifacts (tasks of a DAG run, each
    phase measured by its own task), in the phases' order."""
    t = run.record.timings_s
    for phase in PHASE_ORDER:
        if phase not in t and run.store.exists(f"{TIMINGS}{phase}.json"):
            t[phase] = run.seconds(phase)
    ordered = {p: t[p] for p in PHASE_ORDER if p in t}
    run.record.timings_s = {**ordered, **{p: v for p, v in t.items() if p not in ordered}}
