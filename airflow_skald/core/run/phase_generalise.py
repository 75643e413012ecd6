"""Phase 3, generalise: each chunk generalised to the chosen node and written as a part, its
classes read back; then the whole staged release verified against the manifest about to be
written, and published (`publish.publish`)."""

from __future__ import annotations

from airflow_skald.core.config.policy import build_policy
from airflow_skald.core.engine.base import Engine
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.passes import utility_step as U
from airflow_skald.core.passes.dp_sample_check import with_sample_check
from airflow_skald.core.passes.generalise import GeneraliseChunks
from airflow_skald.core.passes.state import Run
from airflow_skald.core.passes.written import Written
from airflow_skald.core.privacy.class_local import class_local
from airflow_skald.core.release.check import population_counts
from airflow_skald.core.release.check.archive import (
    SENSITIVE_COUNTS,
    overall_attributes,
    sensitive_counts_bytes,
    with_sensitive_counts,
)
from airflow_skald.core.release.check.verify import verify_release
from airflow_skald.core.release.write import recoding_steps
from airflow_skald.core.release.write.commit import part_name, write_bytes_atomic
from airflow_skald.core.release.write.manifest import build_manifest
from airflow_skald.core.run.phase import Phase
from airflow_skald.core.run.publish import publish, record_timings
from airflow_skald.core.transform.local_recoding.verify import recoded_figures, verify_steps
from airflow_skald.core.transform.research_subset.classes import released_records


class GeneralisePhase(GeneraliseChunks, Phase[Written, dict]):
    """Phase 3: generalise each chunk to the node, write its part, read its classes back
    (`GeneraliseChunks`); then verify the whole staged release and publish it."""

    def gather(self, engine: Engine, run: Run) -> Written:
        return engine.write_release(run)

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
            overall = overall_attributes(policy.models, config.suppression.records)
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
