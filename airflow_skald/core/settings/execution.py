"""`execution:` of the config (docs/design.md §2b) as a validated value: which engine runs the
passes and, for an engine that is a server, its connection. A leaf module: the config and the
settings table read it without importing an engine.

    execution: chunks                                  # the default: rows read into the worker
    execution: {engine: duckdb}                        # or postgresql, spark
    execution: {engine: spark, connection: "sc://spark:15002"}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.setting import Setting, choice_setting

#: the engine path's names (docs/design.md §2b); which of them a run may use: `engine.registry`
ENGINE_NAMES: tuple[str, ...] = ("chunks", "duckdb", "postgresql", "spark")
CHUNKS = "chunks"


@dataclass(frozen=True)
class ExecutionSettings:
    """Where the passes run: an engine's name and its connection (None: the engine's own,
    e.g. the input's database, or none needed). In Airflow the connection is an Airflow
    connection id; on the command line a URI or the name of an environment variable holding
    one (as `input.connection`, docs/design.md §2a). Never in the settings' hash, the logs or
    the manifest (it may hold a password)."""

    engine: str = CHUNKS
    connection: str | None = None

    def __post_init__(self) -> None:
        if self.engine == CHUNKS and self.connection is not None:
            raise ConfigError(
                "execution.connection: the chunk engine (execution: chunks) takes no connection"
            )
        if self.connection is not None and holds_secret(self.connection):
            raise ConfigError(  # the file is archived with the release: never its secret
                "execution.connection: the URI holds a secret (a password or token); put the "
                "URI in an environment variable (or an Airflow connection) and give its name"
            )


def not_yet(what: str, engine: str) -> str:
    """The line refusing a setting (`what` names it) the engine named `engine` does not run
    yet (docs/design.md §2b: refused before any work, in one line)."""
    return f"{what} does not run in the {engine} engine yet; use execution: chunks"


def holds_secret(connection: str) -> bool:
    """A URI with a password in its user info, a `password=` query parameter or Spark
    Connect's `;token=` parameter (ADR 0069)."""
    if "://" not in connection:
        return False  # a name
    params = connection.split("://", 1)[1].replace("?", ";").replace("&", ";").split(";")[1:]
    named = {p.split("=", 1)[0].strip().lower() for p in params if "=" in p}
    userinfo = urlsplit(connection.split(";", 1)[0]).netloc.rpartition("@")[0]
    return ":" in userinfo or bool(named & {"password", "token"})


def normalise(raw: Any) -> Any:
    """The file's `execution:` as a mapping: the short form `execution: chunks` is
    ``{engine: chunks}``; anything else is left for the settings table to judge."""
    if isinstance(raw, str):
        return {"engine": raw}
    if raw is not None and not isinstance(raw, Mapping):
        raise ConfigError("execution must be an engine's name or a mapping {engine, connection}")
    return raw


#: the settings table's rows of `execution:` (`table.SETTINGS` lists them in its order)
EXECUTION_ROWS: tuple[Setting, ...] = (
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
)
