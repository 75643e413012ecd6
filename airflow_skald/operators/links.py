"""Operator extra links ("SKALD manifest", "SKALD report") of a DAG run's release.

Both point at the SKALD plugin's FastAPI app (``airflow_skald/plugin.py``), which serves the
files of the release the run published from the release folder itself (found through the
run's asset event), behind Airflow's auth; so a link survives a move of the run-artifact store.

``GeneraliseOperator`` declares ``SkaldManifestLink`` itself. The plugin also attaches both
links to all three SKALD operators (``SkaldPlugin.operator_extra_links``): the API server then
computes them from the task instance key, so every task of a run links the run's manifest and
report; a run that has published no release yet gets an empty link (a disabled button).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperatorLink

from airflow_skald.operators.urls import MANIFEST, REPORT, release_file_url

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

# The operators the plugin attaches both links to, by name and module (what Airflow matches on
# when it deserialises a task): importing operators.skald here would make an import circle.
OPERATOR_MODULE = "airflow_skald.operators.skald"
OPERATOR_NAMES = ("EncodeOperator", "HistogramLatticeOperator", "GeneraliseOperator")


def release_of_run(dag_id: str, run_id: str) -> str | None:
    """The URI of the release a DAG run published (its SKALD asset event), or None. Reads
    Airflow's metadata DB: for the API server (links, the plugin's pages)."""
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_skald.operators.release_event import RELEASE_MARKER

    with create_session() as session:
        events = session.scalars(
            select(AssetEvent)
            .where(AssetEvent.source_dag_id == dag_id, AssetEvent.source_run_id == run_id)
            .order_by(AssetEvent.timestamp.desc())
        )
        for event in events:
            extra = event.extra if isinstance(event.extra, dict) else {}
            if extra.get(RELEASE_MARKER):
                return str(extra.get("release") or event.uri)
    return None


def newest_release_on(uri: str) -> tuple[str, str] | None:
    """(DAG id, run id) of the newest SKALD release event on the Asset `uri` (a table
    release's: the run whose release the table holds), or None. Reads Airflow's metadata DB."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_skald.operators.release_event import RELEASE_MARKER

    with create_session() as session:
        events = session.scalars(
            select(AssetEvent)
            .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
            .where(AssetModel.uri == uri)
            .order_by(AssetEvent.timestamp.desc(), AssetEvent.id.desc())
        )
        for event in events:
            extra = event.extra if isinstance(event.extra, dict) else {}
            if extra.get(RELEASE_MARKER):
                return str(event.source_dag_id or ""), str(event.source_run_id or "")
    return None


class _ReleaseFileLink(BaseOperatorLink):
    artifact = MANIFEST

    @property
    def operators(self) -> list[type[Any]]:  # type: ignore[override]
        """Read by Airflow for links a plugin registers: the SKALD operators (stand-ins
        with their names and module)."""
        return [type(n, (), {"__module__": OPERATOR_MODULE}) for n in OPERATOR_NAMES]

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        try:
            if release_of_run(ti_key.dag_id, ti_key.run_id) is None:
                return ""  # no release published (yet): Airflow shows the button disabled
        except Exception:  # cannot tell (no DB here): link anyway
            pass
        return release_file_url(ti_key.dag_id, ti_key.run_id, self.artifact)


class SkaldManifestLink(_ReleaseFileLink):
    """ "SKALD manifest" button on the task: the manifest of this DAG run's release."""

    name = "SKALD manifest"
    artifact = MANIFEST


class SkaldReportLink(_ReleaseFileLink):
    """ "SKALD report" button on the task: the report of this DAG run's release."""

    name = "SKALD report"
    artifact = REPORT
