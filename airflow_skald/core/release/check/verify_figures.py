"""The release check's last step: every figure of the manifest that the written classes
determine is recomputed from them and compared (issue 34.4). A figure that differs fails
verification with one line naming it (``manifest says privacy_models[2].max_distance=0.31
but the release has 0.35``); never a data value, only figures.

Compared: the counts (suppressed records, classes, smallest class, the largest suppression the
limit allows, records per class), DM* and DM (also as quality_models scores), Sweeney's
precision (from the node's levels), the class-size histogram, the risk of the kept classes, each
privacy model's figure, the figures of the classes closest to breaking a criterion, and the risk
analysis. Not compared, because the release does not determine them: ARX's DM* (it counts the
suppressed classes one by one, merged into one in the release), the per-chunk figures, the
figures of a model comparing classes with a population table (δ-presence, exact k-map) of a
release made before it kept population_counts.json (`skald audit` re-checks them against the
population table).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy import PrivacyPolicy, max_suppressed
from airflow_skald.core.privacy.risk.analysis import RiskSettings
from airflow_skald.core.quality.precision import precision
from airflow_skald.core.release.write.commit import MANIFEST
from airflow_skald.core.search.figures import class_size_histogram, risk

# floats the run and the check compute alike but maybe in another order of summation
REL_TOL, ABS_TOL = 1e-9, 1e-12


def compare_with_manifest(
    manifest: dict,
    figures: dict,
    policy: PrivacyPolicy,
    settings_as_manifest: bool = True,
) -> dict | None:
    """VerificationError naming the first manifest figure the release's own (`figures`, from
    `class_figures` under `policy`) contradicts; the risk analysis
    recomputed (None if the manifest has none). `settings_as_manifest`: k and the suppression
    limit are the manifest's (not overridden), so the figures that depend on them compare."""
    for key, claimed, value in _figures(manifest, figures, policy, settings_as_manifest):
        if not _same(claimed, value):
            raise VerificationError(
                f"manifest says {key}={_short(claimed)} but the release has {_short(value)}"
            )
    if isinstance(manifest.get("risk_analysis"), dict):
        seen = figures["sizes"][:0] if figures["top"] else figures["sizes"]
        return risk_again(manifest["risk_analysis"], seen, figures["n_records"])
    return None


def _figures(
    manifest: dict, figures: dict, policy: PrivacyPolicy, as_manifest: bool
) -> Iterator[tuple[str, Any, Any]]:
    """(name, the manifest's value, the release's) for each figure the manifest holds."""
    sizes = figures["sizes"]
    n, s = figures["n_records"], figures["n_suppressed"]
    own = {
        "n_suppressed": s,
        "n_equivalence_classes": figures["n_equivalence_classes"],
        "min_class_size": figures["min_class_size"],
        "avg_class_size": (n - s) / max(figures["n_equivalence_classes"], 1),
        "dm_star": figures["dm_star"],
        "dm": figures["dm"],
        "class_size_histogram": class_size_histogram(sizes),
    }
    if as_manifest:
        own["max_suppressed"] = max_suppressed(policy.suppression_limit, n)
    levels = _levels(manifest)
    if levels is not None:
        own["precision"] = precision(*levels)
    for key, value in own.items():
        if key in manifest:
            yield key, manifest[key], value
    scores = (manifest.get("quality_models") or {}).get("scores")
    for key in ("dm_star", "dm"):  # (its "precision" is ARX's loss, not Sweeney's figure)
        if isinstance(scores, dict) and key in scores and key in own:
            yield f"quality_models.scores.{key}", scores[key], own[key]
    claimed_risk = manifest.get("risk")
    if isinstance(claimed_risk, dict):
        again = risk(sizes, policy.min_class_size)
        for key, value in again.items():
            if key in claimed_risk and (as_manifest or key != "share_below_2k"):
                yield f"risk.{key}", claimed_risk[key], value
    counted = figures["table"].population is not None  # population_counts.json (docs/design.md §4e)
    yield from _model_figures(
        manifest.get("privacy_models"), policy, figures["privacy_models"], counted
    )
    if isinstance(manifest.get("at_risk_classes"), list):
        again = [c.to_dict() for c in policy.at_risk(figures["table"])]
        claimed = _at_risk_figures(manifest["at_risk_classes"])
        for ident, values in _at_risk_figures(again).items():
            if ident in claimed:
                yield f"at_risk_classes[{ident[0]} of {ident[1]}].figure", claimed[ident], values


def _at_risk_figures(rows: list) -> dict[tuple, list]:
    """The figures of the classes closest to breaking each criterion, worst first per
    (model, attribute): which of several classes of one figure is listed may differ, the
    figures may not."""
    out: dict[tuple, list] = {}
    for row in rows:
        if isinstance(row, dict):
            out.setdefault((row.get("model"), row.get("attribute")), []).append(row.get("figure"))
    return {ident: sorted(v, key=_order) for ident, v in out.items()}


def _order(value: object) -> tuple:
    return (0, float(value)) if isinstance(value, int | float) else (1, 0.0)


def _model_figures(
    claimed: object, policy: PrivacyPolicy, recomputed: list[dict], population: bool = False
) -> Iterator[tuple[str, Any, Any]]:
    """Each model's figure against the manifest entry of the same model and attribute (the
    j-th of them; settings such as k may be overridden on the command line)."""
    if not isinstance(claimed, list):
        return
    seen: dict[tuple, int] = {}
    for model, again in zip(policy.models, recomputed, strict=True):
        if model.population_based and not population:  # needs the population's counts
            continue
        d = model.describe()
        ident = (d.get("model"), d.get("attribute"), d.get("distance"), d.get("variant"))
        j = seen[ident] = seen.get(ident, -1) + 1
        matches = [
            i
            for i, e in enumerate(claimed)
            if isinstance(e, dict)
            and (e.get("model"), e.get("attribute"), e.get("distance"), e.get("variant")) == ident
        ]
        if j >= len(matches):
            continue  # a model the manifest does not list (k given on the command line)
        i = matches[j]
        for key, value in again.items():
            if key not in d and key in claimed[i]:
                yield f"privacy_models[{i}].{key}", claimed[i][key], value


def _levels(manifest: dict) -> tuple[list[int], list[int]] | None:
    """The node's and the top node's levels, QID by QID, when the manifest gives both as
    levels (a per-chunk release lists several nodes: its precision is a mean over chunks)."""
    node, top = manifest.get("node"), manifest.get("top_node")
    if manifest.get("mode") == "per_chunk" or not isinstance(node, dict):
        return None
    if not isinstance(top, dict) or set(node) != set(top):
        return None
    pairs = [(node[q], top[q]) for q in node]
    if not all(_is_int(a) and _is_int(b) and 0 <= a <= b for a, b in pairs):
        return None
    return [a for a, _ in pairs], [b for _, b in pairs]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _same(claimed: object, value: object) -> bool:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, dict) and isinstance(claimed, dict):
        return claimed.keys() == value.keys() and all(_same(claimed[k], value[k]) for k in value)
    if isinstance(value, list) and isinstance(claimed, list):
        return len(claimed) == len(value) and all(map(_same, claimed, value))
    if isinstance(value, float) or isinstance(claimed, float):
        if not isinstance(claimed, int | float) or isinstance(claimed, bool):
            return False
        if value is None or isinstance(value, bool):
            return False
        return math.isclose(claimed, value, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return type(claimed) is type(value) and claimed == value


def risk_again(claimed: dict, sizes: np.ndarray, n_records: int) -> dict:
    """The risk analysis recomputed from the written classes with the manifest's settings;
    VerificationError naming the first figure that differs from the manifest's."""
    try:
        settings = RiskSettings.of_entry(claimed)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        raise DataError(f"{MANIFEST}: risk_analysis names no threshold and population") from None
    again = settings.analyse(sizes, n_records).to_dict()
    for key, value in again.items():
        if claimed.get(key) != value:
            raise VerificationError(
                f"written release has risk_analysis.{key}={_short(value)}, "
                f"the manifest says {_short(claimed.get(key))}"
            )
    return again


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."
