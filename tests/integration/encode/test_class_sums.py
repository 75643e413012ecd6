"""Phase 2's class table with sums (`encode.class_sums`, ADR 0022): a microaggregated integer
mean counted as a sum of value offsets per class bin, beside the records. Checked against a
direct count (each record's bin at the node phase 2 ended at, its offsets added with
np.bincount) however the chunks come, with the records and sums in one packed column or in
two, while the counts roll up the chain, reach its top, and merge from partials."""

from __future__ import annotations

import random

import numpy as np
import pytest
from skald_testdata import write_chunks, write_config
from strategies import QIDS, paper_like_table

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.data.io import read_chunk
from airflow_skald.core.encode import class_sums
from airflow_skald.core.encode.adaptive_root import ChainCounts, merge_on_chain
from airflow_skald.core.encode.domain import counting_types
from airflow_skald.core.encode.root import plan_root
from airflow_skald.core.passes import pipeline
from airflow_skald.core.passes.pipeline import count_histogram, list_chunks, scan_domain

SIZES = [50, 400, 1200, 100, 700, 250, 300]


def _config(tmp, name, bins, micro="age"):
    table = paper_like_table()
    write_chunks(table, tmp / f"in-{name}", SIZES)
    qids = [
        {**q, "microaggregation": {"function": "mean", "cluster": True}}
        if q["name"] == micro
        else q
        for q in QIDS
    ]
    return load_config(
        write_config(
            tmp / f"{name}.yaml",
            {
                "input": {"path": str(tmp / f"in-{name}")},
                "output": {"path": str(tmp / f"out-{name}")},
                "chunk_rows": 10**6,
                "direct_identifiers": ["pid"],
                "sensitive_attributes": ["cond"],
                "quasi_identifiers": qids,
                "privacy": {"k": 10, "suppression_limit": 0.02},
                "memory": {"histogram_bins": bins, "root": "adaptive"},
                "qid_priority": ["age", "bmi", "pin", "blood"],
            },
        )
    )


def _direct(config, plan, chunks, node, name):
    """Records and offset sums per bin of `node`, from every record's key there."""
    keys, offsets = [], []
    stats = plan.stats.sensitive[name]
    for chunk in chunks:
        table = read_chunk(config.input, chunk, config.qid_names, counting_types(config))
        keys.append(pipeline.root_keys(plan, table, chunk, node))
        offsets.append(table.column(name).to_numpy() - class_sums.smallest(stats))
    keys, offsets = np.concatenate(keys), np.concatenate(offsets)
    distinct = np.unique(keys)
    records = np.bincount(np.searchsorted(distinct, keys))
    sums = np.bincount(np.searchsorted(distinct, keys), weights=offsets).astype(np.int64)
    return distinct, records, sums


def _counted(config, plan, chunks, bits):
    """Phase 2's counts, the records and sums packed (`bits` None: in two columns)."""
    acc = ChainCounts(plan, plan.counting_chain(), {}, plan.summed)
    assert acc.bits is not None  # the generated figures fit one column
    acc.bits = bits if bits != "packed" else acc.bits
    for chunk in chunks:
        table = read_chunk(config.input, chunk, [*config.qid_names], counting_types(config))
        node = acc.node
        keys = pipeline.root_keys(plan, table, chunk, node)
        stats = plan.stats.sensitive["age"]
        weights = {"age": class_sums.offsets(stats)[stats.codes(table.column("age"))]}
        acc.add_chunk(node, acc.chunk_tables(node, keys, {}, weights))
    return acc.result()


@pytest.mark.parametrize("bins", [150, 900, 10**6])
@pytest.mark.parametrize("bits", ["packed", None])
def test_sums_per_bin_equal_a_direct_count(tmp_path, bins, bits):
    config = _config(tmp_path, "s", bins)
    chunks = list_chunks(config)
    plan = plan_root(config, scan_domain(config, chunks))
    assert plan.summed == ("age",)
    counts = _counted(config, plan, chunks, bits)
    assert counts.to_bytes() == count_histogram(config, plan, chunks).to_bytes()
    distinct, records, sums = _direct(config, plan, chunks, counts.node, "age")
    assert np.array_equal(counts.classes.keys, distinct)
    assert np.array_equal(counts.classes.counts, records)
    got = np.zeros(distinct.size, dtype=np.int64)
    got[np.searchsorted(distinct, counts.sums["age"].keys)] = counts.sums["age"].counts
    assert np.array_equal(got, sums)
    # partials of chunk groups, counted at different chain nodes, merge to the same counts
    rng = random.Random(bins)
    singles = [count_histogram(config, plan, [c]) for c in chunks]
    for _ in range(3):
        rng.shuffle(singles)
        cut = sorted(rng.sample(range(1, len(singles)), 2))
        groups = [singles[a:b] for a, b in zip([0, *cut], [*cut, len(singles)], strict=True)]
        merged = merge_on_chain(plan, [merge_on_chain(plan, g) for g in groups])
        assert merged.to_bytes() == counts.to_bytes()
    chain = plan.counting_chain()
    where = {150: chain[-1], 10**6: chain[0]}  # at the chain's top (dense), at its start
    if bins in where:
        assert counts.node == where[bins]
    else:
        assert counts.node not in (chain[0], chain[-1])  # rolled up while counting


def test_packed_bits_only_while_both_figures_fit(tmp_path):
    config = _config(tmp_path, "b", 10**6)
    stats = scan_domain(config, list_chunks(config))
    span = 85 - 19
    bits = class_sums.packed_bits(stats, ("age",))
    assert bits == stats.n_rows.bit_length()
    assert (span * stats.n_rows).bit_length() + bits <= 63
    stats.n_rows = 2**40  # a table whose sums would overflow the word: two columns
    assert (span * stats.n_rows).bit_length() + stats.n_rows.bit_length() > 63
    assert class_sums.packed_bits(stats, ("age",)) is None
    assert class_sums.packed_bits(stats, ("age", "pin")) is None  # one sum per word only
    counts, sums = np.array([3, 0, 2**39]), np.array([7, 5, 2**20])
    both = class_sums.packed(counts, sums, 41)
    assert [a.tolist() for a in class_sums.unpacked(both + both, 41)] == [
        (2 * counts).tolist(),
        (2 * sums).tolist(),
    ]


def test_weights_of_an_integer_column_equal_the_coded_ones():
    import pyarrow as pa

    from airflow_skald.core.encode.sensitive_domain import SensitiveStats
    from airflow_skald.core.errors import DataError

    seen = pa.array([40, 7, 19, 7, 40, 12])
    stats = SensitiveStats.of_column("age", seen, numbers=True)
    chunk = pa.chunked_array([[19, 7], [40, 40, 12]])
    want = class_sums.offsets(stats)[stats.codes(chunk)]
    assert class_sums.weights(stats, chunk).tolist() == want.tolist() == [12, 0, 33, 33, 5]
    as_float = pa.array([19.0, 7.0])  # not an integer column: through the codes
    assert class_sums.weights(stats, as_float).tolist() == [12, 0]
    for unseen in (8, 6, 41, -3):  # within phase 1's range or outside it
        with pytest.raises(DataError, match="did not see"):
            class_sums.weights(stats, pa.array([19, unseen]))


@pytest.mark.parametrize("n_possible", [40, 5000])  # fewer possible bins than rows, and more
def test_packed_top_counts_rows_and_bins_exactly(n_possible):
    rng = np.random.default_rng(n_possible)
    keys, weights = rng.integers(0, n_possible, 1000), rng.integers(0, 90, 1000)
    top = class_sums.PackedTop((n_possible,), 11)
    top.add_rows(keys[:600], weights[:600])
    distinct = np.unique(keys[600:])
    n = np.bincount(keys[600:], minlength=n_possible)[distinct]
    s = np.bincount(keys[600:], weights[600:], minlength=n_possible)[distinct].astype(np.int64)
    top.add(distinct, class_sums.packed(n, s, 11))
    records, sums = top.result()
    want = np.bincount(keys, minlength=n_possible)
    assert np.array_equal(records.keys, np.flatnonzero(want))
    assert np.array_equal(records.counts, want[want > 0])
    total = np.bincount(keys, weights, minlength=n_possible).astype(np.int64)
    assert np.array_equal(sums.keys, np.flatnonzero(total))
    assert np.array_equal(sums.counts, total[total > 0])
