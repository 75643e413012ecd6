"""`skald hierarchy`: the hierarchy a QID's rule builds over the data's domain, written as ARX
reads it (docs/design.md §3a), or summed up in counts.

Phase 1 only: one pass over the chunks for the QID's domain, then the same builder the run
uses, so the file is the hierarchy the run generalises with (`hierarchy_sha256` equal).
"""

from __future__ import annotations

import csv
import io
from collections import Counter

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.data.io import list_chunks
from airflow_skald.core.encode.domain import scan_domain
from airflow_skald.core.encode.qid_dimensions import build_dimensions
from airflow_skald.core.errors import ConfigError


def qid_hierarchy(config: SkaldConfig, qid: str) -> Hierarchy:
    """The hierarchy `qid` is generalised with in a run over the config's input: built from its
    rule over phase 1's domain, or its listed hierarchy restricted to nothing (as listed)."""
    specs = [q for q in config.quasi_identifiers if q.name == qid]
    if not specs:
        raise ConfigError(f"'{qid}' is not a quasi-identifier of the config")
    spec = specs[0]
    if spec.rule is None:
        if spec.hierarchy is None:
            raise ConfigError(
                f"quasi-identifier '{qid}' is numerical without bins: it has no hierarchy table"
            )
        return spec.hierarchy
    one = _only(config, qid)
    stats = scan_domain(one, list_chunks(one.input, one.chunk_rows))
    (dim,) = build_dimensions(one.quasi_identifiers, stats.qids)
    return dim.hierarchy


def _only(config: SkaldConfig, qid: str) -> SkaldConfig:
    """The config reduced to one QID and no criteria: phase 1 reads that column alone."""
    from dataclasses import replace

    spec = next(q for q in config.quasi_identifiers if q.name == qid)
    return replace(
        config,
        quasi_identifiers=(spec,),
        direct_identifiers=(),
        sensitive_attributes=(),
        privacy=tuple(m for m in config.privacy if not m.attribute),
        qid_priority=(),
    )


def arx_csv(hierarchy: Hierarchy) -> str:
    """ARX's hierarchy format: `value;level1;...;*`, one row per value, no header."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter=";", lineterminator="\n")
    writer.writerows(hierarchy.table.tolist())
    return out.getvalue()


def check_summary(qid: str, hierarchy: Hierarchy) -> dict:
    """Levels, labels per level and values per label (least, most): counts only."""
    levels = []
    for level in range(hierarchy.top_level + 1):
        sizes = Counter(hierarchy.table[:, level].tolist()).values()
        levels.append(
            {
                "level": level,
                "labels": len(sizes),
                "values_per_label": {"min": min(sizes), "max": max(sizes)},
            }
        )
    return {
        "qid": qid,
        "values": len(hierarchy.table),
        "levels": hierarchy.top_level + 1,
        "hierarchy_sha256": hierarchy.sha256,
        "per_level": levels,
    }
