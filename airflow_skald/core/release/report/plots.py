"""The report's charts (inline SVG from `charts.py`): class sizes, records by risk, timings."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from airflow_skald.core.release.report.charts import bar_chart


def _lower_bound(label: str) -> float:
    found = re.match(r"\s*(\d+)", str(label))
    return int(found.group(1)) if found else math.inf


def _from_k(label: str, k: object) -> str:
    """A bin's label starting at k when its lower end is below k but its upper end is not: kept
    classes hold at least k records, so "4-7" with k = 5 holds classes of 5 to 7 records."""
    found = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", str(label))
    if not found or not isinstance(k, int) or isinstance(k, bool):
        return label
    low, high = int(found.group(1)), int(found.group(2))
    return f"{k}-{high}" if low < k <= high else label


def class_size_bins(hist: Mapping[str, int], k: object = None) -> list[tuple[str, int]]:
    """The class-size histogram's bins in numeric order of their lower bound ("2-3" < "16-31").
    Given k, a bin straddling k is labelled from k ("4-7" -> "5-7" for k = 5); the manifest's
    bins are powers of two and stay as they are."""
    ordered = sorted(hist.items(), key=lambda item: _lower_bound(item[0]))
    return [(_from_k(label, k), count) for label, count in ordered]


def _class_size_chart(hist: Mapping[str, int], k: object) -> str:
    bins = class_size_bins(hist, k)
    return bar_chart(
        [label for label, _ in bins],
        [count for _, count in bins],
        title=f"Class-size distribution (k = {k})",
        value_label="number of classes",
        category_label="equivalence class size (records)",
    )


def _timings_chart(timings: Mapping[str, float]) -> str:
    return bar_chart(
        list(timings),
        list(timings.values()),
        title="Time per phase",
        value_label="seconds",
        color="#d98c2b",
        horizontal=True,
    )


def _risk_chart(bins: Sequence[Mapping]) -> str:
    return bar_chart(
        [f"{b.get('sizes')} (risk {b.get('risk')})" for b in bins],
        [b.get("records", 0) for b in bins],
        title="Records by class size (prosecutor risk = 1 / class size)",
        value_label="records",
        category_label="class size (risk)",
        color="#b6463b",
    )


def build_plots(manifest: Mapping) -> dict[str, str]:
    """Inline SVG charts of the class-size distribution, the records by class size and risk,
    and the phase timings."""
    out = {}
    bins = (manifest.get("risk_analysis") or {}).get("by_class_size") or []
    if bins and all(isinstance(b, Mapping) for b in bins):
        out["risk"] = _risk_chart(bins)
    hist = manifest.get("class_size_histogram") or {}
    if hist:
        out["classes"] = _class_size_chart(hist, manifest.get("k"))
    timings = {k: v for k, v in (manifest.get("timings_s") or {}).items() if v is not None}
    if timings:
        out["timings"] = _timings_chart(timings)
    return out
