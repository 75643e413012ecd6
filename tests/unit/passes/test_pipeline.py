"""The core's phase functions over in-memory Arrow tables (no files): phase 1's statistics,
phase 2's root keys and search, phase 3's generalisation, chunked any way, against the
exhaustive oracle (tests/oracle.py, written from docs/design.md alone) and the privacy policy."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import check_release, exhaustive_search, ram_root
from strategies import datasets

from airflow_skald.core.config.policy import build_policy
from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.count.histogram import Histogram, HistogramAccumulator
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.domain import DomainStats, QidStats, scan_table
from airflow_skald.core.encode.root import plan_root
from airflow_skald.core.errors import DataError
from airflow_skald.core.generalise.part import generalise_table
from airflow_skald.core.passes.pipeline import root_keys, search_lattice
from airflow_skald.core.privacy import ClassTable

pytestmark = pytest.mark.unit


def _config(qids, k, limit, bins, priority):
    return config_from_dict(
        {
            "input": {"path": "/in-memory/in"},
            "output": {"path": "/in-memory/out"},
            "direct_identifiers": ["pid"],
            "sensitive_attributes": ["sens"],
            "quasi_identifiers": qids,
            "privacy": {"k": k, "suppression_limit": limit},
            "memory": {"histogram_bins": bins or 10**9},
            "qid_priority": priority,
        }
    )


def _chunks(table: pa.Table, cuts: list[int]) -> list[tuple[ChunkRef, pa.Table]]:
    out, start = [], 0
    for i, size in enumerate([*cuts, table.num_rows]):
        size = min(size, table.num_rows - start)
        if size <= 0:
            break
        out.append((ChunkRef(i, "memory", start, size), table.slice(start, size)))
        start += size
    return out


def _phase1(config, chunks) -> DomainStats:
    parts = [scan_table(config, t.select(config.qid_names), c) for c, t in chunks]
    merged: dict[str, QidStats] = parts[0]
    for p in parts[1:]:
        merged = {n: merged[n].merge(p[n]) for n in merged}
    n_rows = sum(c.n_rows for c, _ in chunks)
    return DomainStats(n_rows, len(chunks), chunks[0][1].column_names, 64, merged)


def _phase2(plan, chunks) -> Histogram:
    partials = []
    for c, t in chunks:
        acc = HistogramAccumulator(plan.radices(plan.root))
        acc.add_keys(root_keys(plan, t, c))
        partials.append(acc.result())
    return Histogram.merge(partials)


@settings(max_examples=40, deadline=None)
@given(data=datasets(), cuts=st.lists(st.integers(1, 40), min_size=0, max_size=5))
def test_phases_over_arrow_tables_equal_the_exhaustive_search(data, cuts) -> None:
    df, qids, oracle_qids, k, limit, bins, priority = data
    config = _config(qids, k, limit, bins, priority)
    table = pa.Table.from_pandas(df, preserve_index=False)
    whole = [(ChunkRef(0, "memory", 0, table.num_rows), table)]
    chunks = _chunks(table, cuts)

    stats = _phase1(config, chunks)
    assert stats.to_dict() == DomainStats.merge([_phase1(config, whole)]).to_dict() | {
        "n_chunks": len(chunks)
    }
    try:
        root = ram_root(df, oracle_qids, bins or 10**9, priority)
    except ValueError:
        with pytest.raises((DataError, ValueError)):
            plan_root(config, stats)
        return
    plan = plan_root(config, stats)
    assert plan.levels(plan.root) == root

    hist = _phase2(plan, chunks)
    one = _phase2(plan, whole)  # counts are additive: any cut gives the same histogram
    assert np.array_equal(hist.keys, one.keys) and np.array_equal(hist.counts, one.counts)

    decision = search_lattice(config, plan, RootCounts(hist))
    expected = exhaustive_search(df, oracle_qids, k, limit, priority, root=root)
    assert decision.levels == expected["node"]
    assert decision.figures.dm_star == expected["dm_star"]
    assert decision.figures.n_suppressed == expected["n_suppressed"]

    released = pa.concat_tables(
        [generalise_table(config, plan, decision, t, c) for c, t in chunks]
    ).to_pandas()
    names = [q["name"] for q in qids]
    for name in names:
        released[name] = released[name].astype(str)
    check_release(released, names, k, limit, len(df))
    kept = released[~(released[names] == "*").all(axis=1)]
    sizes = kept.groupby(names).size().to_numpy()
    assert not build_policy(config).check_release(ClassTable(sizes), "release")
