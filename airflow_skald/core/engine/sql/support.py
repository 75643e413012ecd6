"""The one-line refusal of what a SQL engine does not run yet (docs/design.md §2b: "what it
cannot do yet is refused before any work in one line"), checked from the config alone, before
the output's lease, a temporary table or a byte is written.

Nothing here lists what an engine runs: each owner answers for itself (ARX's
``isLocalRecodingSupported()`` style): a privacy model (`PrivacyModel.engine_refusal`), a
transformation (`Transformation.engine_refusal`) and the engine, for the utility analysis
(`Engine.utility`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.execution import not_yet
from airflow_skald.core.transform import registry as transform_registry

if TYPE_CHECKING:
    from airflow_skald.core.engine.base import Engine


def unsupported(config: SkaldConfig, engine: Engine) -> str | None:
    """The first setting `engine` does not run yet, as the refusal's text; None: all run.
    The models are asked first (in the config's order), then the transformations, then
    whether the engine gathers the utility analysis."""
    name = engine.name
    refused = next((r for m in config.privacy if (r := m.engine_refusal(name))), None)
    if refused is not None:
        return refused
    transformed = transform_registry.engine_refusal(config.transformations, name)
    if transformed is not None:
        return not_yet(transformed, name)
    if config.utility is not None and not engine.utility:
        return not_yet("utility (the analysis reads the released rows)", name)
    return None


def check_supported(config: SkaldConfig, engine: Engine) -> None:
    """Refuse (ConfigError, one line) what `engine` does not run yet."""
    reason = unsupported(config, engine)
    if reason is not None:
        raise ConfigError(f"execution.engine {engine.name}: {reason}")
