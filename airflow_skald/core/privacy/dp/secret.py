"""Where a differentially private run reads its secret (SPEC §4e): ``dp_key: {env: NAME}`` or
``{file: path}`` in the config (the reference only, never the secret), or a secret an operator
resolved from an Airflow connection or variable and handed to the run in memory.

The secret is read when a phase needs it (the sample, the search's draws) and kept in memory
only: it is never logged, written to XCom, artifacts, the manifest, the report or lineage.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.parse import mapping, no_unknown

WHERE = "dp_key"
MISSING = (
    "differential privacy needs a secret: dp_key: {env: NAME} or {file: path} in the config "
    "(operators: dp_key_conn_id or dp_key_variable)"
)


@dataclass(frozen=True)
class KeyRef:
    """The name of an environment variable or the path of a file holding the secret."""

    env: str | None = None
    file: str | None = None

    @classmethod
    def parse(cls, raw: Any, base_dir: Path | None = None) -> KeyRef | None:
        if raw is None:
            return None
        raw = mapping(raw, WHERE)
        no_unknown(raw, {"env", "file"}, WHERE)
        if len(raw) != 1 or not isinstance(next(iter(raw.values())), str):
            raise ConfigError(f"{WHERE} must be {{env: NAME}} or {{file: path}}")
        if "env" in raw:
            return cls(env=raw["env"])
        path = Path(raw["file"])
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        return cls(file=str(path))

    def read(self) -> bytes:
        """The secret; ConfigError (one line, naming the variable or file) if absent or empty."""
        if self.env is not None:
            value = os.environ.get(self.env, "")
            if not value:
                raise ConfigError(f"{WHERE}: the environment variable {self.env} is not set")
            return value.encode()
        try:
            data = Path(str(self.file)).read_bytes().strip()
        except OSError:
            raise ConfigError(f"{WHERE}: the file {self.file} cannot be read") from None
        if not data:
            raise ConfigError(f"{WHERE}: the file {self.file} is empty")
        return data


def resolve(ref: KeyRef | None, given: bytes | None = None) -> bytes:
    """The run's secret: one handed over in memory (operators), else the config's reference."""
    if given:
        return given
    if ref is None:
        raise ConfigError(MISSING)
    return ref.read()
