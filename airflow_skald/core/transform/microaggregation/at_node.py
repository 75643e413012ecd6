"""Microaggregation's phase 2 (docs/design.md §4f; ADR 0022): after the search, each
microaggregated QID's labels per class of the chosen node, from phase 2's counts (no pass over
the data), kept in the run's store for phase 3 (``microaggregates.bin``: the class aggregates,
PERSONAL DATA) by the `after_search` hook of `Microaggregation`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_skald.core.transform.microaggregation.aggregates import (
    Aggregates,
    aggregates_at,
    class_means,
)

if TYPE_CHECKING:
    from airflow_skald.core.transform.hooks_phases import NodeClasses

#: the run store's name of the aggregates (`aggregates_to_bytes`), read by phase 3
MICROAGGREGATES = "microaggregates.bin"


def microaggregate(config: Any, classes: NodeClasses) -> list[Aggregates]:
    """The microaggregated QIDs' labels per class of the chosen node, from phase 2's counts
    (`classes`, at the node): a tabled QID's from its (class, value) table, a summed one's as
    an integer mean from its sums per class (`encode.class_sums`)."""
    functions = config.microaggregations
    if not functions:
        return []
    plan = classes.plan
    stats = plan.stats.sensitive
    tabled = [a for a in functions if a not in plan.summed]
    keys, table = classes.keyed(tabled)
    out = aggregates_at(plan, keys, table, {a: functions[a] for a in tabled})
    for a in plan.summed:  # the sums are offset by the smallest value (`class_sums.smallest`)
        smallest = int(min(stats[a].values))
        out.append(class_means(a, keys, table.sizes, classes.sums(a), smallest))
    return sorted(out, key=lambda a: list(functions).index(a.name))
