"""What a config with differential privacy may not combine it with (docs/design.md §4e, ARX's
``ARXAnonymizer.checkBeforeEncoding`` and ``ARXConfiguration``), one line each, and the
suppression limit it runs with (1: ARX's DP runs may suppress every record).

ARX refuses DP with a research subset (δ-presence, exact k-map: `research_subset` refuses every
model but those), with microaggregation and with local recoding, and a data-dependent search
with a quality model that has no score function."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.differential_privacy import OBJECTIVES, DifferentialPrivacy

# config fields of features ARX does not run with differential privacy
_REFUSED = {
    "microaggregations": "microaggregation",
    "local_recoding": "local recoding",
}


def dp_of(config: Any) -> DifferentialPrivacy | None:
    found = [m for m in config.privacy if isinstance(m, DifferentialPrivacy)]
    return found[0] if found else None


def apply_dp_rules(config: Any, limit_given: bool) -> Any:
    """`config` with suppression limit 1 when it asks for DP; ConfigError (one line) for a
    combination ARX refuses. `limit_given`: the file or a flag set the suppression limit."""
    model = dp_of(config)
    if model is None:
        return config
    if limit_given and config.suppression_limit != 1:
        raise ConfigError(
            "privacy.suppression_limit does not apply with differential_privacy (every record "
            "may be suppressed, as in ARX): leave it out"
        )
    for field, what in _REFUSED.items():
        if getattr(config, field, None):
            raise ConfigError(f"differential_privacy cannot be combined with {what} (as in ARX)")
    if model.searched and config.objective not in OBJECTIVES:
        raise ConfigError(
            "differential_privacy's search scores nodes by one of "
            f"{', '.join(OBJECTIVES)} (ARX's score functions): quality.objective is "
            f"{config.objective}"
        )
    return replace(config, suppression_limit=Fraction(1))
