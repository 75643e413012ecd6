"""The release manifest (SPEC §5): what the run decided, in figures an auditor can check.

It holds levels, counts and metrics, never a data value: the interval bounds of the domain are
already in the release itself, and hierarchies appear only as hashes.
"""

from __future__ import annotations

import hashlib
import json

from airflow_skald import __version__
from airflow_skald.core.config import SkaldConfig
from airflow_skald.core.dimensions import paper_notation
from airflow_skald.core.io import ChunkRef
from airflow_skald.core.plan import Plan
from airflow_skald.core.search import Decision


def input_fingerprint(chunks: list[ChunkRef]) -> str:
    """Hash of the chunk layout (files, offsets, row counts) the run read."""
    body = json.dumps([c.to_dict() for c in chunks], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def release_description(config: SkaldConfig, parts: list[str]) -> dict:
    """Manifest fields that describe the release's shape (shared with the per-chunk baseline)."""
    return {
        "suppressed_records": config.suppressed_records,
        "quasi_identifiers": [q.describe() for q in config.quasi_identifiers],
        "direct_identifiers_removed": list(config.direct_identifiers),
        "sensitive_attributes": list(config.sensitive_attributes),
        "output_format": config.output.format,
        "output_delimiter": config.output.delimiter,
        "parts": parts,
    }


def build_manifest(
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    chunks: list[ChunkRef],
    parts: list[str],
    verify_report: dict,
    timings: dict[str, float],
    peak_rss: int,
) -> dict:
    d = decision.to_dict()
    return {
        "k": config.k,
        "suppression_limit": float(config.suppression_limit),
        "n_records": d["n_records"],
        "n_suppressed": d["n_suppressed"],
        "max_suppressed": d["max_suppressed"],
        "dm_star": d["dm_star"],
        "dm_star_arx": d["dm_star_arx"],
        "dm": d["dm"],
        "precision": d["precision"],
        "n_equivalence_classes": d["n_equivalence_classes"],
        "min_class_size": d["min_class_size"],
        "avg_class_size": (d["n_records"] - d["n_suppressed"]) / max(d["n_equivalence_classes"], 1),
        "chunks": len(chunks),
        "node": d["node"],
        "node_paper_levels": {n: lv + 1 for n, lv in d["node"].items()},
        "node_paper": d["node_paper"],
        "root_node": plan.levels(plan.root),
        "root_node_paper": paper_notation(plan.dims, plan.root),
        "top_node": plan.levels(tuple(plan.tops)),
        "histogram_bins": plan.n_ram,
        "histogram_bins_derived": plan.n_ram_derived,
        "root_bins": plan.root_bins,
        "root_bins_nonempty": d["lattice"].get("root_bins_nonempty"),
        "lattice": d["lattice"],
        "root_lattice": {
            "nodes": plan.lattice_nodes,
            "evaluated": plan.root_evaluated,
            "complying": plan.root_complying,
        },
        "risk": d["risk"],
        "class_size_histogram": d["class_size_histogram"],
        **release_description(config, parts),
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "peak_rss_bytes": peak_rss,
        "verified": bool(verify_report.get("verified")),
        "config_sha256": config.fingerprint(),
        "input_fingerprint": input_fingerprint(chunks),
        "version": __version__,
    }
