"""OpenLineage for the SKALD operators (Airflow's ``apache-airflow-providers-openlineage``).

``operator_lineage(input_path, output_path, manifest)`` builds what the operators'
``get_openlineage_facets_on_complete`` returns: the input dataset (a file, folder, glob or
URL), the release as output dataset (the last task only), and one custom run facet
``skald_release`` with the release's figures: k, l, t (the criteria), the node, DM*, the
suppressed records, verified, config_sha256, input_fingerprint. Never a data value. Its
``_schemaURL`` points at its JSON Schema, served by the plugin (``lineage_schema.py``).

Dataset naming follows OpenLineage's conventions: ``file:///abs/path`` -> namespace ``file``,
name ``/abs/path``; ``s3://bucket/prefix`` -> namespace ``s3://bucket``, name ``prefix``.
Imported only when the provider is installed and asks for lineage.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

import attr
from airflow.providers.openlineage.extractors import OperatorLineage
from openlineage.client.event_v2 import Dataset
from openlineage.client.facet_v2 import RunFacet

from airflow_skald.operators.lineage_schema import schema_url
from airflow_skald.operators.release_event import criteria, decimal_string, release_uri

FACET = "skald_release"


@attr.define
class SkaldReleaseRunFacet(RunFacet):
    """The figures of a SKALD release (ADR 0105); no data values."""

    k: int
    l: list = attr.field(factory=list)  # noqa: E741 - the criterion's own name
    t: list = attr.field(factory=list)
    suppression_limit: str = ""
    node: dict = attr.field(factory=dict)
    node_paper: str = ""
    dm_star: int | None = None
    n_records: int | None = None
    n_suppressed: int | None = None
    verified: bool | None = None
    config_sha256: str = ""
    input_fingerprint: str = ""

    @staticmethod
    def _get_schema() -> str:
        return schema_url()  # served by the plugin (operators/lineage_schema.py)


def dataset(path: str) -> Dataset:
    """An OpenLineage dataset for a local path or URL (see the module docstring)."""
    uri = release_uri(path)
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme == "file":
        return Dataset(namespace="file", name=urllib.parse.unquote(parts.path))
    return Dataset(namespace=f"{parts.scheme}://{parts.netloc}", name=parts.path.lstrip("/"))


def release_facet(manifest: Mapping[str, Any]) -> SkaldReleaseRunFacet:
    found = criteria(manifest)
    return SkaldReleaseRunFacet(
        k=int(manifest["k"]),
        l=[
            {k: v for k, v in c.items() if k in ("model", "attribute", "l")}
            for c in found
            if "l" in c
        ],
        t=[
            {k: v for k, v in c.items() if k in ("model", "attribute", "t")}
            for c in found
            if "t" in c
        ],
        suppression_limit=decimal_string(manifest["suppression_limit"]),
        node=dict(manifest.get("node") or {}),
        node_paper=str(manifest.get("node_paper") or ""),
        dm_star=manifest.get("dm_star"),
        n_records=manifest.get("n_records"),
        n_suppressed=manifest.get("n_suppressed"),
        verified=manifest.get("verified"),
        config_sha256=str(manifest.get("config_sha256") or ""),
        input_fingerprint=str(manifest.get("input_fingerprint") or ""),
    )


def operator_lineage(
    input_path: str | None, output_path: str | None, manifest: Mapping[str, Any] | None
) -> OperatorLineage:
    """Inputs, outputs (with a manifest: the release) and the release facet."""
    inputs = [dataset(input_path)] if input_path else []
    if manifest is None or not output_path:
        return OperatorLineage(inputs=inputs)
    return OperatorLineage(
        inputs=inputs,
        outputs=[dataset(output_path)],
        run_facets={FACET: release_facet(manifest)},
    )
