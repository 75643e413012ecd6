"""The per-chunk work of each phase, as functions over some chunks returning mergeable
partial results; `core.runner` drives them (serially, in worker processes, or as Airflow
tasks) with one publish step:

    chunks = list_chunks(config)
    stats = scan_domain(config, chunks)                   # phase 1, DomainStats.merge()
    plan = plan_root(config, stats)                       # RAM root
    hist = count_histogram(config, plan, chunks)          # phase 2, Histogram.merge()
    decision = search_lattice(config, plan, hist)         # optimal node
    write_parts(config, plan, decision, chunks, staging)  # phase 3 per chunk
    classes = count_written(config, staging, names)       # read back, ReleaseClasses.merge()
    run(config)                                           # all of it, published
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import resource
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_skald.core.config.policy import build_policy
from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.first_rows import FirstRowScan, chunk_first_rows
from airflow_skald.core.count.histogram import Histogram, strides_of
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.data import io as skald_io
from airflow_skald.core.data.io import ChunkRef, map_ahead, read_chunk
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode import class_sums
from airflow_skald.core.encode.adaptive_root import ChainCounts
from airflow_skald.core.encode.domain import DomainStats, counting_types, csv_types
from airflow_skald.core.encode.domain import scan_domain as _scan_domain
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.encode.root import plan_root
from airflow_skald.core.generalise.part import generalise_table, released_columns
from airflow_skald.core.progress import ChunkProgress, Progress
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.count.parts import release_classes
from airflow_skald.core.release.write.commit import part_name, write_part_atomic
from airflow_skald.core.search.class_source import ClassesAtNode, ClassSource
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.search.phase_two import decide
from airflow_skald.core.search.safepub.decide import dp_decision
from airflow_skald.core.transform.differential_privacy.sampler import RowSample
from airflow_skald.core.transform.microaggregation.aggregates import Aggregates
from airflow_skald.core.transform.microaggregation.at_node import (
    microaggregate as aggregates_at_node,
)
from airflow_skald.core.transform.research_subset.classes import (
    flag_first,
    flags_of,
    released_values,
)

log = logging.getLogger("airflow_skald")


__all__ = [
    "ChunkRef",
    "Decision",
    "DomainStats",
    "Histogram",
    "Plan",
    "count_histogram",
    "list_chunks",
    "plan_root",
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
    config: SkaldConfig,
    plan: Plan,
    chunks: Sequence[ChunkRef],
    progress: Progress | None = None,
    sample: RowSample | None = None,
) -> RootCounts:
    """Phase 2 over some chunks: root-node class counts and, per attribute that criteria name,
    (class, value) counts (merge with RootCounts.merge, or `merge_on_chain`). `sample` (a DP
    run): only the records the sample keeps are counted.

    Paper mode counts at the root. Adaptive mode (ADR 0012) counts along phase 1's chain,
    rolling the counts up whenever their non-empty bins outgrow N_RAM; the result's `node`
    says where it ended."""
    chain = plan.counting_chain()
    stats = plan.stats.sensitive
    # with a research subset the class table is the flag's: every record
    counted = flag_first(config.research_subset, plan.value_attributes(config.counted_attributes))
    sensitive = {a: stats[a] for a in counted}
    columns = list(dict.fromkeys([*config.qid_names, *sensitive, *plan.summed]))
    types = counting_types(config)
    tick = ChunkProgress("histogram", len(chunks), progress)
    # paper mode: a chain of one node, the root, counted as at the chain's top (dense)
    acc = ChainCounts(plan, chain, {a: s.m for a, s in sensitive.items()}, plan.summed)
    released = released_values(config, stats)  # criteria count the research subset's records

    def counted_at(chunk: ChunkRef) -> tuple[tuple[int, ...], dict, int]:
        node = acc.node  # where the counts are now: a later roll-up re-rolls this chunk
        table = read_chunk(config.input, chunk, columns, types, subset=config.keyed_subset)
        keys = root_keys(plan, table, chunk, node)
        values = {a: keys * s.m + s.codes(table.column(a)) for a, s in sensitive.items()}
        values = released(table, values)
        weights = {a: class_sums.weights(stats[a], table.column(a)) for a in plan.summed}
        if sample is not None:
            keep = sample.keeps(chunk, table.num_rows)
            keys, values = keys[keep], {a: v[keep] for a, v in values.items()}
            weights = {a: w[keep] for a, w in weights.items()}
        return node, acc.chunk_tables(node, keys, values, weights), table.num_rows

    for i, (_, (node, tables, n_rows)) in enumerate(map_ahead(counted_at, chunks)):
        acc.add_chunk(node, tables)
        tick(i + 1, n_rows)
    return acc.result()


def first_rows(
    config: SkaldConfig,
    plan: Plan,
    chunks: Sequence[ChunkRef],
    node: tuple[int, ...],
    keys: np.ndarray,
) -> np.ndarray:
    """The first input row (code) of each class `keys` (sorted) of `node`: an extra pass over
    the chunks in input order, made only when the search needs the order among classes of
    one size (docs/design.md §4c), and ended once every class has been seen."""
    scan = FirstRowScan(keys)
    types = counting_types(config)

    def seen_in(chunk: ChunkRef) -> tuple[np.ndarray, np.ndarray]:
        table = read_chunk(config.input, chunk, config.qid_names, types)
        return chunk_first_rows(chunk.chunk_id, root_keys(plan, table, chunk, node), scan.wanted)

    ordered = sorted(chunks, key=lambda c: c.chunk_id)
    read = 0
    for _, found in map_ahead(seen_in, ordered):
        scan.add(*found)
        read += 1
        if scan.done:
            break
    log.info(
        "first rows of %d classes of one size (their order decides which are suppressed): "
        "an extra pass over %d of %d chunks",
        keys.size,
        read,
        len(ordered),
    )
    return scan.result()


_first_rows = first_rows  # the name `search_lattice`'s parameter shadows


def root_keys(
    plan: Plan, table: pa.Table, chunk: ChunkRef, node: tuple[int, ...] | None = None
) -> np.ndarray:
    """Phase 2 for one chunk's QID columns (in memory): each record's bin at the root node
    (or at `node`)."""
    node = plan.root if node is None else node
    keys = np.zeros(table.num_rows, dtype=np.int64)
    strides = strides_of(plan.radices(node))
    for d, level, stride in zip(plan.dims, node, strides, strict=True):
        keys += d.key_part(table.column(d.name), chunk, level, stride)
    return keys


def search_lattice(
    config: SkaldConfig,
    plan: Plan,
    counts: RootCounts,
    source: ClassSource | None = None,
    search_key: int | None = None,
    first_rows: Callable[[tuple[int, ...], np.ndarray], np.ndarray] | None = None,
) -> Decision:
    """Phase 2's search under the config's privacy policy, objective and tie-break order,
    above the node the counts are at (the adaptive root, when phase 2 settled one). A DP run
    (`search_key`: its keyed search stream) releases a fixed node or SafePub's choice.
    `first_rows(node, keys)`: the run engine's (`Engine.first_rows`); default: a pass over
    the config's chunks."""
    if counts.node is not None and tuple(counts.node) != tuple(plan.root):
        if source is not None:
            raise ValueError(
                f"counts at node {counts.node}, the class source at the root {plan.root}: "
                "build it with plan.with_root(counts.node)"
            )
        plan = plan.with_root(counts.node)
    policy = build_policy(config, plan.stats.sensitive, plan.stats.n_rows)
    if search_key is not None:
        return dp_decision(
            plan, counts, policy, config.quality, search_key, config.quality.objective_default
        )
    return decide(  # the node, then local recoding's steps when configured
        config,
        plan,
        counts,
        policy,
        source=source,
        analysis=config.risk,
        first_rows=first_rows
        or (lambda node, keys: _first_rows(config, plan, list_chunks(config), node, keys)),
    )


def microaggregate(
    config: SkaldConfig, plan: Plan, counts: RootCounts, decision: Decision
) -> list[Aggregates]:
    """The microaggregated QIDs' labels per class of the chosen node (docs/design.md §4f), from phase
    2's counts: no pass over the data (`transform.microaggregation.at_node`)."""
    return aggregates_at_node(config, ClassesAtNode.at(plan, counts, decision.node))


def write_parts(
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    chunks: Sequence[ChunkRef],
    staging: str,
    progress: Progress | None = None,
    aggregates: Sequence[Aggregates] = (),
    sample: RowSample | None = None,
    observe: Callable[[ChunkRef, pa.Table, pa.Table, np.ndarray | None], Any] | None = None,
    observed: list | None = None,
) -> list[str]:
    """Phase 3 for some chunks: one part per chunk into the staging folder (`aggregates`:
    the microaggregated QIDs' class labels; `sample`, a DP run: the records it left out are
    never written). `observe(chunk, input rows, part, kept)` (thread-safe) sees each chunk as
    it is written (`kept`: a DP run's sample of the input rows, else None); its results go to
    `observed`, in chunk order (the utility analysis's partials: no pass of its own)."""
    columns = released_columns(config, plan.stats.columns)
    if config.keyed_subset is not None:  # the subset's flags, derived from the key columns
        columns.append(config.research_subset.column)
    types = csv_types(config)
    tick = ChunkProgress("generalise", len(chunks), progress)
    names = []
    subset = flags_of(config.research_subset, plan.stats.sensitive)  # once, not per chunk

    def write(chunk: ChunkRef) -> tuple[str, int, Any]:
        table = read_chunk(
            config.input,
            chunk,
            columns,
            types,
            text_as_dictionary=True,
            subset=config.keyed_subset,
        )
        source, kept = table, None
        if sample is not None:
            kept = sample.keeps(chunk, table.num_rows)
            table = table.filter(pa.array(kept))
        part = generalise_table(config, plan, decision, table, chunk, aggregates, subset)
        name = part_name(chunk.chunk_id, config.output.format)
        write_part_atomic(part, config.output, staging, name)
        return name, table.num_rows, observe(chunk, source, part, kept) if observe else None

    for i, (_, (name, rows, seen)) in enumerate(map_ahead(write, chunks)):
        names.append(name)
        if observed is not None:
            observed.append(seen)
        tick(i + 1, rows)
    return names


def count_written(config: SkaldConfig, staging: str, names: Sequence[str]) -> ReleaseClasses:
    """The classes of some written parts, read back from the staging folder: a mapped task
    checks its own parts, and the final step merges these tables instead of re-reading all."""
    location = DataLocation(staging, config.output.format, config.output.delimiter)
    paths = [staging.rstrip("/") + "/" + n for n in names]
    extra = tuple(q.name for q in config.microaggregated)  # checked constant per class
    return release_classes(paths, location, config.qid_names, (*config.criteria_attributes, *extra))
