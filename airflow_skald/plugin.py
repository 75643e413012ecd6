"""UI parts only (Airflow 3 loads operators from providers, not plugins): a view of run artifacts.

``/skald/runs/{dag_id}/{run_id}/manifest.json`` and ``.../report.html`` are served by the API
server from the run's artifact folder (``[skald] artifacts``), behind Airflow's own auth: the
caller needs read access to the DAG (JWT bearer token or the UI's session cookie). Only the
manifest and the report are served: both hold figures, never data values; the other artifacts
(domain statistics = personal data) are never exposed here.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

SERVED = {"manifest.json": "application/json", "report.html": "text/html"}


def create_app():
    """The FastAPI sub-application mounted at ``/skald`` by the API server."""
    from airflow.api_fastapi.core_api.security import requires_access_dag
    from fastapi import Depends, FastAPI, HTTPException
    from fastapi.responses import Response

    app = FastAPI(title="SKALD run artifacts", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get(
        "/runs/{dag_id}/{run_id}/{name}",
        dependencies=[Depends(requires_access_dag(method="GET"))],
    )
    def run_artifact(dag_id: str, run_id: str, name: str) -> Response:
        if name not in SERVED:
            raise HTTPException(404, f"only {', '.join(SERVED)} are served")
        from airflow_skald.operators.artifacts import RunArtifacts

        store = RunArtifacts(None, dag_id, run_id)
        if not store.exists(name):
            raise HTTPException(404, f"{name} not found for {dag_id}/{run_id}")
        return Response(store.read_bytes(name), media_type=SERVED[name])

    return app


class SkaldPlugin(AirflowPlugin):
    """Registered through the ``airflow.plugins`` entry point."""

    name = "skald"
    fastapi_apps = [{"app": create_app(), "url_prefix": "/skald", "name": "SKALD run artifacts"}]
