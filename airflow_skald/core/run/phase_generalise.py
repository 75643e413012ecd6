"""Phase 3, generalise: each chunk generalised to the chosen node and written as a part, its
classes read back; then the whole staged release verified against the manifest about to be
written, and published (`publish.publish`)."""

from __future__ import annotations

from airflow_skald.core.config.policy import build_policy
from airflow_skald.core.engine.base import Engine
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.passes import utility_step as U
from airflow_skald.core.passes.generalise import GeneraliseChunks
from airflow_skald.core.passes.state import Run
from airflow_skald.core.passes.written import Written
from airflow_skald.core.release.check.verify import verify_release
from airflow_skald.core.release.write.commit import part_name
from airflow_skald.core.release.write.manifest import build_manifest
from airflow_skald.core.release.write.side_files import StagedSideFiles
from airflow_skald.core.run.phase import Phase
from airflow_skald.core.run.publish import publish, record_timings
from airflow_skald.core.transform import registry as transformations
from airflow_skald.core.transform.hooks_phases import Staged


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
            # (its every figure, no identifier column in any part), before it is written;
            # each transformation's part of it through the registry (`hooks_phases`)
            manifest = build_manifest(config, plan, decision, chunks, expected, True, run.token)
            staged = _staged(run, merged)
            manifest = transformations.finish_release(staged, manifest)
            verify_release(
                run.staging,
                qids=config.qid_names,
                n_records=transformations.released_records(staged),
                delimiter=config.output.delimiter,
                claimed_suppressed=decision.figures.n_suppressed,
                classes=merged.classes,
                policy=transformations.verified_policy(staged),
                sensitive=plan.stats.sensitive,
                at_top=tuple(decision.node) == tuple(plan.tops),
                manifest=manifest,
                table_columns=merged.table_columns,
            )
            manifest = transformations.after_verify(staged, manifest)
            if merged.utility is None:
                return manifest
            return U.with_section(manifest, run, merged.utility)

        U.warn_all_top(config, plan, decision)
        return publish(run, check, written=merged.table_columns is not None)


def _staged(run: Run, merged: Written) -> Staged:
    """What the transformations' phase 3 hooks are handed of the staged release."""
    config, plan = run.config, run.plan()
    return Staged(
        config=config,
        plan=plan,
        decision=run.decision(),
        policy=build_policy(config, plan.stats.sensitive, plan.stats.n_rows),
        written=merged,
        store=run.store,
        staging=run.staging,
        files=StagedSideFiles(run.staging),
    )


GENERALISE = GeneralisePhase()
