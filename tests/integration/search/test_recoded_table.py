"""A local recoding step's lattice judged in arrays (`recoded_table.StepNodes`, ADR 0066)
against the node-by-node search over the same records: the same node, figures and scores for
random subsets of the root bins, every Loss aggregate, gs factors, weights and suppression
limits (the table applies under k-anonymity alone with ARX's Loss; elsewhere it declines)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from skald_testdata import search_inputs, write_chunks, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.lattice import Lattice
from airflow_skald.core.privacy import PrivacyPolicy
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.search.decide import search_lattice
from airflow_skald.core.search.recoded_table import StepNodes
from airflow_skald.core.settings.quality import AGGREGATES
from airflow_skald.core.transform.local_recoding.steps import subset_counts

HIERARCHIES = {
    "a": {f"a{i}": [f"A{i // 2}", f"B{i // 4}"] for i in range(8)},
    "b": {f"b{i}": [f"P{i // 3}"] for i in range(6)},
    "c": {f"c{i}": [f"C{i // 2}"] for i in range(4)},
    "d": {f"d{i}": [] for i in range(3)},
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recoded-table")
    rng = np.random.default_rng(7)
    df = pd.DataFrame(
        {
            n: rng.choice(sorted(h), size=300, p=rng.dirichlet(np.full(len(h), 0.5)))
            for n, h in HIERARCHIES.items()
        }
    )
    write_chunks(df, tmp / "in", [120])
    body = {
        "input": {"path": str(tmp / "in"), "format": "parquet"},
        "output": {"path": str(tmp / "out"), "format": "parquet"},
        "quasi_identifiers": [
            {"name": n, "type": "categorical", "hierarchy": h} for n, h in HIERARCHIES.items()
        ],
        "privacy": {"k": 3, "suppression_limit": 1},
        "quality": {"objective": "loss"},
    }
    config = load_config(write_config(tmp / "c.yaml", body))
    return config, *search_inputs(config)


QUALITY = [  # gs factor, aggregate, weights
    *((Fraction(gs), "geometric_mean", None) for gs in ("0", "1/20", "1/2", "1")),
    *((Fraction(1, 4), how, None) for how in AGGREGATES),
    (Fraction(3, 10), "geometric_mean", {"a": 2, "b": 1, "c": 0, "d": 1}),
    (Fraction(7, 10), "sum", {"a": 1, "b": 3, "c": 1, "d": Fraction(1, 2)}),
]


@pytest.mark.parametrize("gs,how,weights", QUALITY)
def test_the_table_finds_the_node_by_node_searchs_node(inputs, gs, how, weights) -> None:
    config, plan, counts, policy = inputs
    lattice = Lattice(plan.root, tuple(plan.tops))
    ctx = QualityContext(plan.dims, plan.root, counts.classes)
    rng = np.random.default_rng(int(gs * 100) + len(how))
    quality = replace(config.quality, gs_factor=gs, aggregate=how)
    if weights is not None:
        quality = replace(quality, weights=weights)
    for share, limit in [(0.05, 1), (0.3, "1/2"), (0.6, "1/10"), (1.0, 0)]:
        left = rng.random(counts.classes.n_bins) < share
        sub = subset_counts(counts, left)
        if sub.n_records < 3:
            continue
        table = StepNodes(plan, sub.classes, lattice, 3, ctx.shares)
        step = PrivacyPolicy(policy.models, Fraction(limit))
        args = (plan, sub, step, config.priority_order())
        try:
            plain = search_lattice(*args, quality=quality, subset=True)
        except Exception as e:  # noqa: BLE001 (the same refusal both ways)
            with pytest.raises(type(e), match="no generalisation"):
                search_lattice(*args, quality=quality, subset=True, table=table)
            continue
        got = search_lattice(*args, quality=quality, subset=True, table=table)
        assert got.node == plain.node, (share, limit)
        assert got.figures == plain.figures
        assert got.quality == plain.quality
        assert got.suppressed_keys.tolist() == plain.suppressed_keys.tolist()
        assert got.lattice.evaluated == len(lattice)  # every node judged


def test_the_table_declines_other_models_and_objectives(inputs) -> None:
    config, plan, counts, policy = inputs
    lattice = Lattice(plan.root, tuple(plan.tops))
    ctx = QualityContext(plan.dims, plan.root, counts.classes)
    table = StepNodes(plan, counts.classes, lattice, 3, ctx.shares)
    dm = replace(config.quality, objective="dm_star")
    for quality, step in [(dm, policy), (config.quality, PrivacyPolicy.k_anonymity(4, 1))]:
        plain = search_lattice(plan, counts, step, config.priority_order(), quality=quality)
        got = search_lattice(
            plan, counts, step, config.priority_order(), quality=quality, table=table
        )
        assert got.node == plain.node and got.lattice == plain.lattice  # node by node
