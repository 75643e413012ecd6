"""The generalisation lattice (`grid`), the tie order of its nodes (`ties`) and the
optimal-node search over it (`search`, with its `bounds` and evaluation `orders`)."""

from airflow_skald.core.lattice.grid import MAX_NODES, Lattice, fitting_nodes
from airflow_skald.core.lattice.orders import (
    HIGHEST_FIRST,
    HIGHEST_FIRST_CLIMBING,
    LOWEST_FIRST,
    HighestFirst,
    LowestFirst,
    SearchOrder,
)
from airflow_skald.core.lattice.search import (
    MONOTONE,
    PARTLY_MONOTONE,
    Predicate,
    SearchOutcome,
    search_optimal,
)
from airflow_skald.core.lattice.ties import (
    HEIGHT_FIRST,
    PRECISION_FIRST,
    TieOrder,
    best_by_precision,
    generalisation_cost,
    static_rank,
)

__all__ = [
    "HEIGHT_FIRST",
    "HIGHEST_FIRST",
    "HIGHEST_FIRST_CLIMBING",
    "LOWEST_FIRST",
    "MAX_NODES",
    "MONOTONE",
    "PARTLY_MONOTONE",
    "PRECISION_FIRST",
    "HighestFirst",
    "Lattice",
    "LowestFirst",
    "Predicate",
    "SearchOrder",
    "SearchOutcome",
    "TieOrder",
    "best_by_precision",
    "fitting_nodes",
    "generalisation_cost",
    "search_optimal",
    "static_rank",
]
