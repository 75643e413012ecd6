"""The plan later phases follow (core/encode/plan.py): paper eq. 1 per node, with criteria one
(class, value) table per attribute (docs/design.md §4b), and the chain phase 2 counts along."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_skald.core.encode.plan import Plan


@dataclass
class _Dim:
    name: str
    cards: list[int]

    @property
    def top(self) -> int:
        return len(self.cards) - 1


def _plan(**kw) -> Plan:
    dims = [_Dim("age", [80, 16, 4, 1]), _Dim("sex", [2, 1])]
    args = dict(
        stats=None,
        dims=dims,
        n_ram=1000,
        n_ram_derived=True,
        root=(0, 0),
        root_bins=161,
        lattice_nodes=8,
        root_evaluated=8,
        root_complying=5,
    )
    return Plan(**{**args, **kw})


def test_bins_radices_levels_and_tops():
    plan = _plan()
    assert plan.bins((0, 0)) == 80 * 2 + 1
    assert plan.bins((2, 1)) == 4 + 1
    assert _plan(value_factor=7).bins((1, 0)) == 16 * 2 * 7 + 1  # sum of the attributes' values
    assert plan.radices((1, 1)) == (16, 1)
    assert plan.levels((3, 0)) == {"age": 3, "sex": 0}
    assert plan.tops == [3, 1]


def test_counting_chain_and_the_root_phase_2_settles_on():
    chain = ((0, 0), (1, 0), (2, 0), (2, 1))
    plan = _plan(root_mode="adaptive", root=(2, 1), paper_root=(2, 1), chain=chain)
    assert plan.counting_chain() == chain
    settled = plan.with_root((1, 0), nonempty=30)
    assert settled.root == (1, 0) and settled.root_bins == 16 * 2 + 1
    assert settled.root_bins_nonempty == 30
    assert settled.counting_chain() == chain[:2]
    assert _plan(root=(1, 1)).counting_chain() == ((1, 1),)  # paper mode: just the root
