"""The manifest's one schema: docs/manifest.schema.json is what `Manifest` says, manifests the
product writes validate against that file with a plain JSON Schema validator, and a damaged
field is one line naming it (the damaged-release cases run the CLI in
tests/integration/release/test_verify.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from airflow_skald.core.errors import DataError
from airflow_skald.core.release.write.manifest_schema import ABSENT, Manifest

SCHEMA_FILE = Path(__file__).resolve().parents[3] / "docs" / "manifest.schema.json"


def test_published_schema_is_current() -> None:
    written = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert written == Manifest.json_schema(), (
        "docs/manifest.schema.json is stale: python -c 'import json; from "
        "airflow_skald.core.release.write.manifest_schema import Manifest; "
        "print(json.dumps(Manifest.json_schema(), indent=2))' > docs/manifest.schema.json"
    )
    jsonschema.Draft202012Validator.check_schema(written)


def test_every_field_is_documented_and_absent_until_set() -> None:
    empty = Manifest()
    for f in dataclasses.fields(Manifest):
        assert f.metadata["doc"] and f.metadata["expects"], f.name
        assert getattr(empty, f.name) is ABSENT
    assert empty.to_dict() == {}


def test_unknown_key_is_refused_when_building() -> None:
    with pytest.raises(TypeError):
        Manifest.of(n_records=1, n_supressed=0)


def test_to_dict_keeps_schema_order_and_null_values() -> None:
    m = Manifest.of(version="1", n_records=3, histogram_bins=None, k=2)
    assert list(m.to_dict()) == ["k", "n_records", "histogram_bins", "version"]
    assert m.to_dict()["histogram_bins"] is None


def test_parse_round_trip_and_newer_keys_ignored() -> None:
    raw = {"n_records": 5, "k": 2, "node": {"age": 1}, "from_a_newer_writer": 1}
    assert Manifest.parse(raw, "m").to_dict() == {"k": 2, "n_records": 5, "node": {"age": 1}}


@pytest.mark.parametrize(
    ("raw", "line"),
    [
        ({}, "m: n_records is missing"),
        ({"n_records": -1}, "m: n_records must be an integer >= 0"),
        ({"n_records": 1, "k": True}, "m: k must be an integer >= 2"),
        ({"n_records": 1, "suppression_limit": "1.5"}, "m: suppression_limit must be a number"),
        ({"n_records": 1, "parts": ["x.parquet"]}, "m: parts must name part-*.parquet files"),
        ({"n_records": 1, "parts": "part-0.csv"}, "m: parts must list each part file once"),
    ],
)
def test_parse_names_the_first_bad_field(raw: dict, line: str) -> None:
    with pytest.raises(DataError) as err:
        Manifest.parse(raw, "m")
    assert str(err.value).startswith(line)
