"""Pseudonymised direct identifiers and their key (SPEC §2a).

``direct_identifiers: [{patient_id: pseudonymise}, name]``: a plain name is dropped (the
default), ``{name: pseudonymise}`` is replaced by a keyed HMAC-SHA-256 pseudonym
(``generalise/pseudonym.py``). The key comes from ``pseudonym_key``: ``{env: NAME}`` or
``{file: path}`` on every route, ``{connection: id}`` or ``{variable: name}`` resolved by the
Airflow operators (``operators/secrets.py``). The key is read when first needed, kept in
memory only, and never printed: its ``repr`` hides it and only its key check value
(`key_id`, an HMAC of a fixed text, which says whether two releases used the same key and
nothing about the key) reaches the manifest.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.parse import mapping, no_unknown

PSEUDONYMISE = "pseudonymise"
KEY_SOURCES = ("env", "file", "connection", "variable")
AIRFLOW_SOURCES = ("connection", "variable")
MIN_KEY_BYTES = 16  # 128 bits: a shorter key could be guessed from a pseudonym and one value
_KEY_ID_TEXT = b"airflow-skald pseudonym key check value"


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


class PseudonymKey:
    """Where the pseudonym key comes from, and (once read) the key. Never printed."""

    def __init__(self, kind: str, name: str, base_dir: Path | None = None) -> None:
        self.kind = kind
        self.name = name
        self._base_dir = base_dir
        self._secret: bytes | None = None

    def __repr__(self) -> str:
        return f"PseudonymKey({self.kind}={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PseudonymKey) and (self.kind, self.name) == (
            other.kind,
            other.name,
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.name))

    def describe(self) -> dict[str, str]:
        """The key's source as configured (a variable's or file's name, not the key)."""
        return {self.kind: self.name}

    def provide(self, secret: bytes | str) -> None:
        """The key as the Airflow operators read it from a connection or variable."""
        self._secret = _checked(secret, self.describe())

    def secret(self) -> bytes:
        """The key (read from the environment or the file the first time)."""
        if self._secret is None:
            self._secret = _checked(self._read(), self.describe())
        return self._secret

    def key_id(self) -> str:
        """The key check value: HMAC-SHA-256 of a fixed text, first 16 hex digits."""
        return hmac.new(self.secret(), _KEY_ID_TEXT, hashlib.sha256).hexdigest()[:16]

    def _read(self) -> bytes:
        if self.kind == "env":
            value = os.environ.get(self.name)
            if not value:
                raise ConfigError(f"pseudonym_key: environment variable {self.name} is not set")
            return value.encode()
        if self.kind == "file":
            path = Path(self.name).expanduser()
            if not path.is_absolute() and self._base_dir is not None:
                path = self._base_dir / path
            try:
                return path.read_bytes().rstrip(b"\r\n")
            except OSError as exc:
                raise ConfigError(
                    f"pseudonym_key: cannot read key file {self.name} ({type(exc).__name__})"
                ) from None
        raise ConfigError(
            f"pseudonym_key {{{self.kind}: {self.name}}} is read by the Airflow operators; "
            "on the command line give {env: NAME} or {file: path}"
        )


def _checked(secret: bytes | str, source: dict[str, str]) -> bytes:
    data = secret.encode() if isinstance(secret, str) else bytes(secret)
    if len(data) < MIN_KEY_BYTES:
        ((kind, name),) = source.items()
        raise ConfigError(
            f"pseudonym_key {{{kind}: {name}}} is shorter than {MIN_KEY_BYTES} bytes: "
            "use a random key of at least 16 bytes (e.g. `openssl rand -hex 32`)"
        )
    return data


def parse_pseudonym_key(
    raw: Any, pseudonymised: list[str], base_dir: Path | None
) -> PseudonymKey | None:
    """The `pseudonym_key` section; refused when a column is pseudonymised without one."""
    if raw is None:
        if pseudonymised:
            raise ConfigError(
                f"direct identifier '{pseudonymised[0]}' is pseudonymised but the config has "
                "no pseudonym_key ({env: NAME} or {file: path})"
            )
        return None
    raw = mapping(raw, "pseudonym_key")
    no_unknown(raw, set(KEY_SOURCES), "pseudonym_key")
    if len(raw) != 1:
        raise ConfigError("pseudonym_key takes one of env, file, connection or variable")
    ((kind, name),) = raw.items()
    if not isinstance(name, str) or not name:
        raise ConfigError(f"pseudonym_key.{kind} must be a name")
    return PseudonymKey(kind, name, base_dir)
