"""Pseudonymised direct identifiers and their key (docs/design.md §2a).

``direct_identifiers: [{patient_id: pseudonymise}, name]``: a plain name is dropped (the
default), ``{name: pseudonymise}`` is replaced by a keyed HMAC-SHA-256 pseudonym
(``transform/pseudonyms/hashing.py``). The key comes from ``pseudonym_key``, a secret reference
(``settings/secret.py``: ``{env: NAME}`` or ``{file: path}`` on every route,
``{connection: id}`` or ``{variable: name}`` resolved by the Airflow operators). Only its key
check value (`key_id`, the key's HMAC in a domain of its own, ``settings/keyed.py``, which says
whether two releases used the same key and nothing about the key) reaches the manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings import keyed
from airflow_skald.core.settings.secret import SecretRef


def key_id(key: SecretRef) -> str:
    """The key check value: the key's HMAC-SHA-256 in its own domain, first 16 hex digits."""
    return keyed.derive(key.secret(), keyed.PSEUDONYM_KEY_ID).hex()[:16]


def parse_pseudonym_key(
    raw: Any, pseudonymised: list[str], base_dir: Path | None
) -> SecretRef | None:
    """The `pseudonym_key` section; refused when a column is pseudonymised without one."""
    if raw is None and pseudonymised:
        raise ConfigError(
            f"direct identifier '{pseudonymised[0]}' is pseudonymised but the config has "
            "no pseudonym_key ({env: NAME} or {file: path})"
        )
    return SecretRef.parse(raw, "pseudonym_key", base_dir)
