"""The per-chunk baseline (`skald run --per-chunk`, docs/design.md §6): each chunk anonymised alone.

This is what an ARX user with a memory-bound machine has to do: anonymise chunk after chunk,
each with its own optimal node, with the same hierarchies, domains and encodings (phase 1 runs
over ALL chunks exactly as in the global run, so every chunk shares `plan_root`'s dimensions).
Per chunk there is no RAM bound: the chunk's histogram is counted at the all-zeros node (a sparse
histogram, memory follows its non-empty bins) and the lattice above it is searched by the same
`search_lattice` (N = the chunk's rows, same k and suppression limit). The chunk's part is
written generalised to its own node by the same `write_parts`.

The manifest reports every chunk's node and own DM*, their sum, and the figures of the UNION of
the released parts: classes are identical released QID tuples across all parts, suppressed
records are counted over the whole union (as `skald verify` reads any release). Those figures
are counted from the written parts (`parts.release_classes`), each part is checked on its own
(k and every criterion, t-closeness against the chunk's own distribution), and both are
cross-checked against what the searches predicted.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Sequence

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.engine.base import Engine
from airflow_skald.core.engine.chunks import chunk_engine
from airflow_skald.core.errors import ConfigError, VerificationError
from airflow_skald.core.passes.pipeline import (
    ChunkProgress,
    Progress,
    write_parts,
)
from airflow_skald.core.run.baseline_chunk import (
    ChunkOutcome,
    RollUpCache,
    anonymise_chunk,
    chunk_plan,
    released_classes,
)
from airflow_skald.core.run.baseline_union import (
    check_written,
    release_figures,
    union_figures,
    union_manifest,
    union_policy,
)
from airflow_skald.core.run.runner import ENCODE, Phase, Run, publish, run_local
from airflow_skald.core.transform import registry as transform_registry

__all__ = [
    "ChunkOutcome",
    "RollUpCache",
    "anonymise_chunk",
    "chunk_plan",
    "release_figures",
    "released_classes",
    "run_per_chunk",
    "union_figures",
    "union_policy",
]


class PerChunkPhase(Phase[list, dict]):
    """Phases 2 and 3 of the baseline: each chunk's own histogram, search and part (one
    pass); then the union of the parts checked and published by the runner's publish step."""

    name = "per_chunk"

    def partial(self, run: Run, chunks: Sequence[ChunkRef]) -> list[ChunkOutcome]:
        plan, out = run.plan(), []
        tick = ChunkProgress("per-chunk", len(chunks), run.progress)
        for i, chunk in enumerate(chunks):
            outcome = anonymise_chunk(run.config, plan, chunk)[0]
            t = time.perf_counter()
            cplan = chunk_plan(plan, outcome.n_records)
            outcome.part = write_parts(run.config, cplan, outcome.decision, [chunk], run.staging)[0]
            outcome.seconds["generalise"] = time.perf_counter() - t
            out.append(outcome)
            tick(i + 1, chunk.n_rows)
        return out

    def gather(self, engine: Engine, run: Run) -> list[ChunkOutcome]:
        """A chunk-only pass: its partial over every chunk (refused for another engine)."""
        return chunk_engine(run, engine.workers).over_chunks(self, run)

    def merge(self, parts: Sequence[list[ChunkOutcome]]) -> list[ChunkOutcome]:
        return sorted((o for p in parts for o in p), key=lambda o: o.chunk.chunk_id)

    def dump(self, part: list[ChunkOutcome]) -> bytes:
        return pickle.dumps(part)

    def load(self, data: bytes) -> list[ChunkOutcome]:
        return pickle.loads(data)

    def finish(self, run: Run, outcomes: list[ChunkOutcome]) -> dict:
        for phase in ("histogram", "search", "generalise"):  # the loop interleaves them
            run.record.timings_s[phase] = sum(o.seconds.get(phase, 0.0) for o in outcomes)
        config, plan = run.config, run.plan()

        def check() -> dict:
            predicted = union_figures(outcomes, union_policy(config), config.suppression.records)
            written = check_written(config, plan, run.staging, outcomes)
            for key in ("n_suppressed", "n_equivalence_classes", "min_class_size", "dm_star"):
                if written[key] != predicted[key]:
                    raise VerificationError(
                        f"the written per-chunk release has {key}={written[key]}, "
                        f"the searches predicted {predicted[key]}"
                    )
            return union_manifest(config, plan, run.chunks(), outcomes, written, run.token)

        return publish(run, check)


PER_CHUNK = PerChunkPhase()


def run_per_chunk(
    config: SkaldConfig,
    progress: Progress | None = None,
    token: str | None = None,
    workers: int = 1,
) -> dict:
    """The baseline release: every chunk anonymised alone; returns its (committed) manifest.

    Phase 1 is the global run's (its dimensions, and its RAM root for information)."""
    if (refusal := transform_registry.per_chunk_refusal(config)) is not None:
        raise ConfigError(refusal)  # a transformation whose classes are the whole input's
    run = Run(config, token=token or "", progress=progress)
    chunk_engine(run)  # chunks are the baseline's unit: another engine refused before any work
    return run_local(run, (ENCODE, PER_CHUNK), workers)
