"""The release manifest (docs/design.md §5): what the run decided, in figures an auditor can check.

Built from typed sections, one per concern (privacy, quality, node, release shape,
provenance); the global run and the per-chunk baseline fill the same sections. The manifest
is deterministic: a retry of the same run writes the same bytes. What changes between
attempts (timings, memory, run identity and time) goes to the run record (`RunRecord`,
``run.json`` beside the manifest).

It holds levels, counts and metrics, never a data value: the interval bounds of the domain
are already in the release itself, and hierarchies appear only as hashes.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from airflow_skald import __version__
from airflow_skald.core.config.policy import describe_privacy
from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.database.source import is_staged
from airflow_skald.core.data.io import ChunkRef, cut_chunks
from airflow_skald.core.encode.dimensions import paper_notation
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.release.write.manifest_schema import Manifest
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.search.figures import NodeFigures
from airflow_skald.core.text import decimal_text
from airflow_skald.core.transform import registry as transform_registry

MANIFEST_JSON = "manifest.json"
RUN_JSON = "run.json"
REPORT_HTML = "report.html"
EFFECTIVE_JSON = "effective.json"  # the effective config (settings and hierarchies as tables)
CONFIG_YAML = "skald.yaml"  # the config file as written, when the run read one


def input_fingerprint(chunks: Sequence[ChunkRef], chunk_rows: int) -> str:
    """Hash of what the run read: each chunk's file, offset and row count, and the version of
    its file (size, modification time, entity tag: `io.file_version`), so a rewritten input
    does not pass for the one an existing release was made from. The chunks as the chunk path
    cuts them (`io.cut_chunks`): an SQL engine's chunk of a whole file is hashed as the chunk
    path's chunks of it, so a rerun by another engine is a rerun of the same input. A database input's staged
    chunk is named by its name in the staging folder (whose place follows the output's), its
    version the SHA-256 of its bytes: the fingerprint names the rows read, in their order,
    whatever the output (docs/design.md §2a)."""
    body = json.dumps([_identity(c) for c in cut_chunks(chunks, chunk_rows)], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def _identity(chunk: ChunkRef) -> dict:
    out = chunk.to_dict()
    del out["origin"], out["origin_row"]  # how messages name the rows, not which rows
    if is_staged(chunk.file):
        out["file"] = posixpath.basename(chunk.file)
    return out


def to_json_bytes(body: dict) -> bytes:
    return json.dumps(body, indent=2).encode() + b"\n"


def effective_json_bytes(body: dict) -> bytes:
    """The effective config as `to_json_bytes` writes it, except that each QID's hierarchy
    table is one compact line: an indented 100,000-row table costs ~0.5 s of the pure-Python
    encoder, the compact one ~0.05 s of the C encoder (the same JSON value)."""
    tables: list[str] = []
    qids = [dict(q) for q in body.get("qids", [])]
    for qid in qids:
        if "hierarchy" in qid:
            tables.append(json.dumps(qid["hierarchy"]))
            qid["hierarchy"] = f"\x00hierarchy {len(tables) - 1}\x00"
    text = json.dumps({**body, "qids": qids} if "qids" in body else body, indent=2)
    marks = [json.dumps(f"\x00hierarchy {i}\x00") for i in range(len(tables))]
    if any(text.count(mark) != 1 for mark in marks):  # a value spelt like a mark: no shortcut
        return to_json_bytes(body)
    for mark, table in zip(marks, tables, strict=True):
        text = text.replace(mark, table, 1)
    return text.encode() + b"\n"


def privacy_section(config: SkaldConfig, figures: NodeFigures | None = None) -> dict:
    """The policy the release was made under, each criterion with the figure it reached."""
    described = describe_privacy(config)
    return {
        "k": config.min_class_size,
        "privacy": {
            "models": described,
            "suppression_limit": decimal_text(config.suppression.limit),
        },
        "privacy_models": figures.privacy if figures else described,
    }


def counts_section(figures: NodeFigures) -> dict:
    """Records, suppression and classes of the release (kept classes only)."""
    return {
        "n_records": figures.n_records,
        "n_suppressed": figures.n_suppressed,
        "max_suppressed": figures.max_suppressed,
        "n_equivalence_classes": figures.n_classes,
        "min_class_size": figures.min_class_size,
        "avg_class_size": (figures.n_records - figures.n_suppressed) / max(figures.n_classes, 1),
    }


def quality_section(quality: dict) -> dict:
    """Every reported metric under its name (dm_star, dm_star_arx, dm, precision)."""
    return dict(quality)


def node_section(plan: Plan, decision: Decision) -> dict:
    """The chosen node, the RAM root, and the searches that found them. In adaptive mode
    (ADR 0012) the root is the one phase 2 settled on; paper mode's root is its bound. A DP
    release's floor is level 0 of every QID, and the figures phase 1 measured on every input
    record (the root's bins, the root choice) are left out (ADR 0027)."""
    paper_root = plan.paper_root or plan.root
    out = {
        "node": decision.levels,
        "node_paper_levels": {n: lv + 1 for n, lv in decision.levels.items()},
        "node_paper": decision.node_paper,
        "root_node": plan.levels(plan.root),
        "root_node_paper": paper_notation(plan.dims, plan.root),
        "top_node": plan.levels(tuple(plan.tops)),
        "histogram_bins": plan.n_ram,
        "histogram_bins_derived": plan.n_ram_derived,
    }
    if decision.dp:  # the hierarchies' lattice from level 0: no figure of phase 1's domain
        return {**out, "lattice": decision.lattice.to_dict()}
    return {
        **out,
        "root_bins": plan.root_bins,
        "root_bins_nonempty": decision.lattice.root_bins_nonempty,
        "root_mode": plan.root_mode,
        "paper_root_node": plan.levels(paper_root),
        "paper_root_node_paper": paper_notation(plan.dims, paper_root),
        "lattice": decision.lattice.to_dict(),
        "root_lattice": {
            "nodes": plan.lattice_nodes,
            "evaluated": plan.root_evaluated,
            "complying": plan.root_complying,
        },
    }


def risk_section(risk: dict, class_size_histogram: dict) -> dict:
    """The kept classes' risk figures; the risk analysis (docs/design.md §4c) a block of its own."""
    risk = dict(risk)
    analysis = risk.pop("analysis", None)
    out = {"risk": risk}
    if analysis is not None:
        out["risk_analysis"] = analysis
    return {**out, "class_size_histogram": class_size_histogram}


def built_hierarchies(config: SkaldConfig, plan: Plan) -> list[dict]:
    """Each QID as configured; a hierarchy built from a rule (docs/design.md §3a) also by the hash and
    levels of what it built, and a date QID by what phase 1 did to its values (cut to the
    first level, normalised to UTC): flags and hashes, never a value."""
    out = []
    hidden = transform_registry.hides_input_facts(config)  # facts over every input record
    for spec, dim in zip(config.quasi_identifiers, plan.dims, strict=True):
        entry = spec.describe()
        if spec.rule is not None:
            if not hidden:  # the hash of the level-0 values of every input record
                entry["hierarchy_sha256"] = dim.hierarchy.sha256
            entry["hierarchy_levels"] = dim.hierarchy.top_level + 1
        if spec.type == "date" and not hidden:  # flags over every input record
            stats = plan.stats.qids[spec.name]
            entry["values_cut_to_first_level"] = bool(stats.finer)
            entry["time_zones_normalised_to_utc"] = bool(stats.zoned)
        out.append(entry)
    return out


def release_section(
    config: SkaldConfig, chunks: Sequence[ChunkRef], parts: list[str], plan: Plan
) -> dict:
    """The release's shape: QIDs (with built hierarchies), columns removed and kept, format
    (a CSV release's delimiter), parts."""
    out = {
        "chunks": len(chunks),
        "quasi_identifiers": built_hierarchies(config, plan),
        "direct_identifiers_removed": list(config.direct_identifiers),
        "sensitive_attributes": list(config.sensitive_attributes),
        "output_format": config.output.format,
    }
    out.update(transform_registry.manifest_sections(config.transformations, plan))
    if config.output.format == "csv":
        out["output_delimiter"] = config.output.delimiter
    if config.output_table is not None:  # the rows are in the table, the parts staged only
        out["output_table"] = config.output_table.describe()
    return {**out, "parts": parts}


def provenance_section(
    config: SkaldConfig, chunks: Sequence[ChunkRef], run_token: str, verified: bool
) -> dict:
    """What an auditor matches a release with: the settings and their hash, the input files
    (each with its row count and version) and the fingerprint of the chunks cut from them, the
    run, the version."""
    files: dict[str, dict] = {}
    for c in chunks:
        name = _identity(c)["file"]  # a database input's staged chunk: its name
        entry = files.setdefault(name, {"file": name, "rows": 0, "version": c.version})
        entry["rows"] += c.n_rows
    return {
        "verified": verified,
        "settings": config.settings(),
        "config_sha256": config.fingerprint(),
        "input_files": list(files.values()),
        "input_fingerprint": input_fingerprint(chunks, config.chunk_rows),
        "run_token": run_token,
        "engine": config.execution,
        "version": __version__,
    }


def build_manifest(
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    chunks: Sequence[ChunkRef],
    parts: list[str],
    verified: bool,
    run_token: str,
) -> dict:
    """The global run's manifest, section by section."""
    f = decision.figures
    return Manifest.of(
        **privacy_section(config, f),
        **counts_section(f),
        **quality_section(f.quality),
        **node_section(plan, decision),
        **risk_section(decision.risk.to_dict(), decision.class_size_histogram.to_dict()),
        **(
            {"local_recoding": decision.local_recoding.to_dict()} if decision.local_recoding else {}
        ),
        **(
            {"at_risk_classes": [c.to_dict() for c in decision.at_risk]} if decision.at_risk else {}
        ),
        **({"quality_models": decision.quality.to_dict()} if decision.quality else {}),
        **({"differential_privacy": decision.dp.to_dict()} if decision.dp else {}),
        **release_section(config, chunks, parts, plan),
        **provenance_section(config, chunks, run_token, verified),
    ).to_dict()


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class RunRecord:
    """What differs between attempts of one run: identity, time, timings and memory."""

    run_token: str
    started_at: str = field(default_factory=now_iso)
    finished_at: str = ""
    timings_s: dict = field(default_factory=dict)
    cpu_s: dict = field(default_factory=dict)  # CPU seconds of in-process phases (the search)
    peak_rss_bytes: int = 0
    peak_rss_bytes_by_phase: dict = field(default_factory=dict)
    airflow: dict = field(default_factory=dict)  # dag_id, run_id, try numbers
    config: str = ""  # the config file the run read (its path)

    def to_dict(self) -> dict:
        return {
            "run_token": self.run_token,
            **({"config": self.config} if self.config else {}),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "timings_s": {k: round(v, 3) for k, v in self.timings_s.items()},
            "cpu_s": {k: round(v, 3) for k, v in self.cpu_s.items()},
            "peak_rss_bytes": self.peak_rss_bytes,
            "peak_rss_bytes_by_phase": self.peak_rss_bytes_by_phase,
            **self.airflow,
        }
