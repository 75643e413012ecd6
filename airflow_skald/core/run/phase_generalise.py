"""Phase 3, generalise: each chunk generalised to the chosen node and written as a part, its
classes read back; then the whole staged release verified against the manifest about to be
written, and published (`publish.publish`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from airflow_skald.core.config.policy import build_policy
from airflow_skald.core.data.io import ChunkRef, filesystem
from airflow_skald.core.engine.base import Engine, Written
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.privacy.research_subset import released_records
from airflow_skald.core.release.check import population_counts, recoding_steps
from airflow_skald.core.release.check.archive import (
    SENSITIVE_COUNTS,
    overall_attributes,
    sensitive_counts_bytes,
    with_sensitive_counts,
)
from airflow_skald.core.release.check.verify import verify_release
from airflow_skald.core.release.check.verify_steps import class_local, recoded_figures, verify_steps
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.write.commit import (
    part_name,
    set_staging_private,
    write_bytes_atomic,
)
from airflow_skald.core.release.write.manifest import build_manifest
from airflow_skald.core.run import pipeline as P
from airflow_skald.core.run import utility_step as U
from airflow_skald.core.run.dp_sample_check import check_in_sample, with_sample_check
from airflow_skald.core.run.phase import Phase
from airflow_skald.core.run.publish import publish, record_timings
from airflow_skald.core.run.state import Run
from airflow_skald.core.utility.collect import UtilityPartial


class GeneralisePhase(Phase[Written, dict]):
    """Phase 3: generalise each chunk to the node, write its part, read its classes back;
    then verify the whole staged release and publish it."""

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

    def gather(self, engine: Engine, run: Run) -> Written:
        return engine.write_release(run)

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

    def finish(self, run: Run, merged: Written) -> dict:
        config, plan, decision = run.config, run.plan(), run.decision()
        record_timings(run)
        chunks = run.chunks()
        expected = [part_name(c.chunk_id, config.output.format) for c in chunks]
        if merged.table_columns is None and sorted(merged.names) != expected:
            raise VerificationError(f"{len(merged.names)} parts written, {len(expected)} expected")

        def check() -> dict:
            # the manifest about to be written: checked as `skald verify` checks the folder
            # (its every figure, no identifier column in any part), before it is written
            manifest = build_manifest(config, plan, decision, chunks, expected, True, run.token)
            if decision.dp:
                manifest = with_sample_check(manifest, merged.in_sample)
            policy = build_policy(config, plan.stats.sensitive, plan.stats.n_rows)
            if decision.steps:  # local recoding: the models' figures over every released class
                args = (merged.classes, policy, plan.stats.sensitive, len(config.qid_names))
                manifest = recoded_figures(manifest, *args)
            overall = overall_attributes(policy.models, config.suppressed_records)
            if overall:  # drop mode: what verify needs to re-check t-closeness & co.
                data = sensitive_counts_bytes(plan.stats.sensitive, overall, plan.stats.n_rows)
                write_bytes_atomic(run.staging.rstrip("/") + "/" + SENSITIVE_COUNTS, data)
                manifest = with_sensitive_counts(manifest, data)
            if run.store.exists(population_counts.POPULATION_COUNTS):  # a research subset
                data = run.store.read_bytes(population_counts.POPULATION_COUNTS)
                write_bytes_atomic(
                    f"{run.staging.rstrip('/')}/{population_counts.POPULATION_COUNTS}", data
                )
                manifest = population_counts.with_population_counts(manifest, data)
            verify_release(
                run.staging,
                qids=config.qid_names,
                n_records=released_records(policy.subset, plan.stats.n_rows, plan.stats.sensitive),
                delimiter=config.output.delimiter,
                claimed_suppressed=decision.figures.n_suppressed,
                classes=merged.classes,
                policy=class_local(policy) if decision.steps else policy,
                sensitive=plan.stats.sensitive,
                at_top=tuple(decision.node) == tuple(plan.tops),
                manifest=manifest,
                table_columns=merged.table_columns,
            )
            if decision.steps:  # local recoding: each step's classes under its own models
                args = (policy, plan.stats.sensitive, decision, plan.stats.n_rows)
                verify_steps(merged.classes, plan.dims, *args)
                manifest = recoding_steps.kept(
                    run.staging, manifest, merged.classes, plan, decision, policy
                )
            if merged.utility is None:
                return manifest
            return U.with_section(manifest, run, merged.utility)

        U.warn_all_top(config, plan, decision)
        return publish(run, check, written=merged.table_columns is not None)


GENERALISE = GeneralisePhase()
