"""The JSON Schema of the ``skald_release`` OpenLineage run facet (``operators/lineage.py``).

The plugin serves it at ``/skald/schemas/skald_release.json`` (no login: it holds no data), and
each facet's ``_schemaURL`` points at its definition there on the deployment that emitted the
event (``{[api] base_url}/skald/schemas/skald_release.json#/$defs/SkaldReleaseRunFacet``), as
OpenLineage asks of a custom facet. Self-contained (the two fields every OpenLineage facet has
are written out, not referenced), so a consumer can validate a facet offline. Imports nothing of
Airflow but its configuration (through ``urls.base_url``).
"""

from __future__ import annotations

from airflow_skald.operators.urls import PLUGIN_PREFIX, base_url

SCHEMA_ROUTE = "/schemas/skald_release.json"
FACET_DEF = "SkaldReleaseRunFacet"

_CRITERION = {
    "type": "object",
    "properties": {
        "model": {"type": "string", "description": "the criterion's model, e.g. l-diversity"},
        "attribute": {"type": "string", "description": "the sensitive attribute it protects"},
    },
    "required": ["model"],
}
_COUNT = {"type": ["integer", "null"], "minimum": 0}

SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "SKALD release run facet",
    "description": (
        "OpenLineage run facet `skald_release`, sent by the SKALD task that publishes a "
        "release (k-anonymised with SKALD, airflow-skald): the release's privacy criteria and "
        "figures as its manifest.json records them. Figures and identities only, never a "
        "data value."
    ),
    "$defs": {
        FACET_DEF: {
            "type": "object",
            "description": "A custom OpenLineage RunFacet (its _producer and _schemaURL below).",
            "properties": {
                "_producer": {"type": "string", "format": "uri"},
                "_schemaURL": {"type": "string", "format": "uri-reference"},
                "k": {"type": "integer", "minimum": 2, "description": "k of k-anonymity"},
                "l": {
                    "type": "array",
                    "description": "each l-diversity criterion: model, attribute, l",
                    "items": {
                        **_CRITERION,
                        "properties": {**_CRITERION["properties"], "l": {"type": "number"}},
                    },
                },
                "t": {
                    "type": "array",
                    "description": "each t-closeness criterion: model, attribute, t",
                    "items": {
                        **_CRITERION,
                        "properties": {
                            **_CRITERION["properties"],
                            "t": {"type": ["number", "string"]},
                        },
                    },
                },
                "suppression_limit": {
                    "type": "string",
                    "description": "largest share of records suppressed, as an exact decimal",
                },
                "node": {
                    "type": "object",
                    "description": "the chosen generalisation: level per quasi-identifier",
                    "additionalProperties": {"type": "integer", "minimum": 0},
                },
                "node_paper": {"type": "string", "description": "the node in SKALD's notation"},
                "dm_star": {**_COUNT, "description": "DM* of the release"},
                "n_records": {**_COUNT, "description": "records in the input"},
                "n_suppressed": {**_COUNT, "description": "records suppressed"},
                "verified": {
                    "type": ["boolean", "null"],
                    "description": "the written release was re-checked against every criterion",
                },
                "config_sha256": {
                    "type": "string",
                    "description": "SHA-256 of the effective settings (manifest.json)",
                },
                "input_fingerprint": {
                    "type": "string",
                    "description": "SHA-256 of the input chunks' files and versions",
                },
            },
            "required": ["_producer", "_schemaURL", "k", "suppression_limit"],
            "additionalProperties": False,
        }
    },
    "type": "object",
    "properties": {"skald_release": {"$ref": f"#/$defs/{FACET_DEF}"}},
}


def schema_url() -> str:
    """Where the facet's definition is served on this deployment."""
    return f"{base_url()}{PLUGIN_PREFIX}{SCHEMA_ROUTE}#/$defs/{FACET_DEF}"
