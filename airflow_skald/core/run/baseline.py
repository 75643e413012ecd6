"""The per-chunk baseline (`skald run --per-chunk`, docs/design.md §6): each chunk anonymised alone.

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
are counted from the written parts (`parts.release_classes`), each part is checked on its own
(k and every criterion, t-closeness against the chunk's own distribution), and both are
cross-checked against what the searches predicted.
"""

from __future__ import annotations

import pickle
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from airflow_skald.core.config.dp_rules import dp_of
from airflow_skald.core.config.policy import build_policy
from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.histogram import Histogram
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode.dimensions import TOP, paper_notation
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.engine.chunks import chunk_engine
from airflow_skald.core.errors import ConfigError, DataError, VerificationError
from airflow_skald.core.privacy import ClassTable, PrivacyPolicy, max_suppressed
from airflow_skald.core.quality.metric import sum_squares
from airflow_skald.core.release.check.class_figures import class_figures
from airflow_skald.core.release.check.verify_steps import class_local, verify_steps
from airflow_skald.core.release.count.parts import release_classes
from airflow_skald.core.release.write.manifest import (
    privacy_section,
    provenance_section,
    release_section,
    risk_section,
)
from airflow_skald.core.release.write.manifest_schema import Manifest
from airflow_skald.core.run.pipeline import (
    ChunkProgress,
    Progress,
    count_histogram,
    first_rows,
    write_parts,
)
from airflow_skald.core.run.runner import ENCODE, Phase, Run, publish, run_local
from airflow_skald.core.search.class_source import ClassSource, chunk_distribution
from airflow_skald.core.search.decide import Decision, search_lattice
from airflow_skald.core.search.figures import class_size_histogram, risk
from airflow_skald.core.search.recoded import local_recoding

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


def chunk_plan(plan: Plan, n_records: int) -> Plan:
    """The global plan's dimensions with the all-zeros root and one chunk's record count.

    An ARX user anonymising one chunk has no RAM bound on it: the lattice searched is the full
    lattice of the shared dimensions, and the suppression limit applies to the chunk's rows.
    """
    zero = tuple(0 for _ in plan.dims)
    stats = replace(plan.stats, n_rows=n_records, n_chunks=1)
    return replace(plan, stats=stats, root=zero, root_bins=plan.bins(zero))


class RollUpCache(ClassSource):
    """Classes of any node above a plan's root, shared by several searches (several k).

    Sizes-only: the class sizes of every node evaluated are kept compressed (distinct sizes and
    their multiplicities), so a search for another k re-uses them instead of rolling up again.
    With criteria the (class, value) tables are rolled up per call (`ClassSource`).
    """

    def __init__(self, plan: Plan, counts: RootCounts, attributes: Sequence[str] = ()):
        super().__init__(plan, counts, attributes)
        self._sizes: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

    def table(self, node: tuple[int, ...]) -> ClassTable:
        if not self.sizes_only:
            return super().table(node)
        hit = self._sizes.get(node)
        if hit is None:
            hit = np.unique(self.rollups.get(tuple(node)).counts, return_counts=True)
            self._sizes[node] = hit
        return ClassTable(np.repeat(*hit))


def released_classes(
    plan: Plan, decision: Decision, source: ClassSource, policy: PrivacyPolicy
) -> Counter:
    """Released QID tuple -> records, for the classes of the decision's node that the policy
    keeps, and (local recoding) the classes each step kept at its own node.

    The strings are the dimensions' output labels, exactly what `write_parts` writes.
    """
    node = tuple(decision.node)
    keys, table = source.keyed(node)
    if any(m.reads_label_loss for m in policy.models):  # the search's verdict (ADR 0046)
        kept = ~np.isin(keys, decision.suppressed_keys)
    else:
        kept = policy.judge(table).kept
    out = _labelled(plan, node, keys[kept], table.sizes[kept])
    for step in decision.steps:
        if not step.at_top:
            out.update(_labelled(plan, step.node, step.kept_keys, step.kept_sizes))
    return out


def _labelled(plan: Plan, node: tuple[int, ...], keys: np.ndarray, sizes: np.ndarray) -> Counter:
    sub = Histogram(plan.radices(node), keys, sizes)
    columns = []
    for dim, level, codes in zip(plan.dims, node, sub.decompose(), strict=True):
        uniq, inverse = np.unique(codes, return_inverse=True)
        labels = np.asarray(dim.labels(level, uniq), dtype=object)
        columns.append(labels[inverse.reshape(-1)])
    return Counter(dict(zip(zip(*columns, strict=True), sub.counts.tolist(), strict=True)))


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


@dataclass
class ChunkOutcome:
    """One chunk anonymised alone: its decision and its released classes (no data rows)."""

    chunk: ChunkRef
    policy: PrivacyPolicy
    decision: Decision
    classes: Counter  # kept classes: released QID tuple -> records
    seconds: dict
    part: str = ""  # the part file written, once written
    sensitive: dict[str, SensitiveStats] = field(default_factory=dict)  # the chunk's own (§4b)

    @property
    def k(self) -> int:
        return self.policy.k

    @property
    def n_records(self) -> int:
        return self.decision.figures.n_records

    def summary(self) -> dict:
        d = self.decision
        return {
            "chunk_id": self.chunk.chunk_id,
            "n_records": d.figures.n_records,
            "node": d.levels,
            "node_paper": d.node_paper,
            "dm_star": d.figures.dm_star,
            "n_suppressed": d.figures.n_suppressed,
            "n_equivalence_classes": d.figures.n_classes,
            "min_class_size": d.figures.min_class_size,
            "precision": d.precision,
            "lattice": d.lattice,
            **({"local_recoding": d.recoding_dict()} if d.recoding else {}),
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
    counts = count_histogram(config, zero_plan, [chunk])
    cplan = chunk_plan(plan, counts.n_records)
    cache = RollUpCache(cplan, counts, config.criteria_attributes)
    own = chunk_sensitive(
        plan, counts
    )  # t-closeness: the chunk's own distribution (docs/design.md §4b)
    t_hist = time.perf_counter() - t
    out = []
    for k in ks or [config.k]:
        t = time.perf_counter()
        policy = build_policy(config, own).with_thresholds(k=int(k))
        decision = search_lattice(
            cplan,
            counts,
            policy,
            config.priority_order(),
            source=cache,
            quality=config.quality,
            first_rows=lambda node, keys: first_rows(config, cplan, [chunk], node, keys),
        )
        if config.local_recoding is not None:  # the chunk's suppressed records, recoded
            decision = local_recoding(config, cplan, counts, decision, policy, own)
        classes = released_classes(cplan, decision, cache, policy)
        seconds = {"histogram": t_hist, "search": time.perf_counter() - t}
        out.append(ChunkOutcome(chunk, policy, decision, classes, seconds, sensitive=own))
        t_hist = 0.0
    return out


def chunk_sensitive(plan: Plan, counts: RootCounts) -> dict[str, SensitiveStats]:
    """The criteria's attributes as one chunk holds them: the global value codes, the chunk's
    own counts (values it lacks count 0)."""
    own = chunk_distribution(counts)
    return {a: replace(plan.stats.sensitive[a], counts=own[a].tolist()) for a in counts.values}


def union_policy(config: SkaldConfig) -> PrivacyPolicy:
    """What the union of the chunk releases is checked for: k-anonymity within the limit.
    (Criteria beyond k hold per chunk, each checked on its own part by its search.)"""
    return PrivacyPolicy.k_anonymity(config.k, config.suppression_limit)


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


class PerChunkPhase(Phase[list, dict]):
    """Phases 2 and 3 of the baseline: each chunk's own histogram, search and part (one
    pass); then the union of the parts checked and published by the runner's publish step."""

    name = "per_chunk"

    def partial(self, run: Run, chunks: Sequence[ChunkRef]) -> list[ChunkOutcome]:
        plan, out = run.plan(), []
        tick = ChunkProgress("per-chunk", len(chunks), run.progress)
        for i, chunk in enumerate(chunks):
            outcome = anonymise_chunk(run.config, plan, chunk)[0]
            t = time.perf_counter()
            cplan = chunk_plan(plan, outcome.n_records)
            outcome.part = write_parts(run.config, cplan, outcome.decision, [chunk], run.staging)[0]
            outcome.seconds["generalise"] = time.perf_counter() - t
            out.append(outcome)
            tick(i + 1, chunk.n_rows)
        return out

    def merge(self, parts: Sequence[list[ChunkOutcome]]) -> list[ChunkOutcome]:
        return sorted((o for p in parts for o in p), key=lambda o: o.chunk.chunk_id)

    def dump(self, part: list[ChunkOutcome]) -> bytes:
        return pickle.dumps(part)

    def load(self, data: bytes) -> list[ChunkOutcome]:
        return pickle.loads(data)

    def finish(self, run: Run, outcomes: list[ChunkOutcome]) -> dict:
        for phase in ("histogram", "search", "generalise"):  # the loop interleaves them
            run.record.timings_s[phase] = sum(o.seconds.get(phase, 0.0) for o in outcomes)
        config, plan = run.config, run.plan()

        def check() -> dict:
            predicted = union_figures(outcomes, union_policy(config), config.suppressed_records)
            written = _check_written(config, plan, run.staging, outcomes)
            for key in ("n_suppressed", "n_equivalence_classes", "min_class_size", "dm_star"):
                if written[key] != predicted[key]:
                    raise VerificationError(
                        f"the written per-chunk release has {key}={written[key]}, "
                        f"the searches predicted {predicted[key]}"
                    )
            return _manifest(config, plan, run.chunks(), outcomes, written, run.token)

        return publish(run, check)


PER_CHUNK = PerChunkPhase()


def run_per_chunk(
    config: SkaldConfig,
    progress: Progress | None = None,
    token: str | None = None,
    workers: int = 1,
) -> dict:
    """The baseline release: every chunk anonymised alone; returns its (committed) manifest.

    Phase 1 is the global run's (its dimensions, and its RAM root for information)."""
    if config.research_subset is not None:
        raise ConfigError(
            "--per-chunk does not take a research_subset (a chunk holds part of the population "
            "table, so its population counts are not the table's)"
        )
    if config.microaggregations:
        raise ConfigError(
            "--per-chunk does not take microaggregation (docs/design.md §4f: the aggregates are the "
            "global run's classes')"
        )
    if dp_of(config) is not None:
        raise ConfigError(
            "--per-chunk does not take differential_privacy (its sample and search are one "
            "release's over the whole input)"
        )
    run = Run(config, token=token or "", progress=progress)
    chunk_engine(run)  # chunks are the baseline's unit: another engine refused before any work
    return run_local(run, (ENCODE, PER_CHUNK), workers)


def _check_written(
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
        policy = class_local(o.policy) if o.decision.steps else o.policy
        star, kept = read.tables(len(qids), policy.attributes, o.sensitive)
        own = class_figures(star, kept, read.n_rows, o.n_records, policy, f"part {o.part}")
        if o.decision.steps:  # each step's classes under the step's own models
            verify_steps(read, plan.dims, o.policy, o.sensitive, o.decision, o.n_records)
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


def _manifest(
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
        **risk_section(risk(sizes, config.k), class_size_histogram(sizes)),
        **release_section(config, chunks, parts, plan),
        **provenance_section(config, chunks, run_token, verified=True),
        verified_per_chunk=True,
    ).to_dict()


def _union_counts(config: SkaldConfig, union: dict) -> dict:
    n = union["n_records"]
    return {
        "n_records": n,
        "n_suppressed": union["n_suppressed"],
        "max_suppressed": max_suppressed(config.suppression_limit, n),
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
            key: sum(o.decision.lattice[key] for o in outcomes)
            for key in ("nodes", "evaluated", "passing")
        },
    }
