"""A pass over the chunks as a `Phase`: ``partial`` over some chunks, an exact ``merge`` of
partials, and a ``finish`` (as Dask's reductions are ``chunk`` + ``aggregate``); the drivers for
one mapped group, the merge task, and the whole phase in one process (or worker processes)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Generic, TypeVar

from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.run.parallel import chunk_groups, map_groups
from airflow_skald.core.run.state import Run

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
