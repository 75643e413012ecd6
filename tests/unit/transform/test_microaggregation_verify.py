"""The release check of a microaggregated column with cluster: false (docs/design.md §4f): one value
per released class, `*` in suppressed records."""

from __future__ import annotations

import numpy as np
import pytest

from airflow_skald.core.errors import VerificationError
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.transform.microaggregation import out_of_lattice
from airflow_skald.core.transform.microaggregation.verify import check_microaggregated


def _classes(rows: list[tuple[str, str, str]]) -> ReleaseClasses:
    """Counted tuples (sex, disease, age): one QID, one sensitive attribute, the column."""
    labels = [sorted({r[j] for r in rows}) for j in range(3)]
    codes = np.asarray([[labels[j].index(r[j]) for j in range(3)] for r in rows], np.int64)
    return ReleaseClasses(labels, codes, np.full(len(rows), 5, np.int64), 5 * len(rows))


def test_one_value_per_class_passes() -> None:
    rows = [("F", "a", "38"), ("F", "b", "38"), ("M", "a", "41"), ("*", "a", "*")]
    check_microaggregated(_classes(rows), 1, 2, ("age",))


def test_two_values_in_a_class_fail() -> None:
    rows = [("F", "a", "38"), ("F", "b", "39"), ("M", "a", "41")]
    with pytest.raises(VerificationError, match="more than one value in a released class"):
        check_microaggregated(_classes(rows), 1, 2, ("age",))


def test_a_suppressed_record_shows_its_value() -> None:
    rows = [("F", "a", "38"), ("*", "a", "40")]
    with pytest.raises(VerificationError, match="not '\\*' in a suppressed record"):
        check_microaggregated(_classes(rows), 1, 2, ("age",))


def test_only_columns_out_of_the_lattice_are_counted() -> None:
    manifest = {
        "microaggregation": {
            "age": {"function": "mean", "cluster": False, "data_type": "integer"},
            "bmi": {"function": "median", "cluster": True, "data_type": "decimal"},
        }
    }
    assert out_of_lattice(manifest) == ("age",)
    assert out_of_lattice({}) == () and out_of_lattice(None) == ()
