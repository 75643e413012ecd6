"""`json_schema.is_valid` answers as `jsonschema` does, on every schema the product checks."""

from __future__ import annotations

import dataclasses

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_skald.core.json_schema import _plainly_valid, is_valid
from airflow_skald.core.release.write.manifest_schema import Manifest
from airflow_skald.core.settings.table import SETTINGS

SCHEMAS = [s.schema for s in SETTINGS] + [
    f.metadata["schema"] for f in dataclasses.fields(Manifest) if "schema" in f.metadata
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0.0, 1.0, 2.0, 0.5, 1e-9, 2.5])
    | st.text(max_size=4)
    | st.sampled_from(["mask", "drop", "adaptive", "paper", "parquet", "csv", ""])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["k", "l", "t", "path", "name", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(schema=st.sampled_from(SCHEMAS), value=VALUES)
def test_same_answer_as_jsonschema(schema, value):
    expected = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert is_valid(value, schema) == expected
    assert not _plainly_valid(value, schema) or expected  # "plainly valid" is never wrong


def test_plain_values_need_no_jsonschema():
    assert _plainly_valid(5, {"type": "integer", "minimum": 2})
    assert _plainly_valid(0.05, {"type": "number", "minimum": 0, "maximum": 1})
    assert _plainly_valid("mask", {"type": "string", "enum": ["mask", "drop"]})
    assert not _plainly_valid(1, {"type": "integer", "minimum": 2})
    assert not _plainly_valid(True, {"type": "integer"})  # a boolean is no integer
    assert not _plainly_valid(float("nan"), {"type": "number"})  # left to jsonschema
