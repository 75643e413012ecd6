"""What the SQL engines run today, and the one-line refusal of the rest (docs/design.md §2b:
"what it cannot do yet is refused before any work in one line"). Checked from the config
alone, before the output's lease, a temporary table or a byte is written."""

from __future__ import annotations

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.differential_privacy import dp_of
from airflow_skald.core.transform import registry as transform_registry

#: privacy models (their config keys) whose figures the engine's counts carry exactly
SUPPORTED_MODELS: frozenset[str] = frozenset(
    {
        "k",
        "l_diversity",
        "t_closeness",
        "b_likeness",
        "d_disclosure",
        "average_risk",
        "sample_uniqueness",
        "population_uniqueness",
        "k_map",  # with an estimator, or exact against the population (a research subset)
        "delta_presence",
    }
)

#: engines that gather the utility analysis's counts and sample (`sql.utility`, ADR 0077)
UTILITY_ENGINES: frozenset[str] = frozenset({"spark", "duckdb"})


def unsupported(config: SkaldConfig, engine: str) -> str | None:
    """The first setting `engine` does not run yet, as the refusal's text; None: all run."""
    if dp_of(config) is not None:
        return (
            "differential privacy: its keyed sample would put the key into the engine's "
            "query text; use execution: chunks"
        )
    transformed = transform_registry.engine_refusal(config.transformations, engine)
    checks = [
        (transformed is not None, transformed),
        (
            config.utility is not None and engine not in UTILITY_ENGINES,
            "utility (the analysis reads the released rows)",
        ),
    ]
    for present, what in checks:
        if present:
            return f"{what} does not run in the {engine} engine yet; use execution: chunks"
    for model in config.privacy:
        if model.config_key not in SUPPORTED_MODELS:
            return (
                f"privacy.{model.config_key} does not run in the {engine} engine yet; "
                "use execution: chunks"
            )
    return None


def check_supported(config: SkaldConfig, engine: str) -> None:
    """Refuse (ConfigError, one line) what `engine` does not run yet."""
    reason = unsupported(config, engine)
    if reason is not None:
        raise ConfigError(f"execution.engine {engine}: {reason}")
