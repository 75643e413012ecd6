"""The one pipeline API that the CLI and the Airflow operators both call.

Each phase is a function over some chunks returning a mergeable partial result, so a single
process (`run`) and a scale-out DAG (one task per chunk group, then a merge) share the code:

    chunks = list_chunks(config)
    stats = scan_domain(config, chunks)                   # phase 1, DomainStats.merge()
    plan = plan_root(config, stats)                       # RAM root
    hist = count_histogram(config, plan, chunks)          # phase 2, Histogram.merge()
    decision = search_lattice(config, plan, hist)         # optimal node
    write_parts(config, plan, decision, chunks, staging)  # phase 3 per chunk
    manifest = finalise_release(...)                      # verify, manifest, commit
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import resource
import time
from collections.abc import Callable, Sequence

import numpy as np

from airflow_skald.core import io as skald_io
from airflow_skald.core.config import DataLocation, SkaldConfig
from airflow_skald.core.encoding import DomainStats, csv_types
from airflow_skald.core.encoding import scan_domain as _scan_domain
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.generalise import generalise_table, released_columns
from airflow_skald.core.histogram import Histogram, HistogramAccumulator, strides_of
from airflow_skald.core.io import ChunkRef, map_ahead, read_chunk
from airflow_skald.core.manifest import build_manifest
from airflow_skald.core.parallel import map_groups
from airflow_skald.core.plan import Plan, plan_root
from airflow_skald.core.release import (
    MANIFEST,
    check_output_target,
    commit,
    discard,
    part_name,
    prepare_staging,
    remove_stale_staging,
    staging_path,
    write_bytes_atomic,
    write_part_atomic,
)
from airflow_skald.core.search import Decision, search_lattice
from airflow_skald.core.verify import ReleaseClasses, release_classes, verify_release

log = logging.getLogger("airflow_skald")

Progress = Callable[[str, int, int, int], None]

__all__ = [
    "ChunkRef",
    "Decision",
    "DomainStats",
    "Histogram",
    "Plan",
    "count_histogram",
    "finalise_release",
    "list_chunks",
    "plan_root",
    "run",
    "scan_domain",
    "search_lattice",
    "write_parts",
]


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def release_free_memory() -> None:
    """Hand memory freed by a finished phase back to the OS, so the next phase's peak does not
    stack on it: pyarrow's allocator (mimalloc) and glibc's malloc both keep freed pages."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: not glibc
        ctypes.CDLL(None).malloc_trim(0)


def phase_done(memory: dict[str, int], phase: str) -> None:
    """Record the phase's peak RSS, then release what it freed."""
    memory[phase] = peak_rss_bytes()
    release_free_memory()


class ChunkProgress:
    """Logs one line per chunk: phase, i/N, rows, rows/s and ETA (no data values)."""

    def __init__(self, phase: str, total: int, extra: Progress | None = None):
        self.phase, self.total, self.extra = phase, total, extra
        self.start = time.perf_counter()
        self.rows = 0

    def __call__(self, i: int, rows: int) -> None:
        self.rows += rows
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        eta = elapsed / i * (self.total - i)
        log.info(
            "%s: chunk %d/%d, %d rows, %.2fM rows/s, ETA %.0fs",
            self.phase,
            i,
            self.total,
            rows,
            self.rows / elapsed / 1e6,
            eta,
        )
        if self.extra:
            self.extra(self.phase, i, self.total, rows)


def list_chunks(config: SkaldConfig) -> list[ChunkRef]:
    """The run's chunks, from file metadata."""
    return skald_io.list_chunks(config.input, config.chunk_rows)


def scan_domain(
    config: SkaldConfig, chunks: Sequence[ChunkRef], progress: Progress | None = None
) -> DomainStats:
    """Phase 1 over some chunks (merge partial results with DomainStats.merge)."""
    tick = ChunkProgress("encode", len(chunks), progress)
    return _scan_domain(config, chunks, lambda i, n, rows: tick(i, rows))


def count_histogram(
    config: SkaldConfig, plan: Plan, chunks: Sequence[ChunkRef], progress: Progress | None = None
) -> Histogram:
    """Phase 2 over some chunks: root-node class counts (merge with Histogram.merge)."""
    radices = plan.radices(plan.root)
    acc = HistogramAccumulator(radices)
    types = csv_types(config)
    tick = ChunkProgress("histogram", len(chunks), progress)

    strides = strides_of(radices)

    def keys_of_chunk(chunk: ChunkRef) -> np.ndarray:
        table = read_chunk(config.input, chunk, config.qid_names, types)
        keys = np.zeros(table.num_rows, dtype=np.int64)
        for d, level, stride in zip(plan.dims, plan.root, strides, strict=True):
            keys += d.key_part(table.column(d.name), chunk, level, stride)
        return keys

    for i, (_, keys) in enumerate(map_ahead(keys_of_chunk, chunks)):
        acc.add_keys(keys)
        tick(i + 1, keys.size)
    return acc.result()


def write_parts(
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    chunks: Sequence[ChunkRef],
    staging: str,
    progress: Progress | None = None,
) -> list[str]:
    """Phase 3 for some chunks: one part per chunk into the staging folder."""
    columns = released_columns(config, plan.stats.columns)
    types = csv_types(config)
    tick = ChunkProgress("generalise", len(chunks), progress)
    names = []

    def write(chunk: ChunkRef) -> tuple[str, int]:
        table = read_chunk(config.input, chunk, columns, types, text_as_dictionary=True)
        part = generalise_table(config, plan, decision, table, chunk)
        name = part_name(chunk.chunk_id, config.output.format)
        write_part_atomic(part, config.output, staging, name)
        return name, table.num_rows

    for i, (_, (name, rows)) in enumerate(map_ahead(write, chunks)):
        names.append(name)
        tick(i + 1, rows)
    return names


def count_written(config: SkaldConfig, staging: str, names: Sequence[str]) -> ReleaseClasses:
    """The classes of some written parts, read back from the staging folder: a mapped task
    checks its own parts, and the final step merges these tables instead of re-reading all."""
    location = DataLocation(staging, config.output.format, config.output.delimiter)
    paths = [staging.rstrip("/") + "/" + n for n in names]
    return release_classes(paths, location, config.qid_names)


def finalise_release(
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    chunks: Sequence[ChunkRef],
    staging: str,
    timings: dict[str, float] | None = None,
    report_writer: Callable[[dict, str], None] | None = None,
    memory: dict[str, int] | None = None,
    classes: ReleaseClasses | None = None,
) -> dict:
    """Verify the staged release, write its manifest (last), and move it into place.

    `report.html` is written beside the manifest (`core.report.write_report` unless another
    `report_writer` is given); `memory` is the peak RSS after each earlier phase. `classes`:
    the written parts' classes as counted by `count_written` for groups of parts (scale-out),
    else the parts are read here.
    """
    timings = dict(timings or {})
    t0 = time.perf_counter()
    expected = [part_name(c.chunk_id, config.output.format) for c in chunks]
    try:
        report = verify_release(
            staging,
            config.k,
            config.suppression_limit,
            qids=config.qid_names,
            n_records=plan.stats.n_rows,
            delimiter=config.output.delimiter,
            claimed_suppressed=decision.stats.n_suppressed,
            classes=classes,
        )
        d = decision.to_dict()
        for key in ("n_suppressed", "n_equivalence_classes", "min_class_size", "dm_star"):
            if report[key] != d[key]:
                raise VerificationError(
                    f"written release has {key}={report[key]}, the search predicted {d[key]}"
                )
        if report["parts"] != len(expected):
            raise VerificationError(f"{report['parts']} parts written, {len(expected)} expected")
    except VerificationError:
        discard(staging)
        raise
    timings["verify"] = time.perf_counter() - t0
    manifest = build_manifest(
        config, plan, decision, list(chunks), expected, report, timings, peak_rss_bytes()
    )
    if memory is not None:
        manifest["peak_rss_bytes_by_phase"] = {**memory, "verify": peak_rss_bytes()}
    if report_writer is None:
        from airflow_skald.core.report import write_report as report_writer
    report_writer(manifest, staging)

    write_bytes_atomic(
        staging.rstrip("/") + "/" + MANIFEST, json.dumps(manifest, indent=2).encode() + b"\n"
    )
    commit(staging, config.output.path)
    return manifest


def _scan_group(config: SkaldConfig, chunks: Sequence[ChunkRef]) -> DomainStats:
    return scan_domain(config, chunks)


def _count_group(config: SkaldConfig, plan: Plan, chunks: Sequence[ChunkRef]) -> Histogram:
    return count_histogram(config, plan, chunks).compact()  # pickled back to the parent


def _write_group(
    config: SkaldConfig, plan: Plan, decision: Decision, staging: str, chunks: Sequence[ChunkRef]
) -> list[str]:
    return write_parts(config, plan, decision, chunks, staging)


def run(
    config: SkaldConfig,
    progress: Progress | None = None,
    token: str | None = None,
    workers: int = 1,
) -> dict:
    """All three phases in one process; returns the manifest of the committed release."""
    check_output_target(config)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    chunks = list_chunks(config)
    if workers > 1:
        stats = DomainStats.merge(map_groups(_scan_group, (config,), chunks, workers))
    else:
        stats = scan_domain(config, chunks, progress)
    plan = plan_root(config, stats)
    timings["encode"] = time.perf_counter() - t
    memory: dict[str, int] = {}
    phase_done(memory, "encode")
    log.info(
        "RAM root %s (%d possible bins, N_RAM=%d)",
        plan.levels(plan.root),
        plan.root_bins,
        plan.n_ram,
    )
    t = time.perf_counter()
    if workers > 1:
        hist = Histogram.merge(map_groups(_count_group, (config, plan), chunks, workers))
    else:
        hist = count_histogram(config, plan, chunks, progress)
    timings["histogram"] = time.perf_counter() - t
    phase_done(memory, "histogram")
    t = time.perf_counter()
    decision = search_lattice(config, plan, hist)
    timings["search"] = time.perf_counter() - t
    del hist
    phase_done(memory, "search")
    log.info(
        "chosen node %s %s: DM*=%d, suppressed %d, %d/%d nodes evaluated",
        decision.levels,
        decision.node_paper,
        decision.stats.dm_star,
        decision.stats.n_suppressed,
        decision.lattice["evaluated"],
        decision.lattice["nodes"],
    )
    if token is None:  # a CLI run: its own staging folder; stale ones of killed runs go
        remove_stale_staging(config.output.path)
        token = f"cli-{os.getpid()}"
    staging = staging_path(config.output.path, token)
    prepare_staging(staging)
    try:
        t = time.perf_counter()
        if workers > 1:
            map_groups(_write_group, (config, plan, decision, staging), chunks, workers)
        else:
            write_parts(config, plan, decision, chunks, staging, progress)
        timings["generalise"] = time.perf_counter() - t
        phase_done(memory, "generalise")
        manifest = finalise_release(config, plan, decision, chunks, staging, timings, memory=memory)
    except BaseException:
        discard(staging)
        raise
    log.info("release committed at %s", config.output.path)
    return manifest
