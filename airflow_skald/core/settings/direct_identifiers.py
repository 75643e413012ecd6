"""The `direct_identifiers` section (docs/design.md §2a): a plain name is dropped (the default),
``{name: drop}`` too, ``{name: pseudonymise}`` is replaced by a keyed pseudonym
(``core.transform.pseudonyms``)."""

from __future__ import annotations

from typing import Any

from airflow_skald.core.errors import ConfigError

PSEUDONYMISE = "pseudonymise"


def parse_direct_identifiers(raw: Any) -> tuple[list[str], list[str]]:
    """(every direct identifier in config order, those pseudonymised)."""
    if not isinstance(raw, list):
        raise ConfigError("direct_identifiers must be a list")
    names, pseudonymised = [], []
    for i, item in enumerate(raw):
        where = f"direct_identifiers[{i}]"
        if isinstance(item, dict):
            if len(item) != 1:
                raise ConfigError(f"{where} must be a column name or {{name: {PSEUDONYMISE}}}")
            ((name, how),) = item.items()
            if how not in (PSEUDONYMISE, "drop"):
                raise ConfigError(f"{where}: '{name}' may be '{PSEUDONYMISE}' or 'drop'")
            if how == PSEUDONYMISE:
                pseudonymised.append(name)
        else:
            name = item
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where} must be a column name")
        names.append(name)
    return names, pseudonymised
