"""The order builder (docs/design.md §3a, core/data/builders/ordered.py): ordered groups of a categorical
QID with range labels or given ones."""

from __future__ import annotations

import pytest

from airflow_skald.core.data.builders.ordered import build_ordered, parse_ordered_rule
from airflow_skald.core.errors import ConfigError


def rows(h) -> list[list[str]]:
    return h.table.tolist()


def test_ordered_education():
    order = ["Preschool", "1st-4th", "5th-6th", "HS-grad", "Bachelors", "Masters", "Doctorate"]
    rule = parse_ordered_rule("edu", {"order": order, "group": [2, 2]})
    h = build_ordered("edu", rule, ["Masters", "Preschool", "Bachelors", "Doctorate", "HS-grad"])
    assert rows(h) == [
        ["Preschool", "Preschool-1st-4th", "Preschool-HS-grad", "*"],
        ["HS-grad", "5th-6th-HS-grad", "Preschool-HS-grad", "*"],
        ["Bachelors", "Bachelors-Masters", "Bachelors-Doctorate", "*"],
        ["Masters", "Bachelors-Masters", "Bachelors-Doctorate", "*"],
        ["Doctorate", "Doctorate", "Bachelors-Doctorate", "*"],
    ]
    named = parse_ordered_rule(
        "edu", {"order": order, "group": [4], "labels": [["school", "higher"]]}
    )
    assert rows(build_ordered("edu", named, ["Masters", "HS-grad"])) == [
        ["HS-grad", "school", "*"],
        ["Masters", "higher", "*"],
    ]
    with pytest.raises(ConfigError, match="'edu' rule labels: level 1 needs 2 labels"):
        parse_ordered_rule("edu", {"order": order, "group": [4], "labels": [["one"]]})
    with pytest.raises(ConfigError, match="'edu' rule order: lists a category twice"):
        parse_ordered_rule("edu", {"order": ["a", "a"], "group": [2]})
