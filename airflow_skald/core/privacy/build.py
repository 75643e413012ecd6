"""The privacy policy of a run: its config's models, built with what phase 1 learnt about the
sensitive attributes (their value codes, and for t-closeness the distribution over all input
records). Checks that need the data (l above an attribute's distinct values, `ordered` on a
text attribute, a hierarchy that misses a value) fail here, one line each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.distributions import EmdHierarchy
from airflow_skald.core.privacy.k_anonymity import KAnonymity
from airflow_skald.core.privacy.l_diversity import LDiversity
from airflow_skald.core.privacy.model import PrivacyModel
from airflow_skald.core.privacy.policy import PrivacyPolicy
from airflow_skald.core.privacy.t_closeness import TCloseness

if TYPE_CHECKING:
    from airflow_skald.core.config.run_config import SkaldConfig, TClosenessSpec
    from airflow_skald.core.data.hierarchies import Hierarchy

NULL_LABEL = "NULL"  # how a null is looked up in a t-closeness hierarchy (SPEC §4b)


def describe_privacy(config: SkaldConfig) -> list[dict]:
    """The criteria as configured (no data needed): k first, then l and t."""
    models = [KAnonymity(config.k).describe()]
    models += [LDiversity(c.attribute, c.l, c.variant, c.c).describe() for c in config.l_diversity]
    models += [{"model": "t-closeness", **c.describe()} for c in config.t_closeness]
    return models


def build_policy(
    config: SkaldConfig, sensitive: Mapping[str, SensitiveStats] | None = None
) -> PrivacyPolicy:
    """The privacy models and suppression limit `config` asks for: k-anonymity, then each
    l-diversity and t-closeness criterion; criteria beyond k need phase 1's statistics of their
    attributes (`DomainStats.sensitive`)."""
    models: list[PrivacyModel] = [KAnonymity(config.k)]
    if (config.l_diversity or config.t_closeness) and sensitive is None:
        raise ValueError("criteria need phase 1's statistics of their attributes")
    for i, spec in enumerate(config.l_diversity):
        stats = sensitive[spec.attribute]
        if spec.l > stats.m:
            raise ConfigError(
                f"privacy.l_diversity[{i}]: l={spec.l} but '{spec.attribute}' has only "
                f"{stats.m} distinct value(s) in the input"
            )
        models.append(LDiversity(spec.attribute, spec.l, spec.variant, spec.c))
    for i, spec in enumerate(config.t_closeness):
        models.append(_t_closeness(i, spec, sensitive[spec.attribute]))
    return PrivacyPolicy(tuple(models), config.suppression_limit)


def _t_closeness(i: int, spec: TClosenessSpec, stats: SensitiveStats) -> TCloseness:
    where = f"privacy.t_closeness[{i}]"
    hierarchy = None
    if spec.distance == "ordered" and not stats.numeric:
        raise ConfigError(
            f"{where}: distance ordered needs a numerical attribute; '{spec.attribute}' is text"
        )
    if spec.distance == "hierarchical":
        hierarchy = emd_hierarchy(where, spec.hierarchy, stats)
    digest = spec.hierarchy.sha256 if hierarchy is not None else None
    return TCloseness(spec.attribute, spec.t, spec.distance, stats.global_counts, hierarchy, digest)


def emd_hierarchy(where: str, hierarchy: Hierarchy, stats: SensitiveStats) -> EmdHierarchy:
    """The hierarchy as integer ids per level for each value code (leaves: observed values)."""
    table = hierarchy.table
    row_of = {str(v): r for r, v in enumerate(table[:, 0])}
    rows = []
    for v in stats.values:
        label = NULL_LABEL if v is None else _label(v)
        if label not in row_of:
            raise ConfigError(
                f"{where}: the hierarchy of '{stats.name}' has no row for a value of the input "
                f"(value #{len(rows) + 1} in sorted order)"
            )
        rows.append(row_of[label])
    sub = table[np.asarray(rows, dtype=np.int64)]
    levels = np.zeros(sub.shape, dtype=np.int64)
    for level in range(sub.shape[1]):
        _, levels[:, level] = np.unique(sub[:, level].astype(str), return_inverse=True)
    return EmdHierarchy(levels)


def _label(v: object) -> str:
    """A value as hierarchies write it (an integral float as an integer: 3.0 -> "3")."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
