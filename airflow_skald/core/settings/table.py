"""The one table of per-run settings (SPEC §2, §6, §7).

Each row names a setting once: where it lives in the YAML file, its JSON Schema, the words of
its error message, its CLI flag and its DAG param. The config loader, the CLI's flags, the
DAG's params and the operators' templated fields are all generated from this table, so every
route parses and validates a value the same way and fails with the same one-line message.

Validation is JSON Schema (``jsonschema``, which Airflow's Params use too; `json_schema.is_valid`
imports it only for values not plainly valid) after one coercion
step for text (CLI flags and templated values arrive as strings). An empty value (None, "",
"None", "null") means "not set": the file's value is used, never a hidden default (SPEC §2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.json_schema import is_valid
from airflow_skald.core.settings.quality import AGGREGATES, OBJECTIVES
from airflow_skald.core.settings.utility import MODELS as UTILITY_MODELS

EMPTY = (None, "", "None", "null")


def is_empty(value: Any) -> bool:
    """A setting left empty (an unset flag, an empty param, a template that rendered nothing)."""
    return value is None or (isinstance(value, str) and value.strip() in EMPTY)


def _integer(value: Any) -> Any:
    """Whole numbers from text or floats (``"7"``, ``7.0``); anything else is left to the schema."""
    if isinstance(value, str):
        text = value.strip().lstrip("+")
        if text.isdigit():
            return int(text)
        try:
            number = float(text)
        except ValueError:
            return value
        return int(number) if number.is_integer() else number
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _decimal(value: Any) -> Any:
    """The exact fraction of the decimal written (``0.29`` is 29/100, not a binary float)."""
    if isinstance(value, bool | Fraction):
        return value
    if isinstance(value, int | float | str):
        try:
            return Fraction(str(value).strip())
        except (ValueError, ZeroDivisionError, OverflowError):
            # NaN and infinities (YAML .nan, .inf) are no decimals: shown as written, refused
            return str(value) if isinstance(value, float) else value
    return value


def _names(value: Any) -> Any:
    """A list from comma-separated text (``"a, b"``); anything else is left to the schema."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value) if isinstance(value, tuple) else value


def _pairs(value: Any) -> Any:
    """Pairs from text (``"a:b, c:d"``) or a list of two-item lists; else left to the schema."""
    if isinstance(value, str):
        return [[x.strip() for x in p.split(":")] for p in value.split(",") if p.strip()]
    if isinstance(value, list | tuple):
        return [list(p) if isinstance(p, list | tuple) else p for p in value]
    return value


def _shown(value: Any) -> str:
    """A bad setting as the user wrote it (settings are not personal data): 1, 2.5, 'abc'."""
    if isinstance(value, Fraction):
        return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"
    if isinstance(value, bool | int | float | str):
        return repr(value)
    return f"a {type(value).__name__}"


def _as_schema_value(value: Any) -> Any:
    """JSON Schema knows no Fraction: check its float, keep the exact value."""
    return float(value) if isinstance(value, Fraction) else value


@dataclass(frozen=True)
class Setting:
    """One per-run setting.

    ``path`` is where it sits in the YAML file (None: a run option only, e.g. ``overwrite``);
    ``expects`` completes "<name> must be ..." in the error message of every route;
    ``default`` is the value when the file leaves it out (the only place it is written).
    """

    name: str
    path: tuple[str, ...] | None
    schema: dict
    expects: str
    description: str
    coerce: Callable[[Any], Any] = lambda v: v
    cli: bool = True
    param: bool = True
    default: Any = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-").removesuffix("-path")

    @property
    def where(self) -> str:
        """The name an error message gives: the file's key path, else the setting's name."""
        return ".".join(self.path) if self.path and len(self.path) > 1 else self.name

    def parse(self, value: Any, where: str | None = None) -> Any:
        """The validated value; ConfigError with one line naming the setting otherwise."""
        value = self.coerce(value)
        if not is_valid(_as_schema_value(value), self.schema):
            raise ConfigError(f"{where or self.where} must be {self.expects} (got {_shown(value)})")
        return value

    def param_schema(self) -> dict:
        """The DAG Param's schema: the type (or null), and the bounds in a form the trigger
        form cannot clamp to.

        Airflow's trigger form clamps a number field to the schema's top-level `minimum` and
        `maximum` before sending it (k=1 would silently become 2). So no such keyword stands at
        the top: the values outside the setting's bounds (and a non-integer for an integer
        setting) are the `if` of an `if`/`then`, which the form does not read; the `then` is
        a `const` holding the rule, so the trigger (form or REST) refuses such a value with
        HTTP 400 whose first line is the rule (Airflow shows jsonschema's message:
        ``Invalid input for param k: 'k must be an integer >= 2' was expected``, then
        jsonschema's "Failed validating ... On instance: 1" lines). The run checks every value
        again, as every route does.
        """
        kind = self.schema["type"]
        schema: dict[str, Any] = {"type": ["null", "number" if kind == "integer" else kind]}
        if "enum" in self.schema:
            schema["enum"] = [None, *self.schema["enum"]]
            # the form's label of the empty choice (it would read "null")
            schema["values_display"] = {"null": "(the config file's value)"}
        outside = [
            {opposite: self.schema[bound]}
            for bound, opposite in _OUTSIDE.items()
            if bound in self.schema
        ]
        if kind == "integer":
            outside.append({"not": {"multipleOf": 1}})
        if outside:
            schema["if"] = {"type": "number", "anyOf": outside}
            schema["then"] = {"const": f"{self.name} must be {self.expects}"}
        return schema


#: a bound of a setting's schema -> the keyword that matches the numbers beyond it
_OUTSIDE = {
    "minimum": "exclusiveMaximum",
    "maximum": "exclusiveMinimum",
    "exclusiveMinimum": "maximum",
    "exclusiveMaximum": "minimum",
}
_POSITIVE = {"type": "integer", "minimum": 1}
_SHARE = {"type": "number", "exclusiveMinimum": 0, "maximum": 1}

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "input_path",
        ("input", "path"),
        {"type": "string", "minLength": 1},
        "a path or URL",
        "Overrides input.path: a file, folder, glob or fsspec URL (s3://...).",
    ),
    Setting(
        "input_table",
        ("input", "table"),
        {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$"},
        "a table name (name or schema.name)",
        "Overrides input.table: the database table read (the config's input names its connection).",
    ),
    Setting(
        "output_table",
        ("output", "table"),
        {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$"},
        "a table name (name or schema.name)",
        "Overrides output.table: the table the release replaces (the config's output names "
        "its connection).",
    ),
    Setting(
        "output_path",
        ("output", "path"),
        {"type": "string", "minLength": 1},
        "a path or URL",
        "Overrides output.path: where the release and its manifest go.",
    ),
    Setting(
        "k",
        ("privacy", "k"),
        {"type": "integer", "minimum": 2},
        "an integer >= 2",
        "k of k-anonymity (an integer >= 2); empty = the config file's privacy.k.",
        coerce=_integer,
    ),
    Setting(
        "suppression_limit",
        ("privacy", "suppression_limit"),
        {"type": "number", "minimum": 0, "maximum": 1},
        "a number between 0 and 1",
        "Fraction of all records that may be suppressed (0..1, e.g. 0.01 = 1 %); "
        "empty = the config file's.",
        coerce=_decimal,
        default=Fraction(0),
    ),
    Setting(
        "histogram_bins",
        ("memory", "histogram_bins"),
        {"type": "integer", "minimum": 2},
        "an integer >= 2",
        "N_RAM, the histogram size bound; empty = the file's, or derived from the chunk size.",
        coerce=_integer,
    ),
    Setting(
        "chunk_rows",
        ("chunk_rows",),
        _POSITIVE,
        "a positive integer",
        "Rows per chunk; empty = the config file's.",
        coerce=_integer,
        default=1_000_000,
    ),
    Setting(
        "suppressed_records",
        ("suppressed_records",),
        {"type": "string", "enum": ["mask", "drop"]},
        "one of mask, drop",
        "mask: keep suppressed rows with every QID '*'; drop: leave them out.",
        default="mask",
    ),
    Setting(
        "l",
        None,  # privacy.l_diversity[i].l: read by the criteria's loader with this row
        {"type": "integer", "minimum": 2},
        "an integer >= 2",
        "l of the one configured l-diversity criterion; empty = the config file's.",
        coerce=_integer,
    ),
    Setting(
        "t",
        None,  # privacy.t_closeness[i].t
        {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "a number in (0, 1]",
        "t of the one configured t-closeness criterion; empty = the config file's.",
        coerce=_decimal,
    ),
    Setting(
        "c",
        None,  # privacy.l_diversity[i].c (recursive (c,l)-diversity)
        {"type": "number", "exclusiveMinimum": 0},
        "a number > 0",
        "c of the one configured recursive (c,l)-diversity criterion; empty = the file's.",
        coerce=_decimal,
        cli=False,
        param=False,
    ),
    Setting(
        "average_risk",
        None,  # privacy.average_risk.max (SPEC §4c)
        _SHARE,
        "a number in (0, 1]",
        "Largest average re-identification risk of the configured average-risk model; "
        "empty = the config file's.",
        coerce=_decimal,
    ),
    Setting(
        "sample_uniqueness",
        None,  # privacy.sample_uniqueness.max
        _SHARE,
        "a number in (0, 1]",
        "Largest share of sample-unique records (sample-uniqueness model); empty = the file's.",
        coerce=_decimal,
    ),
    Setting(
        "population_uniqueness",
        None,  # privacy.population_uniqueness.max
        _SHARE,
        "a number in (0, 1]",
        "Largest estimated share of population-unique records (population-uniqueness model); "
        "empty = the file's.",
        coerce=_decimal,
    ),
    Setting(
        "k_map",
        None,  # privacy.k_map.k
        {"type": "integer", "minimum": 2},
        "an integer >= 2",
        "k of the configured k-map model; empty = the config file's.",
        coerce=_integer,
    ),
    Setting(
        "b_likeness",
        None,  # privacy.b_likeness[i].beta
        {"type": "number", "exclusiveMinimum": 0},
        "a number > 0",
        "beta of the one configured b-likeness criterion; empty = the config file's.",
        coerce=_decimal,
    ),
    Setting(
        "d_disclosure",
        None,  # privacy.d_disclosure[i].delta
        {"type": "number", "exclusiveMinimum": 0},
        "a number > 0",
        "delta of the one configured d-disclosure criterion; empty = the config file's.",
        coerce=_decimal,
    ),
    Setting(
        "dp_epsilon",
        None,  # privacy.differential_privacy.epsilon
        {"type": "number", "exclusiveMinimum": 0},
        "a number > 0",
        "epsilon of (epsilon, delta)-differential privacy; empty = the config file's.",
        coerce=_decimal,
    ),
    Setting(
        "dp_delta",
        None,  # privacy.differential_privacy.delta
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "a number in (0, 1)",
        "delta of (epsilon, delta)-differential privacy; empty = the config file's.",
        coerce=_decimal,
    ),
    Setting(
        "dp_search_budget",
        None,  # privacy.differential_privacy.search_budget
        {"type": "number", "exclusiveMinimum": 0},
        "a number > 0",
        "The part of epsilon differential privacy spends on choosing the node (ARX's DP search "
        "budget, default 0.1); empty = the config file's.",
        coerce=_decimal,
    ),
    Setting(
        "dp_search_steps",
        None,  # privacy.differential_privacy.search_steps
        {"type": "integer", "minimum": 0},
        "an integer >= 0",
        "Pivot draws of differential privacy's search (expansions; default 100); empty = the "
        "config file's.",
        coerce=_integer,
    ),
    Setting(
        "risk_threshold",
        ("risk", "threshold"),
        _SHARE,
        "a number in (0, 1]",
        "Risk analysis: a record is at risk when its prosecutor risk exceeds this; "
        "empty = the file's (default 0.2).",
        coerce=_decimal,
        default=Fraction(1, 5),
    ),
    Setting(
        "risk_sampling_fraction",
        ("risk", "sampling_fraction"),
        _SHARE,
        "a number in (0, 1]",
        "Risk analysis: the input's share of the population (population uniques); empty = "
        "the file's (default: the input is the population).",
        coerce=_decimal,
    ),
    Setting(
        "risk_population",
        ("risk", "population"),
        _POSITIVE,
        "a positive integer",
        "Risk analysis: the population's size, in place of a sampling fraction; empty = the file's.",
        coerce=_integer,
    ),
    Setting(
        "root",
        ("memory", "root"),
        {"type": "string", "enum": ["adaptive", "paper"]},
        "one of adaptive, paper",
        "How N_RAM bounds the root: adaptive (its non-empty bins; default) or paper (possible bins).",
        default="adaptive",
    ),
    Setting(
        "objective",
        ("quality", "objective"),
        {"type": "string", "enum": list(OBJECTIVES)},
        "one of " + ", ".join(OBJECTIVES),
        "What the search minimises (SPEC §4d): dm_star (the paper's, default), dm_star_arx, dm, "
        "aecs, loss, nu_entropy, precision, height (ARX's quality models).",
        default="dm_star",
    ),
    Setting(
        "gs_factor",
        ("quality", "gs_factor"),
        {"type": "number", "minimum": 0, "maximum": 1},
        "a number between 0 and 1",
        "ARX's gs factor weighting generalisation against suppression (0..1; default 0.5).",
        coerce=_decimal,
        default=Fraction(1, 2),
    ),
    Setting(
        "aggregate",
        ("quality", "aggregate"),
        {"type": "string", "enum": list(AGGREGATES)},
        "one of " + ", ".join(AGGREGATES),
        "How a multi-dimensional objective combines the QIDs; empty = the model's default "
        "(loss: geometric_mean, precision: arithmetic_mean, nu_entropy and height: sum).",
    ),
    Setting(
        "local_recoding",
        ("transformation", "local_recoding", "records"),
        _SHARE,
        "a number in (0, 1]",
        "Local recoding (SPEC §4f): the share of ALL records each step must release (e.g. "
        "0.01); empty = the file's (off when the file has no transformation.local_recoding).",
        coerce=_decimal,
    ),
    Setting(
        "local_recoding_gs",
        ("transformation", "local_recoding", "gs_factor"),
        {"type": "number", "minimum": 0, "maximum": 1},
        "a number between 0 and 1",
        "Local recoding: the gs factor of the steps (0..1); empty = the objective's.",
        coerce=_decimal,
    ),
    Setting(
        "local_recoding_steps",
        ("transformation", "local_recoding", "max_steps"),
        _POSITIVE,
        "a positive integer",
        "Local recoding: the most steps; empty = unlimited (as ARX).",
        coerce=_integer,
    ),
    Setting(
        "utility_target",
        ("utility", "target"),
        {"type": "string", "minLength": 1},
        "a column name",
        "Utility analysis: the column classifiers predict, trained on the release and on the "
        "original (SPEC §5); empty = the file's (none: no classifiers).",
    ),
    Setting(
        "utility_models",
        ("utility", "models"),
        {"type": "array", "minItems": 1, "items": {"enum": list(UTILITY_MODELS)}},
        "a list of " + ", ".join(UTILITY_MODELS),
        "Utility analysis: the classifiers (comma-separated); empty = the file's (default all: "
        + ", ".join(UTILITY_MODELS)
        + ").",
        coerce=_names,
        default=list(UTILITY_MODELS),
    ),
    Setting(
        "utility_folds",
        ("utility", "folds"),
        {"type": "integer", "minimum": 2},
        "an integer >= 2",
        "Utility analysis: cross-validation folds; empty = the file's (default 10).",
        coerce=_integer,
        default=10,
    ),
    Setting(
        "utility_max_records",
        ("utility", "max_records"),
        _POSITIVE,
        "a positive integer",
        "Utility analysis: records in its sample; empty = the file's (default 100000).",
        coerce=_integer,
        default=100_000,
    ),
    Setting(
        "utility_features",
        ("utility", "features"),
        {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        "a list of column names",
        "Utility analysis: the columns classifiers learn from (comma-separated); empty = the "
        "file's (default: the QIDs).",
        coerce=_names,
    ),
    Setting(
        "utility_contingency",
        ("utility", "contingency"),
        {
            "type": "array",
            "items": {
                "type": "array",
                "minItems": 2,
                "maxItems": 2,
                "items": {"type": "string", "minLength": 1},
            },
        },
        "a list of QID pairs",
        "Utility analysis: QID pairs whose contingency the report shows (a:b,c:d); empty = "
        "the file's.",
        coerce=_pairs,
        default=[],
    ),
    Setting(
        "overwrite",
        None,
        {"type": "boolean"},
        "true or false",
        "Replace an existing release made by another run with other settings.",
        coerce=lambda v: (
            {"true": True, "false": False}.get(v.strip().lower(), v) if isinstance(v, str) else v
        ),
        cli=False,  # a flag without a value (--overwrite) on the CLI
    ),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}

#: one entry of quality.weights (a mapping per QID: the file only, not a per-run setting)
QUALITY_WEIGHT = Setting(
    "weight",
    None,
    {"type": "number", "minimum": 0},
    "a number >= 0",
    "ARX's attribute weight of one QID (divided by the largest).",
    coerce=_decimal,
    cli=False,
    param=False,
)


def file_keys(*section: str) -> set[str]:
    """The keys the table places directly under `section` of the YAML file (() = the top)."""
    n = len(section)
    return {s.path[n] for s in SETTINGS if s.path and len(s.path) > n and s.path[:n] == section}


OVERRIDE_KEYS: tuple[str, ...] = tuple(s.name for s in SETTINGS)


def parse_overrides(values: Mapping[str, Any]) -> dict[str, Any]:
    """Validated overrides from a CLI namespace, DAG params or operator fields.

    Empty values are dropped (the file's value stands); an unknown name is an error. Every
    bad value is named in one message (``k must be ...; suppression_limit must be ...``), so
    a user who typed two wrong values learns of both from one failed run.
    """
    unknown = sorted(set(values) - set(BY_NAME))
    if unknown:
        raise ConfigError(f"unknown setting '{unknown[0]}'")
    parsed, errors = {}, []
    for name, value in values.items():
        if is_empty(value):
            continue
        try:
            parsed[name] = BY_NAME[name].parse(value, name)
        except ConfigError as exc:
            errors.append(str(exc))
    if errors:
        raise ConfigError("; ".join(errors))
    return parsed


def read_file_setting(raw: Mapping[str, Any], setting: Setting) -> Any:
    """A setting's value from the parsed YAML file (its default when left out), validated as
    every route validates it."""
    node: Any = raw
    for key in setting.path or ():
        if not isinstance(node, Mapping) or key not in node:
            return setting.default
        node = node[key]
    if node is None:
        return setting.default
    return setting.parse(node)


def check_run_conf(conf: Mapping[str, Any] | None, allowed: Iterable[str]) -> None:
    """A DAG run's conf, before any work: no unknown key, and a config file named."""
    conf = dict(conf or {})
    allowed = set(allowed)
    unknown = sorted(str(key) for key in set(conf) - allowed)
    if unknown:
        raise ConfigError(
            f"unknown key '{unknown[0]}' in the run's conf (known: {', '.join(sorted(allowed))})"
        )
