"""`ChunkEngine`: the passes over the input read in chunks into the worker (docs/design.md §2,
§2a; `execution: chunks`, the default). The first engine behind `base.Engine`.

Each pass is a `passes.chunk_pass.ChunkPass` (``partial`` over some chunks, an exact
``merge``; the run's phase adds a ``finish`` every engine shares); this engine drives them
three ways: every chunk in this process, one process per
chunk group (`skald run --workers`, `run.parallel`), or the Airflow route where each chunk
group is a mapped task (`run_group`) and a merge task sums their stored partials
(`run_merge`; the runner finishes what it returns), so a mapped task instance and a process that runs all groups execute the same
code.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.base import Engine
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.passes import pipeline as P
from airflow_skald.core.passes.chunk_pass import ChunkPass
from airflow_skald.core.passes.encode import ENCODE_CHUNKS
from airflow_skald.core.passes.generalise import GENERALISE_CHUNKS
from airflow_skald.core.passes.histogram import HISTOGRAM_CHUNKS
from airflow_skald.core.passes.parallel import chunk_groups, map_groups
from airflow_skald.core.passes.state import Run
from airflow_skald.core.passes.written import Written
from airflow_skald.core.settings.execution import CHUNKS


class ChunkEngine(Engine):
    """The input read chunk by chunk (`data.io.read_chunk`) in this process or in worker
    processes, partials merged exactly."""

    name = CHUNKS
    groups = True
    utility = True

    def list_input(self, run: Run) -> list[ChunkRef]:
        return run.extract() if run.config.database else P.list_chunks(run.config)

    def domain_stats(self, run: Run) -> DomainStats:
        return self.over_chunks(ENCODE_CHUNKS, run)

    def root_counts(self, run: Run) -> RootCounts:
        return self.over_chunks(HISTOGRAM_CHUNKS, run)

    def first_rows(
        self, run: Run, plan: Plan, node: tuple[int, ...], keys: np.ndarray
    ) -> np.ndarray:
        return P.first_rows(run.config, plan, P.list_chunks(run.config), node, keys)

    def write_release(self, run: Run) -> Written:
        return self.over_chunks(GENERALISE_CHUNKS, run)

    # ------------------------------------------------------------------ the chunk routes
    def over_chunks(self, phase: ChunkPass, run: Run) -> Any:
        """A pass's partial over every chunk: in this process, or (`workers` > 1) one worker
        process per chunk group, their partials merged exactly."""
        chunks = run.chunks()
        if self.workers > 1 and len(chunk_groups(chunks, self.workers)) > 1:
            parts = map_groups(_partial_in_worker, (phase, run.for_worker()), chunks, self.workers)
            return phase.merge_in(run, [phase.load(p) for p in parts])
        return phase.partial(run, chunks)

    @staticmethod
    def run_group(phase: ChunkPass, run: Run, group: int, chunk_ids: Sequence[int]) -> Any:
        """A mapped task instance: one group's partial, stored for the merge."""
        t0 = time.perf_counter()
        part = phase.partial(run, run.chunks(chunk_ids))
        run.store.write_bytes(phase.partial_name(group), phase.dump(part))
        run.timed(phase.name, time.perf_counter() - t0, group)
        return part

    @staticmethod
    def run_merge(phase: ChunkPass, run: Run) -> Any:
        """The merge task: every group's stored partial, merged exactly (the runner finishes
        it: `runner.run_merge`)."""
        groups = [g["group"] for g in run.groups()]
        parts = [phase.load(run.store.read_bytes(phase.partial_name(g))) for g in groups]
        t0 = time.perf_counter()
        merged = phase.merge_in(run, parts)
        seconds = run.seconds(phase.name, groups) + time.perf_counter() - t0
        run.timed(phase.name, seconds)
        run.measured(phase.name, seconds)
        return merged


def chunk_engine(run: Run, workers: int = 1) -> ChunkEngine:
    """The chunk engine, for a route only it has (the mapped DAG's chunk groups, a
    chunk-only pass such as the per-chunk baseline); refused in one line if the run's
    `execution` names another engine."""
    engine = run.config.execution
    if engine != CHUNKS:
        raise ConfigError(
            f"execution.engine '{engine}' runs each pass as one task: chunk groups (mapped "
            "tasks, per-chunk runs) need execution: chunks"
        )
    return ChunkEngine(run.config.execution_settings, workers)


def _partial_in_worker(phase: ChunkPass, run: Run, chunks: Sequence[ChunkRef]) -> bytes:
    """A worker process's share (forked from the fork server; the partial comes back in its
    byte form)."""
    return phase.dump(phase.partial(run, chunks))
