"""The JSON Schema of the manifest's `utility` section (`manifest_schema.Manifest.utility`)."""

from __future__ import annotations

from airflow_skald.core.settings.utility import MODELS

_INT0 = {"type": "integer", "minimum": 0}
_NUMBER = {"type": "number"}
_SHARE = {"type": "number", "minimum": 0, "maximum": 1}
_NAME = {"type": "string", "minLength": 1}

#: a column's figures (the input's name no value; the release's do: its labels are public)
FIGURES = {
    "type": "object",
    "properties": {
        "count": _INT0,
        "distinct": _INT0,
        "mode_records": _INT0,
        "mode": {"type": ["string", "number"]},
        "min": _NUMBER,
        "max": _NUMBER,
        "mean": _NUMBER,
        "median": _NUMBER,
        "std": _NUMBER,
        "top_records": _INT0,
        "overflow": {"type": "boolean"},
        "from_sample": {"type": "boolean"},
    },
    "additionalProperties": False,
}
SCORES = {
    "type": "object",
    "required": ["accuracy", "brier", "auc"],
    "properties": {
        "accuracy": _SHARE,
        "brier": {"type": "number", "minimum": 0},
        "auc": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
    },
    "additionalProperties": False,
}
UTILITY = {
    "type": "object",
    "required": ["settings"],
    # a differentially private release: `left_out` says why, and nothing else is given
    "oneOf": [
        {"required": ["left_out"], "not": {"required": ["sample"]}},
        {"required": ["sample", "qids", "contingency"], "not": {"required": ["left_out"]}},
    ],
    "properties": {
        "left_out": {"type": "string", "minLength": 1},
        "settings": {
            "type": "object",
            "required": ["target", "models", "folds", "max_records", "features", "contingency"],
            "properties": {
                "target": {"type": ["string", "null"]},
                "models": {"type": "array", "items": {"enum": list(MODELS)}},
                "folds": {"type": "integer", "minimum": 2},
                "max_records": {"type": "integer", "minimum": 1},
                "features": {"type": ["array", "null"], "items": _NAME},
                "contingency": {"type": "array", "items": {"type": "array", "items": _NAME}},
            },
        },
        "sample": {
            "type": "object",
            "required": ["records", "seed"],
            "properties": {"records": _INT0, "seed": _INT0},
        },
        "qids": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "before", "after"],
                "properties": {"name": _NAME, "before": FIGURES, "after": FIGURES},
            },
        },
        "contingency": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["pair", "rows", "columns", "counts", "other"],
                "properties": {
                    "pair": {"type": "array", "items": _NAME},
                    "rows": {"type": "array", "items": {"type": "string"}},
                    "columns": {"type": "array", "items": {"type": "string"}},
                    "counts": {"type": "array", "items": {"type": "array", "items": _INT0}},
                    "other": _INT0,
                    "cramers_v_before": {"type": ["number", "null"]},
                    "cramers_v_after": {"type": ["number", "null"]},
                },
            },
        },
        "classification": {
            "type": "object",
            "required": ["target", "classes", "records", "folds", "baseline", "models"],
            "properties": {
                "target": _NAME,
                "classes": _INT0,
                "records": _INT0,
                "folds": _INT0,
                "features": {"type": "array", "items": _NAME},
                "released_for_training": _INT0,
                "baseline": SCORES,
                "models": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["model", "original", "release", "brier_skill"],
                        "properties": {
                            "model": {"enum": list(MODELS)},
                            "original": SCORES,
                            "release": SCORES,
                            "brier_skill": {"type": ["number", "null"]},
                        },
                    },
                },
            },
        },
    },
}
