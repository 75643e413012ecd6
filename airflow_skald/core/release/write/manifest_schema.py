"""The manifest's one schema (docs/design.md §5): a typed record whose fields are the manifest's keys, in
the order they are written, each with its JSON Schema and the one line a reader gets when a
manifest holds something else there.

Runs build a manifest through `Manifest` (an unknown key is a programming error, caught by
tests); `skald verify` parses one through it (`Manifest.parse`: a damaged field is bad input
naming the field, never a traceback); `docs/manifest.schema.json` is `Manifest.json_schema()`
written out (a test keeps it current), so an auditor can validate a manifest with any JSON
Schema tool. The schema holds counts, levels, hashes and settings, never a data value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from airflow_skald.core.data.location import FORMATS
from airflow_skald.core.errors import DataError
from airflow_skald.core.json_schema import is_valid
from airflow_skald.core.release.write.manifest_fields import (
    ABSENT,
    FLAG,
    INT0,
    LEVELS,
    LIST,
    NAMES,
    NOTATION,
    NUMBER,
    OBJECT,
    OUTPUT_TABLE,
    PARTS_LISTED,
    RECODING_STEPS,
    RISK_ANALYSIS,
    SENSITIVE_COUNTS,
    TEXT,
    k_check,
    key,
    parts_check,
)
from airflow_skald.core.transform import registry as transform_registry
from airflow_skald.core.transform.base import ManifestKey
from airflow_skald.core.utility.schema import UTILITY

__all__ = ["ABSENT", "Manifest", "schema_keys"]


@dataclass(frozen=True)
class Manifest:
    """A release's manifest, field by field (docs/design.md §5)."""

    mode: str = key({"enum": ["per_chunk"]}, "per_chunk", "per_chunk for the baseline release")
    # --- the policy
    k: int = key(
        {"type": "integer", "minimum": 1},
        "an integer >= 2",
        "smallest class allowed (1 only without k-anonymity, under other models: docs/design.md §4c)",
        check=k_check,
    )
    # suppression_limit: core.transform.suppression's key
    privacy: dict = key(
        {
            "type": "object",
            "properties": {"models": {"type": "array"}, "suppression_limit": TEXT},
        },
        "an object listing its models",
        "the privacy models as configured, and the exact suppression limit",
    )
    privacy_models: list = key(LIST, "a list", "each model with the figure it reached")
    # --- counts
    n_records: int = key(INT0, "an integer >= 0", "input records", required=True)
    n_suppressed: int = key(INT0, "an integer >= 0", "records suppressed")
    max_suppressed: int = key(INT0, "an integer >= 0", "floor(suppression_limit * n_records)")
    n_equivalence_classes: int = key(INT0, "an integer >= 0", "kept classes")
    min_class_size: int = key(INT0, "an integer >= 0", "the smallest kept class")
    avg_class_size: float = key(NUMBER, "a number", "kept records per kept class")
    # --- quality
    dm_star: int = key(INT0, "an integer >= 0", "the paper's DM*: kept |E|^2 plus s^2")
    dm_star_sum_of_chunks: int = key(INT0, "an integer >= 0", "per-chunk: the chunks' own DM*")
    dm_star_arx: int = key(INT0, "an integer >= 0", "ARX's DM*: |E|^2 over all classes")
    dm: int = key(INT0, "an integer >= 0", "DM: kept |E|^2 plus N * s")
    precision: float = key(NUMBER, "a number", "Sweeney's precision of the node")
    quality_models: dict = key(
        OBJECT,
        "an object",
        "the objective and its settings, every quality model's score for the node, and per QID "
        "its level, loss, NU-entropy, labels and distribution before/after (docs/design.md §4d)",
    )
    # differential_privacy: core.transform.differential_privacy's key
    # --- the node and the searches
    node: dict = key(
        {"type": "object", "minProperties": 1, "propertyNames": {"minLength": 1}},
        "an object keyed by the QID columns",
        "the chosen level per QID (per-chunk: the levels used)",
    )
    node_paper_levels: dict = key(LEVELS, "an object of levels", "levels counted from 1")
    node_paper: str = key(NOTATION, "text", "the node in the paper's notation")
    chunk_nodes: list = key(LIST, "a list", "per-chunk: each distinct node and its chunks")
    per_chunk: list = key(LIST, "a list", "per-chunk: each chunk's node and figures")
    root_node: dict = key(LEVELS, "an object of levels", "the root the search started from")
    root_node_paper: str = key(NOTATION, "text", "the root in the paper's notation")
    global_root_node: dict = key(LEVELS, "an object of levels", "per-chunk: the global root")
    global_root_node_paper: str = key(NOTATION, "text", "per-chunk: the global root (paper)")
    top_node: dict = key(LEVELS, "an object of levels", "every QID at its top level")
    histogram_bins: int | None = key({"type": ["integer", "null"]}, "an integer or null", "N_RAM")
    histogram_bins_derived: bool = key(FLAG, "true or false", "N_RAM derived from chunk size")
    root_bins: int = key(INT0, "an integer >= 0", "the root's possible bins (eq. 1)")
    root_bins_nonempty: int | None = key(
        {"type": ["integer", "null"]}, "an integer or null", "the bins N_RAM bounded"
    )
    root_mode: str = key({"enum": ["adaptive", "paper"]}, "adaptive or paper", "root rule")
    paper_root_node: dict = key(LEVELS, "an object of levels", "paper mode's root")
    paper_root_node_paper: str = key(NOTATION, "text", "paper mode's root (paper)")
    lattice: dict = key(OBJECT, "an object", "nodes, evaluated, passing, pruned")
    root_lattice: dict = key(OBJECT, "an object", "the root choice over the full lattice")
    # --- risk
    risk: dict = key(OBJECT, "an object", "re-identification risk of the kept classes")
    risk_analysis: dict = key(
        RISK_ANALYSIS,
        "an object of risk figures",
        "the risk analysis of the released classes (docs/design.md §4c, ARX's RiskEstimateBuilder): "
        "records at risk above the threshold, highest and average prosecutor risk, marketer "
        "risk, sample uniques, population uniques by Zayatz, Pitman, SNB and Dankar's rule "
        "(null: the estimator did not converge), over the records not all '*'",
    )
    class_size_histogram: dict = key(OBJECT, "an object", "kept classes by size")
    # local_recoding: core.transform.local_recoding's key
    at_risk_classes: list = key(LIST, "a list", "the kept classes closest to a criterion")
    # --- what the release is still good for
    utility: dict = key(
        UTILITY,
        "an object of utility figures",
        "the utility analysis (docs/design.md §5, when configured): per QID the input's and the "
        "release's figures, the release's contingency of the pairs named, and classifiers "
        "trained on the original and on the release over the same folds of a sample",
    )
    # --- the release's shape
    chunks: int = key(INT0, "an integer >= 0", "input chunks (one part each)")
    # suppressed_records: core.transform.suppression's key
    quasi_identifiers: list = key(
        LIST, "a list", "each QID as configured (hierarchy hashes, rules with what they built)"
    )
    direct_identifiers_removed: list = key(
        NAMES, "a list of column names", "direct identifiers left out"
    )
    sensitive_attributes: list = key(NAMES, "a list of column names", "kept unchanged")
    # microaggregation, pseudonymised: core.transform.microaggregation's and pseudonyms' keys
    output_format: str = key({"enum": list(FORMATS)}, "parquet or csv", "the parts' format")
    output_delimiter: str = key(
        {"type": "string", "minLength": 1, "maxLength": 1},
        "one character",
        "a CSV release's delimiter",
    )
    output_table: dict = key(
        OUTPUT_TABLE,
        "an object naming the table and its connection",
        "a table release (docs/design.md §2a): the table holding the rows (schema.name) and the name "
        "of the connection it was written through (never a password); its comment holds this "
        "manifest's SHA-256. The parts listed were staged and loaded into it",
    )
    parts: list = key(
        NAMES,
        "a list of part file names",
        "the part files",
        check=parts_check,
        message=PARTS_LISTED,
    )
    sensitive_counts: dict = key(
        SENSITIVE_COUNTS,
        "an object naming sensitive_counts.json and its sha256",
        "drop mode: the file keeping each compared sensitive attribute's distribution over all "
        "input records (values: personal data, never here), so that verify re-checks "
        "t-closeness, b-likeness and d-disclosure; its SHA-256",
    )
    recoding_steps: dict = key(
        RECODING_STEPS,
        "an object naming recoding_steps.json and its sha256",
        "local recoding: the file keeping which step released how many records of each "
        "released class (counts) and each step's distribution of the attributes its models "
        "compare with, so that verify re-checks every step's models; its SHA-256",
    )
    # --- provenance
    verified: bool = key(FLAG, "true or false", "the written release passed verification")
    settings: dict = key(OBJECT, "an object", "the effective settings config_sha256 hashes")
    config_sha256: str = key(TEXT, "text", "SHA-256 of the effective settings")
    input_files: list = key(
        LIST,
        "a list",
        "input files with rows and versions (a database input: its staged chunks by name, "
        "each version the SHA-256 of its bytes)",
    )
    input_fingerprint: str = key(TEXT, "text", "SHA-256 of the chunks read")
    run_token: str = key(TEXT, "text", "the run that made the release")
    engine: str = key(
        TEXT,
        "text",
        "the engine that ran the passes (`execution.engine`, docs/design.md §2b): chunks, "
        "duckdb, postgresql or spark",
    )
    version: str = key(TEXT, "text", "the product version")
    verified_per_chunk: bool = key(FLAG, "true or false", "per-chunk: each part verified")
    # the transformations' keys (core.transform: each ManifestKey) by name, set by `of`
    _transformed: ClassVar[Mapping[str, Any]] = {}

    # ------------------------------------------------------------------------------- build
    @classmethod
    def of(cls, **sections: Any) -> Manifest:
        """A manifest from its sections' keys (TypeError on a key the schema does not know)."""
        theirs = dict(transform_registry.manifest_keys())
        own = {k: v for k, v in sections.items() if k not in theirs}
        manifest = cls(**own)
        transformed = {k: v for k, v in sections.items() if k in theirs}
        object.__setattr__(manifest, "_transformed", transformed)  # frozen: set once, here
        return manifest

    def _value(self, name: str) -> Any:
        return self._transformed.get(name, getattr(self, name, ABSENT))

    def to_dict(self) -> dict[str, Any]:
        """The manifest as written: the fields it holds, in schema order."""
        return {
            name: self._value(name) for name, _ in schema_keys() if self._value(name) is not ABSENT
        }

    # ------------------------------------------------------------------------------- parse
    @classmethod
    def parse(cls, raw: Any, where: str) -> Manifest:
        """A manifest read from a release; DataError ("manifest.json of X: k must be an
        integer >= 2") for the first field, in schema order, that is not what it must be.
        Values are never quoted; keys this version does not know are ignored (a newer
        writer)."""
        if not isinstance(raw, dict):
            raise DataError(f"{where} is not a JSON object")
        fields = dict(schema_keys())
        for name, meta in fields.items():
            if name not in raw:
                if meta["required"]:
                    raise DataError(f"{where}: {name} is missing")
                continue
            value = raw[name]
            if not is_valid(value, meta["schema"]):
                what = meta["message"] or f"{name} must be {meta['expects']}"
                raise DataError(f"{where}: {what}")
            if meta["check"] is not None:
                problem = meta["check"](value, raw)
                if problem is not None:
                    what = problem if " " in problem else f"{name} must be {meta['expects']}"
                    raise DataError(f"{where}: {what}")
        return cls.of(**{n: raw[n] for n in fields if n in raw})

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The schema as JSON Schema (draft 2020-12), written to docs/manifest.schema.json."""
        props = {}
        for name, meta in schema_keys():
            props[name] = {**meta["schema"], "description": meta["doc"]}
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "airflow-skald release manifest",
            "description": __doc__.split("\n\n")[0].replace("\n", " "),
            "type": "object",
            "required": [name for name, meta in schema_keys() if meta["required"]],
            "properties": props,
            "additionalProperties": False,
        }


def schema_keys() -> list[tuple[str, Mapping[str, Any]]]:
    """The manifest's keys in the order they are written, each with its metadata: the
    fields of `Manifest`, and each registered transformation's keys before the field they
    name (`ManifestKey.before`)."""
    theirs = list(transform_registry.manifest_keys())
    out: list[tuple[str, Mapping[str, Any]]] = []
    for f in dataclasses.fields(Manifest):
        out.extend((name, _metadata(k)) for name, k in theirs if k.before == f.name)
        out.append((f.name, f.metadata))
    return out


def _metadata(k: ManifestKey) -> dict[str, Any]:
    """A transformation's key as `key` describes a field."""
    return {
        "schema": dict(k.schema),
        "expects": k.expects,
        "doc": k.doc,
        "required": False,
        "message": None,
        "check": None,
        **k.meta,
    }
