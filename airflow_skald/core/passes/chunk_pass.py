"""`ChunkPass`: a pass as the chunk engine drives it (docs/design.md §2, §2a): ``partial`` over
some chunks and an exact ``merge`` of partials (as Dask's reductions are ``chunk`` +
``aggregate``), with the partial's byte form for worker processes and mapped tasks.
`engine.chunks.ChunkEngine` runs one over every chunk (in this process, in worker processes,
or one group per mapped task); a run's `run.phase.Phase` adds what every engine shares (its
``finish``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.passes.state import Run

A = TypeVar("A")  # a pass's partial (additive) result


class ChunkPass(Generic[A]):
    """One pass over chunks: partial per group, exact merge, the partial's bytes."""

    name = ""

    def partial(self, run: Run, chunks: Sequence[ChunkRef]) -> A:
        raise NotImplementedError

    def merge(self, parts: Sequence[A]) -> A:
        raise NotImplementedError

    def merge_in(self, run: Run, parts: Sequence[A]) -> A:
        """The merge, given the run (a pass whose merge needs phase 1's plan overrides it)."""
        return self.merge(parts)

    def dump(self, part: A) -> bytes:
        raise NotImplementedError

    def load(self, data: bytes) -> A:
        raise NotImplementedError

    def partial_name(self, group: int) -> str:
        return f"partials/{self.name}/group-{group:05d}.bin"
