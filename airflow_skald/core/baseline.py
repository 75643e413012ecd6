"""The per-chunk baseline (`skald run --per-chunk`, SPEC §6): each chunk anonymised alone.

This is what an ARX user with a memory-bound machine has to do: anonymise chunk after chunk,
each with its own optimal node, with the same hierarchies, domains and encodings (phase 1 runs
over ALL chunks exactly as in the global run, so every chunk shares `plan_root`'s dimensions).
Per chunk there is no RAM bound: the chunk's histogram is counted at the all-zeros node (a sparse
histogram, memory follows its non-empty bins) and the lattice above it is searched by the same
`search_lattice` (N = the chunk's rows, same k and suppression limit). The chunk's part is
written generalised to its own node by the same `write_parts`.

The manifest reports every chunk's node and own DM*, their sum, and the figures of the UNION of
the released parts: classes are identical released QID tuples across all parts, suppressed
records are counted over the whole union (as `skald verify` reads any release). Those figures
are counted from the written parts (`verify.count_release_classes`), each part is k-checked on
its own, and both are cross-checked against what the searches predicted.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from airflow_skald import __version__
from airflow_skald.core.config import DataLocation, SkaldConfig
from airflow_skald.core.dimensions import TOP, paper_notation
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.histogram import Histogram
from airflow_skald.core.io import ChunkRef
from airflow_skald.core.manifest import input_fingerprint, release_description
from airflow_skald.core.metrics import max_suppressed, risk, sum_squares
from airflow_skald.core.pipeline import (
    ChunkProgress,
    Progress,
    count_histogram,
    list_chunks,
    peak_rss_bytes,
    plan_root,
    scan_domain,
    write_parts,
)
from airflow_skald.core.plan import Plan
from airflow_skald.core.release import (
    MANIFEST,
    check_output_target,
    commit,
    discard,
    prepare_staging,
    remove_stale_staging,
    staging_path,
    write_bytes_atomic,
)
from airflow_skald.core.rollups import RollUps
from airflow_skald.core.search import Decision, class_size_histogram, search_lattice
from airflow_skald.core.verify import class_figures, count_release_classes

__all__ = [
    "ChunkOutcome",
    "RollUpCache",
    "anonymise_chunk",
    "chunk_plan",
    "release_figures",
    "released_classes",
    "run_per_chunk",
    "union_figures",
]

ReportWriter = Callable[[dict, str], None]


def chunk_plan(plan: Plan, n_records: int) -> Plan:
    """The global plan's dimensions with the all-zeros root and one chunk's record count.

    An ARX user anonymising one chunk has no RAM bound on it: the lattice searched is the full
    lattice of the shared dimensions, and the suppression limit applies to the chunk's rows.
    """
    zero = tuple(0 for _ in plan.dims)
    stats = replace(plan.stats, n_rows=n_records, n_chunks=1)
    return replace(plan, stats=stats, root=zero, root_bins=plan.bins(zero))


class RollUpCache:
    """Class sizes of any node above a plan's root, shared by several searches (several k).

    Histograms come from `search.RollUps` (each rolled up from the smallest cached finer node);
    the class sizes of every node evaluated are kept compressed (distinct sizes and their
    multiplicities), so a search for another k re-uses them instead of rolling up again.
    """

    def __init__(self, plan: Plan, root_hist: Histogram):
        self.rollups = RollUps(plan, root_hist)
        self._sizes: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

    def histogram(self, node: tuple[int, ...]) -> Histogram:
        return self.rollups.get(tuple(node))

    def __call__(self, node: tuple[int, ...]) -> np.ndarray:
        """Class sizes of `node` (any order), for `search_lattice(class_sizes=...)`."""
        hit = self._sizes.get(node)
        if hit is None:
            hit = np.unique(self.histogram(node).counts, return_counts=True)
            self._sizes[node] = hit
        return np.repeat(*hit)


def released_classes(plan: Plan, node: tuple[int, ...], hist: Histogram, k: int) -> Counter:
    """Released QID tuple -> records, for the kept classes (>= k) of a node's histogram.

    The strings are the dimensions' output labels, exactly what `write_parts` writes.
    """
    kept = hist.counts >= k
    sub = Histogram(hist.radices, hist.keys[kept], hist.counts[kept])
    columns = []
    for dim, level, codes in zip(plan.dims, node, sub.decompose(), strict=True):
        uniq, inverse = np.unique(codes, return_inverse=True)
        labels = np.asarray(dim.labels(level, uniq), dtype=object)
        columns.append(labels[inverse.reshape(-1)])
    return Counter(dict(zip(zip(*columns, strict=True), sub.counts.tolist(), strict=True)))


def release_figures(
    classes: Counter, n_rows: int, n_records: int, k: int, limit: Fraction, where: str = ""
) -> dict:
    """k-check and metrics of a release's class counts, read as `skald verify` reads them
    (`verify.class_figures`): the all-"*" tuple is suppressed records unless it is the only
    tuple, with >= k rows (the top node); rows missing from the release were dropped."""
    classes = Counter(classes)
    star = tuple(TOP for _ in next(iter(classes), ()))
    n_star = classes.pop(star, 0) if star else 0
    kept = np.asarray(list(classes.values()), dtype=np.int64)
    return class_figures(n_star, kept, n_rows, n_records, k, limit, where)


@dataclass
class ChunkOutcome:
    """One chunk anonymised alone: its decision and its released classes (no data rows)."""

    chunk: ChunkRef
    k: int
    decision: Decision
    classes: Counter  # kept classes: released QID tuple -> records
    seconds: dict

    @property
    def n_records(self) -> int:
        return self.decision.stats.n_records

    def summary(self) -> dict:
        d = self.decision
        return {
            "chunk_id": self.chunk.chunk_id,
            "n_records": d.stats.n_records,
            "node": d.levels,
            "node_paper": d.node_paper,
            "dm_star": d.stats.dm_star,
            "n_suppressed": d.stats.n_suppressed,
            "n_equivalence_classes": d.stats.n_classes,
            "min_class_size": d.stats.min_class_size,
            "precision": d.precision,
            "lattice": d.lattice,
        }


def anonymise_chunk(
    config: SkaldConfig, plan: Plan, chunk: ChunkRef, ks: Sequence[int] | None = None
) -> list[ChunkOutcome]:
    """Search one chunk's own optimal node for each k (default: the config's k).

    The chunk's level-0 histogram and its roll-ups are shared by the searches for several k.
    """
    t = time.perf_counter()
    smallest = min(ks or [config.k])
    if chunk.n_rows < smallest:
        raise DataError(
            f"chunk {chunk.chunk_id} ({chunk.where()}) has {chunk.n_rows} records, fewer than "
            f"k={smallest}: no node can release it alone; use a larger chunk_rows"
        )
    zero_plan = chunk_plan(plan, chunk.n_rows)
    hist = count_histogram(config, zero_plan, [chunk])
    cplan = chunk_plan(plan, hist.n_records)
    cache = RollUpCache(cplan, hist)
    t_hist = time.perf_counter() - t
    out = []
    for k in ks or [config.k]:
        t = time.perf_counter()
        cfg = config if k == config.k else replace(config, k=int(k))
        decision = search_lattice(cfg, cplan, hist, class_sizes=cache)
        classes = released_classes(cplan, decision.node, cache.histogram(decision.node), cfg.k)
        seconds = {"histogram": t_hist, "search": time.perf_counter() - t}
        out.append(ChunkOutcome(chunk, cfg.k, decision, classes, seconds))
        t_hist = 0.0
    return out


def union_figures(
    outcomes: Sequence[ChunkOutcome], k: int, limit: Fraction, suppressed_records: str = "mask"
) -> dict:
    """Predicted figures of the union of the chunks' releases (before anything is written)."""
    union: Counter = Counter()
    n_records = n_suppressed = 0
    for o in outcomes:
        union.update(o.classes)
        n_records += o.n_records
        n_suppressed += o.decision.stats.n_suppressed
    n_rows = n_records
    if suppressed_records == "mask":
        if n_suppressed:
            union[tuple(TOP for _ in outcomes[0].decision.node)] += n_suppressed
    else:
        n_rows -= n_suppressed
    return release_figures(union, n_rows, n_records, k, limit, "the union of the chunk releases")


def _distinct_nodes(outcomes: Sequence[ChunkOutcome]) -> list[dict]:
    counts: Counter = Counter(o.decision.node_paper for o in outcomes)
    levels = {o.decision.node_paper: o.decision.levels for o in outcomes}
    return [{"node_paper": p, "node": levels[p], "chunks": n} for p, n in counts.most_common()]


def run_per_chunk(
    config: SkaldConfig,
    progress: Progress | None = None,
    token: str | None = None,
    report_writer: ReportWriter | None = None,
) -> dict:
    """The baseline release: every chunk anonymised alone; returns its (committed) manifest."""
    check_output_target(config)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    chunks = list_chunks(config)
    stats = scan_domain(config, chunks, progress)
    plan = plan_root(config, stats)  # the global run's dimensions (and its RAM root, for info)
    timings["encode"] = time.perf_counter() - t
    memory = {"encode": peak_rss_bytes()}
    if token is None:  # a CLI run: its own staging folder; stale ones of killed runs go
        remove_stale_staging(config.output.path)
        token = f"cli-{os.getpid()}"
    staging = staging_path(config.output.path, token)
    prepare_staging(staging)
    try:
        outcomes, names = [], []
        tick = ChunkProgress("per-chunk", len(chunks), progress)
        timings.update(histogram=0.0, search=0.0, generalise=0.0)
        for i, chunk in enumerate(chunks):
            outcome = anonymise_chunk(config, plan, chunk)[0]
            timings["histogram"] += outcome.seconds["histogram"]
            timings["search"] += outcome.seconds["search"]
            t = time.perf_counter()
            cplan = chunk_plan(plan, outcome.n_records)
            names += write_parts(config, cplan, outcome.decision, [chunk], staging)
            timings["generalise"] += time.perf_counter() - t
            outcomes.append(outcome)
            tick(i + 1, chunk.n_rows)
        loop_peak = peak_rss_bytes()  # the chunk loop interleaves these three phases
        memory.update(histogram=loop_peak, search=loop_peak, generalise=loop_peak)
        t = time.perf_counter()
        predicted = union_figures(
            outcomes, config.k, config.suppression_limit, config.suppressed_records
        )
        written, union = _check_written(config, staging, names, outcomes)
        for key in ("n_suppressed", "n_equivalence_classes", "min_class_size", "dm_star"):
            if written[key] != predicted[key]:
                raise VerificationError(
                    f"the written per-chunk release has {key}={written[key]}, "
                    f"the searches predicted {predicted[key]}"
                )
        timings["verify"] = time.perf_counter() - t
        memory["verify"] = peak_rss_bytes()
        manifest = _manifest(config, plan, chunks, outcomes, names, written, union, timings)
        manifest["peak_rss_bytes_by_phase"] = memory
        if report_writer is None:
            from airflow_skald.core.report import write_report as report_writer
        report_writer(manifest, staging)
        write_bytes_atomic(
            staging.rstrip("/") + "/" + MANIFEST, json.dumps(manifest, indent=2).encode() + b"\n"
        )
        commit(staging, config.output.path)
    except BaseException:
        discard(staging)
        raise
    return manifest


def _check_written(
    config: SkaldConfig, staging: str, names: list[str], outcomes: list[ChunkOutcome]
) -> tuple[dict, Counter]:
    """Read the parts back: k-check each alone, then the union of all of them."""
    location = DataLocation(staging, config.output.format, config.output.delimiter)
    union: Counter = Counter()
    n_rows = n_records = 0
    for name, o in zip(names, outcomes, strict=True):
        part = staging.rstrip("/") + "/" + name
        classes, rows = count_release_classes([part], location, config.qid_names)
        own = release_figures(
            classes, rows, o.n_records, config.k, config.suppression_limit, f"part {name}"
        )
        if own["dm_star"] != o.decision.stats.dm_star:
            raise VerificationError(
                f"part {name} has DM*={own['dm_star']}, its search predicted "
                f"{o.decision.stats.dm_star}"
            )
        union.update(classes)
        n_rows += rows
        n_records += o.n_records
    written = release_figures(
        union, n_rows, n_records, config.k, config.suppression_limit, "the per-chunk release"
    )
    return written, union


def _manifest(
    config: SkaldConfig,
    plan: Plan,
    chunks: list[ChunkRef],
    outcomes: list[ChunkOutcome],
    parts: list[str],
    union: dict,
    classes: Counter,
    timings: dict[str, float],
) -> dict:
    """A manifest of the same shape as a SKALD run's, the figures being the union's."""
    nodes = [o.decision.node for o in outcomes]
    per_qid = {}
    for j, dim in enumerate(plan.dims):
        used = sorted({n[j] for n in nodes})
        per_qid[dim.name] = used[0] if len(used) == 1 else used
    distinct = _distinct_nodes(outcomes)
    sizes = union["sizes"]
    zero = tuple(0 for _ in plan.dims)
    n = union["n_records"]
    # ARX's DM*: kept classes of the union, plus each chunk's suppressed classes at its node.
    dm_star_arx = sum_squares(sizes) + sum(
        o.decision.stats.dm_star_arx - (o.decision.stats.dm_star - o.decision.stats.n_suppressed**2)
        for o in outcomes
    )
    weights = np.asarray([o.n_records for o in outcomes], dtype=np.float64)
    precision = float(np.average([o.decision.precision for o in outcomes], weights=weights))
    return {
        "mode": "per_chunk",
        "k": config.k,
        "suppression_limit": float(config.suppression_limit),
        "n_records": n,
        "n_suppressed": union["n_suppressed"],
        "max_suppressed": max_suppressed(config.suppression_limit, n),
        "dm_star": union["dm_star"],
        "dm_star_sum_of_chunks": sum(o.decision.stats.dm_star for o in outcomes),
        "dm_star_arx": dm_star_arx,
        "dm": union["dm"],
        "precision": precision,  # records-weighted mean over the chunks
        "n_equivalence_classes": union["n_equivalence_classes"],
        "min_class_size": union["min_class_size"],
        "avg_class_size": (n - union["n_suppressed"]) / max(union["n_equivalence_classes"], 1),
        "chunks": len(chunks),
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
            "nodes": sum(o.decision.lattice["nodes"] for o in outcomes),
            "evaluated": sum(o.decision.lattice["evaluated"] for o in outcomes),
            "passing": sum(o.decision.lattice["passing"] for o in outcomes),
        },
        "risk": risk(sizes, config.k),
        "class_size_histogram": class_size_histogram(sizes),
        **release_description(config, parts),
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "peak_rss_bytes": peak_rss_bytes(),
        "verified": True,
        "verified_per_chunk": True,
        "config_sha256": config.fingerprint(),
        "input_fingerprint": input_fingerprint(chunks),
        "version": __version__,
    }
