"""The manifest's `local_recoding` key (docs/design.md §4f): its JSON Schema. The section holds the
settings, the release's figures before and after the steps, and each step (its node, the
records it searched and released, its objective's score); `search.decision.LocalRecoding`
writes it from the run's decision. `RECODING_STEPS`: the file the release keeps its steps in
(`recorded`), named by the manifest's `recoding_steps` key."""

from __future__ import annotations

from typing import Any

RECODING_STEPS = "recoding_steps.json"

_INT0 = {"type": "integer", "minimum": 0}
_FIGURES = {
    "type": "object",
    "required": ["n_suppressed", "n_equivalence_classes", "min_class_size", "dm_star", "dm"],
    "properties": {
        "records": _INT0,
        "n_suppressed": _INT0,
        "n_equivalence_classes": _INT0,
        "min_class_size": _INT0,
        "dm_star": _INT0,
        "dm": _INT0,
        "loss": {"type": "number"},
    },
}
_STEP = {
    "type": "object",
    "required": ["node", "node_levels", "records", "released", "score", "at_top"],
    "properties": {
        "node": {"type": "object", "additionalProperties": {"type": "integer"}},
        "node_levels": {"type": "array", "items": _INT0},
        "records": _INT0,
        "released": _INT0,
        "max_suppressed": _INT0,
        "objective": {"type": "string"},
        "score": {"type": ["number", "null"]},
        "at_top": {"type": "boolean"},
        "n_equivalence_classes": _INT0,
        "gs_factor": {"type": "string"},  # adaptive mode: the step's
    },
}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["settings", "before", "after", "steps"],
    "properties": {
        "settings": {
            "type": "object",
            "required": ["gs_factor", "max_steps"],
            "properties": {
                "records": {"type": "string"},  # fast mode
                "gs_factor": {"type": ["string", "null"]},
                "max_steps": {"type": ["integer", "null"]},
                "mode": {"enum": ["adaptive"]},  # absent: fast
                "adaption_factor": {"type": "string"},
            },
        },
        "before": _FIGURES,
        "after": _FIGURES,
        "steps": {"type": "array", "items": _STEP},
    },
}
