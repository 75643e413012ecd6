"""The engines a run may use, by the name `execution.engine` gives (docs/design.md §2b): one
line per engine. The runner asks `open_engine`; nothing else names an engine's class.

An engine's module is imported only when a run picks it (an engine may need an optional
extra: ``airflow-skald[duckdb]``), so this module stays light. A name of §2b's list that is
not registered here (an engine not built yet) or not installed is refused before any work, in
one line naming the setting.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.execution import ENGINE_NAMES

if TYPE_CHECKING:
    from airflow_skald.core.config.skald_config import SkaldConfig
    from airflow_skald.core.engine.base import Engine
    from airflow_skald.core.passes.state import Run

#: name -> "module:Class" of the engine (imported when a run picks it)
ENGINES: dict[str, str] = {
    "chunks": "airflow_skald.core.engine.chunks:ChunkEngine",
    "duckdb": "airflow_skald.core.engine.sql.duckdb_engine:DuckDBEngine",
    "postgresql": "airflow_skald.core.engine.sql.postgres_engine:PostgresEngine",
    "spark": "airflow_skald.core.engine.sql.spark_engine:SparkEngine",
}


def register(name: str, target: str | type[Engine]) -> None:
    """Add an engine under `name` (a "module:Class" path, or the class itself)."""
    ENGINES[name] = target  # type: ignore[assignment]


def unregister(name: str) -> None:
    ENGINES.pop(name, None)


def registered() -> tuple[str, ...]:
    return tuple(ENGINES)


def engine_class(name: str) -> type[Engine]:
    """The class registered under `name`; ConfigError (one line) when there is none."""
    target = ENGINES.get(name)
    if target is None:
        known = "one of docs/design.md §2b's engines, " if name in ENGINE_NAMES else ""
        raise ConfigError(
            f"execution.engine '{name}' is {known}not available in this installation "
            f"(registered: {', '.join(ENGINES)})"
        )
    if not isinstance(target, str):
        return target
    module, _, cls = target.partition(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as exc:  # an optional extra not installed
        missing = exc.name or module
        raise ConfigError(
            f"execution.engine '{name}' needs the package '{missing}' "
            f"(pip install 'airflow-skald[{name}]')"
        ) from None


def open_engine(config: SkaldConfig, workers: int = 1) -> Engine:
    """The engine `config.execution` names, made for the run, which it has checked
    (`Engine.check`: what it cannot do is refused now, before any work)."""
    engine = engine_class(config.execution)(config.execution_settings, workers)
    engine.check(config)
    return engine


def run_engine(run: Run, workers: int | None = None) -> Engine:
    """The engine the run's config names (`open_engine`), made once for this run (again if
    asked for another worker count); an engine not registered, or one that cannot do what the
    config asks, is refused in one line (ConfigError)."""
    made = run._cache.get("engine")
    if made is None or (workers is not None and made.workers != max(1, workers)):
        made = run._cache["engine"] = open_engine(run.config, workers or 1)
    return made
