"""The run configuration (SPEC §2): YAML loaded, validated, and overridden by CLI flags/params.

Validation is strict (unknown keys are errors) because a typo in a privacy setting must never
silently fall back to a default.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from airflow_skald.core.config.dp_rules import apply_dp_rules
from airflow_skald.core.data.builders import Rule
from airflow_skald.core.data.builders.dates import parse_date_rule
from airflow_skald.core.data.builders.intervals import parse_interval_rule
from airflow_skald.core.data.builders.masked import parse_masked_rule
from airflow_skald.core.data.builders.ordered import parse_ordered_rule
from airflow_skald.core.data.database.source import DatabaseSource, parse_source, staged_path
from airflow_skald.core.data.database.target import TableTarget, default_folder, parse_target
from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.data.hierarchies import hierarchy_of as _hierarchy
from airflow_skald.core.data.location import FORMATS, DataLocation
from airflow_skald.core.data.subset_keys import KeyedSubset
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.model import ParseContext, PrivacyModel
from airflow_skald.core.privacy.registry import (
    CONFIG_KEYS,
    THRESHOLDS,
    archived_settings_of,
    parse_models,
    settings_of,
    with_threshold,
)
from airflow_skald.core.privacy.research_subset import ResearchSubset, check_subset_models
from airflow_skald.core.privacy.risk.analysis import PopulationModel, RiskSettings
from airflow_skald.core.settings.microaggregation import Microaggregation, parse_microaggregation
from airflow_skald.core.settings.parse import (
    choice as _choice,
)
from airflow_skald.core.settings.parse import (
    mapping as _mapping,
)
from airflow_skald.core.settings.parse import (
    names as _names,
)
from airflow_skald.core.settings.parse import (
    no_unknown as _no_unknown,
)
from airflow_skald.core.settings.pseudonym import (
    key_id,
    parse_direct_identifiers,
    parse_pseudonym_key,
)
from airflow_skald.core.settings.quality import QualitySettings
from airflow_skald.core.settings.quality import check as check_quality
from airflow_skald.core.settings.secret import SecretRef
from airflow_skald.core.settings.table import (
    BY_NAME,
    OVERRIDE_KEYS,
    QUALITY_WEIGHT,
    file_keys,
    parse_overrides,
    read_file_setting,
)
from airflow_skald.core.settings.transformation import LocalRecodingSettings
from airflow_skald.core.settings.transformation import check_models as check_recoded_models
from airflow_skald.core.settings.utility import UtilitySettings
from airflow_skald.core.settings.yaml_load import load_yaml_file
from airflow_skald.core.text import decimal_text
from airflow_skald.core.utility import config as utility_config

__all__ = ["OVERRIDE_KEYS", "DataLocation", "QidSpec", "SkaldConfig", "load_config"]


@dataclass(frozen=True)
class QidSpec:
    """One quasi-identifier as configured: `hierarchy` is set for categorical QIDs listed in
    full; `rule` for hierarchies built from a rule over phase 1's domain (SPEC §3a: date,
    masked, numerical `bins`, categorical `order`)."""

    name: str
    type: str  # "categorical" | "numerical" | "date" | "masked"
    hierarchy: Hierarchy | None = None
    min_width: Fraction | None = None
    widths: tuple[Fraction, ...] | None = None
    encode: bool = False
    rule: Rule | None = None
    microaggregation: Microaggregation | None = None  # SPEC §4f: released as a class aggregate

    def describe(self) -> dict[str, Any]:
        """JSON-safe summary (hierarchies hashed, not copied) for manifests; a rule as written
        (the hierarchy it builds is hashed in the manifest's `hierarchies`)."""
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.microaggregation is not None:
            out["microaggregation"] = self.microaggregation.describe()
        if self.rule is not None:
            out["rule"] = self.rule.describe()
        if self.type in ("date", "masked"):
            return out
        if self.type == "categorical":
            if self.hierarchy is not None:
                out["hierarchy_sha256"] = self.hierarchy.sha256
                out["hierarchy_levels"] = self.hierarchy.top_level + 1
        else:
            out["min_width"] = decimal_text(self.min_width)
            out["widths"] = [decimal_text(w) for w in self.widths] if self.widths else None
            out["encode"] = self.encode
        return out


@dataclass(frozen=True)
class SkaldConfig:
    """A validated configuration. Paths are absolute or fsspec URLs."""

    input: DataLocation
    output: DataLocation
    quasi_identifiers: tuple[QidSpec, ...]
    privacy: tuple[PrivacyModel, ...]
    # the settings table's rows (their defaults live there: settings/table.py)
    suppression_limit: Fraction
    chunk_rows: int
    histogram_bins: int | None
    suppressed_records: str
    root: str
    objective: str = "dm_star"
    gs_factor: Fraction = Fraction(1, 2)
    aggregate: str | None = None
    quality_weights: tuple[tuple[str, Fraction], ...] = ()
    # the risk analysis (SPEC §4c: risk.threshold, risk.sampling_fraction, risk.population)
    risk_threshold: Fraction = Fraction(1, 5)
    risk_sampling_fraction: Fraction | None = None
    risk_population: int | None = None
    # local recoding (SPEC §4f: transformation.local_recoding; None: off)
    local_recoding_records: Fraction | None = None
    local_recoding_gs: Fraction | None = None
    local_recoding_steps: int | None = None
    utility: UtilitySettings | None = None  # the utility analysis (SPEC §5), off when None
    direct_identifiers: tuple[str, ...] = ()  # dropped
    pseudonymised: tuple[str, ...] = ()  # direct identifiers replaced by pseudonyms (SPEC §2a)
    pseudonym_key: SecretRef | None = field(default=None, compare=False, repr=False)
    sensitive_attributes: tuple[str, ...] = ()
    qid_priority: tuple[str, ...] = ()
    # a population table whose flagged records are released (SPEC §4e)
    research_subset: ResearchSubset | None = None
    database: DatabaseSource | None = None  # a table or query staged into `input` (SPEC §2a)
    output_table: TableTarget | None = None  # a table as the release; `output`: its folder
    # QIDs microaggregated with `cluster: false` (SPEC §4f): out of the lattice, released as
    # the aggregate over the classes of the other QIDs (the clustered ones stay in
    # `quasi_identifiers`, their spec's `microaggregation` set)
    microaggregated: tuple[QidSpec, ...] = ()
    # where a DP run reads its secret (never the secret; not in the settings nor the hash)
    dp_key: SecretRef | None = field(default=None, compare=False)
    overwrite: bool = field(default=False, compare=False)  # a run option, not in the hash
    source: str = field(default="", compare=False)

    @property
    def input_table(self) -> str | None:
        """The database table read (None: files, or a query)."""
        return self.database.table if self.database else None

    @property
    def qid_names(self) -> list[str]:
        return [q.name for q in self.quasi_identifiers]

    @property
    def criteria_attributes(self) -> tuple[str, ...]:
        """Sensitive attributes that privacy criteria name (their distributions are counted)."""
        return tuple(dict.fromkeys(m.attribute for m in self.privacy if m.attribute))

    @property
    def microaggregations(self) -> dict[str, Microaggregation]:
        """Every microaggregated QID (in the lattice or not) and its function."""
        return {
            q.name: q.microaggregation
            for q in (*self.quasi_identifiers, *self.microaggregated)
            if q.microaggregation is not None
        }

    @property
    def keyed_subset(self) -> KeyedSubset | None:
        """A research subset given by a dataset of keys (its flag is derived when read)."""
        return self.research_subset.keyed if self.research_subset else None

    @property
    def counted_attributes(self) -> tuple[str, ...]:
        """What phases 1 and 2 count per class besides sizes: the criteria's attributes, the
        research subset's column (its flags, SPEC §4e), which is never released, and the
        microaggregated QIDs (SPEC §4f)."""
        subset = (self.research_subset.column,) if self.research_subset else ()
        return tuple(dict.fromkeys([*self.criteria_attributes, *subset, *self.microaggregations]))

    @property
    def k(self) -> int:
        """The smallest class the models let through (k of k-anonymity)."""
        return max((m.min_class_size for m in self.privacy), default=1)

    @property
    def risk_settings(self) -> RiskSettings:
        """The risk analysis's threshold and population (SPEC §4c `risk:`)."""
        population = PopulationModel(self.risk_population, self.risk_sampling_fraction)
        return RiskSettings(self.risk_threshold, population)

    @property
    def quality(self) -> QualitySettings:
        """The objective and its settings (SPEC §4d)."""
        return QualitySettings(
            self.objective, self.gs_factor, dict(self.quality_weights), self.aggregate
        )

    @property
    def local_recoding(self) -> LocalRecodingSettings | None:
        """`transformation.local_recoding` (SPEC §4f), or None when off."""
        if self.local_recoding_records is None:
            return None
        return LocalRecodingSettings(
            self.local_recoding_records, self.local_recoding_gs, self.local_recoding_steps
        )

    def priority_order(self) -> list[int]:
        """QID indices in tie-break order: qid_priority first, then the rest in config order."""
        names = self.qid_names
        listed = [names.index(n) for n in self.qid_priority]
        return listed + [i for i in range(len(names)) if i not in listed]

    def with_overrides(
        self, overrides: dict[str, Any] | None, base_dir: Path | None = None
    ) -> SkaldConfig:
        """Apply CLI flags / DAG params (empty values keep the file's) and validate them.
        A relative input_path/output_path resolves against `base_dir` (DAG params: the
        config file's folder, as the file's own paths), else the working directory (CLI)."""
        values = parse_overrides(overrides or {})
        fields: dict[str, Any] = {}
        for key, value in values.items():
            if key == "input_path":
                fields["input"] = replace(self.input, path=_abs(value, base_dir))
                fields["database"] = None  # files in place of the table
            elif key == "output_table":
                if self.output_table is None:
                    raise ConfigError("output_table: the config's output is not a database table")
                fields["output_table"] = target = replace(self.output_table, table=value)
                if not target.folder_given and "output" not in fields:  # the folder follows it
                    folder = posixpath.join(posixpath.dirname(self.output.path), target.qualified)
                    fields["output"] = replace(self.output, path=folder)
            elif key == "input_table":
                if self.database is None:
                    raise ConfigError("input_table: the config's input is not a database table")
                fields["database"] = replace(self.database, table=value, sql=None)
            elif key == "output_path":
                fields["output"] = replace(self.output, path=_abs(value, base_dir))
                if self.database is not None and "input" not in fields:  # staged beside it
                    fields["input"] = replace(self.input, path=staged_path(fields["output"].path))
            elif key == "local_recoding":
                fields["local_recoding_records"] = value
            elif key in THRESHOLDS:
                fields["privacy"] = with_threshold(fields.get("privacy", self.privacy), key, value)
            elif key in utility_config.KEYS:
                continue  # all of them at once, below
            else:
                fields[key] = value
        utility = utility_config.with_overrides(
            self.utility,
            values,
            self.qid_names,
            self.direct_identifiers,
            self.research_subset is not None,
        )
        if utility is not self.utility:
            fields["utility"] = utility
        if not fields:
            return self
        out = replace(self, **fields)
        check_quality(out.quality, out.qid_names)
        _check_transformation(out)
        return apply_dp_rules(out, "suppression_limit" in values)

    def effective(self) -> dict:
        """The effective settings in full (hierarchies as tables), for the run's archive."""
        body = json.loads(json.dumps(self.settings()))  # a deep copy
        for spec, qid in zip(self.quasi_identifiers, body["qids"], strict=True):
            if spec.hierarchy is not None:
                qid["hierarchy"] = spec.hierarchy.table.tolist()
        body.update(archived_settings_of(self.privacy))  # a t-closeness hierarchy's table
        body["overwrite"] = self.overwrite
        body["source"] = self.source
        return body

    def fingerprint(self) -> str:
        """SHA-256 of the effective settings (`json.dumps(settings(), sort_keys=True)`), so an
        auditor can tell two runs' configs apart and recompute it from the manifest."""
        return hashlib.sha256(json.dumps(self.settings(), sort_keys=True).encode()).hexdigest()

    def settings(self) -> dict[str, Any]:
        """The effective settings, JSON-safe (hierarchies by their hash): what the manifest
        lists and `fingerprint` hashes."""
        return {
            "input": self.database.describe() if self.database else asdict(self.input),
            "output": asdict(self.output),
            **({"output_table": self.output_table.describe()} if self.output_table else {}),
            "qids": [q.describe() for q in self.quasi_identifiers],
            **(
                {"microaggregated": [q.describe() for q in self.microaggregated]}
                if self.microaggregated
                else {}
            ),
            **settings_of(self.privacy),
            "suppression_limit": str(self.suppression_limit),
            "chunk_rows": self.chunk_rows,
            "direct_identifiers": list(self.direct_identifiers),
            "sensitive_attributes": list(self.sensitive_attributes),
            "histogram_bins": self.histogram_bins,
            "qid_priority": list(self.qid_priority),
            **(
                {"research_subset": self.research_subset.describe()} if self.research_subset else {}
            ),
            "suppressed_records": self.suppressed_records,
            "root": self.root,
            **({"quality": self.quality.describe()} if self.objective != "dm_star" else {}),
            **self._risk_settings(),
            **self._pseudonym_settings(),
            **(
                {"transformation": {"local_recoding": self.local_recoding.describe()}}
                if self.local_recoding is not None
                else {}
            ),
            **({"utility": self.utility.describe()} if self.utility else {}),
        }

    def _pseudonym_settings(self) -> dict[str, Any]:
        """Pseudonymised columns and the key's check value (never the key), when any: a
        release made with another key has other settings."""
        if not self.pseudonymised:
            return {}
        key = key_id(self.pseudonym_key) if self.pseudonym_key else None
        return {"pseudonymised": list(self.pseudonymised), "pseudonym_key_id": key}

    def _risk_settings(self) -> dict[str, Any]:
        """The risk analysis's settings, listed only when set (so configs without them keep
        their hash)."""
        risk: dict[str, Any] = {}
        if self.risk_threshold != BY_NAME["risk_threshold"].default:
            risk["threshold"] = str(self.risk_threshold)
        if self.risk_sampling_fraction is not None:
            risk["sampling_fraction"] = str(self.risk_sampling_fraction)
        if self.risk_population is not None:
            risk["population"] = self.risk_population
        return {"risk": risk} if risk else {}


def load_config(
    path: str | Path, overrides: dict[str, Any] | None = None, paths_from_file: bool = False
) -> SkaldConfig:
    """Read and validate a YAML config file, then apply overrides (`paths_from_file`: their
    relative paths resolve against the file's folder, as the file's own; else the working
    directory's)."""
    path = Path(path)
    raw = load_yaml_file(path)
    base = path.resolve().parent
    config = config_from_dict(raw, base_dir=base, source=str(path))
    return config.with_overrides(overrides, base if paths_from_file else None)


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
    "research_subset",
    "pseudonym_key",
    "transformation",
    "dp_key",
}


def config_from_dict(raw: Any, base_dir: Path | None = None, source: str = "") -> SkaldConfig:
    """Validate a parsed config mapping; relative paths resolve against `base_dir`."""
    if not isinstance(raw, dict):
        raise ConfigError("config must be a YAML mapping")
    _no_unknown(raw, _SECTIONS | file_keys(), "config")
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
    transformation = _mapping(raw.get("transformation") or {}, "transformation")
    _no_unknown(transformation, file_keys("transformation"), "transformation")
    recoding = transformation.get("local_recoding")
    if recoding is not None:
        recoding = _mapping(recoding, "transformation.local_recoding")
        _no_unknown(recoding, file_keys("transformation", "local_recoding"), "local_recoding")
        if recoding.get("records") is None:
            raise ConfigError("transformation.local_recoding needs records (e.g. 0.01)")
    if "sampling_fraction" in risk and "population" in risk:
        raise ConfigError("risk takes one of 'sampling_fraction' or 'population'")
    every_qid = _qids(raw["quasi_identifiers"], base_dir)
    qids = [q for q in every_qid if q.microaggregation is None or q.microaggregation.cluster]
    if not qids:
        raise ConfigError(
            "every quasi-identifier is microaggregated with cluster: false: at least one must "
            "stay in the generalisation lattice"
        )
    out_of_lattice = [q for q in every_qid if q not in qids]
    names = [q.name for q in qids]
    direct, pseudonymised = parse_direct_identifiers(raw.get("direct_identifiers") or [])
    key = parse_pseudonym_key(raw.get("pseudonym_key"), pseudonymised, base_dir)
    sensitive = _names(raw.get("sensitive_attributes") or [], "sensitive_attributes")
    subset = ResearchSubset.parse(
        raw.get("research_subset"), lambda r, where: _location(r, where, base_dir)
    )
    ctx = ParseContext(tuple(sensitive), base_dir, subset.column if subset else None)
    models = parse_models(privacy, ctx)
    if subset is not None:
        check_subset_models(models)
        if out_of_lattice or any(q.microaggregation for q in qids):
            raise ConfigError("microaggregation cannot be combined with a research_subset")
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
    output_table = None
    if isinstance(raw["output"], dict) and "table" in raw["output"]:
        output_table, folder = parse_target(raw["output"], "output")
        folder = folder or default_folder(str(base_dir or Path.cwd()), output_table)
        output = DataLocation(path=_abs(folder, base_dir), format="parquet")
    else:
        output = _location(raw["output"], "output", base_dir)
    database = None
    if isinstance(raw["input"], dict) and ({"table", "sql"} & set(raw["input"])):
        database = parse_source(raw["input"], "input")
        inp = DataLocation(path=staged_path(output.path), format="parquet")
    else:
        inp = _location(raw["input"], "input", base_dir)
    config = SkaldConfig(
        input=inp,
        output=output,
        database=database,
        output_table=output_table,
        quasi_identifiers=tuple(qids),
        privacy=models,
        suppression_limit=_file(raw, "suppression_limit"),
        chunk_rows=_file(raw, "chunk_rows"),
        direct_identifiers=tuple(n for n in direct if n not in pseudonymised),
        pseudonymised=tuple(pseudonymised),
        pseudonym_key=key,
        sensitive_attributes=tuple(sensitive),
        histogram_bins=_file(raw, "histogram_bins"),
        qid_priority=tuple(priority),
        research_subset=subset,
        microaggregated=tuple(out_of_lattice),
        suppressed_records=_file(raw, "suppressed_records"),
        root=_file(raw, "root"),
        objective=_file(raw, "objective"),
        gs_factor=_file(raw, "gs_factor"),
        aggregate=_file(raw, "aggregate"),
        quality_weights=_weights(quality.get("weights"), names),
        risk_threshold=_file(raw, "risk_threshold"),
        risk_sampling_fraction=_file(raw, "risk_sampling_fraction"),
        risk_population=_file(raw, "risk_population"),
        local_recoding_records=_file(raw, "local_recoding"),
        local_recoding_gs=_file(raw, "local_recoding_gs"),
        local_recoding_steps=_file(raw, "local_recoding_steps"),
        dp_key=SecretRef.parse(raw.get("dp_key"), "dp_key", base_dir),
        utility=utility_config.from_file(raw, names, direct),
        source=source,
    )
    check_quality(config.quality, names)
    _check_transformation(config)
    return apply_dp_rules(config, "suppression_limit" in privacy)


def _check_transformation(config: SkaldConfig) -> None:
    """Local recoding's settings without records, or with a model ARX does not recode."""
    if config.local_recoding is None:
        if config.local_recoding_gs is not None or config.local_recoding_steps is not None:
            raise ConfigError("local_recoding_gs and local_recoding_steps need local_recoding")
        return
    if config.microaggregations:  # a step's records would need their own class aggregates
        raise ConfigError(
            "transformation.local_recoding and microaggregation cannot be combined yet "
            "(the aggregates are per class of the global node)"
        )
    if config.research_subset is not None:  # delta-presence, exact k-map: ARX refuses them
        raise ConfigError(
            "transformation.local_recoding does not apply with a research_subset (ARX allows "
            "it with k, l, t, b-likeness, d-disclosure, average risk and estimated k-map only)"
        )
    check_recoded_models(config.privacy)


def _weights(raw: Any, names: list[str]) -> tuple[tuple[str, Fraction], ...]:
    """quality.weights: QID -> a number >= 0 (exact decimals), in config QID order."""
    if raw is None:
        return ()
    weights = _mapping(raw, "quality.weights")
    out = {}
    for name, value in weights.items():
        if name not in names:
            raise ConfigError(f"quality.weights names '{name}', which is not a quasi-identifier")
        out[name] = QUALITY_WEIGHT.parse(value, f"quality.weights.{name}")
    return tuple((n, out[n]) for n in names if n in out)


def _file(raw: dict, name: str) -> Any:
    return read_file_setting(raw, BY_NAME[name])


def _qids(raw: Any, base_dir: Path | None) -> list[QidSpec]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError("quasi_identifiers must be a non-empty list")
    out: list[QidSpec] = []
    for i, item in enumerate(raw):
        item = _mapping(item, f"quasi_identifiers[{i}]")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"quasi_identifiers[{i}] needs a 'name'")
        kind = item.get("type")
        where = f"quasi-identifier '{name}'"
        micro = None
        if "microaggregation" in item:
            if kind not in ("numerical", "categorical"):
                raise ConfigError(f"{where}: microaggregation needs a numerical or categorical QID")
            micro = parse_microaggregation(item["microaggregation"], where)
            item = {key: v for key, v in item.items() if key != "microaggregation"}
        if kind == "categorical" and "order" in item:
            _no_unknown(item, {"name", "type", "order", "group", "labels"}, where)
            out.append(QidSpec(name=name, type=kind, rule=parse_ordered_rule(name, item)))
        elif kind == "categorical":
            _no_unknown(item, {"name", "type", "hierarchy", "hierarchy_file"}, where)
            if ("hierarchy" in item) == ("hierarchy_file" in item):
                raise ConfigError(
                    f"{where} needs exactly one of 'hierarchy', 'hierarchy_file' or 'order'"
                )
            hierarchy = _hierarchy(item, name, base_dir)
            out.append(QidSpec(name=name, type="categorical", hierarchy=hierarchy))
        elif kind == "date":
            _no_unknown(item, {"name", "type", "levels"}, where)
            out.append(QidSpec(name=name, type=kind, rule=parse_date_rule(name, item)))
        elif kind == "masked":
            _no_unknown(item, {"name", "type", "steps", "from", "pad", "align"}, where)
            out.append(QidSpec(name=name, type=kind, rule=parse_masked_rule(name, item)))
        elif kind == "numerical" and "bins" in item:
            keys = {"name", "type", "min_width", "bins", "group", "below", "above"}
            _no_unknown(item, keys | {"widths", "encode"}, where)
            min_width = _width(item.get("min_width", 1), f"{where}: min_width")
            rule = parse_interval_rule(name, item, min_width)
            out.append(QidSpec(name=name, type=kind, min_width=min_width, rule=rule))
        elif kind == "numerical":
            _no_unknown(item, {"name", "type", "min_width", "widths", "encode"}, where)
            min_width = _width(item.get("min_width", 1), f"{where}: min_width")
            widths = item.get("widths")
            if widths is not None:
                if not isinstance(widths, list) or not widths:
                    raise ConfigError(f"{where}: widths must be a non-empty list")
                widths = tuple(_width(w, f"{where}: widths") for w in widths)
                if widths[0] != min_width:
                    raise ConfigError(f"{where}: widths must start with min_width ({min_width})")
                for a, b in zip(widths, widths[1:], strict=False):
                    if b <= a or (b / a).denominator != 1:
                        raise ConfigError(
                            f"{where}: width {_fmt(b)} is not a larger whole multiple of {_fmt(a)}"
                        )
            encode = item.get("encode", False)
            if not isinstance(encode, bool):
                raise ConfigError(f"{where}: encode must be true or false")
            if encode and min_width.denominator != 1:
                raise ConfigError(
                    f"{where}: an encoded QID's min_width counts ranks: use 1, 2, ..."
                )
            out.append(
                QidSpec(
                    name=name, type="numerical", min_width=min_width, widths=widths, encode=encode
                )
            )
        else:
            raise ConfigError(f"{where}: type must be categorical, numerical, date or masked")
        if micro is not None:
            out[-1] = replace(out[-1], microaggregation=micro)
    names = [q.name for q in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"quasi-identifier '{dup[0]}' is listed twice")
    return out


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else str(float(x))


def _location(raw: Any, where: str, base_dir: Path | None) -> DataLocation:
    raw = _mapping(raw, where)
    _no_unknown(raw, {"path", "format", "delimiter"}, where)
    path = raw.get("path")
    if not isinstance(path, str) or not path:
        raise ConfigError(f"{where}.path is required")
    fmt = _choice(raw.get("format", "parquet"), FORMATS, f"{where}.format")
    delimiter = raw.get("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise ConfigError(f"{where}.delimiter must be one character")
    return DataLocation(path=_abs(path, base_dir), format=fmt, delimiter=delimiter)


def _abs(path: str, base_dir: Path | None) -> str:
    if "://" in path:
        return path
    p = Path(path).expanduser()
    if not p.is_absolute():
        p = (base_dir or Path.cwd()) / p
    text = str(p.absolute())
    if ".." in Path(text).parts:  # what the system opens: a `..` after a symlink leaves its target
        return os.path.realpath(text)
    return os.path.normpath(text)  # `.`, `//` and a trailing `/` dropped


def _width(value: Any, where: str) -> Fraction:
    if isinstance(value, bool):
        raise ConfigError(f"{where} must be a positive number")
    try:
        w = Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise ConfigError(f"{where} must be a positive number") from None
    if w <= 0:
        raise ConfigError(f"{where} must be a positive number")
    return w
