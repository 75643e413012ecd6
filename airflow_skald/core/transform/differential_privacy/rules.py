"""What a config with differential privacy may not combine it with (docs/design.md §4e, ARX's
``ARXAnonymizer.checkBeforeEncoding`` and ``ARXConfiguration``, and the product's own data
independence), one line each, and the suppression limit it runs with (1: ARX's DP runs may
suppress every record).

ARX refuses DP with a research subset (δ-presence, exact k-map: `research_subset` refuses every
model but those), with microaggregation and with local recoding, and a data-dependent search
with a quality model that has no score function. The product also refuses what would publish
more than SafePub's output (ADR 0027): a QID whose levels or labels phase 1 would take from
the data, a column released as it is (a sensitive attribute, a pseudonym), and models beyond k
whose extra suppression depends on the data."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.differential_privacy import (
    OBJECTIVES,
    UNBOUNDED,
    dp_of,
)
from airflow_skald.core.transform import registry as transform_registry

GUIDE = "docs/guide/differential-privacy.md"


def apply_dp_rules(config: Any, limit_given: bool) -> Any:
    """`config` with suppression limit 1 when it asks for DP; ConfigError (one line) for a
    combination ARX or SafePub's proof refuses. `limit_given`: the file or a flag set the
    suppression limit."""
    model = dp_of(config)
    if model is None:
        return config
    if limit_given and config.suppression.limit != 1:
        raise ConfigError(
            "privacy.suppression_limit does not apply with differential_privacy (every record "
            "may be suppressed, as in ARX): leave it out"
        )
    refused = transform_registry.arx_dp_refusal(config.transformations)
    if refused is not None:  # what ARX does not run with differential privacy
        raise ConfigError(f"differential_privacy cannot be combined with {refused} (as in ARX)")
    check_models(config)
    check_released_columns(config)
    for spec in config.quasi_identifiers:
        check_levels_configured(spec)
    if model.searched and config.quality.objective not in OBJECTIVES:
        raise ConfigError(
            "differential_privacy's search scores nodes by one of "
            f"{', '.join(OBJECTIVES)} (ARX's score functions): quality.objective is "
            f"{config.quality.objective}"
        )
    if model.searched and config.quality.objective == "loss":
        check_loss_weights(config)
    return config.with_transformation(config.suppression.at_limit(Fraction(1)))


def check_models(config: Any) -> None:
    """The models that answer `with_differential_privacy` only (k-anonymity: a larger k than
    SafePub's is judged as the policy's k, δ only falls as k grows; DP itself): the others
    suppress more, by data SafePub's proof does not cover."""
    for m in config.privacy:
        if not m.with_differential_privacy:
            raise ConfigError(
                f"differential_privacy cannot be combined with privacy.{m.config_key}: its "
                "extra suppression depends on the data in a way SafePub's proof does not "
                f"cover (ARX allows it; see {GUIDE})"
            )


def check_released_columns(config: Any) -> None:
    """Every column the release carries is generalised with its record: a sensitive attribute
    or a pseudonym released as it is gives a sampled record away."""
    for name in config.sensitive_attributes:
        raise ConfigError(
            f"sensitive attribute '{name}' would be released as it is under "
            f"differential_privacy: {UNBOUNDED}; declare it a quasi-identifier (with a "
            "hierarchy) or leave it out (direct_identifiers)"
        )
    refusal = transform_registry.dp_refusal(config.transformations, UNBOUNDED)
    if refusal is not None:
        raise ConfigError(refusal)


def check_levels_configured(spec: Any) -> None:
    """Levels and labels from the configured hierarchies and rules only (docs/design.md §4e)."""
    where = f"quasi-identifier '{spec.name}'"
    rule = getattr(spec.rule, "kind", None)
    if spec.encode:
        raise ConfigError(
            f"{where}: encode: true takes its levels and labels from the values phase 1 finds "
            "(an outlier's included), which differential_privacy does not allow: configure "
            "cut points instead (bins: [...] with below/above labels) or a hierarchy"
        )
    if spec.type == "numerical" and rule != "intervals":
        raise ConfigError(
            f"{where}: a numerical QID without cut points takes its bins from the data's "
            "minimum and maximum, which differential_privacy does not allow: configure its "
            "cut points (bins: [...] with below/above labels for values outside them)"
        )
    if rule == "masked" and spec.rule.pad is not None:
        raise ConfigError(
            f"{where}: pad pads every code to the longest code in the data, which "
            "differential_privacy does not allow: store the codes at one length and leave "
            "pad out"
        )


def check_loss_weights(config: Any) -> None:
    """Loss weighs a label by its share of the hierarchy's leaves; a rule builds its hierarchy
    over the values found in the whole input, so a search scored by loss over such a QID would
    depend on records the sample left out (ADR 0027). Hierarchies listed in full, and the
    other score functions, do not read the input."""
    built = [spec.name for spec in config.quasi_identifiers if spec.rule is not None]
    if not built:
        return
    if config.quality.objective_default:
        chosen = "no quality.objective was named and differential_privacy's default, loss,"
        instead = "name quality.objective (precision, dm or aecs) or list its hierarchy in full"
    else:
        chosen = "the loss objective"
        instead = (
            "list its hierarchy in full (hierarchy_file) or choose quality.objective "
            "precision, dm or aecs"
        )
    raise ConfigError(
        f"quasi-identifier '{built[0]}': {chosen} weighs its labels by the values found in "
        "the whole input (its hierarchy is built from a rule), so the search would depend on "
        f"records the sample left out: {instead}"
    )
