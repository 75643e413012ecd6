"""Phase 1's chunk code: domain statistics per chunk group, merged exactly (the chunk engine's
`domain_stats`; `run.phase_encode` finishes them into the root)."""

from __future__ import annotations

from collections.abc import Sequence

from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.passes import pipeline as P
from airflow_skald.core.passes.chunk_pass import ChunkPass
from airflow_skald.core.passes.state import Run


class EncodeChunks(ChunkPass[DomainStats]):
    """Phase 1 over chunks: domain statistics per chunk group, merged."""

    name = "encode"

    def partial(self, run: Run, chunks: Sequence[ChunkRef]) -> DomainStats:
        return P.scan_domain(run.config, chunks, run.progress)

    def merge(self, parts: Sequence[DomainStats]) -> DomainStats:
        return DomainStats.merge(list(parts))

    def dump(self, part: DomainStats) -> bytes:
        return part.to_bytes()

    def load(self, data: bytes) -> DomainStats:
        return DomainStats.from_bytes(data)


ENCODE_CHUNKS = EncodeChunks()
