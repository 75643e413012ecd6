"""Operator extra links ("SKALD manifest", "SKALD report") and the plugin view's URLs.

Both links point at the SKALD plugin's FastAPI app (``airflow_skald/plugin.py``), which serves a
run's ``manifest.json`` and ``report.html`` from its artifact folder behind Airflow's auth.

``GeneraliseOperator`` declares ``SkaldManifestLink`` itself (its URL is pushed to XCom when the
task finishes, so the REST API's task-instance links list it). The plugin also attaches both
links to all three SKALD operators (``SkaldPlugin.operator_extra_links``): the API server then
computes them from the task instance key, so every task of a run links the run's manifest and
report; a link whose file the run has not written yet is returned empty (a disabled button).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

PLUGIN_PREFIX = "/skald"
MANIFEST = "manifest.json"
REPORT = "report.html"


def _base_url() -> str:
    try:
        from airflow.sdk.configuration import conf

        return (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    except Exception:  # pragma: no cover
        return ""


def manifest_url(dag_id: str, run_id: str, name: str = MANIFEST) -> str:
    """URL of a run artifact in the plugin view (absolute when ``[api] base_url`` is set)."""
    return f"{_base_url()}{PLUGIN_PREFIX}/runs/{quote(dag_id, safe='')}/{quote(run_id, safe='')}/{name}"


def report_url(dag_id: str, run_id: str) -> str:
    """URL of a run's ``report.html`` in the plugin view."""
    return manifest_url(dag_id, run_id, REPORT)


def skald_operators() -> list[type[Any]]:
    """The operator classes the plugin attaches both links to (imported lazily: no cycle)."""
    from airflow_skald.operators.skald import (
        EncodeOperator,
        GeneraliseOperator,
        HistogramLatticeOperator,
    )

    return [EncodeOperator, HistogramLatticeOperator, GeneraliseOperator]


class _RunArtifactLink(BaseOperatorLink):
    artifact = MANIFEST

    @property
    def operators(self) -> list[type[Any]]:  # type: ignore[override]
        """Read by Airflow for links a plugin registers: the SKALD operators."""
        return skald_operators()

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        try:
            from airflow_skald.operators.artifacts import RunArtifacts

            if not RunArtifacts(None, ti_key.dag_id, ti_key.run_id).exists(self.artifact):
                return ""  # not written (yet): Airflow shows the button disabled
        except Exception:  # cannot tell (storage unreachable): link anyway
            pass
        return manifest_url(ti_key.dag_id, ti_key.run_id, self.artifact)


class SkaldManifestLink(_RunArtifactLink):
    """ "SKALD manifest" button on the task: the release manifest of this DAG run."""

    name = "SKALD manifest"
    artifact = MANIFEST


class SkaldReportLink(_RunArtifactLink):
    """ "SKALD report" button on the task: the human-readable report of this DAG run."""

    name = "SKALD report"
    artifact = REPORT
