"""Microaggregation (docs/design.md §4f) with `execution: {engine: duckdb}` (ADR 0064): the same
manifest and released rows (as a multiset) as `execution: chunks` on the same data, for every
function ARX offers, in the lattice and out of it, an integer mean counted as class sums
(`encode.class_sums`) and the rest from (class, value) tables, masked and dropped
suppressed records."""

from __future__ import annotations

import pytest
from engine_compare import CITIES, same_as_chunks, write_files


def microaggregated(**functions: tuple[str, bool]) -> list[dict]:
    """The comparison's QIDs with `functions` (name: (function, cluster)) microaggregated."""
    qids = [
        {"name": "city", "type": "categorical", "hierarchy": CITIES},
        {"name": "age", "type": "numerical", "min_width": 1},
        {"name": "zip", "type": "numerical", "min_width": 1, "encode": True},
        {"name": "income", "type": "numerical", "min_width": 0.25},
    ]
    for q in qids:
        if q["name"] in functions:
            function, cluster = functions[q["name"]]
            q["microaggregation"] = {"function": function, "cluster": cluster}
    return qids


CASES = [
    # an integer mean in the lattice and a decimal median out of it: (class, value) tables
    {"quasi_identifiers": microaggregated(age=("mean", True), income=("median", False))},
    # (class, value) tables: a criterion counts them; geometric mean, mode, interval
    {
        "quasi_identifiers": microaggregated(
            age=("geometric_mean", True), zip=("mode", False), income=("interval", True)
        ),
        "privacy": {"l_diversity": [{"attribute": "disease", "l": 2}]},
        "suppressed_records": "drop",
    },
    # integer means in and out of the lattice, both counted as class sums
    {
        "quasi_identifiers": microaggregated(age=("mean", True), zip=("mean", False)),
        "suppressed_records": "drop",
    },
]


@pytest.mark.parametrize("settings", CASES)
def test_duckdb_microaggregates_as_the_chunk_path(tmp_path, capsys, settings):
    inp = write_files(tmp_path / "in", 2, 150, 23)
    same_as_chunks(tmp_path, capsys, inp, {"engine": "duckdb"}, **settings)
