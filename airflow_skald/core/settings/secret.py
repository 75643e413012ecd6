"""Where a secret comes from: the one secret-reference concept of the config (docs/design.md §2a, §4e).

A config names a secret, never holds it: ``{env: NAME}`` or ``{file: path}`` are read by the
core on every route (the command line's only ways), ``{connection: ID}`` or ``{variable:
NAME}`` by the Airflow operators (``operators/secrets.py``: an Airflow connection's password,
or its extra ``key``, or a variable, through the secrets backends), which hand the secret over
in memory (`SecretRef.provide`). Two settings take one: ``pseudonym_key`` (the pseudonyms'
HMAC key) and ``dp_key`` (the keyed streams of a differentially private run).

The secret is read when first needed and kept in memory only: its ``repr`` and every error
name the setting and the kind of source, never the name given (a secret pasted where a name
belongs must not be echoed either) nor the secret, and it is never logged, written to XCom, artifacts, the
manifest, the report or lineage.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.parse import mapping

CORE_SOURCES = ("env", "file")
AIRFLOW_SOURCES = ("connection", "variable")
SOURCES = (*CORE_SOURCES, *AIRFLOW_SOURCES)
MIN_BYTES = 16  # 128 bits: a shorter secret could be guessed from what it keys


class SecretRef:
    """The `setting` (``pseudonym_key``, ``dp_key``) naming where its secret is, and (once read
    or provided) the secret. Never printed."""

    def __init__(self, setting: str, kind: str, name: str, base_dir: Path | None = None):
        self.setting = setting
        self.kind = kind
        self.name = name
        self._base_dir = base_dir
        self._secret: bytes | None = None

    @classmethod
    def parse(cls, raw: Any, setting: str, base_dir: Path | None = None) -> SecretRef | None:
        """The setting's mapping (None when absent): one of env, file, connection, variable."""
        if raw is None:
            return None
        raw = mapping(raw, setting)
        if len(raw) != 1 or set(raw) - set(SOURCES):  # an unknown key is not echoed either
            raise ConfigError(f"{setting} takes one of env, file, connection or variable")
        ((kind, name),) = raw.items()
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{setting}.{kind} must be a name")
        return cls(setting, kind, name, base_dir)

    def __repr__(self) -> str:
        return f"SecretRef({self.where})"

    @property
    def where(self) -> str:
        """The reference in an error or a log: the setting and the kind of source, never the
        name given (a secret pasted where a name belongs would be echoed)."""
        return f"{self.setting}.{self.kind}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretRef) and self._ident == other._ident

    def __hash__(self) -> int:
        return hash(self._ident)

    @property
    def _ident(self) -> tuple[str, str, str]:
        return (self.setting, self.kind, self.name)

    @property
    def from_airflow(self) -> bool:
        """Read by the operators (a connection or variable), not by the core."""
        return self.kind in AIRFLOW_SOURCES

    def describe(self) -> dict[str, str]:
        """The reference as configured (a variable's or file's name, never the secret)."""
        return {self.kind: self.name}

    def provide(self, secret: bytes | str) -> None:
        """The secret as the Airflow operators read it from a connection or variable."""
        self._secret = self._checked(secret)

    def secret(self) -> bytes:
        """The secret (read from the environment or the file the first time); ConfigError,
        one line naming the reference, when it cannot be read or is too short."""
        if self._secret is None:
            self._secret = self._checked(self._read())
        return self._secret

    def _read(self) -> bytes:
        if self.kind == "env":
            value = os.environ.get(self.name)
            if not value:
                raise ConfigError(f"{self.where}: the environment variable it names is not set")
            return value.encode()
        if self.kind == "file":
            path = Path(self.name).expanduser()
            if not path.is_absolute() and self._base_dir is not None:
                path = self._base_dir / path
            try:
                return path.read_bytes().rstrip(b"\r\n")
            except OSError as exc:
                raise ConfigError(
                    f"{self.where}: cannot read the file it names ({type(exc).__name__})"
                ) from None
        raise ConfigError(
            f"{self.where} is read by the Airflow operators; on the command line give "
            "{env: NAME} or {file: path}"
        )

    def _checked(self, secret: bytes | str) -> bytes:
        data = secret.encode() if isinstance(secret, str) else bytes(secret)
        if len(data) < MIN_BYTES:
            raise ConfigError(
                f"{self.where} holds a secret shorter than {MIN_BYTES} bytes: use a random "
                "secret of at least 16 bytes (e.g. `openssl rand -hex 32`)"
            )
        return data
