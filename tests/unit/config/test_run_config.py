"""Config loading and validation (docs/design.md §2): every mistake is a clear ConfigError."""

from __future__ import annotations

from fractions import Fraction

import pytest
from skald_testdata import ADULT, write_config

from airflow_skald.core.config.run_config import config_from_dict, load_config
from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.errors import ConfigError


def _base(**extra):
    body = {
        "input": {"path": "data", "format": "parquet"},
        "output": {"path": "out"},
        "quasi_identifiers": [
            {"name": "bg", "type": "categorical", "hierarchy": {"A+": ["A"], "A-": ["A"]}},
            {"name": "age", "type": "numerical", "min_width": 1},
        ],
        "privacy": {"k": 5, "suppression_limit": 0.01},
    }
    body.update(extra)
    return body


def test_minimal_config_loads_with_defaults(tmp_path):
    cfg = load_config(write_config(tmp_path / "c.yaml", _base()))
    assert cfg.min_class_size == 5 and cfg.suppression.limit == Fraction(1, 100)
    assert cfg.chunk_rows == 1_000_000 and cfg.histogram_bins is None
    assert cfg.input.path == str(tmp_path / "data")  # relative to the config's folder
    assert cfg.suppression.records == "mask"
    # a constant last column is the top (docs/design.md §3): no `*` level above it
    assert cfg.quasi_identifiers[0].hierarchy.table[:, -1].tolist() == ["A", "A"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"bogus": 1}, "unknown key 'bogus'"),
        ({"privacy": {"k": 1}}, "k must be an integer >= 2"),
        ({"privacy": {"k": "abc"}}, "k must be an integer"),
        ({"privacy": {"k": 2.5}}, "k must be an integer"),
        ({"privacy": {"k": 5, "suppression_limit": 2}}, "between 0 and 1"),
        ({"privacy": {"k": 5, "suppression_limit": "x"}}, "between 0 and 1"),
        ({"privacy": {"k": 5, "extra": 1}}, "unknown key 'extra' in privacy"),
        ({"chunk_rows": 0}, "chunk_rows must be a positive integer"),
        ({"memory": {"histogram_bins": "many"}}, "memory.histogram_bins must be an integer >= 2"),
        ({"suppressed_records": "hide"}, "suppressed_records must be one of"),
        ({"qid_priority": ["nope"]}, "not a quasi-identifier"),
        ({"direct_identifiers": ["bg"]}, "listed twice"),
        ({"input": {"path": "d", "format": "xls"}}, "input.format must be one of"),
    ],
)
def test_invalid_settings_are_rejected(change, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(_base(**change))


@pytest.mark.parametrize(
    "qid, message",
    [
        ({"name": "x", "type": "numerical", "widths": [1, 3, 4]}, "not a larger whole multiple"),
        ({"name": "x", "type": "numerical", "min_width": 1, "widths": [2, 4]}, "must start with"),
        ({"name": "x", "type": "numerical", "min_width": -1}, "positive number"),
        ({"name": "x", "type": "numerical", "min_width": 0.5, "encode": True}, "counts ranks"),
        ({"name": "x", "type": "categorical", "hierarchy": {}}, "non-empty"),
        ({"name": "x", "type": "categorical"}, "exactly one of"),
        (
            {"name": "x", "type": "categorical", "hierarchy": {"a": ["g"], "b": ["g", "h"]}},
            "levels",
        ),
        (
            {"name": "x", "type": "categorical", "hierarchy": {"a": ["g", "s"], "b": ["g", "t"]}},
            "two parents",
        ),
        ({"name": "x", "type": "text"}, "type must be"),
        ({"name": "age", "type": "numerical"}, "listed twice"),
    ],
)
def test_invalid_qids_are_rejected(qid, message):
    body = _base()
    body["quasi_identifiers"].append(qid)
    with pytest.raises(ConfigError, match=message):
        config_from_dict(body)


def test_arx_hierarchy_files_load_unchanged():
    h = Hierarchy.from_file("age", ADULT / "adult_hierarchy_age.csv")
    assert h.top_level == 4 and h.table[0].tolist() == ["1", "0-4", "0-9", "0-19", "*"]
    h = Hierarchy.from_csv_text("x", "a;g\nb;h\n")
    assert h.table[:, -1].tolist() == ["*", "*"]  # top appended when the last column differs
    h = Hierarchy.from_csv_text("x", "a;g\nb;g\n")
    assert h.table.tolist() == [["a", "g"], ["b", "g"]]  # a constant last column is the top


def test_overrides_win_and_are_validated(tmp_path):
    path = write_config(tmp_path / "c.yaml", _base())
    cfg = load_config(path, {"k": "7", "suppression_limit": "0", "output_path": "/tmp/x"})
    assert cfg.min_class_size == 7 and cfg.suppression.limit == 0 and cfg.output.path == "/tmp/x"
    with pytest.raises(ConfigError):
        load_config(path, {"k": 1})


def test_paths_are_recorded_normalised(tmp_path):
    """Issue 30 item 8: ``../rel`` from a config in ``patients/`` is recorded as
    ``.../rel``, not ``.../patients/../rel`` (a ``..`` after a symlink leaves its target)."""
    (tmp_path / "patients").mkdir()
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    (tmp_path / "linked").symlink_to(tmp_path / "elsewhere" / "deep")
    path = write_config(tmp_path / "patients" / "c.yaml", _base(output={"path": "../rel"}))
    cfg = load_config(path, {"input_path": "./data//x/."}, True)
    assert cfg.output.path == str(tmp_path / "rel")
    assert cfg.input.path == str(tmp_path / "patients" / "data" / "x")
    cfg = load_config(path, {"output_path": str(tmp_path / "linked" / ".." / "out")})
    assert cfg.output.path == str((tmp_path / "elsewhere" / "out").resolve())


def test_missing_or_broken_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(tmp_path / "bad.yaml")
    body = _base()
    body["quasi_identifiers"][0] = {"name": "bg", "type": "categorical", "hierarchy_file": "h.csv"}
    with pytest.raises(ConfigError, match="cannot read hierarchy file"):
        load_config(write_config(tmp_path / "c.yaml", body))
