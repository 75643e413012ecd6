"""The policy `skald verify` judges a release by when no run hands it one: the manifest's,
k and the suppression limit overridable, each criterion rebuilt from the release's own
distributions (`release_sensitive`), the hierarchies and input distributions it keeps, and its
population counts (`standalone_policy`); a criterion that cannot be re-checked from the release
alone is listed with the reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from fractions import Fraction

import numpy as np

from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.encode.sensitive_domain import sorted_values as _sorted_values
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy import PrivacyPolicy
from airflow_skald.core.privacy.class_local import class_local, split_local
from airflow_skald.core.privacy.model import RebuildContext
from airflow_skald.core.privacy.registry import rebuild, with_threshold
from airflow_skald.core.release.check.archive import archived_hierarchies
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.write.commit import MANIFEST
from airflow_skald.core.transform import registry as transform_registry
from airflow_skald.core.transform.counted import KeptCounts
from airflow_skald.core.transform.suppression import Suppression


def policy_limit(manifest: dict) -> Fraction | None:
    """The manifest's suppression limit (its exact text when it has one)."""
    return Suppression.manifest_limit(manifest)


def at_top_node(manifest: dict | None) -> bool:
    """The manifest's node is its top node: both given, level for level (a manifest without
    them is not taken for the top: its one class is judged by every model)."""
    if manifest is None:
        return False
    node, top = manifest.get("node"), manifest.get("top_node")
    return isinstance(node, dict) and isinstance(top, dict) and bool(top) and node == top


def release_sensitive(
    classes: ReleaseClasses, n_qids: int, attributes: Sequence[str], ordered: Sequence[str] = ()
) -> dict[str, SensitiveStats]:
    """The attributes' distributions over every row of a release (suppressed rows included:
    in mask mode, exactly the input's). `ordered` attributes are numerical: a CSV release holds
    them as text, read back as numbers (an empty cell a null) so that they sort as numbers.
    An empty text is a null, as phase 1 reads it (a CSV release writes a null so)."""
    out = {}
    for j, a in enumerate(attributes):
        labels = classes.labels[n_qids + j]
        if a in ordered and any(isinstance(v, str) for v in labels):
            labels = [_number(a, v) for v in labels]
        labels = [None if v == "" else v for v in labels]
        counts = np.bincount(
            classes.codes[:, n_qids + j], weights=classes.sizes, minlength=len(labels)
        ).astype(np.int64)
        total: dict = {}
        for v, c in zip(labels, counts.tolist(), strict=True):
            total[v] = total.get(v, 0) + c
        numeric = all(isinstance(v, int | float) for v in total if v is not None)
        out[a] = SensitiveStats(a, *_sorted_values(list(total), list(total.values())), numeric)
    return out


def _number(attribute: str, label: str | None) -> int | float | None:
    if label is None or label == "":
        return None
    try:
        return int(label)
    except ValueError:
        pass
    try:
        return float(label)
    except ValueError:
        raise VerificationError(
            f"release column '{attribute}' holds text, but its t-closeness is ordered by number"
        ) from None


def standalone_policy(
    path: str,
    manifest: dict | None,
    k: int | None,
    limit,
    sensitive: Mapping[str, SensitiveStats],
    overall: frozenset[str] = frozenset(),
    kept: Sequence[KeptCounts] = (),
) -> tuple[PrivacyPolicy, list[dict]]:
    """The manifest's policy for `skald verify` (k and the limit overridable by flags), its
    criteria rebuilt with the release's own distributions (those of `overall` attributes: the
    input's, kept with a release that drops suppressed records), the hierarchies it keeps and
    the counts it keeps per class (`kept`: a research subset's population counts, for
    δ-presence and exact k-map, `KeptCounts.context`);
    criteria that cannot be re-checked from the release alone are listed, with the reason,
    instead of being skipped silently."""
    if k is None:
        if manifest is None:
            raise DataError(f"{path} has no {MANIFEST}: give k to verify (--k)")
        if "k" not in manifest:
            raise DataError(f"{MANIFEST} of {path} has no k: give k to verify (--k)")
        k = int(manifest["k"])
    limit = Suppression.verified_limit(manifest, limit, f"{MANIFEST} of {path}")
    n_records = (manifest or {}).get("n_records")
    entries = described_models(manifest)
    hierarchical = any(d.get("distance") == "hierarchical" for d in entries)
    ctx = RebuildContext(
        sensitive,
        Suppression.manifest_drops(manifest),
        n_records if isinstance(n_records, int) else None,
        overall,
        archived_hierarchies(path) if hierarchical else {},
    )
    ctx = replace(ctx, **{key: v for counts in kept for key, v in counts.context.items()})
    has_k = any(d.get("model") == "k-anonymity" for d in entries)
    if not has_k and (k >= 2 or not entries):  # a manifest of k alone, or --k given
        entries = [{"model": "k-anonymity", "k": k}, *entries]
        has_k = True
    models, skipped = [], []
    for d in entries:
        model = rebuild(d, ctx)
        if isinstance(model, str):
            skipped.append({**d, "reason": model})
            continue
        models.append(model)
        if model.unverifiable:  # judged, and what no count can show named (DP's draws)
            skipped.append({**d, "reason": model.unverifiable})
    if has_k:
        models = list(with_threshold(tuple(models), "k", k))
    return PrivacyPolicy(tuple(models), Fraction(str(limit))), skipped


def described_models(manifest: dict | None) -> list[dict]:
    """The privacy models the manifest lists, as configured."""
    return ((manifest or {}).get("privacy") or {}).get("models", [])


def described_attributes(manifest: dict | None) -> tuple[str, ...]:
    described = described_models(manifest)
    return tuple(dict.fromkeys(d["attribute"] for d in described if "attribute" in d))


#: why `skald verify` leaves a chunk-relative model of a per-chunk release to the run's check
PER_CHUNK = (
    "a per-chunk release judged each part against its own chunk's records (the baseline "
    "ARX's situation), not against the whole release; the run checked every part before it "
    "published"
)


def judged_policy(
    manifest: dict | None, policy: PrivacyPolicy, skipped: list[dict]
) -> tuple[PrivacyPolicy, list[dict]]:
    """The manifest's policy as far as the release's classes together judge it: a per-chunk
    release's models that judge a class alone (the others listed as not re-checked); else as
    the transformations narrow it (local recoding's steps: `Transformation.judged_policy`)."""
    if manifest and manifest.get("mode") == "per_chunk":  # each part judged on its own chunk
        _, listed = split_local(policy.models, PER_CHUNK)
        return class_local(policy), [*skipped, *listed]
    return transform_registry.judged_policy(manifest, policy, skipped)
