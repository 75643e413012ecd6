"""A pass as a `Phase`: what the run's engine computes for it (`gather`: an `engine.base.Engine`
method), and a ``finish`` shared by every engine. For the chunk engine a pass is also a
`passes.chunk_pass.ChunkPass` (``partial`` over some chunks and an exact ``merge``), which
`engine.chunks.ChunkEngine` drives: the whole phase in one process (or worker processes), one
mapped group, the merge task (`runner.run_group`, `runner.run_merge`). A phase is handed its
engine (`run_on`); it never opens one."""

from __future__ import annotations

import time
from typing import Generic, TypeVar

from airflow_skald.core.engine.base import Engine
from airflow_skald.core.passes.chunk_pass import ChunkPass
from airflow_skald.core.passes.state import Run

A = TypeVar("A")  # a phase's partial (additive) result
R = TypeVar("R")  # what the phase's finish returns


class Phase(ChunkPass[A], Generic[A, R]):
    """One pass: the engine's result, finished; for the chunk engine partial per group and
    exact merge (`ChunkPass`)."""

    def finish(self, run: Run, merged: A) -> R:
        raise NotImplementedError

    def gather(self, engine: Engine, run: Run) -> A:
        """What the run's engine computes for this pass over every input row (the three
        passes name their `Engine` method; a chunk-only pass asks the chunk engine)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ driver
    def run_on(self, engine: Engine, run: Run) -> R:
        """The whole pass on `engine`, then finished."""
        t0 = time.perf_counter()
        merged = self.gather(engine, run)
        seconds = time.perf_counter() - t0
        run.timed(self.name, seconds)
        run.measured(self.name, seconds)
        return self.finish(run, merged)
