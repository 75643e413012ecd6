"""The run configuration (docs/design.md §2): YAML loaded, validated, and overridden by CLI flags/params.

Validation is strict (unknown keys are errors) because a typo in a privacy setting must never
silently fall back to a default. The sections are read here; the quasi-identifiers by
`qids`, the input and output locations by `locations`; the validated config is a
`SkaldConfig` (`skald_config`), whose `with_overrides` applies a run's settings.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from airflow_skald.core.config.qids import QidSpec, parse_qids
from airflow_skald.core.config.skald_config import SkaldConfig, check_transformation
from airflow_skald.core.data.database.source import parse_source, staged_path
from airflow_skald.core.data.database.target import default_folder, parse_target
from airflow_skald.core.data.location import DataLocation, absolute_path, parse_location
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.model import ParseContext
from airflow_skald.core.privacy.registry import CONFIG_KEYS, parse_models
from airflow_skald.core.privacy.risk.analysis import RiskSettings
from airflow_skald.core.settings.direct_identifiers import parse_direct_identifiers
from airflow_skald.core.settings.execution import ExecutionSettings, normalise
from airflow_skald.core.settings.parse import mapping as _mapping
from airflow_skald.core.settings.parse import names as _names
from airflow_skald.core.settings.parse import no_unknown as _no_unknown
from airflow_skald.core.settings.quality import QUALITY_WEIGHT, QualitySettings
from airflow_skald.core.settings.quality import check as check_quality
from airflow_skald.core.settings.secret import SecretRef
from airflow_skald.core.settings.table import (
    BY_NAME,
    OVERRIDE_KEYS,
    file_keys,
    read_file_setting,
)
from airflow_skald.core.settings.yaml_load import load_yaml_file
from airflow_skald.core.transform import registry as transform_registry
from airflow_skald.core.transform.base import ParseContext as TransformContext
from airflow_skald.core.transform.differential_privacy.rules import apply_dp_rules
from airflow_skald.core.transform.research_subset import ResearchSubset
from airflow_skald.core.utility import config as utility_config

# what a caller imports from here (the config's loader): the config and its parts too
__all__ = [
    "OVERRIDE_KEYS",
    "DataLocation",
    "QidSpec",
    "SkaldConfig",
    "config_from_dict",
    "load_config",
]


def load_config(
    path: str | Path, overrides: dict[str, Any] | None = None, paths_from_file: bool = False
) -> SkaldConfig:
    """Read and validate a YAML config file, then apply overrides (`paths_from_file`: their
    relative paths resolve against the file's folder, as the file's own; else the working
    directory's)."""
    path = Path(path)
    raw = load_yaml_file(path)
    base = path.resolve().parent
    config = config_from_dict(raw, base_dir=base, source=str(path), judge=False)
    privacy = raw.get("privacy")
    limit_given = isinstance(privacy, dict) and "suppression_limit" in privacy
    # every flag overrides the file before differential privacy's rules judge the result
    return config.with_overrides(overrides, base if paths_from_file else None, limit_given)


# the sections of the file; the settings table adds the keys it places (chunk_rows, ...)
_SECTIONS = {
    "input",
    "output",
    "direct_identifiers",
    "sensitive_attributes",
    "quasi_identifiers",
    "privacy",
    "memory",
    "qid_priority",
    "quality",
    "transformation",
    "dp_key",
}


def config_from_dict(
    raw: Any, base_dir: Path | None = None, source: str = "", judge: bool = True
) -> SkaldConfig:
    """Validate a parsed config mapping; relative paths resolve against `base_dir`.
    `judge`: apply differential privacy's rules now (False: the caller applies overrides
    first, then `with_overrides` judges)."""
    if not isinstance(raw, dict):
        raise ConfigError("config must be a YAML mapping")
    privacy, quality, execution = _sections(raw)
    every_qid = parse_qids(raw["quasi_identifiers"], base_dir)
    qids, out_of_lattice = _in_lattice(every_qid)
    names = [q.name for q in qids]
    direct, _ = parse_direct_identifiers(raw.get("direct_identifiers") or [])
    transformations = transform_registry.parse_all(
        raw, TransformContext(base_dir, tuple(every_qid))
    )
    transformed = transform_registry.columns_of(transformations)
    sensitive = _names(raw.get("sensitive_attributes") or [], "sensitive_attributes")
    subset = next((t for t in transformations if isinstance(t, ResearchSubset)), None)
    ctx = ParseContext(tuple(sensitive), base_dir, subset.column if subset else None)
    models = parse_models(privacy, ctx)
    _check_roles(every_qid, direct, sensitive, subset)
    priority = _priority(raw, names, out_of_lattice)
    # an objective left out is a model's own search's default (DP: ARX's loss), said so
    own = next((m.default_objective for m in models if m.default_objective), None)
    default = own if quality.get("objective") is None else None
    config = SkaldConfig(
        **_locations(raw, base_dir),
        quasi_identifiers=tuple(qids),
        privacy=models,
        direct_identifiers=tuple(n for n in direct if n not in transformed),
        transformations=transformations,
        sensitive_attributes=tuple(sensitive),
        qid_priority=tuple(priority),
        **_settings(raw, quality, execution, names, direct, base_dir, default),
        source=source,
    )
    check_quality(config.quality, names)
    check_transformation(config)
    return apply_dp_rules(config, "suppression_limit" in privacy) if judge else config


def _sections(raw: dict) -> tuple[dict, dict, dict]:
    """Every section's keys checked (unknown keys are errors); the privacy, quality and
    execution sections."""
    _no_unknown(raw, _SECTIONS | transform_registry.config_sections() | file_keys(), "config")
    for key in ("input", "output", "quasi_identifiers", "privacy"):
        if key not in raw:
            raise ConfigError(f"config is missing '{key}'")
    privacy = _mapping(raw["privacy"], "privacy")
    _no_unknown(privacy, file_keys("privacy") | set(CONFIG_KEYS), "privacy")
    memory = _mapping(raw.get("memory") or {}, "memory")
    _no_unknown(memory, file_keys("memory"), "memory")
    quality = _mapping(raw.get("quality") or {}, "quality")
    _no_unknown(quality, file_keys("quality") | {"weights"}, "quality")
    risk = _mapping(raw.get("risk") or {}, "risk")
    _no_unknown(risk, file_keys("risk"), "risk")
    execution = _mapping(normalise(raw.get("execution")) or {}, "execution")
    _no_unknown(execution, file_keys("execution"), "execution")
    transformation = _mapping(raw.get("transformation") or {}, "transformation")
    _no_unknown(transformation, file_keys("transformation"), "transformation")
    recoding = transformation.get("local_recoding")
    if recoding is not None:
        recoding = _mapping(recoding, "transformation.local_recoding")
        _no_unknown(recoding, file_keys("transformation", "local_recoding"), "local_recoding")
        if recoding.get("records") is None and recoding.get("mode") != "adaptive":
            raise ConfigError("transformation.local_recoding needs records (e.g. 0.01)")
    if "sampling_fraction" in risk and "population" in risk:
        raise ConfigError("risk takes one of 'sampling_fraction' or 'population'")
    return privacy, quality, execution


def _in_lattice(every_qid: list[QidSpec]) -> tuple[list[QidSpec], list[QidSpec]]:
    """The QIDs of the generalisation lattice and those microaggregation takes out of it."""
    qids = [q for q in every_qid if q.microaggregation is None or q.microaggregation.cluster]
    if not qids:
        raise ConfigError(
            "every quasi-identifier is microaggregated with cluster: false: at least one must "
            "stay in the generalisation lattice"
        )
    return qids, [q for q in every_qid if q not in qids]


def _check_roles(
    every_qid: list[QidSpec], direct: list[str], sensitive: list[str], subset: Any
) -> None:
    """No column in two roles (QID, direct identifier, sensitive, research subset's column)."""
    roles = (
        [q.name for q in every_qid]
        + direct
        + sensitive
        + ([subset.column] if subset and not subset.keyed else [])
    )
    dup = sorted({n for n in roles if roles.count(n) > 1})
    if dup:
        raise ConfigError(
            f"column '{dup[0]}' is listed twice among QIDs/identifiers/sensitive/research_subset"
        )


def _priority(raw: dict, names: list[str], out_of_lattice: list[QidSpec]) -> list[str]:
    """qid_priority: lattice QIDs, each once."""
    priority = _names(raw.get("qid_priority") or [], "qid_priority")
    for n in priority:
        if n in [q.name for q in out_of_lattice]:
            raise ConfigError(
                f"qid_priority names '{n}', which leaves the lattice (microaggregation with "
                "cluster: false)"
            )
        if n not in names:
            raise ConfigError(f"qid_priority names '{n}', which is not a quasi-identifier")
    if len(set(priority)) != len(priority):
        raise ConfigError("qid_priority lists a QID twice")
    return priority


def _locations(raw: dict, base_dir: Path | None) -> dict[str, Any]:
    """The output (a folder, or a database table and its folder) and the input (files, or a
    database table or query staged beside the output)."""
    output_table = None
    if isinstance(raw["output"], dict) and "table" in raw["output"]:
        output_table, folder = parse_target(raw["output"], "output")
        folder = folder or default_folder(str(base_dir or Path.cwd()), output_table)
        output = DataLocation(path=absolute_path(folder, base_dir), format="parquet")
    else:
        output = parse_location(raw["output"], "output", base_dir)
    database = None
    if isinstance(raw["input"], dict) and ({"table", "sql"} & set(raw["input"])):
        database = parse_source(raw["input"], "input")
        inp = DataLocation(path=staged_path(output.path), format="parquet")
    else:
        inp = parse_location(raw["input"], "input", base_dir)
    return {"input": inp, "output": output, "database": database, "output_table": output_table}


def _settings(
    raw: dict,
    quality: dict,
    execution: dict,
    names: list[str],
    direct: list[str],
    base_dir: Path | None,
    default: str | None,
) -> dict[str, Any]:
    """The settings of the settings table the file gives (in the order they are checked),
    the quality weights, the DP key's reference, the utility analysis and the execution
    (`default`: a model's own objective when the file names none, said so)."""
    return {
        "chunk_rows": _file(raw, "chunk_rows"),
        "histogram_bins": _file(raw, "histogram_bins"),
        "root": _file(raw, "root"),
        "quality": QualitySettings(
            objective=default or _file(raw, "objective"),
            gs_factor=_file(raw, "gs_factor"),
            weights=_weights(quality.get("weights"), names),
            aggregate=_file(raw, "aggregate"),
            objective_default=default is not None,
        ),
        "risk": RiskSettings(
            _file(raw, "risk_threshold"),
            _file(raw, "risk_sampling_fraction"),
            _file(raw, "risk_population"),
        ),
        "dp_key": SecretRef.parse(raw.get("dp_key"), "dp_key", base_dir),
        "utility": utility_config.from_file(raw, names, direct),
        "execution_settings": ExecutionSettings(
            _file({"execution": execution}, "execution"),
            _file({"execution": execution}, "execution_connection"),
        ),
    }


def _weights(raw: Any, names: list[str]) -> dict[str, Fraction]:
    """quality.weights: QID -> a number >= 0 (exact decimals), in config QID order."""
    if raw is None:
        return {}
    weights = _mapping(raw, "quality.weights")
    out = {}
    for name, value in weights.items():
        if name not in names:
            raise ConfigError(f"quality.weights names '{name}', which is not a quasi-identifier")
        out[name] = QUALITY_WEIGHT.parse(value, f"quality.weights.{name}")
    return {n: out[n] for n in names if n in out}


def _file(raw: dict, name: str) -> Any:
    return read_file_setting(raw, BY_NAME[name])
