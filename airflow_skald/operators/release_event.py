"""One Airflow asset event per SKALD release, on one Asset per output location.

The DAGs declare ``outlets=[RELEASE_ALIAS]`` (an ``AssetAlias``); at run time the final generalise
task resolves the alias to the Asset of *its* output location and adds one event with the
release's figures. So every output location is its own Asset (lineage, scheduling on a release,
the asset's history in the UI) and the alias's events across all Assets are the list of past
releases (the plugin's "SKALD releases" page).

Asset identity (``release_uri``): the normalised URI of the output path, used as both the
Asset's name and URI (Airflow's default when only a URI is given, so a consumer DAG can schedule
on ``Asset("file:///data/releases/adult")``):

- a local path -> ``file://`` + the absolute, normalised path (``..``, ``.``, ``//`` and trailing
  slashes removed; symlinks are not resolved, percent-encoded where needed);
- a URL -> lower-case scheme, host, the normalised path without trailing slash; user info
  (an ObjectStoragePath connection id such as ``s3://aws_default@bucket/x``) and fragments are
  dropped, so ``s3://aws_default@bucket/x/`` and ``s3://bucket/x`` are the same Asset.

Event extra (JSON; figures and identities only, never a data value)::

    {"skald_release": 1, "release": <release_uri>, "k": int,
     "suppression_limit": "0.01" (exact decimal string), "criteria": [..] (may be empty),
     "node": {qid: level}, "node_paper": str, "dm_star": int, "n_records": int,
     "n_suppressed": int, "verified": bool, "config_sha256": str, "input_fingerprint": str,
     "dag_id": str, "run_id": str, "manifest_url": str, "report_url": str,
     "config": str (the config file's path), "input_events": [..] (the asset events that
     triggered the run: {"id", "uri", "timestamp", "source_dag_id", "source_run_id"}; empty unless
     the DAG is scheduled on an Asset),
     "risk": {"records_at_risk", "highest_risk", "average_risk", "sample_uniques",
              "population_uniques", "dankar_model"} | null (docs/design.md §4c headline figures)}

``manifest_url``/``report_url`` are the plugin's URLs of the files in the release folder itself
(``operators/urls.py``), not of the run-artifact store, which may move or be cleaned.

One event per release: Airflow records outlet events when a task *succeeds*, so a failed
attempt followed by a successful retry gives one event; but a *cleared* task that succeeds again
(or re-publishes a release its run already committed) would add a second one. Before adding,
``emit_release_event`` therefore asks the Execution API for the Asset's events and skips the
alias event when one from the same DAG run already exists (``GetAssetEventByAsset``; an Asset
not yet known has no events). If that question cannot be asked (no task supervisor, API
error), the event is emitted: a duplicate is better than a missing audit record.

Importing this module imports Airflow's task SDK only (DAG parsing stays fast).
"""

from __future__ import annotations

import logging
import os
import posixpath
import urllib.parse
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from airflow.sdk import Asset, AssetAlias

log = logging.getLogger(__name__)

RELEASE_ALIAS_NAME = "skald-release"
RELEASE_ALIAS = AssetAlias(name=RELEASE_ALIAS_NAME)
RELEASE_MARKER = "skald_release"  # the extra key that marks a SKALD release event

# Manifest keys copied as they are into the event extra (docs/design.md §5 / core/release/write/manifest.py).
_FROM_MANIFEST = (
    "k",
    "node",
    "node_paper",
    "dm_star",
    "n_records",
    "n_suppressed",
    "verified",
    "config_sha256",
    "input_fingerprint",
)
EXTRA_KEYS = (
    RELEASE_MARKER,
    "release",
    "k",
    "suppression_limit",
    "criteria",
    *_FROM_MANIFEST[1:],
    "dag_id",
    "run_id",
    "manifest_url",
    "report_url",
    "config",
    "input_events",
    "risk",
)


def release_uri(path: str) -> str:
    """The normalised URI of an output location: the release's Asset name and URI."""
    text = str(path).strip()
    if not text:
        raise ValueError("empty output path")
    parts = urllib.parse.urlsplit(text)
    scheme = parts.scheme.lower()
    # "C:\\x" would parse with scheme "c"; a one-letter scheme is a drive, not a URL
    if not scheme or len(scheme) == 1 or scheme in ("file", "local"):
        local = urllib.parse.unquote(parts.path) if scheme in ("file", "local") else text
        local = os.path.abspath(os.path.expanduser(local))
        return "file://" + urllib.parse.quote(local.replace(os.sep, "/"), safe="/:@!$&'()*+,;=-._~")
    host = parts.hostname or ""  # drops user info (ObjectStoragePath's conn_id@) and lowercases
    if parts.port:
        host = f"{host}:{parts.port}"
    norm = posixpath.normpath("/" + parts.path.lstrip("/")) if parts.path.strip("/") else ""
    norm = norm.rstrip("/")
    query = urllib.parse.urlencode(sorted(urllib.parse.parse_qsl(parts.query)))
    return urllib.parse.urlunsplit((scheme, host, norm, query, ""))


def release_asset(path: str) -> Asset:
    """The Asset of the release at ``path`` (name = URI = ``release_uri(path)``)."""
    uri = release_uri(path)
    return Asset(name=uri, uri=uri)


def decimal_string(value: Any) -> str:
    """An exact decimal string for a fraction such as suppression_limit: 0.01 -> "0.01".

    A float is written as its shortest round-tripping decimal (``repr``), so the string reads
    back to the very same float; a Decimal or a string is kept exact; exponents are expanded.
    """
    if isinstance(value, bool):
        raise TypeError("suppression_limit must be a number, not a bool")
    if isinstance(value, float):
        value = repr(value)
    try:
        dec = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"not a decimal number: {value!r}") from None
    if not dec.is_finite():
        raise ValueError(f"not a finite decimal number: {value!r}")
    return format(dec, "f")


def criteria(manifest: Mapping[str, Any]) -> list[dict]:
    """The manifest's privacy criteria beyond k (l-diversity, t-closeness), as a list of dicts.

    ``manifest["privacy_models"]`` is a list of criterion dicts (``core/privacy``'s
    ``describe()``/``figures()``, e.g. ``{"model": "l-diversity", "l": 3, ...}``) or a mapping
    name -> dict; the k-anonymity entry is left out (it is the extra's ``k``); absent gives ``[]``.
    """
    models = manifest.get("privacy_models")
    if not models:
        return []
    if isinstance(models, Mapping):
        items = []
        for name, body in models.items():
            item = {"model": name}
            item.update(body if isinstance(body, Mapping) else {"value": body})
            items.append(item)
    else:
        items = [dict(m) for m in models if isinstance(m, Mapping)]
    # k-anonymity is the extra's own "k"
    return [m for m in items if m.get("model") not in ("k-anonymity", "k")]


def release_extra(
    manifest: Mapping[str, Any], *, output: str, dag_id: str, run_id: str, links: Mapping[str, Any]
) -> dict:
    """The event extra of one release (see the module docstring for the schema)."""
    from airflow_skald.operators.urls import MANIFEST, REPORT, release_file_url

    missing = [key for key in (*_FROM_MANIFEST, "suppression_limit") if key not in manifest]
    if missing:
        raise KeyError(f"the manifest lacks {', '.join(missing)}")
    extra: dict[str, Any] = {RELEASE_MARKER: 1, "release": release_uri(output)}
    extra["k"] = manifest["k"]
    extra["suppression_limit"] = decimal_string(manifest["suppression_limit"])
    extra["criteria"] = criteria(manifest)
    for key in _FROM_MANIFEST[1:]:
        extra[key] = manifest[key]
    extra["dag_id"] = dag_id
    extra["run_id"] = run_id
    extra["manifest_url"] = links.get("manifest_url") or release_file_url(dag_id, run_id, MANIFEST)
    extra["report_url"] = links.get("report_url") or release_file_url(dag_id, run_id, REPORT)
    extra["config"] = str(links.get("config") or "")
    extra["input_events"] = list(links.get("input_events") or [])
    extra["risk"] = risk_headline(manifest.get("risk_analysis"))
    assert tuple(extra) == EXTRA_KEYS
    return extra


def risk_headline(analysis: Any) -> dict | None:
    """The risk analysis's headline figures (docs/design.md §4c), None if the manifest has none."""
    if not isinstance(analysis, Mapping):
        return None
    prosecutor = analysis.get("prosecutor") or {}
    return {
        "records_at_risk": prosecutor.get("records_at_risk"),
        "highest_risk": prosecutor.get("highest_risk"),
        "average_risk": prosecutor.get("average_risk"),
        "sample_uniques": analysis.get("sample_uniques"),
        "population_uniques": (analysis.get("population_uniques") or {}).get("dankar"),
        "dankar_model": analysis.get("dankar_model"),
    }


def input_events(context: Mapping[str, Any]) -> list[dict]:
    """The asset events that triggered this run (an Asset-scheduled DAG), as plain dicts:
    which upstream update the release was made from, by its event id (as the REST API and
    the UI show it: ``GET /api/v2/assets/events``), Asset URI, time and source. Empty for
    other runs; an id the Execution API cannot tell is null."""
    out = []
    try:
        triggering = context.get("triggering_asset_events") or {}
        for events in triggering.values():
            for ev in events:
                asset = getattr(ev, "asset", None)
                stamp = getattr(ev, "timestamp", None)
                out.append(
                    {
                        "id": _event_id(ev),
                        "uri": getattr(asset, "uri", None) or "",
                        "timestamp": stamp.isoformat() if stamp is not None else "",
                        "source_dag_id": getattr(ev, "source_dag_id", None) or "",
                        "source_run_id": getattr(ev, "source_run_id", None) or "",
                    }
                )
    except Exception as exc:  # the accessor could not ask the API
        log.warning("could not read the triggering asset events: %s", exc)
    return sorted(out, key=lambda e: (e["uri"], e["timestamp"], e["id"] or 0))


_SAME_EVENT = ("timestamp", "source_dag_id", "source_run_id", "source_task_id", "source_map_index")


def same_event_id(ev: Any, candidates: Iterable[Any]) -> int | None:
    """The id of the one candidate (an ``AssetEventResult`` of the event's Asset) that is the
    triggering event `ev` (which carries no id): same time, source and extra. None when none
    or several match."""
    ids = {
        c.id
        for c in candidates
        if all(getattr(c, k, None) == getattr(ev, k, None) for k in _SAME_EVENT)
        and (getattr(c, "extra", None) or {}) == (getattr(ev, "extra", None) or {})
    }
    return ids.pop() if len(ids) == 1 else None


def _event_id(ev: Any) -> int | None:
    """The triggering event's id, asked of the Execution API: the events of its Asset at its
    timestamp (``GetAssetEventByAsset``), the one with its source and extra."""
    asset, stamp = getattr(ev, "asset", None), getattr(ev, "timestamp", None)
    if asset is None or stamp is None:
        return None
    try:
        from airflow.sdk.execution_time.context import InletEventsAccessor

        found = InletEventsAccessor(asset_name=asset.name, asset_uri=asset.uri)
        return same_event_id(ev, found.after(stamp).before(stamp))
    except Exception as exc:  # no supervisor (plain unit test) or the API refused
        log.warning("could not look up the id of the asset event on %s: %s", asset.uri, exc)
        return None


def _run_ids(context: Mapping[str, Any]) -> tuple[str, str]:
    ti = context.get("ti") or context.get("task_instance")
    dag_run = context.get("dag_run")
    dag_id = (
        getattr(ti, "dag_id", None)
        or getattr(dag_run, "dag_id", None)
        or getattr(context.get("dag"), "dag_id", None)
    )
    run_id = (
        context.get("run_id") or getattr(ti, "run_id", None) or getattr(dag_run, "run_id", None)
    )
    if not dag_id or not run_id:
        raise ValueError("the task context has no dag_id/run_id")
    return str(dag_id), str(run_id)


def already_emitted(asset: Asset, dag_id: str, run_id: str) -> bool | None:
    """Whether ``asset`` has a SKALD release event from this DAG run (None: could not tell)."""
    try:
        from airflow.sdk.execution_time.context import InletEventsAccessor

        events = list(InletEventsAccessor(asset_name=asset.name, asset_uri=asset.uri))
    except Exception as exc:  # no supervisor (plain unit test) or the API refused
        log.warning("could not list the asset events of %s (%s); emitting anyway", asset.uri, exc)
        return None
    return any(
        e.source_dag_id == dag_id
        and e.source_run_id == run_id
        and isinstance(e.extra, Mapping)
        and e.extra.get(RELEASE_MARKER)
        for e in events
    )


def emit_release_event(
    context: Mapping[str, Any],
    outlets: Iterable[Any] | None,
    manifest: Mapping[str, Any],
    links: Mapping[str, Any],
) -> dict:
    """Record this run's release as one asset event; return its extra.

    ``links`` must hold ``"output_path"`` (the release's output location as configured) and may
    hold ``"manifest_url"`` / ``"report_url"`` (default: the plugin view's URLs for this run).
    For each ``AssetAlias`` in ``outlets`` (the DAGs use ``RELEASE_ALIAS``) one event is added to
    the Asset of the output location, unless this DAG run already has one there (a cleared and
    re-run task). A plain ``Asset`` outlet (a user DAG's own) gets the same extra on the event
    Airflow records for it anyway.
    """
    output = links.get("output_path") or links.get("release")
    if not output:
        raise ValueError("emit_release_event needs links['output_path']")
    dag_id, run_id = _run_ids(context)
    extra = release_extra(manifest, output=str(output), dag_id=dag_id, run_id=run_id, links=links)
    outlets = list(outlets or ())
    if not outlets:
        return extra
    events = context["outlet_events"]
    asset = release_asset(str(output))
    seen: bool | None = None
    for outlet in outlets:
        if isinstance(outlet, AssetAlias):
            if seen is None:
                seen = bool(already_emitted(asset, dag_id, run_id))
            if seen:
                log.info(
                    "release %s already has its asset event from run %s; not adding another",
                    asset.uri,
                    run_id,
                )
                continue
            events[outlet].add(asset, extra=dict(extra))
            log.info("asset event for release %s via alias %s", asset.uri, outlet.name)
        elif isinstance(outlet, Asset):
            events[outlet].extra = dict(extra)
    return extra
