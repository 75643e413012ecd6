"""A pass as a `Phase`: what the run's engine computes for it (`gather`: an `engine.base.Engine`
method), and a ``finish`` shared by every engine. For the chunk engine a pass is also
``partial`` over some chunks and an exact ``merge`` of partials (as Dask's reductions are
``chunk`` + ``aggregate``), which `engine.chunks.ChunkEngine` drives: the whole phase in one
process (or worker processes), one mapped group, the merge task."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Generic, TypeVar

from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.engine.base import Engine
from airflow_skald.core.engine.chunks import chunk_engine
from airflow_skald.core.engine.registry import run_engine
from airflow_skald.core.run.state import Run

A = TypeVar("A")  # a phase's partial (additive) result
R = TypeVar("R")  # what the phase's finish returns


class Phase(Generic[A, R]):
    """One pass: the engine's result, finished; for the chunk engine partial per group and
    exact merge."""

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

    def gather(self, engine: Engine, run: Run) -> A:
        """What the run's engine computes for this pass over every input row (the three
        passes name their `Engine` method); a pass of the chunk engine only (the per-chunk
        baseline): its partial over every chunk."""
        return chunk_engine(run, engine.workers).over_chunks(self, run)

    # ------------------------------------------------------------------ drivers
    def partial_name(self, group: int) -> str:
        return f"partials/{self.name}/group-{group:05d}.bin"

    def run_group(self, run: Run, group: int, chunk_ids: Sequence[int]) -> A:
        """A mapped task instance: one group's partial, stored for the merge (the chunk
        engine's own route)."""
        return chunk_engine(run).run_group(self, run, group, chunk_ids)

    def run_merge(self, run: Run) -> R:
        """The merge task: every group's stored partial, merged exactly, then finished."""
        return chunk_engine(run).run_merge(self, run)

    def run_all(self, run: Run, workers: int = 1) -> R:
        """The whole pass, as the run's engine computes it (`workers`: the chunk engine's
        processes), then finished."""
        return self.run_on(run_engine(run, workers), run)

    def run_on(self, engine: Engine, run: Run) -> R:
        """The whole pass on `engine`, then finished."""
        t0 = time.perf_counter()
        merged = self.gather(engine, run)
        seconds = time.perf_counter() - t0
        run.timed(self.name, seconds)
        run.measured(self.name, seconds)
        return self.finish(run, merged)
