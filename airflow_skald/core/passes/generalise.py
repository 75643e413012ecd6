"""Phase 3's chunk code: each chunk generalised to the chosen node and written as a part, its
classes read back, the parts' results merged exactly (the chunk engine's `write_release`;
`run.phase_generalise` verifies the staged release and publishes it)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from airflow_skald.core.data.io import ChunkRef, filesystem
from airflow_skald.core.passes import pipeline as P
from airflow_skald.core.passes import utility_step as U
from airflow_skald.core.passes.chunk_pass import ChunkPass
from airflow_skald.core.passes.dp_sample_check import check_in_sample
from airflow_skald.core.passes.state import Run
from airflow_skald.core.passes.written import Written
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.write.commit import set_staging_private
from airflow_skald.core.utility.collect import UtilityPartial


class GeneraliseChunks(ChunkPass[Written]):
    """Phase 3 over chunks: generalise each chunk to the node, write its part, read its
    classes back."""

    name = "generalise"

    def partial(self, run: Run, chunks: Sequence[ChunkRef]) -> Written:
        fs, root = filesystem(run.staging)
        fs.makedirs(root, exist_ok=True)
        set_staging_private(run.staging, run.config.output_table is not None)
        utility = U.collector(run.config, run.plan(), run.chunks())
        observed: list = []
        names = P.write_parts(
            run.config,
            run.plan(),
            run.decision(),
            chunks,
            run.staging,
            run.progress,
            run.microaggregates(),
            run.row_sample(),
            observe=utility.chunk if utility else None,
            observed=observed,
        )
        classes = P.count_written(run.config, run.staging, names)
        sample, in_sample = run.row_sample(), None
        if sample is not None:  # the run holds the secret: it checks its own sample
            args = (run.config, run.plan(), run.decision(), chunks, run.staging, sample)
            in_sample = check_in_sample(*args)
        return Written(names, classes, U.merged(observed) if utility else None, in_sample)

    def merge(self, parts: Sequence[Written]) -> Written:
        return Written(
            [n for p in parts for n in p.names],
            ReleaseClasses.merge([p.classes for p in parts]),
            U.merged([p.utility for p in parts]),
            None if any(p.in_sample is None for p in parts) else sum(p.in_sample for p in parts),
        )

    def dump(self, part: Written) -> bytes:
        classes = part.classes.to_bytes()
        head = {"names": part.names, "classes": len(classes), "in_sample": part.in_sample}
        utility = part.utility.to_bytes() if part.utility else b""
        return json.dumps(head).encode() + b"\n" + classes + utility

    def load(self, data: bytes) -> Written:
        line, _, body = data.partition(b"\n")
        head = json.loads(line)
        size = head["classes"]
        rest = body[size:]
        utility = UtilityPartial.from_bytes(rest) if rest else None
        classes = ReleaseClasses.from_bytes(body[:size])
        return Written(head["names"], classes, utility, head.get("in_sample"))


GENERALISE_CHUNKS = GeneraliseChunks()
