"""The `utility:` section read from the file and from per-run settings (the settings table's
`utility_*` rows): present, with or without keys, it turns the analysis on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.table import BY_NAME, SETTINGS, file_keys, read_file_setting
from airflow_skald.core.settings.utility import UtilitySettings

#: the settings table's rows of the section, by their setting name
KEYS = tuple(s.name for s in SETTINGS if s.path and s.path[0] == "utility")


#: a research subset releases only its records: the analysis does not yet tell the others apart


def _build(
    values: Mapping[str, Any], qids: Sequence[str], direct: Sequence[str]
) -> UtilitySettings:
    target = values.get("utility_target")
    features = values.get("utility_features")
    pairs = tuple(tuple(p) for p in values.get("utility_contingency") or ())
    for a, b in pairs:
        for name in (a, b):
            if name not in qids:
                raise ConfigError(f"utility.contingency names '{name}', which is not a QID")
        if a == b:
            raise ConfigError(f"utility.contingency pairs '{a}' with itself")
    for name in [target, *(features or [])]:
        if name is not None and name in direct:
            raise ConfigError(f"utility names '{name}', a direct identifier (it is not released)")
    models = values.get("utility_models") or BY_NAME["utility_models"].default
    return UtilitySettings(
        target=target,
        models=tuple(dict.fromkeys(models)),
        folds=values.get("utility_folds") or BY_NAME["utility_folds"].default,
        max_records=values.get("utility_max_records") or BY_NAME["utility_max_records"].default,
        features=None if features is None else tuple(dict.fromkeys(features)),
        pairs=pairs,
    )


def from_file(raw: Mapping, qids: Sequence[str], direct: Sequence[str]) -> UtilitySettings | None:
    """The file's `utility:` section (None when the file has none)."""
    if "utility" not in raw:
        return None
    section = raw["utility"] or {}
    if not isinstance(section, Mapping):
        raise ConfigError("utility must be a mapping")
    unknown = sorted(set(section) - file_keys("utility"))
    if unknown:
        raise ConfigError(
            f"unknown key '{unknown[0]}' in utility (known: {', '.join(sorted(file_keys('utility')))})"
        )
    return _build({k: read_file_setting(raw, BY_NAME[k]) for k in KEYS}, qids, direct)


def with_overrides(
    current: UtilitySettings | None,
    values: Mapping[str, Any],
    qids: Sequence[str],
    direct: Sequence[str],
) -> UtilitySettings | None:
    """`current` with the per-run `utility_*` settings given (any of them turns it on); a
    research subset refuses it (`ResearchSubset.check`, after the run's settings)."""
    given = {k: v for k, v in values.items() if k in KEYS}
    if not given:
        return current
    # the section as described, under its settings' names (utility_target, ...)
    base = {f"utility_{k}": v for k, v in current.describe().items()} if current else {}
    return _build({**base, **given}, qids, direct)
