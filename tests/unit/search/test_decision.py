"""The typed decision persisted as decision.json and read back (phase 3 in another process:
Airflow's tasks, a resumed run) publishes the same sections as the decision phase 2 made, its
typed sections with their keys in the same order (decision.json sorts keys)."""

from __future__ import annotations

import json

import numpy as np

from airflow_skald.core.privacy.differential_privacy import DifferentialPrivacy
from airflow_skald.core.search.decision import (
    Decision,
    DPSelection,
    LatticeCounts,
    LocalRecoding,
    PolicyUnder,
    RecodingFigures,
)
from airflow_skald.core.search.dp_selection import DPModelEntry
from airflow_skald.core.search.figures import NodeFigures, RiskFigures
from airflow_skald.core.transform.local_recoding.described import RecodingSettings
from airflow_skald.core.transform.local_recoding.steps import Step


def _decision(**parts) -> Decision:
    figures = NodeFigures(100, 4, 5, 7, 5, True, {"dm_star": 1500, "dm": 1900}, [{"k": 5}])
    return Decision(
        node=(1, 0),
        levels={"a": 1, "b": 0},
        node_paper="[2, 1]",
        radices=(3, 4),
        figures=figures,
        privacy=PolicyUnder.from_dict(
            {"models": [{"model": "k-anonymity", "k": 5}], "suppression_limit": "0.05"}
        ),
        lattice=LatticeCounts(12, 5, 3, 2, parts.pop("root_bins", None)),
        risk=RiskFigures(0.2, 0.1, 0.0),
        suppressed_keys=np.asarray([2, 7], dtype=np.int64),
        **parts,
    )


def _round_trip(decision: Decision) -> None:
    again = Decision.from_bytes(decision.to_bytes())
    assert again.to_dict() == decision.to_dict()
    for typed in ("lattice", "local_recoding", "differential_privacy"):  # in the same order too
        assert json.dumps(again.to_dict().get(typed)) == json.dumps(decision.to_dict().get(typed))
    assert again.to_bytes() == decision.to_bytes()
    assert again.suppressed_keys.tolist() == [2, 7]


def test_local_recoding_round_trip():
    step = Step((2, 1), {"a": 2, "b": 1}, (2, 2), 4, 3, 0, 12, "dm_star", False)
    before = RecodingFigures(4, 7, 5, 1500, 1900, 0.25, records=100)
    after = RecodingFigures(1, 8, 3, 1409, 1820, 0.5)
    recoding = LocalRecoding(RecodingSettings("fast", None, None, "0.01"), before, after, [step])
    decision = _decision(local_recoding=recoding, root_bins=9)
    section = decision.to_dict()["local_recoding"]
    assert list(section) == ["settings", "before", "after", "steps"]
    assert list(section["before"]) == [
        "n_suppressed",
        "n_equivalence_classes",
        "min_class_size",
        "dm_star",
        "dm",
        "records",
        "loss",
    ]
    assert "records" not in section["after"] and decision.steps == [step]
    assert decision.to_dict()["lattice"]["root_bins_nonempty"] == 9
    _round_trip(decision)


def _entry(model: DifferentialPrivacy) -> DPModelEntry:
    """The model's entry as a DP decision publishes it (`safepub.decide.dp_decision`)."""
    return DPModelEntry.of(model)


def test_dp_selection_round_trip_fixed_and_searched():
    """The model's own entry (its keys in `describe`'s order) comes back in that order."""
    fixed = DPSelection(
        _entry(DifferentialPrivacy(2.0, 1e-5, node=(("b", 0), ("a", 1)))),
        "fixed",
        {"a": 1, "b": 0},
        100,
        60,
        55,
        "sequential",
    )
    d = fixed.to_dict()
    assert list(d)[:4] == ["epsilon", "delta", "node", "k"] and d["node"] == {"a": 1, "b": 0}
    assert d["records_suppressed"] == 45 and "objective" not in d
    searched = DPSelection(
        _entry(DifferentialPrivacy(2.0, 1e-5, search_steps=20)),
        "searched",
        {"a": 1, "b": 0},
        100,
        60,
        55,
        "sequential",
        objective="loss",
        pivots_drawn=20,
        objective_chosen="no quality.objective was named",
    )
    keys = list(searched.to_dict())
    assert keys[keys.index("mode") :][:4] == [
        "mode",
        "objective_chosen",
        "objective",
        "pivots_drawn",
    ]
    for selection in (fixed, searched):
        assert DPSelection.from_dict(json.loads(json.dumps(selection.to_dict()))) == selection
        decision = _decision(dp=selection)
        assert "root_bins_nonempty" not in decision.to_dict()["lattice"]
        _round_trip(decision)
