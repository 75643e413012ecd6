"""The one table of per-run settings (docs/design.md §2, §6, §7).

Each row names a setting once: where it lives in the YAML file, its JSON Schema, the words of
its error message, its CLI flag and its DAG param. The config loader, the CLI's flags, the
DAG's params and the operators' templated fields are all generated from this table, so every
route parses and validates a value the same way and fails with the same one-line message.
How one setting parses, validates and fails is `setting.Setting`; an empty value (None, "",
"None", "null") means "not set": the file's value is used, never a hidden default (docs/design.md §2).
The rows live beside the section they fill: the privacy models' and risk analysis' in
`privacy_rows`, `quality:`'s in `quality`, local recoding's in `transformation`, `utility:`'s in
`utility`, `execution:`'s in `execution`; the run's own (input, output, memory, chunks) here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.execution import EXECUTION_ROWS
from airflow_skald.core.settings.privacy_rows import CRITERION_ROWS, PRIVACY_ROWS, RISK_ROWS
from airflow_skald.core.settings.quality import QUALITY_ROWS
from airflow_skald.core.settings.setting import Setting, choice_setting, integer_setting, is_empty
from airflow_skald.core.settings.suppression import SUPPRESSED_RECORDS
from airflow_skald.core.settings.transformation import LOCAL_RECODING_ROWS
from airflow_skald.core.settings.utility import UTILITY_ROWS

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
    *PRIVACY_ROWS,
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
    SUPPRESSED_RECORDS,  # suppression's (settings/suppression.py)
    *CRITERION_ROWS,
    *RISK_ROWS,
    choice_setting(
        "root",
        ("memory", "root"),
        ("adaptive", "paper"),
        "How N_RAM bounds the root: adaptive (its non-empty bins; default) or paper (possible bins).",
        default="adaptive",
    ),
    *QUALITY_ROWS,
    *LOCAL_RECODING_ROWS,
    *UTILITY_ROWS,
    *EXECUTION_ROWS,
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
