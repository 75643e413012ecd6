"""Phase 1's decision: the RAM root, the finest lattice node whose histogram fits in memory.

N_data(node) = prod_i bins_i(level_i) + 1 (paper eq. 1; the +1 is the suppressed bin), and a
node complies when N_data <= N_RAM. N_RAM is `memory.histogram_bins`, or derived from the
chunk size as n*d/16 (paper eq. 3) with n = chunk_rows and d the record size from the schema.
The root is the complying node with the best precision, ties by qid_priority.

N_data is a product of per-QID bin counts, so it is computed for the whole lattice at once (one
broadcast product, no per-node work) and the root picked from that array (ADR 0004).

`memory.root: adaptive` (docs/design.md §4a, ADR 0012): that root P is the upper bound, and phase 1 also
fixes the chain of nodes from the all-zeros node up to P along which phase 2 counts
(`adaptive_root`); phase 2 then sets `root` to the first chain node whose non-empty bins fit.

Differential privacy (docs/design.md §4e, ADR 0027) searches the lattice the hierarchies define: its root
is level 0 of every QID whatever the data, counted over the sampled records only.
"""

from __future__ import annotations

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.encode.adaptive_root import root_chain
from airflow_skald.core.encode.class_sums import summed_attributes
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.encode.qid_dimensions import build_dimensions
from airflow_skald.core.errors import ConfigError, DataError
from airflow_skald.core.lattice import Lattice, best_by_precision, fitting_nodes
from airflow_skald.core.privacy.differential_privacy import check_levels_built
from airflow_skald.core.transform.research_subset.classes import check_not_empty


def ram_bins(config: SkaldConfig, stats: DomainStats) -> tuple[int, bool]:
    """N_RAM from the config, or n*d/16 from the chunk size and record size."""
    if config.histogram_bins is not None:
        return config.histogram_bins, False
    return max(2, config.chunk_rows * stats.bytes_per_record // 16), True


def plan_root(config: SkaldConfig, stats: DomainStats) -> Plan:
    """Build the dimensions and choose the RAM root over the full lattice."""
    if stats.n_rows == 0:
        raise DataError("the input has no records")
    check_not_empty(config.research_subset, stats.n_rows, stats.sensitive)
    if config.min_class_size > stats.n_rows:
        raise DataError(
            f"k={config.min_class_size} is larger than the number of records ({stats.n_rows})"
        )
    dims = build_dimensions(config.quasi_identifiers, stats.qids)
    if config.data_independent:
        check_levels_built(dims)  # no rule level dropped because the data fills it
    n_ram, derived = ram_bins(config, stats)
    lattice = Lattice(tuple(0 for _ in dims), tuple(d.top for d in dims))
    summed = summed_attributes(config, stats)  # no value axis: counted as sums per bin
    tables = [a for a in config.counted_attributes if a not in summed]
    factor = sum(stats.sensitive[a].m for a in tables) or 1
    probe = Plan(stats, dims, n_ram, derived, (), 0, len(lattice), 0, 0, factor, summed=summed)
    # N_data = prod_i cards_i * factor + 1 <= n_ram, for every node in one array op
    complying = fitting_nodes(lattice, [d.cards for d in dims], (n_ram - 1) // factor)
    root_index = best_by_precision(
        lattice, complying.nonzero()[0], probe.tops, config.priority_order()
    )
    if root_index is None:
        raise ConfigError(
            f"histogram_bins={n_ram} is too small: even the top node needs "
            f"{probe.bins(lattice.node(len(lattice) - 1))} bins"
        )
    root = lattice.node(root_index)
    if config.data_independent:  # SafePub searches the hierarchies' lattice, from level 0
        root = lattice.node(0)
    probe.root = root
    probe.root_bins = probe.bins(root)
    probe.root_evaluated = len(lattice)  # every node's N_data, computed at once
    probe.root_complying = int(complying.sum())
    probe.paper_root = root
    if config.root == "adaptive" and not config.data_independent:
        probe.root_mode = "adaptive"
        probe.chain = root_chain(dims, root, config.priority_order(), factor)
    return probe
