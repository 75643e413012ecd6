"""Using several cores for the per-chunk work of each phase, with exact merges.

Chunks are cut into contiguous groups; each group runs in its own worker process through the
same per-chunk functions as the serial path,
and the partial results merge exactly (statistics and counts are additive; parts are per chunk).
Memory grows with the number of workers (one chunk and one partial histogram each), never with
the number of chunks.

Workers are forked from a fork server (one clean, single-threaded process started once per
interpreter, with the phase code already imported), never from the caller: no pyarrow thread
pool or lock is forked, and a worker starts in milliseconds instead of re-importing numpy,
pyarrow and pandas for each phase (~1 s each with spawn).
"""

from __future__ import annotations

import multiprocessing
import os
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


#: imported once by the fork server, so forked workers start with the phase code loaded
_PRELOAD = ["airflow_skald.core.run.runner", "airflow_skald.core.engine.chunks"]


def _as_caller(env: dict[str, str], cwd: str, fn: Callable[..., T], *args) -> T:
    """fn(*args) in the caller's environment and folder: the fork server keeps those of the
    moment it started (credentials or a folder changed since must still hold)."""
    if os.environ != env:
        os.environ.clear()
        os.environ.update(env)
    if os.getcwd() != cwd:
        os.chdir(cwd)
    return fn(*args)


def _context() -> multiprocessing.context.BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)  # only read when the server starts
    return ctx


def map_groups(
    fn: Callable[..., T], args: tuple, chunks: Sequence[ChunkRef], workers: int
) -> list[T]:
    """fn(*args, group) for each group, in worker processes; results in group order."""
    groups = chunk_groups(chunks, workers)
    if workers <= 1 or len(groups) == 1:
        return [fn(*args, g) for g in groups]
    results: list[T | None] = [None] * len(groups)
    ctx = _context()
    with ProcessPoolExecutor(max_workers=len(groups), mp_context=ctx) as pool:
        caller = (dict(os.environ), os.getcwd())
        futures = {pool.submit(_as_caller, *caller, fn, *args, g): i for i, g in enumerate(groups)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
    return results  # type: ignore[return-value]
