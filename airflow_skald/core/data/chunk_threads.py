"""Chunks worked on in threads (ADR 0007): `map_ahead` runs a function over chunks (or
release parts) on up to `chunk_threads()` at once, in chunk order, memory bounded by a few
chunks; `CHUNK_THREADS` or the environment's SKALD_CHUNK_THREADS sets how many."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import TypeVar

import pyarrow as pa

from airflow_skald.core.errors import ConfigError

A = TypeVar("A")  # a chunk, or a release part
T = TypeVar("T")

# Chunks processed at once by `map_ahead`, each holding one chunk in memory (ADR 0007); None:
# the environment's SKALD_CHUNK_THREADS, default 2.
CHUNK_THREADS: int | None = None


def chunk_threads() -> int:
    if CHUNK_THREADS is not None:
        return CHUNK_THREADS
    raw = os.environ.get("SKALD_CHUNK_THREADS", "2").strip()
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"SKALD_CHUNK_THREADS must be a whole number >= 1, not '{raw}'")
    return int(raw)


# Rows between two hand-backs of pyarrow's freed memory in `map_ahead` (release parts, which
# carry no row count, count as this many each).
RELEASE_ROWS = 1_000_000


def map_ahead(
    fn: Callable[[A], T], chunks: Sequence[A], threads: int | None = None
) -> Iterator[tuple[A, T]]:
    """(chunk, fn(chunk)) in chunk order, `fn` running on up to `threads` chunks at once in
    background threads. pyarrow reads and decodes, and numpy computes, without holding the GIL,
    so a pass over chunks uses every core; at most `threads` chunks are in flight, so memory
    stays bounded by a few chunks. `fn`'s errors are raised here, in the caller's thread."""
    threads = threads or chunk_threads()
    if threads <= 1:  # inline: one chunk at a time, on the caller's thread
        for chunk in chunks:
            yield chunk, fn(chunk)
        return
    todo = iter(chunks)
    since_release = 0  # rows done since pyarrow's pool last handed memory back
    with ThreadPoolExecutor(threads, thread_name_prefix="skald-chunk") as pool:
        pending = deque((c, pool.submit(fn, c)) for c in islice(todo, threads))
        while pending:
            chunk, future = pending.popleft()
            result = future.result()
            nxt = next(todo, None)
            if nxt is not None:
                pending.append((nxt, pool.submit(fn, nxt)))
            yield chunk, result
            del result
            # Keep pyarrow's pool flat over chunks, handing memory back once per RELEASE_ROWS
            # rows (every chunk of that size; small chunks reuse the pool's pages in between,
            # which saves the kernel refaulting them: ~4 ms per 250k-row chunk).
            since_release += getattr(chunk, "n_rows", RELEASE_ROWS)
            if since_release >= RELEASE_ROWS:
                pa.default_memory_pool().release_unused()
                since_release = 0
