"""The models that judge a class by itself (k-anonymity, l-diversity, k-map's k'; as ARX's
``PrivacyCriterion.isLocalRecodingSupported`` sorts them with the class-based criteria), apart
from those that compare a class with a distribution or judge the classes together (t-closeness,
b-likeness, d-disclosure, average risk): a release whose parts were judged against parts of the
records (local recoding's steps, a per-chunk release) is re-checked over all its classes at once
against the first only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_skald.core.privacy.policy import PrivacyPolicy

#: models that judge a class by itself: the whole release is checked against them at once
CLASS_LOCAL = ("k", "l", "k_map")


def split_local(models: Sequence[Any], reason: str) -> tuple[tuple, list[dict]]:
    """The models that judge a class alone, and each other model described with `reason`
    (why the release's classes together cannot judge it)."""
    local = tuple(m for m in models if m.name in CLASS_LOCAL)
    listed = [{**m.describe(), "reason": reason} for m in models if m.name not in CLASS_LOCAL]
    return local, listed


def class_local(policy: PrivacyPolicy) -> PrivacyPolicy:
    """The policy's models that judge each class alone (the release's own check)."""
    return PrivacyPolicy(
        tuple(m for m in policy.models if m.name in CLASS_LOCAL), policy.suppression_limit
    )
