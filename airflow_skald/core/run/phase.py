"""A pass as a `Phase`: what the run's engine computes for it (`gather`: an `engine.base.Engine`
method), and a ``finish`` shared by every engine. For the chunk engine a pass is also
``partial`` over some chunks and an exact ``merge`` of partials (as Dask's reductions are
``chunk`` + ``aggregate``), which `engine.chunks.ChunkEngine` drives: the whole phase in one
process (or worker processes), one mapped group, the merge task (`runner.run_group`,
`runner.run_merge`). A phase is handed its engine (`run_on`); it never opens one."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Generic, TypeVar

from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.engine.base import Engine
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
        passes name their `Engine` method; a chunk-only pass asks the chunk engine)."""
        raise NotImplementedError

    def partial_name(self, group: int) -> str:
        return f"partials/{self.name}/group-{group:05d}.bin"

    # ------------------------------------------------------------------ driver
    def run_on(self, engine: Engine, run: Run) -> R:
        """The whole pass on `engine`, then finished."""
        t0 = time.perf_counter()
        merged = self.gather(engine, run)
        seconds = time.perf_counter() - t0
        run.timed(self.name, seconds)
        run.measured(self.name, seconds)
        return self.finish(run, merged)
