"""Using several cores for the per-chunk work of each phase, with exact merges.

Chunks are cut into contiguous groups; each group runs in its own worker process (spawned, so
no pyarrow thread pool is forked) through the same per-chunk functions as the serial path,
and the partial results merge exactly (statistics and counts are additive; parts are per chunk).
Memory grows with the number of workers (one chunk and one partial histogram each), never with
the number of chunks.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import TypeVar

from airflow_skald.core.data.io import ChunkRef

T = TypeVar("T")


def chunk_groups(chunks: Sequence[ChunkRef], n_groups: int) -> list[list[ChunkRef]]:
    """Contiguous, nearly equal groups (by rows), in chunk order."""
    n_groups = max(1, min(n_groups, len(chunks)))
    total = sum(c.n_rows for c in chunks)
    groups: list[list[ChunkRef]] = [[] for _ in range(n_groups)]
    seen = 0
    for c in chunks:
        g = min(n_groups - 1, seen * n_groups // max(total, 1))
        groups[g].append(c)
        seen += c.n_rows
    return [g for g in groups if g]


def map_groups(
    fn: Callable[..., T], args: tuple, chunks: Sequence[ChunkRef], workers: int
) -> list[T]:
    """fn(*args, group) for each group, in worker processes; results in group order."""
    groups = chunk_groups(chunks, workers)
    if workers <= 1 or len(groups) == 1:
        return [fn(*args, g) for g in groups]
    results: list[T | None] = [None] * len(groups)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(groups), mp_context=ctx) as pool:
        futures = {pool.submit(fn, *args, g): i for i, g in enumerate(groups)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
    return results  # type: ignore[return-value]
