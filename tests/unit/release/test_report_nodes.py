"""The report's node table in words: each QID's level and paper value as the manifest names
them, rule-built hierarchies (docs/design.md §3a) described by their rule, not as bins of a width."""

from __future__ import annotations

from airflow_skald.core.release.report.nodes import node_in_words

# the clinical demo's QIDs as its manifest lists them (rule entries as `describe()` writes them)
QIDS = [
    {"name": "birth_date", "type": "date", "rule": {"type": "date", "levels": ["day", "month", "year", {"years": 5}, {"years": 10}]}},
    {"name": "admitted", "type": "date", "rule": {"type": "date", "levels": ["day", "week", "year"]}},
    {"name": "zip", "type": "masked", "rule": {"type": "masked", "steps": None, "from": "right"}},
    {"name": "sex", "type": "categorical"},
    {"name": "icd10", "type": "masked", "rule": {"type": "masked", "steps": [1, 3, 4], "from": "right"}},
    {"name": "length_of_stay", "type": "numerical", "rule": {"type": "intervals", "bins": ["1", "3", "7", "14", "30"], "group": ["2"]}},
    {"name": "income", "type": "numerical", "min_width": "1000"},
]  # fmt: skip
TOPS = {"birth_date": 5, "admitted": 3, "zip": 5, "sex": 1, "icd10": 4, "length_of_stay": 3}


def _rows(levels: dict, paper: str) -> dict:
    manifest = {"quasi_identifiers": QIDS, "top_node": {**TOPS, "income": 6}}
    return {r["name"]: r for r in node_in_words(manifest, levels, paper)}


def test_rule_levels_in_words_and_paper_values_by_group():
    levels = {"birth_date": 4, "admitted": 1, "zip": 2, "sex": 0, "icd10": 2}
    levels |= {"length_of_stay": 2, "income": 3}
    rows = _rows(levels, "((5, 2, 3, 1, 3, 3), (8000))")
    assert rows["birth_date"]["meaning"] == "dates in spans of 10 years"
    assert rows["admitted"]["meaning"] == "dates to the week"
    assert rows["zip"]["meaning"] == "the last 2 characters masked ('*')"
    assert rows["icd10"]["meaning"] == "the last 3 characters masked ('*')"
    assert rows["length_of_stay"]["meaning"] == "the rule's intervals merged in runs of 2"
    assert rows["sex"]["meaning"] == "original values"
    assert rows["income"]["meaning"] == "bins of width 8000"
    # rule-built QIDs sit in the paper notation's first group, beside the categorical ones
    assert [rows[q]["paper"] for q in TOPS] == ["5", "2", "3", "1", "3", "3"]
    assert rows["income"]["paper"] == "8000"


def test_first_interval_level_and_top():
    rows = _rows({"length_of_stay": 1, "zip": 5}, "((6, 2), ())")
    assert rows["length_of_stay"]["meaning"] == "the rule's intervals (cut points 1, 3, 7, 14, 30)"
    assert rows["zip"]["meaning"].startswith("fully generalised")
