"""Phase 2, histogram: the root node's class counts per chunk group, summed exactly; then the
search of the lattice above the root (``decision.json``), and what each transformation keeps
from the counts at the chosen node for phase 3 (the registry's `after_search`)."""

from __future__ import annotations

import logging
import time

from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.engine.base import Engine
from airflow_skald.core.engine.registry import run_engine
from airflow_skald.core.passes import pipeline as P
from airflow_skald.core.passes.histogram import HistogramChunks
from airflow_skald.core.passes.state import Run
from airflow_skald.core.passes.store import DECISION, HISTOGRAM, PLAN, write_json
from airflow_skald.core.run.phase import Phase
from airflow_skald.core.run.phase_encode import plan_summary
from airflow_skald.core.search.class_source import ClassesAtNode
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.transform import registry as transformations
from airflow_skald.core.transform.hooks_phases import Searched

log = logging.getLogger("airflow_skald")


class HistogramPhase(HistogramChunks, Phase[RootCounts, Decision]):
    """Phase 2: root-node class counts per chunk group, summed (`HistogramChunks`); then the
    lattice search.

    Adaptive mode (ADR 0012): partials may sit at different nodes of phase 1's chain; the
    merge rolls them up to one, and `finish` persists the root it ended at (``plan.json``),
    which phase 3 and the manifest read back."""

    def gather(self, engine: Engine, run: Run) -> RootCounts:
        return engine.root_counts(run)

    def finish(self, run: Run, merged: RootCounts) -> Decision:
        if getattr(run.store, "persistent", True):  # for a retried search task; a CLI run
            run.store.write_bytes(HISTOGRAM, merged.to_bytes())  # would only hold N_RAM twice
        plan = run.plan()
        plan = plan.with_root(merged.node or plan.root, merged.bounded_bins)
        write_json(run.store, PLAN, plan_summary(run.config, plan))
        run._cache["plan"] = plan
        if plan.root_mode == "adaptive":
            log.info(
                "adaptive root %s: %d non-empty bins (N_RAM=%d); paper mode's root %s",
                plan.levels(plan.root),
                plan.root_bins_nonempty,
                plan.n_ram,
                plan.levels(plan.paper_root),
            )
        t0, c0 = time.perf_counter(), time.thread_time()
        engine = run_engine(run)
        first_rows = lambda node, keys: engine.first_rows(run, plan, node, keys)  # noqa: E731
        decision = P.search_lattice(
            run.config, plan, merged, search_key=run.search_key(), first_rows=first_rows
        )
        run.record.cpu_s["search"] = time.thread_time() - c0
        run.timed("search", time.perf_counter() - t0)
        run.measured("search", time.perf_counter() - t0)
        run.store.write_bytes(DECISION, decision.to_bytes())
        run._cache["decision"] = decision
        classes = ClassesAtNode.at(plan, merged, decision.node)
        transformations.after_search(Searched(run.config, decision, classes, run.store, run._cache))
        f = decision.figures
        log.info(
            "chosen node %s %s: DM*=%d, suppressed %d of %d (limit %d), %d/%d nodes evaluated",
            decision.levels,
            decision.node_paper,
            f.dm_star,
            f.n_suppressed,
            f.n_records,
            f.max_suppressed,
            decision.lattice.evaluated,
            decision.lattice.nodes,
        )
        return decision


HISTOGRAM_PHASE = HistogramPhase()
