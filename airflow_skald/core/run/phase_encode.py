"""Phase 1, encode: domain statistics per chunk group, merged exactly; then the RAM root chosen
and persisted (``plan.json``), which the later phases read back, never re-derive."""

from __future__ import annotations

import logging

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.encode.root import plan_root
from airflow_skald.core.engine.base import Engine
from airflow_skald.core.passes.encode import EncodeChunks
from airflow_skald.core.passes.state import Run
from airflow_skald.core.passes.store import (
    DOMAIN_STATS,
    PLAN,
    write_json,
)
from airflow_skald.core.run.phase import Phase

log = logging.getLogger("airflow_skald")


class EncodePhase(EncodeChunks, Phase[DomainStats, Plan]):
    """Phase 1: domain statistics per chunk group, merged (`EncodeChunks`); then the RAM root,
    persisted."""

    def gather(self, engine: Engine, run: Run) -> DomainStats:
        return engine.domain_stats(run)

    def finish(self, run: Run, merged: DomainStats) -> Plan:
        plan = plan_root(run.config, merged)
        run.store.write_bytes(DOMAIN_STATS, merged.to_bytes())
        write_json(run.store, PLAN, plan_summary(run.config, plan))
        run._cache["plan"] = plan
        if plan.root_mode == "adaptive":  # the root used is chosen in phase 2 (logged there)
            log.info(
                "adaptive root: phase 2 picks it on a chain of %d nodes from %s (N_RAM=%d) "
                "over %d records",
                len(plan.chain) or 1,
                plan.levels(plan.root),
                plan.n_ram,
                merged.n_rows,
            )
        elif run.config.data_independent:  # the root is the lattice's bottom (no RAM root)
            log.info("root %s: level 0 of every QID (differential privacy)", plan.levels(plan.root))
        else:
            log.info(
                "RAM root %s (%d possible bins, N_RAM=%d) over %d records",
                plan.levels(plan.root),
                plan.root_bins,
                plan.n_ram,
                merged.n_rows,
            )
        return plan


def plan_summary(config: SkaldConfig, plan: Plan) -> dict:
    """Phase 1's decision as persisted (and returned to XCom): levels and counts only."""
    return {
        "n_rows": plan.stats.n_rows,
        "root_node": plan.levels(plan.root),
        "root_levels": list(plan.root),
        "root_bins": plan.root_bins,
        "histogram_bins": plan.n_ram,
        "histogram_bins_derived": plan.n_ram_derived,
        "value_factor": plan.value_factor,
        "root_mode": plan.root_mode,
        "paper_root_levels": list(plan.paper_root or plan.root),
        "root_chain": [list(n) for n in plan.chain],
        "root_bins_nonempty": plan.root_bins_nonempty,
        **({"summed_attributes": list(plan.summed)} if plan.summed else {}),
        "root_lattice": {
            "nodes": plan.lattice_nodes,
            "evaluated": plan.root_evaluated,
            "complying": plan.root_complying,
        },
        "config_sha256": config.fingerprint(),
    }


ENCODE = EncodePhase()
