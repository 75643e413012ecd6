"""UI parts only (Airflow 3 loads operators from providers, not plugins).

A FastAPI app mounted by the API server at ``/skald``, behind Airflow's own auth (JWT bearer token
or the UI's session cookie):

- ``/skald/releases/{dag_id}/{run_id}/{name}``: a file of the release the run published
  (``manifest.json``, ``report.html``, ``effective.json``, ``skald.yaml``, ``run.json``: figures
  and settings, never a data value), read from the release folder itself (found through the
  run's asset event), so links survive a move of the run-artifact store. If a later run
  replaced that release, the records that run kept beside the output are served
  (``core/release/write/replaced.py``; the report with a banner saying it was replaced, by which
  run), else the run's own copies in its artifacts; otherwise 404 naming the run that
  replaced it. A table release's records are its run's copies in the artifacts; its report
  has the banner when a newer release event on the same table names another run. Needs read
  access to the DAG.
- ``/skald/runs/{dag_id}/{run_id}/manifest.json`` and ``.../report.html``: the copies in a
  run's artifact folder (``[skald] artifacts``), for links recorded before the above existed.
- ``/skald/releases``: "SKALD releases", every release recorded as an asset event on the
  ``skald-release`` alias (``operators/release_event.py``), newest first: time, DAG, run (a link
  to the run), output (and, for a release a later event on the same output replaced, by which
  run, a link to it), k / l / t, node, DM*, suppressed, verified, config path, config_sha256
  and input_fingerprint (whole), links to report, manifest, effective config and YAML (for a
  replaced release whose records are kept nowhere: "gone", never a dead link). Needs read access
  to assets; rows are limited to the DAGs the user may read. Shown in the UI under Browse ->
  "SKALD releases" (an external view embedded by the UI).
- ``/skald/schemas/skald_release.json``: the JSON Schema of the ``skald_release`` OpenLineage
  run facet (``operators/lineage_schema.py``; the facets' ``_schemaURL``). No login needed.

The plugin also attaches the "SKALD manifest" and "SKALD report" extra links to all three SKALD
operators (``operators/links.py``).
"""

from __future__ import annotations

import contextlib
import html
import json
from collections.abc import Mapping
from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_skald.operators.lineage_schema import SCHEMA, SCHEMA_ROUTE
from airflow_skald.operators.links import SkaldManifestLink, SkaldReportLink
from airflow_skald.operators.urls import (
    CONFIG_YAML,
    EFFECTIVE,
    MANIFEST,
    REPORT,
    SERVED,
    release_file_url,
    run_url,
)
from airflow_skald.releases_page import render_releases

LEGACY = (MANIFEST, REPORT)  # what /runs/ serves from the run's artifacts
RELEASES_ROUTE = "/releases"
MAX_ROWS = 1000


def _fmt_node(node: Any) -> str:
    if isinstance(node, Mapping):
        return ", ".join(f"{name}={level}" for name, level in node.items())
    return "" if node is None else str(node)


def _fmt_criteria(extra: Mapping[str, Any]) -> str:
    """``k=10`` plus each l-diversity / t-closeness criterion (``l=3 (disease)``, ``t=0.2``)."""
    parts = [f"k={extra.get('k')}"]
    for crit in extra.get("criteria") or ():
        if not isinstance(crit, Mapping):
            continue
        attr = crit.get("attribute") or crit.get("sensitive_attribute") or crit.get("column")
        for key in ("l", "t"):
            if crit.get(key) is not None:
                parts.append(f"{key}={crit[key]}" + (f" ({attr})" if attr else ""))
    return ", ".join(parts)


def release_rows(events: list[Any]) -> list[dict]:
    """Table rows from AssetEvent rows (or any objects with the same attributes), newest
    first; a release that a newer event on the same output replaced says by which run."""
    rows = []
    newer: dict[str, tuple[str, str]] = {}  # release URI -> (dag id, run id) of the next newer

    def newest_first(ev: Any) -> tuple[float, int]:
        return (ev.timestamp.timestamp() if ev.timestamp else 0.0, getattr(ev, "id", 0) or 0)

    for ev in sorted(events, key=newest_first, reverse=True):
        extra = ev.extra if isinstance(ev.extra, Mapping) else {}
        if not extra.get("skald_release"):
            continue
        dag_id = ev.source_dag_id or extra.get("dag_id") or ""
        run_id = ev.source_run_id or extra.get("run_id") or ""
        release = extra.get("release", "")
        rows.append(
            {
                "time": ev.timestamp.strftime("%Y-%m-%d %H:%M:%S UTC") if ev.timestamp else "",
                "dag_id": dag_id,
                "run_id": run_id,
                "run_url": run_url(dag_id, run_id),
                "release": release,
                "replaced_by": newer[release][1] if release in newer else None,
                "replaced_by_url": run_url(*newer[release]) if release in newer else None,
                "privacy": _fmt_criteria(extra),
                "suppression_limit": extra.get("suppression_limit", ""),
                "node": _fmt_node(extra.get("node")),
                "node_paper": extra.get("node_paper", ""),
                "dm_star": extra.get("dm_star", ""),
                "n_suppressed": extra.get("n_suppressed", ""),
                "n_records": extra.get("n_records", ""),
                "verified": extra.get("verified"),
                "config": extra.get("config") or "",
                "config_sha256": extra.get("config_sha256") or "",
                "input_fingerprint": extra.get("input_fingerprint") or "",
                "input_events": extra.get("input_events") or [],
                # built here from the event's own run, never taken from the extra
                "report_url": release_file_url(dag_id, run_id, REPORT),
                "manifest_url": release_file_url(dag_id, run_id, MANIFEST),
                "effective_url": release_file_url(dag_id, run_id, EFFECTIVE),
                "yaml_url": release_file_url(dag_id, run_id, CONFIG_YAML),
            }
        )
        newer[release] = (dag_id, run_id)
    return rows


def read_release_file(dag_id: str, run_id: str, name: str) -> bytes:
    """A file of the release run `run_id` published, from the release folder (or, if a later
    run replaced it, the run's own copy in its artifacts); FileNotFoundError says why not."""
    from airflow_skald.core.data.io import filesystem
    from airflow_skald.core.release.write.output_target import release_in_place
    from airflow_skald.operators.links import newest_release_on, release_of_run

    uri = release_of_run(dag_id, run_id)
    if uri is None:
        raise FileNotFoundError(f"run {dag_id}/{run_id} has published no SKALD release")
    if uri.startswith("postgres://"):  # a table release: its records, copied to the run's
        data = replaced_record(uri, dag_id, run_id, name)  # artifacts after the commit
        if data is None:
            raise FileNotFoundError(f"the run-artifact store holds no {name} of run {run_id}")
        # the table holds the release of the newest run that published one there
        newest = newest_release_on(uri)
        if name == REPORT and newest is not None and newest != (dag_id, run_id):
            return with_replaced_banner(data, f"by run {newest[0]}-{newest[1]}", uri)
        return data
    location = local_path(uri)
    token = f"{dag_id}-{run_id}"
    in_place = release_in_place(location)
    if in_place == token:
        fs, root = filesystem(location)
        path = root.rstrip("/") + "/" + name
        if fs.exists(path):
            return fs.cat_file(path)
        raise FileNotFoundError(f"the release {uri} has no {name}")
    by = f"by run {in_place}" if in_place else "(it is gone)"
    data = replaced_record(location, dag_id, run_id, name)
    if data is None:
        raise FileNotFoundError(
            f"the release {uri} of run {run_id} was replaced {by}, and its {name} is kept "
            "neither beside the output nor in the run-artifact store"
        )
    return with_replaced_banner(data, by, uri) if name == REPORT else data


def replaced_record(location: str, dag_id: str, run_id: str, name: str) -> bytes | None:
    """A record of run `run_id`'s replaced release: kept beside the output by the run that
    replaced it (``core/release/write/replaced.py``), else the run's own copy in its artifacts
    (releases replaced before records were kept); None if neither is there."""
    from airflow_skald.core.release.write.replaced import archived_file
    from airflow_skald.core.run.runner import CONFIG_ARCHIVE
    from airflow_skald.operators.artifacts import RunArtifacts

    with contextlib.suppress(Exception):
        kept = archived_file(location, f"{dag_id}-{run_id}", name)
        if kept is not None:
            return kept
    copy = (CONFIG_ARCHIVE + name) if name in (EFFECTIVE, CONFIG_YAML) else name
    with contextlib.suppress(Exception):
        store = RunArtifacts(None, dag_id, run_id)
        if store.exists(copy):
            return store.read_bytes(copy)
    return None


def with_replaced_banner(report: bytes, by: str, uri: str) -> bytes:
    """A replaced release's report says so at its top (the file itself is as published)."""
    e = html.escape
    banner = (
        '<div style="background:#fff1f0;border:1px solid #cf222e;color:#82071e;padding:.6rem '
        '.8rem;margin:0 0 1rem;font-weight:600">This release was replaced '
        f"{e(by)}: {e(uri)} now holds another release. This is the report of the replaced "
        "release, as it was published.</div>"
    ).encode()
    text = report.decode("utf-8", errors="replace")
    at = text.find(">", text.lower().find("<body")) + 1 if "<body" in text.lower() else 0
    return text[:at].encode() + banner + text[at:].encode()


def local_path(uri: str) -> str:
    """A release URI as the core opens it: ``file:///x`` -> ``/x``; other URLs unchanged."""
    import urllib.parse

    parts = urllib.parse.urlsplit(uri)
    return urllib.parse.unquote(parts.path) if parts.scheme == "file" else uri


def create_app():
    """The FastAPI sub-application mounted at ``/skald`` by the API server."""
    from fastapi import FastAPI

    app = FastAPI(title="SKALD run artifacts", docs_url=None, redoc_url=None, openapi_url=None)
    _add_file_routes(app)
    _add_releases_route(app)
    return app


def _add_file_routes(app) -> None:
    """A release's files, a run's artifact copies and the lineage facet's schema."""
    from airflow.api_fastapi.core_api.security import requires_access_dag
    from fastapi import Depends, HTTPException
    from fastapi.responses import Response

    @app.get(
        RELEASES_ROUTE + "/{dag_id}/{run_id}/{name}",
        dependencies=[Depends(requires_access_dag(method="GET"))],
    )
    def release_file(dag_id: str, run_id: str, name: str):
        if name not in SERVED:
            raise HTTPException(404, f"only {', '.join(SERVED)} are served")
        try:
            return Response(read_release_file(dag_id, run_id, name), media_type=SERVED[name])
        except FileNotFoundError as exc:
            raise HTTPException(404, str(exc)) from None

    @app.get(
        "/runs/{dag_id}/{run_id}/{name}",
        dependencies=[Depends(requires_access_dag(method="GET"))],
    )
    def run_artifact(dag_id: str, run_id: str, name: str):
        if name not in LEGACY:
            raise HTTPException(404, f"only {', '.join(LEGACY)} are served")
        from airflow_skald.operators.artifacts import RunArtifacts

        store = RunArtifacts(None, dag_id, run_id)
        if not store.exists(name):
            raise HTTPException(404, f"{name} not found for {dag_id}/{run_id}")
        return Response(store.read_bytes(name), media_type=SERVED[name])

    @app.get(SCHEMA_ROUTE)
    def facet_schema():
        return Response(json.dumps(SCHEMA, indent=1), media_type="application/schema+json")


def _add_releases_route(app) -> None:
    """The "SKALD releases" page (HTML or JSON), limited to the DAGs the user may read."""
    from airflow.api_fastapi.common.db.common import _get_session
    from airflow.api_fastapi.core_api.security import get_user, requires_access_asset
    from fastapi import Depends, Query
    from fastapi.responses import HTMLResponse, Response

    @app.get(
        RELEASES_ROUTE,
        dependencies=[Depends(requires_access_asset("GET"))],
        response_class=HTMLResponse,
    )
    def releases(
        limit: int = Query(200, ge=1, le=MAX_ROWS),
        fmt: str = Query("html", alias="format", pattern="^(html|json)$"),
        user=Depends(get_user),  # noqa: B008 - FastAPI dependency
        session=Depends(_get_session),  # noqa: B008
    ):
        rows = recorded_releases(session, user, limit)
        if fmt == "json":
            return Response(json.dumps(rows, indent=1), media_type="application/json")
        return HTMLResponse(render_releases(rows, limit=limit))


def recorded_releases(session, user, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` release events on the ``skald-release`` alias of the DAGs `user` may
    read, as the page's rows (a replaced release says whether its records are kept)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.models.asset import AssetAliasModel, AssetEvent
    from sqlalchemy import select

    from airflow_skald.operators.release_event import RELEASE_ALIAS_NAME

    readable = get_auth_manager().get_authorized_dag_ids(user=user, method="GET")
    stmt = (
        select(AssetEvent)
        .where(AssetEvent.source_aliases.any(AssetAliasModel.name == RELEASE_ALIAS_NAME))
        .where(AssetEvent.source_dag_id.in_(readable or set()))
        .order_by(AssetEvent.timestamp.desc(), AssetEvent.id.desc())
        .limit(limit)
    )
    rows = release_rows(list(session.scalars(stmt)))
    for row in rows:  # never a dead link: a replaced release's records may be gone
        if row["replaced_by"]:
            kept = replaced_record(
                local_path(row["release"]), row["dag_id"], row["run_id"], MANIFEST
            )
            row["files_kept"] = kept is not None
    return rows


class SkaldPlugin(AirflowPlugin):
    """Registered through the ``airflow.plugins`` entry point."""

    name = "skald"
    fastapi_apps = [{"app": create_app(), "url_prefix": "/skald", "name": "SKALD run artifacts"}]
    # Embedded by the UI (Browse -> SKALD releases); the href is relative (no leading slash): the
    # UI resolves it against its own base URL, so a deployment under a sub-path works too.
    external_views = [
        {
            "name": "SKALD releases",
            "href": "skald" + RELEASES_ROUTE,
            "url_route": "skald-releases",
            "destination": "nav",
            "category": "browse",
        }
    ]
    # Both links on every SKALD operator's tasks (each link's ``operators`` names them).
    operator_extra_links = [SkaldManifestLink(), SkaldReportLink()]
