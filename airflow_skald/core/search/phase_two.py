"""Phase 2's decision under one policy (docs/design.md §4, §6): the lattice search's optimal
node (`decide.search_lattice`), then what the config searches beyond that node (local
recoding's steps over the records it suppresses, `recoded.local_recoding`, when configured).
The run's phase 2 (`passes.pipeline.search_lattice`) and each chunk of the per-chunk baseline
(`run.baseline_chunk`) decide through it, so neither names a transformation."""

from __future__ import annotations

from typing import Any

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.privacy import PrivacyPolicy
from airflow_skald.core.search.decide import search_lattice
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.search.recoded import local_recoding


def decide(
    config: SkaldConfig,
    plan: Plan,
    counts: RootCounts,
    policy: PrivacyPolicy,
    sensitive: dict | None = None,
    **search: Any,
) -> Decision:
    """The optimal node under `policy` (the config's tie-break order and quality; `search`:
    `search_lattice`'s other arguments), with what the config searches beyond it.
    `sensitive`: the criteria attributes' statistics the models were bound to (default phase
    1's; a chunk's own for the per-chunk baseline)."""
    decision = search_lattice(
        plan, counts, policy, config.priority_order(), quality=config.quality, **search
    )
    return local_recoding(config, plan, counts, decision, policy, sensitive)
