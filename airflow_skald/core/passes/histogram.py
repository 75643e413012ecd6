"""Phase 2's chunk code: the root node's class counts per chunk group, summed exactly (the
chunk engine's `root_counts`; `run.phase_histogram` finishes them with the search)."""

from __future__ import annotations

from collections.abc import Sequence

from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.adaptive_root import merge_on_chain
from airflow_skald.core.passes import pipeline as P
from airflow_skald.core.passes.chunk_pass import ChunkPass
from airflow_skald.core.passes.state import Run


class HistogramChunks(ChunkPass[RootCounts]):
    """Phase 2 over chunks: root-node class counts per chunk group, summed.

    Adaptive mode (ADR 0012): partials may sit at different nodes of phase 1's chain; the
    merge rolls them up to one."""

    name = "histogram"

    def partial(self, run: Run, chunks: Sequence[ChunkRef]) -> RootCounts:
        return P.count_histogram(run.config, run.plan(), chunks, run.progress, run.row_sample())

    def merge(self, parts: Sequence[RootCounts]) -> RootCounts:
        return RootCounts.merge(list(parts))

    def merge_in(self, run: Run, parts: Sequence[RootCounts]) -> RootCounts:
        return merge_on_chain(run.plan(), list(parts))

    def dump(self, part: RootCounts) -> bytes:
        return part.compact().to_bytes()

    def load(self, data: bytes) -> RootCounts:
        return RootCounts.from_bytes(data)


HISTOGRAM_CHUNKS = HistogramChunks()
