"""The manifest's field kinds (docs/design.md §5): how one field of the manifest's schema is
declared (`key`: its JSON Schema, what it must be, what it means, a check JSON Schema cannot
say), the schemas its sections share (counts, levels, the risk analysis, the side files' names
and hashes, a table release) and the checks on a value's range. `manifest_schema.Manifest` is
made of them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from airflow_skald.core.transform.base import side_file_schema


class _Absent:
    """A field the manifest does not hold (None is a value: `histogram_bins: null`)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()

INT0 = {"type": "integer", "minimum": 0}
NUMBER = {"type": "number"}
TEXT = {"type": "string"}
FLAG = {"type": "boolean"}
OBJECT = {"type": "object"}
LIST = {"type": "array"}
NAMES = {"type": "array", "items": {"type": "string", "minLength": 1}}
LEVELS = {"type": "object", "minProperties": 1, "additionalProperties": {"type": "integer"}}
NOTATION = {"type": "string"}
DECIMAL = {"type": ["number", "string"]}
_SHARE_OR_NULL = {"type": ["number", "null"]}
RISK_ANALYSIS = {
    "type": "object",
    "required": ["records", "classes", "threshold", "prosecutor", "marketer_risk",
                 "sample_uniques", "population_uniques", "dankar_model"],
    "properties": {
        "records": INT0,
        "classes": INT0,
        "threshold": DECIMAL,
        "population": {"type": "integer", "minimum": 1},
        "sampling_fraction": DECIMAL,
        "population_size": _SHARE_OR_NULL,
        "prosecutor": {
            "type": "object",
            "required": ["records_at_risk", "highest_risk", "average_risk"],
            "additionalProperties": NUMBER,
        },
        "journalist": OBJECT,
        "marketer_risk": NUMBER,
        "sample_uniques": NUMBER,
        "population_uniques": {
            "type": "object",
            "required": ["zayatz", "pitman", "snb", "dankar"],
            "additionalProperties": _SHARE_OR_NULL,
        },
        "dankar_model": {"enum": ["zayatz", "pitman", "snb", "dankar", "none"]},
        "by_class_size": LIST,
    },
}  # fmt: skip


SENSITIVE_COUNTS = side_file_schema("sensitive_counts.json")
RECODING_STEPS = side_file_schema("recoding_steps.json")
OUTPUT_TABLE = {
    "type": "object",
    "required": ["table", "connection"],
    "properties": {
        "table": {
            "type": "string",
            "pattern": r"^[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z_][A-Za-z0-9_$]*$",
        },
        "connection": {"type": "string", "minLength": 1},
    },
    "additionalProperties": False,
}
PARTS_LISTED = "parts must list each part file once, by name"


def parts_check(value: list, manifest: Mapping[str, Any]) -> str | None:
    if not value or len(set(value)) != len(value):
        return PARTS_LISTED
    fmt = manifest.get("output_format") or value[0].rsplit(".", 1)[-1]
    for name in value:
        if (
            posixpath.basename(name) != name
            or "\\" in name
            or not name.startswith("part-")
            or not name.endswith(f".{fmt}")
        ):
            return f"parts must name part-*.{fmt} files in the release folder"
    return None


def k_check(value: int, manifest: Mapping[str, Any]) -> str | None:
    """k = 1: a release made without k-anonymity, under other models only (docs/design.md §4c)."""
    if value >= 2:
        return None
    privacy = manifest.get("privacy")
    models = privacy.get("models") if isinstance(privacy, Mapping) else None
    names = [m.get("model") for m in models or [] if isinstance(m, Mapping)]
    if names and "k-anonymity" not in names:
        return None
    return "k must be an integer >= 2"


def key(
    schema: dict,
    expects: str,
    doc: str,
    *,
    required: bool = False,
    check: Callable[[Any, Mapping[str, Any]], str | None] | None = None,
    message: str | None = None,
) -> Any:
    """One manifest field: its JSON Schema, what it must be (for the one-line message), what
    it means, and a check JSON Schema cannot say (a decimal's range, part names)."""
    meta = {"schema": schema, "expects": expects, "doc": doc, "required": required}
    meta["message"] = message  # the line for a value of the wrong type, if not "must be"
    return field(default=ABSENT, metadata={**meta, "check": check})
