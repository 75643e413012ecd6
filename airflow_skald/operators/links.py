"""Operator extra link: the run's manifest, served by the SKALD plugin view."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

PLUGIN_PREFIX = "/skald"


def manifest_url(dag_id: str, run_id: str, name: str = "manifest.json") -> str:
    """URL of a run artifact in the plugin view, relative to the API server's base URL."""
    try:
        from airflow.sdk.configuration import conf

        base = conf.get("api", "base_url", fallback="") or ""
    except Exception:  # pragma: no cover
        base = ""
    return f"{base.rstrip('/')}{PLUGIN_PREFIX}/runs/{quote(dag_id, safe='')}/{quote(run_id, safe='')}/{name}"


class SkaldManifestLink(BaseOperatorLink):
    """ "SKALD manifest" button on the task: the release manifest of this DAG run."""

    name = "SKALD manifest"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        return manifest_url(ti_key.dag_id, ti_key.run_id)
