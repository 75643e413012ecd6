"""The plan later phases follow: the dimensions, N_RAM, the root and (adaptive mode) the chain
of nodes phase 2 counts along, all rebuilt deterministically from phase 1's statistics."""

from __future__ import annotations

from dataclasses import dataclass, replace

from airflow_skald.core.encode.dimensions import Dimension
from airflow_skald.core.encode.domain import DomainStats


@dataclass
class Plan:
    """Everything later phases need from phase 1 (rebuilt deterministically from the stats)."""

    stats: DomainStats
    dims: list[Dimension]
    n_ram: int
    n_ram_derived: bool
    root: tuple[int, ...]
    root_bins: int
    lattice_nodes: int
    root_evaluated: int
    root_complying: int
    value_factor: int = (
        1  # sum of the criteria attributes' distinct values (docs/design.md §4b), else 1
    )
    root_mode: str = "paper"  # "adaptive": N_RAM bounds the non-empty bins (docs/design.md §4a)
    paper_root: tuple[int, ...] = ()  # paper mode's root P (adaptive: the upper bound)
    chain: tuple[tuple[int, ...], ...] = ()  # adaptive: phase 2's chain of nodes up to P
    root_bins_nonempty: int | None = None  # the bins N_RAM bounds, as phase 2 counted them
    summed: tuple[str, ...] = ()  # microaggregated QIDs counted as a sum per bin (class_sums)

    def value_attributes(self, counted: tuple[str, ...]) -> tuple[str, ...]:
        """Of the attributes counted per class, those counted as (class, value) tables."""
        return tuple(a for a in counted if a not in self.summed)

    def counting_chain(self) -> tuple[tuple[int, ...], ...]:
        """The nodes phase 2 may count at, in order: the chain up to the root (phase 1's
        adaptive root is P, the chain's top), or just the root (paper mode, a fixed root)."""
        if self.root in self.chain:
            return self.chain[: self.chain.index(self.root) + 1]
        return (self.root,)

    def with_root(self, node: tuple[int, ...], nonempty: int | None = None) -> Plan:
        """This plan with the root phase 2 settled on."""
        node = tuple(int(x) for x in node)
        return replace(self, root=node, root_bins=self.bins(node), root_bins_nonempty=nonempty)

    @property
    def tops(self) -> list[int]:
        return [d.top for d in self.dims]

    def bins(self, node: tuple[int, ...]) -> int:
        """Paper eq. 1 for a node; with criteria, one (class, value) table per attribute:
        prod_i card_i * sum_a m_a + 1 (docs/design.md §4b)."""
        n = 1
        for d, level in zip(self.dims, node, strict=True):
            n *= d.cards[level]
        return n * self.value_factor + 1

    def radices(self, node: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(d.cards[level] for d, level in zip(self.dims, node, strict=True))

    def levels(self, node: tuple[int, ...]) -> dict[str, int]:
        return {d.name: int(level) for d, level in zip(self.dims, node, strict=True)}
