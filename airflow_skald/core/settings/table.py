"""The one table of per-run settings (docs/design.md §2, §6, §7).

Each row names a setting once: where it lives in the YAML file, its JSON Schema, the words of
its error message, its CLI flag and its DAG param. The config loader, the CLI's flags, the
DAG's params and the operators' templated fields are all generated from this table, so every
route parses and validates a value the same way and fails with the same one-line message.
How one setting parses, validates and fails is `setting.Setting`; an empty value (None, "",
"None", "null") means "not set": the file's value is used, never a hidden default (docs/design.md §2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.execution import CHUNKS, ENGINE_NAMES
from airflow_skald.core.settings.quality import AGGREGATES, OBJECTIVES
from airflow_skald.core.settings.setting import (
    ABOVE_ZERO,
    AT_LEAST_ZERO,
    OPEN_SHARE,
    SHARE,
    ZERO_TO_ONE,
    Setting,
    choice_setting,
    decimal_setting,
    integer_setting,
    is_empty,
    to_names,
    to_pairs,
)
from airflow_skald.core.settings.transformation import MODES as LOCAL_RECODING_MODES
from airflow_skald.core.settings.utility import MODELS as UTILITY_MODELS

_TABLE_NAME = {
    "type": "string",
    "pattern": r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$",
}

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
        _TABLE_NAME,
        "a table name (name or schema.name)",
        "Overrides input.table: the database table read (the config's input names its connection).",
    ),
    Setting(
        "output_table",
        ("output", "table"),
        _TABLE_NAME,
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
    integer_setting(
        "k",
        ("privacy", "k"),
        2,
        "k of k-anonymity (an integer >= 2); empty = the config file's privacy.k.",
    ),
    decimal_setting(
        "suppression_limit",
        ("privacy", "suppression_limit"),
        ZERO_TO_ONE,
        "Fraction of all records that may be suppressed (0..1, e.g. 0.01 = 1 %); "
        "empty = the config file's.",
        default=Fraction(0),
    ),
    integer_setting(
        "histogram_bins",
        ("memory", "histogram_bins"),
        2,
        "N_RAM, the histogram size bound; empty = the file's, or derived from the chunk size.",
    ),
    integer_setting(
        "chunk_rows",
        ("chunk_rows",),
        1,
        "Rows per chunk; empty = the config file's.",
        default=1_000_000,
    ),
    choice_setting(
        "suppressed_records",
        ("suppressed_records",),
        ("mask", "drop"),
        "mask: keep suppressed rows with every QID '*'; drop: leave them out.",
        default="mask",
    ),
    # the criteria's thresholds (path None): read by each criterion's loader with its row
    # privacy.l_diversity[i].l
    integer_setting(
        "l", None, 2, "l of the one configured l-diversity criterion; empty = the config file's."
    ),
    # privacy.t_closeness[i].t
    decimal_setting(
        "t",
        None,
        SHARE,
        "t of the one configured t-closeness criterion; empty = the config file's.",
    ),
    # privacy.l_diversity[i].c (recursive (c,l)-diversity)
    decimal_setting(
        "c",
        None,
        ABOVE_ZERO,
        "c of the one configured recursive (c,l)-diversity criterion; empty = the file's.",
        cli=False,
        param=False,
    ),
    # privacy.l_diversity[i].estimator (entropy l-diversity; ADR 0043)
    choice_setting(
        "entropy_estimator",
        None,
        ("shannon", "grassberger"),
        "How the one configured entropy l-diversity criterion estimates entropy: shannon "
        "(ARX's default) or grassberger (ARX's EntropyEstimator.GRASSBERGER); empty = the file's.",
        cli=False,
        param=False,
    ),
    # privacy.t_closeness[i].order (ordered distance; ADR 0044)
    Setting(
        "t_order",
        None,
        {"type": "array", "minItems": 1, "items": {"type": ["string", "number", "null"]}},
        "numbers, text or a list of values",
        "How the one configured ordered-distance t-closeness criterion orders its values: "
        "numbers (default), text (ARX's DataType.STRING: Java's String.compareTo, an empty "
        "cell first) or the values listed in order (ARX's DataType.createOrderedString); "
        "empty = the file's.",
        coerce=to_names,
        cli=False,
        param=False,
    ),
    # privacy.average_risk.max (docs/design.md §4c)
    decimal_setting(
        "average_risk",
        None,
        SHARE,
        "Largest average re-identification risk of the configured average-risk model; "
        "empty = the config file's.",
    ),
    # privacy.sample_uniqueness.max
    decimal_setting(
        "sample_uniqueness",
        None,
        SHARE,
        "Largest share of sample-unique records (sample-uniqueness model); empty = the file's.",
    ),
    # privacy.population_uniqueness.max
    decimal_setting(
        "population_uniqueness",
        None,
        SHARE,
        "Largest estimated share of population-unique records (population-uniqueness model); "
        "empty = the file's.",
    ),
    # privacy.k_map.k
    integer_setting(
        "k_map", None, 2, "k of the configured k-map model; empty = the config file's."
    ),
    # privacy.b_likeness[i].beta
    decimal_setting(
        "b_likeness",
        None,
        ABOVE_ZERO,
        "beta of the one configured b-likeness criterion; empty = the config file's.",
    ),
    # privacy.d_disclosure[i].delta
    decimal_setting(
        "d_disclosure",
        None,
        ABOVE_ZERO,
        "delta of the one configured d-disclosure criterion; empty = the config file's.",
    ),
    # privacy.profitability.publisher_benefit, ... (ARX's cost/benefit configuration, ADR 0046)
    decimal_setting(
        "publisher_benefit",
        None,
        AT_LEAST_ZERO,
        "Profitability: the publisher's benefit per record released (ARX's default 1200); "
        "empty = the config file's.",
    ),
    decimal_setting(
        "publisher_loss",
        None,
        AT_LEAST_ZERO,
        "Profitability: the publisher's loss per successful re-identification (ARX's default "
        "300); empty = the config file's.",
    ),
    decimal_setting(
        "adversary_gain",
        None,
        AT_LEAST_ZERO,
        "Profitability: the adversary's gain per successful re-identification (ARX's default "
        "300); empty = the config file's.",
    ),
    decimal_setting(
        "adversary_cost",
        None,
        AT_LEAST_ZERO,
        "Profitability: the adversary's cost per attack (ARX's default 4); empty = the config "
        "file's.",
    ),
    # privacy.differential_privacy.epsilon, .delta, .search_budget, .search_steps
    decimal_setting(
        "dp_epsilon",
        None,
        ABOVE_ZERO,
        "epsilon of (epsilon, delta)-differential privacy; empty = the config file's.",
    ),
    decimal_setting(
        "dp_delta",
        None,
        OPEN_SHARE,
        "delta of (epsilon, delta)-differential privacy; empty = the config file's.",
    ),
    decimal_setting(
        "dp_search_budget",
        None,
        ABOVE_ZERO,
        "The part of epsilon differential privacy spends on choosing the node (ARX's DP search "
        "budget, default 0.1); empty = the config file's.",
    ),
    integer_setting(
        "dp_search_steps",
        None,
        0,
        "Pivot draws of differential privacy's search (expansions; default 100); empty = the "
        "config file's.",
    ),
    decimal_setting(
        "risk_threshold",
        ("risk", "threshold"),
        SHARE,
        "Risk analysis: a record is at risk when its prosecutor risk exceeds this; "
        "empty = the file's (default 0.2).",
        default=Fraction(1, 5),
    ),
    decimal_setting(
        "risk_sampling_fraction",
        ("risk", "sampling_fraction"),
        SHARE,
        "Risk analysis: the input's share of the population (population uniques); empty = "
        "the file's (default: the input is the population).",
    ),
    integer_setting(
        "risk_population",
        ("risk", "population"),
        1,
        "Risk analysis: the population's size, in place of a sampling fraction; empty = the file's.",
    ),
    choice_setting(
        "root",
        ("memory", "root"),
        ("adaptive", "paper"),
        "How N_RAM bounds the root: adaptive (its non-empty bins; default) or paper (possible bins).",
        default="adaptive",
    ),
    choice_setting(
        "objective",
        ("quality", "objective"),
        OBJECTIVES,
        "What the search minimises (docs/design.md §4d): dm_star (the paper's, default), dm_star_arx, dm, "
        "aecs, loss, nu_entropy, nu_entropy_nm, precision, height, publisher_payout (ARX's "
        "quality models).",
        default="dm_star",
    ),
    decimal_setting(
        "gs_factor",
        ("quality", "gs_factor"),
        ZERO_TO_ONE,
        "ARX's gs factor weighting generalisation against suppression (0..1; default 0.5).",
        default=Fraction(1, 2),
    ),
    choice_setting(
        "aggregate",
        ("quality", "aggregate"),
        AGGREGATES,
        "How a multi-dimensional objective combines the QIDs (rank: ARX's RANK, the weighted "
        "values largest first, compared in turn); empty = the model's default "
        "(loss: geometric_mean, precision: arithmetic_mean, nu_entropy, nu_entropy_nm and height: sum).",
    ),
    decimal_setting(
        "local_recoding",
        ("transformation", "local_recoding", "records"),
        SHARE,
        "Local recoding (docs/design.md §4f): the share of ALL records each step must release (e.g. "
        "0.01); empty = the file's (off when the file has no transformation.local_recoding).",
    ),
    decimal_setting(
        "local_recoding_gs",
        ("transformation", "local_recoding", "gs_factor"),
        ZERO_TO_ONE,
        "Local recoding: the gs factor of the steps (0..1); empty = the objective's.",
    ),
    integer_setting(
        "local_recoding_steps",
        ("transformation", "local_recoding", "max_steps"),
        1,
        "Local recoding: the most searches (each step is one; adaptive: a search that released "
        "nothing counts too, ARX's maxIterations); empty = unlimited.",
    ),
    choice_setting(
        "local_recoding_mode",
        ("transformation", "local_recoding", "mode"),
        LOCAL_RECODING_MODES,
        "Local recoding: fast (ARX's optimizeIterativeFast: each step releases at least "
        "`records` of all records) or adaptive (ARX's optimizeIterative: each step under the "
        "run's suppression limit, its gs factor raised by the adaption factor after a search "
        "that released nothing); empty = the file's (default fast).",
    ),
    decimal_setting(
        "local_recoding_adaption",
        ("transformation", "local_recoding", "adaption_factor"),
        ZERO_TO_ONE,
        "Local recoding, adaptive: added to the steps' gs factor after a search that released "
        "nothing (0..1; 0: stop there); empty = the file's (default 0.05, ARX's).",
    ),
    Setting(
        "utility_target",
        ("utility", "target"),
        {"type": "string", "minLength": 1},
        "a column name",
        "Utility analysis: the column classifiers predict, trained on the release and on the "
        "original (docs/design.md §5); empty = the file's (none: no classifiers).",
    ),
    Setting(
        "utility_models",
        ("utility", "models"),
        {"type": "array", "minItems": 1, "items": {"enum": list(UTILITY_MODELS)}},
        "a list of " + ", ".join(UTILITY_MODELS),
        "Utility analysis: the classifiers (comma-separated); empty = the file's (default all: "
        + ", ".join(UTILITY_MODELS)
        + ").",
        coerce=to_names,
        default=list(UTILITY_MODELS),
    ),
    integer_setting(
        "utility_folds",
        ("utility", "folds"),
        2,
        "Utility analysis: cross-validation folds; empty = the file's (default 10).",
        default=10,
    ),
    integer_setting(
        "utility_max_records",
        ("utility", "max_records"),
        1,
        "Utility analysis: records in its sample; empty = the file's (default 100000).",
        default=100_000,
    ),
    Setting(
        "utility_features",
        ("utility", "features"),
        {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        "a list of column names",
        "Utility analysis: the columns classifiers learn from (comma-separated); empty = the "
        "file's (default: the QIDs).",
        coerce=to_names,
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
        coerce=to_pairs,
        default=[],
    ),
    choice_setting(
        "execution",
        ("execution", "engine"),
        ENGINE_NAMES,
        "Where the passes run (docs/design.md §2b): chunks (the default: rows read into the "
        "worker) or an engine that runs them where the data is (duckdb, postgresql, spark); "
        "empty = the file's execution.",
        default=CHUNKS,
    ),
    Setting(
        "execution_connection",
        ("execution", "connection"),
        {"type": "string", "minLength": 1},
        "a connection",
        "The engine's connection (Airflow: a connection id; CLI: a URI or the name of an "
        "environment variable holding one); empty = the file's execution.connection.",
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
QUALITY_WEIGHT = decimal_setting(
    "weight",
    None,
    AT_LEAST_ZERO,
    "ARX's attribute weight of one QID (divided by the largest).",
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
