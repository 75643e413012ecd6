"""The warning about QIDs a release keeps nothing of: which QIDs, and what would keep them
(local recoding named only when the run did not recode already)."""

from __future__ import annotations

from airflow_skald.core.utility.top import advice, all_top


def test_all_top_over_every_releasing_node():
    tops = {"zip": 5, "sex": 1, "age": 3}
    assert all_top([{"zip": 5, "sex": 1, "age": 2}, {"zip": 5, "sex": 0, "age": 3}], tops) == [
        "zip"
    ]
    assert all_top([], tops) == []


def test_advice_names_local_recoding_only_when_not_used():
    plain = advice(["zip"], "dm_star")
    assert plain.startswith("QID 'zip' is generalised to the top")
    assert "quality.weights: {zip: 10}" in plain and "transformation.local_recoding" in plain
    recoded = advice(["zip", "sex"], "loss", recoded=True)
    assert recoded.startswith("QIDs 'zip', 'sex' are generalised")
    assert "{zip: 10, sex: 10}" in recoded and "local recoding" not in recoded
    assert recoded.endswith("or another objective (quality.objective).")
    assert advice([]) == ""
