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
from dataclasses import dataclass
from typing import Any

from airflow_skald.core.config.policy import build_policy
from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.data.io import ChunkRef, filesystem
from airflow_skald.core.encode.adaptive_root import merge_on_chain
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.encode.root import plan_root
from airflow_skald.core.errors import VerificationError
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
    check_output_target,
    commit,
    discard,
    part_name,
    prepare_staging,
    remove_stale_staging,
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
    build_manifest,
    effective_json_bytes,
    input_fingerprint,
    now_iso,
    to_json_bytes,
)
from airflow_skald.core.release.table_release import (
    publish_table,
)
from airflow_skald.core.release.verify import verify_release
from airflow_skald.core.release.verify_steps import class_local, recoded_figures, verify_steps
from airflow_skald.core.run import pipeline as P
from airflow_skald.core.run import utility_step as U
from airflow_skald.core.run.phase import Phase
from airflow_skald.core.run.state import Run
from airflow_skald.core.run.store import (
    DECISION,
    DOMAIN_STATS,
    HISTOGRAM,
    MICROAGGREGATES,
    PLAN,
    TARGET,
    TIMINGS,
    write_json,
)
from airflow_skald.core.search.decide import Decision
from airflow_skald.core.transform.microaggregation import (
    aggregates_to_bytes,
)
from airflow_skald.core.utility.collect import UtilityPartial

log = logging.getLogger("airflow_skald")


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
        **({"summed_attributes": list(plan.summed)} if plan.summed else {}),
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
