"""Reading the parts of a config mapping, one line per mistake (ConfigError): shared by the
config loader and by each privacy model, which parses its own entries."""

from __future__ import annotations

from typing import Any

from airflow_skald.core.errors import ConfigError


def mapping(raw: Any, where: str) -> dict:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping")
    return raw


def no_unknown(raw: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(str(key) for key in set(raw) - allowed)  # YAML keys may be null, 1...
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} in {where}")


def names(raw: Any, where: str) -> list[str]:
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise ConfigError(f"{where} must be a list of column names")
    return list(raw)


def choice(value: Any, choices: tuple[str, ...], where: str) -> str:
    if value not in choices:
        raise ConfigError(f"{where} must be one of {', '.join(choices)}")
    return value


def criteria_list(raw: Any, where: str, sensitive: list[str]) -> list[tuple[str, dict]]:
    """(where, mapping) per criterion of a list; each names a sensitive attribute."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError(f"privacy.{where} must be a list of criteria")
    out = []
    for i, item in enumerate(raw):
        at = f"privacy.{where}[{i}]"
        item = mapping(item, at)
        attribute = item.get("attribute")
        if not isinstance(attribute, str) or not attribute:
            raise ConfigError(f"{at} needs an 'attribute'")
        if attribute not in sensitive:
            raise ConfigError(f"{at}: attribute '{attribute}' is not one of sensitive_attributes")
        out.append((at, item))
    return out


def no_repeats(criteria: list, where: str, key) -> None:
    keys = [key(c) for c in criteria]
    for i, k in enumerate(keys):
        if k in keys[:i]:
            raise ConfigError(f"privacy.{where}[{i}] repeats a criterion listed before it")
