"""The union of the per-chunk baseline's releases (docs/design.md §6): its figures predicted
from the searches (`union_figures`), read back from the written parts (`check_written`: each
part checked alone, then the union, as `skald verify` reads a release), and its manifest, of
the same sections as a SKALD run's (`union_manifest`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode.dimensions import TOP, paper_notation
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.privacy import PrivacyPolicy, max_suppressed
from airflow_skald.core.quality.metric import sum_squares
from airflow_skald.core.release.check.class_figures import class_figures
from airflow_skald.core.release.count.parts import release_classes
from airflow_skald.core.release.write.manifest import (
    privacy_section,
    provenance_section,
    release_section,
    risk_section,
)
from airflow_skald.core.release.write.manifest_schema import Manifest
from airflow_skald.core.run.baseline_chunk import ChunkOutcome
from airflow_skald.core.search.figures import class_size_histogram, risk
from airflow_skald.core.transform import registry as transformations
from airflow_skald.core.transform.hooks_phases import ChunkPart


def release_figures(
    classes: Counter, n_rows: int, n_records: int, policy: PrivacyPolicy, where: str = ""
) -> dict:
    """k-check and metrics of a release's class counts, read as `skald verify` reads them
    (`class_figures.class_figures`): the all-"*" tuple is suppressed records unless it is the only
    tuple, with >= k rows (the top node); rows missing from the release were dropped."""
    classes = Counter(classes)
    star = tuple(TOP for _ in next(iter(classes), ()))
    n_star = classes.pop(star, 0) if star else 0
    kept = np.asarray(list(classes.values()), dtype=np.int64)
    return class_figures(n_star, kept, n_rows, n_records, policy, where)


def union_policy(config: SkaldConfig) -> PrivacyPolicy:
    """What the union of the chunk releases is checked for: k-anonymity within the limit.
    (Criteria beyond k hold per chunk, each checked on its own part by its search.)"""
    return PrivacyPolicy.k_anonymity(config.min_class_size, config.suppression.limit)


def union_figures(
    outcomes: Sequence[ChunkOutcome], policy: PrivacyPolicy, suppressed_records: str = "mask"
) -> dict:
    """Predicted figures of the union of the chunks' releases (before anything is written)."""
    union: Counter = Counter()
    n_records = n_suppressed = 0
    for o in outcomes:
        union.update(o.classes)
        n_records += o.n_records
        n_suppressed += o.decision.figures.n_suppressed
    n_rows = n_records
    if suppressed_records == "mask":
        if n_suppressed:
            union[tuple(TOP for _ in outcomes[0].decision.node)] += n_suppressed
    else:
        n_rows -= n_suppressed
    return release_figures(union, n_rows, n_records, policy, "the union of the chunk releases")


def _distinct_nodes(outcomes: Sequence[ChunkOutcome]) -> list[dict]:
    counts: Counter = Counter(o.decision.node_paper for o in outcomes)
    levels = {o.decision.node_paper: o.decision.levels for o in outcomes}
    return [{"node_paper": p, "node": levels[p], "chunks": n} for p, n in counts.most_common()]


def check_written(
    config: SkaldConfig, plan: Plan, staging: str, outcomes: list[ChunkOutcome]
) -> dict:
    """Read the parts back: check each alone, then the union of all of them."""
    location = DataLocation(staging, config.output.format, config.output.delimiter)
    qids = config.qid_names
    union: Counter = Counter()
    n_rows = n_records = 0
    for o in outcomes:
        part = staging.rstrip("/") + "/" + o.part
        # each criterion re-checked on the part, against the chunk's own distribution
        read = release_classes([part], location, qids, o.policy.attributes)
        # each transformation's part of the check through the registry (`hooks_phases`)
        ctx = ChunkPart(o.decision, o.policy, o.sensitive, o.n_records, plan.dims, read)
        policy = transformations.part_policy(ctx)
        star, kept = read.tables(len(qids), policy.attributes, o.sensitive)
        own = class_figures(star, kept, read.n_rows, o.n_records, policy, f"part {o.part}")
        transformations.checked_part(ctx)
        classes, rows = Counter(), read.n_rows
        for released, n in read.named().items():  # QID tuples, the sensitive values summed
            classes[released[: len(qids)]] += n
        if own["dm_star"] != o.decision.figures.dm_star:
            raise VerificationError(
                f"part {o.part} has DM*={own['dm_star']}, its search predicted "
                f"{o.decision.figures.dm_star}"
            )
        union.update(classes)
        n_rows += rows
        n_records += o.n_records
    return release_figures(union, n_rows, n_records, union_policy(config), "the per-chunk release")


def union_manifest(
    config: SkaldConfig,
    plan: Plan,
    chunks: list[ChunkRef],
    outcomes: list[ChunkOutcome],
    union: dict,
    run_token: str,
) -> dict:
    """A manifest of the same sections as a SKALD run's, the figures being the union's."""
    sizes = union["sizes"]
    parts = [o.part for o in outcomes]
    return Manifest.of(
        mode="per_chunk",
        **{**privacy_section(config), "privacy_models": union["privacy_models"]},
        **_union_counts(config, union),
        **_union_quality(outcomes, union),
        **_per_chunk_nodes(plan, outcomes),
        **risk_section(risk(sizes, config.min_class_size), class_size_histogram(sizes)),
        **release_section(config, chunks, parts, plan),
        **provenance_section(config, chunks, run_token, verified=True),
        verified_per_chunk=True,
    ).to_dict()


def _union_counts(config: SkaldConfig, union: dict) -> dict:
    n = union["n_records"]
    return {
        "n_records": n,
        "n_suppressed": union["n_suppressed"],
        "max_suppressed": max_suppressed(config.suppression.limit, n),
        "n_equivalence_classes": union["n_equivalence_classes"],
        "min_class_size": union["min_class_size"],
        "avg_class_size": (n - union["n_suppressed"]) / max(union["n_equivalence_classes"], 1),
    }


def _union_quality(outcomes: list[ChunkOutcome], union: dict) -> dict:
    """The union's metrics; ARX's DM* adds each chunk's suppressed classes at its own node;
    precision is the records-weighted mean over the chunks."""
    figures = [o.decision.figures for o in outcomes]
    dm_star_arx = sum_squares(union["sizes"]) + sum(
        f.dm_star_arx - (f.dm_star - f.n_suppressed**2) for f in figures
    )
    weights = np.asarray([o.n_records for o in outcomes], dtype=np.float64)
    return {
        "dm_star": union["dm_star"],
        "dm_star_sum_of_chunks": sum(f.dm_star for f in figures),
        "dm_star_arx": dm_star_arx,
        "dm": union["dm"],
        "precision": float(np.average([f.precision for f in figures], weights=weights)),
    }


def _per_chunk_nodes(plan: Plan, outcomes: list[ChunkOutcome]) -> dict:
    """Each chunk's node, the distinct nodes used, and the lattices searched."""
    nodes = [o.decision.node for o in outcomes]
    per_qid = {}
    for j, dim in enumerate(plan.dims):
        used = sorted({n[j] for n in nodes})
        per_qid[dim.name] = used[0] if len(used) == 1 else used
    distinct = _distinct_nodes(outcomes)
    zero = tuple(0 for _ in plan.dims)
    return {
        "node": per_qid,
        "node_paper": "; ".join(f"{d['node_paper']} x{d['chunks']}" for d in distinct),
        "chunk_nodes": distinct,
        "per_chunk": [o.summary() for o in outcomes],
        "root_node": plan.levels(zero),
        "root_node_paper": paper_notation(plan.dims, zero),
        "global_root_node": plan.levels(plan.root),
        "global_root_node_paper": paper_notation(plan.dims, plan.root),
        "top_node": plan.levels(tuple(plan.tops)),
        "histogram_bins": None,
        "root_bins": plan.bins(zero),
        "lattice": {
            key: sum(getattr(o.decision.lattice, key) for o in outcomes)
            for key in ("nodes", "evaluated", "passing")
        },
    }
