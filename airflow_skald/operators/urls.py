"""URLs of the SKALD plugin's pages (``airflow_skald/plugin.py``), for links and event extras.

A release's files are served from the release folder itself (``/skald/releases/{dag_id}/
{run_id}/{name}``: the plugin finds the run's release from its asset event), so links keep
working when the run-artifact store (``[skald] artifacts``) moves or is cleaned. Imports
nothing of Airflow but its configuration.
"""

from __future__ import annotations

from urllib.parse import quote

PLUGIN_PREFIX = "/skald"
MANIFEST = "manifest.json"
REPORT = "report.html"
EFFECTIVE = "effective.json"
CONFIG_YAML = "skald.yaml"
RUN = "run.json"
# what the plugin serves of a release: figures and settings, never a data value
SERVED = {
    MANIFEST: "application/json",
    REPORT: "text/html",
    EFFECTIVE: "application/json",
    CONFIG_YAML: "text/plain; charset=utf-8",
    RUN: "application/json",
}


def base_url() -> str:
    """``[api] base_url`` without its trailing slash ("" when unset: relative links)."""
    try:
        from airflow.sdk.configuration import conf

        return (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    except Exception:  # pragma: no cover
        return ""


def release_file_url(dag_id: str, run_id: str, name: str = MANIFEST) -> str:
    """URL of a file of the release a DAG run published, served from the release folder."""
    return (
        f"{base_url()}{PLUGIN_PREFIX}/releases/{quote(dag_id, safe='')}/"
        f"{quote(run_id, safe='')}/{name}"
    )


def run_url(dag_id: str, run_id: str) -> str:
    """The DAG run's page in the Airflow UI."""
    return f"{base_url()}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
