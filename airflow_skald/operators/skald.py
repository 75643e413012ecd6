"""EncodeOperator, HistogramLatticeOperator, GeneraliseOperator: the three SKALD phases.

Each operator is a thin shell over ``airflow_skald.core.run.runner`` (its shared part is
``operators.base.SkaldBaseOperator``): it opens the run (the conf checked, the config loaded
with this run's settings, one log line stating them) and drives its phase. ``mode`` picks how
much of the phase one task instance does:

- ``"all"`` (default): the whole phase over every chunk (DAG ``skald_anonymise``);
- ``"partial"``: only the chunks of ``chunk_group`` (a mapped task instance, one per group);
- ``"merge"``: merge the partial results of all groups exactly and finish the phase;
- ``"list"`` (EncodeOperator only): list the chunks and return the groups to map over.

Artifacts go to ``{artifacts}/{dag_id}/{run_id}/`` (``artifacts.RunArtifacts``); the XCom
return values are small JSON summaries (paths, levels, counts, DM*), never a data value.
Nothing is done in ``__init__``; the core is imported inside ``execute``. The output's lease a
run holds across its tasks: ``operators.lease``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_skald.operators.base import MODES, SkaldBaseOperator
from airflow_skald.operators.lease import LEASE_TTL_S, dag_run_gone
from airflow_skald.operators.links import SkaldManifestLink


class EncodeOperator(SkaldBaseOperator):
    """Phase 1: list the chunks, scan the domain (min/max, distinct values), choose the RAM root.

    Checks the output before any work (a release there is replaced only by a retry of this
    run, an identical rerun, or with ``overwrite``) and takes the output's lease for the run.
    Writes ``chunks.json``, ``domain_stats.json`` (personal data: object storage only),
    ``plan.json`` and the effective config; returns the root node and its bins.
    ``mode="list"`` returns the chunk groups for ``.expand(chunk_group=...)``.

    :param chunks_per_task: chunks per mapped group, with ``mode="list"`` (templated)
    """

    modes = (*MODES, "list")
    template_fields: Sequence[str] = (*SkaldBaseOperator.template_fields, "chunks_per_task")

    def __init__(self, *, chunks_per_task: int | str = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.chunks_per_task = chunks_per_task

    def run_phase(self, run, context) -> Any:
        from airflow_skald.core.run.runner import ENCODE, begin_run, run_group

        if self.mode in ("all", "list"):
            per_group, mapped = int(self.chunks_per_task or 1), self.mode == "list"
            groups = begin_run(run, LEASE_TTL_S, dag_run_gone, per_group, mapped)
            if self.mode == "list":
                return groups
        if self.mode == "partial":
            group, chunk_ids = self.group()
            stats = run_group(ENCODE, run, group, chunk_ids)
            return {"group": group, "n_rows": stats.n_rows}
        plan = self.drive(ENCODE, run)
        fixed = run.config.data_independent  # DP: the lattice from level 0, no root measured
        return {"artifacts": run.store.uri(), "n_chunks": len(run.chunks()), **_root(plan, fixed)}


def _root(plan, fixed: bool) -> dict:
    """What phase 1 returns to XCom. Under DP the root is level 0 (the hierarchies' lattice)
    and the root's bins, a product of every input record's distinct values, are left out as
    the manifest leaves them out (ADR 0027)."""
    out = {
        "n_rows": plan.stats.n_rows,
        "root_node": plan.levels(plan.root),
        "histogram_bins": plan.n_ram,
    }
    return out if fixed else {**out, "root_bins": plan.root_bins}


class HistogramLatticeOperator(SkaldBaseOperator):
    """Phase 2: count the root histogram over the chunks, then search the sub-lattice above it.

    Writes ``histogram.bin`` and ``decision.json``; returns the chosen node (levels and the
    paper's notation), DM*, suppressed count, classes and lattice counts.
    """

    def run_phase(self, run, context) -> Any:
        from airflow_skald.core.run.runner import HISTOGRAM_PHASE

        decision = self.drive(HISTOGRAM_PHASE, run)
        if decision is None:
            return None
        d = decision.to_dict()
        keys = ("node", "node_paper", "dm_star", "dm_star_arx", "dm", "precision", "n_records")
        more = ("n_suppressed", "max_suppressed", "n_equivalence_classes", "min_class_size")
        figures = ("privacy_models", "lattice")  # each criterion and the figure it reached
        return {"artifacts": run.store.uri(), **{k: d[k] for k in (*keys, *more, *figures)}}


class GeneraliseOperator(SkaldBaseOperator):
    """Phase 3: generalise each chunk to the chosen node, verify, write the manifest, commit.

    Parts are staged beside the output under a name unique to the DAG run and moved into place
    only after the written release passed verification; the manifest (written last), the run
    record and the report are copied to the run's artifacts and linked from its tasks, and one
    asset event per release records its figures on the Asset of its output location.
    """

    operator_extra_links = (SkaldManifestLink(),)  # the plugin adds both links to every task

    def run_phase(self, run, context) -> Any:
        from airflow_skald.core.release.write.replaced import archive_replaced
        from airflow_skald.core.run import runner as R

        R.check_still_current(run)  # a stale retry is refused before any work
        if self.mode == "partial":
            R.check_lease(run, dag_run_gone)
            group, chunk_ids = self.group()
            written = R.run_group(R.GENERALISE, run, group, chunk_ids)
            return {"group": group, "parts": written.names}
        manifest = R.already_published(run) if self.mode == "merge" else None
        if manifest is None and run.config.database is not None:  # the staged input went at
            manifest = R.already_published(run, own=True)  # the commit: a cleared task re-publishes
        if manifest is None:
            with R.claim_output(run, LEASE_TTL_S, release="on_success", judge=dag_run_gone):
                if self.mode == "all":
                    R.prepare_staging(run.staging, private=run.config.output_table is not None)
                else:
                    R.drop_temporaries(run.staging)
                # the records of a release another run made, kept beside the output before
                # this run replaces it: the plugin serves them (core/release/write/replaced.py)
                archive_replaced(run.config.output.path, run.token)
                manifest = self.drive(R.GENERALISE, run)
        run.remove_extract()  # committed: a database input's staged chunks go
        return self.publish(run, manifest, context)

    def publish(self, run, manifest: dict, context) -> dict:
        """The release's manifest, run record and report into the run's artifacts; its asset
        event; a small summary for XCom."""
        from airflow_skald.core.run.runner import copy_release_records
        from airflow_skald.operators.release_event import emit_release_event, input_events
        from airflow_skald.operators.urls import MANIFEST, REPORT, release_file_url

        copy_release_records(run)
        out = run.config.output.path
        table = run.config.output_table
        if table is not None:  # the release is the table: its Asset is the table's URI
            from airflow_skald.core.data.database.connection import table_asset_uri
            from airflow_skald.operators.secrets import connection_uri

            out = table_asset_uri(connection_uri(table.connection), table.qualified)
        self.log.info(
            "release committed at %s: node %s, DM*=%s, %s suppressed, verified=%s",
            out,
            manifest["node"],
            manifest["dm_star"],
            manifest["n_suppressed"],
            manifest["verified"],
        )
        dag_id, run_id = run.record.airflow["dag_id"], run.record.airflow["run_id"]
        links = {
            "output_path": out,
            "manifest_url": release_file_url(dag_id, run_id, MANIFEST),
            "report_url": release_file_url(dag_id, run_id, REPORT),
            "config": run.config.source,
            "input_events": input_events(context),
        }
        emit_release_event(context, self.outlets, manifest, links)
        seen = getattr(self, "_lineage", None) or {}
        self._lineage = {
            "input": seen.get("input") or run.config.input.path,
            "output": seen.get("output") or out,
            "manifest": manifest,
        }
        keys = ("node", "node_paper", "dm_star", "n_records", "n_suppressed")
        more = ("n_equivalence_classes", "min_class_size", "verified", "privacy_models")
        return {
            "release": out,
            **({"release_folder": run.config.output.path} if table is not None else {}),
            "manifest": run.store.uri("manifest.json"),
            "manifest_url": links["manifest_url"],
            "artifacts": run.store.uri(),
            **{k: manifest[k] for k in (*keys, *more)},
        }
