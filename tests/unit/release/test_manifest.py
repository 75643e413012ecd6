"""The release's JSON files (core/release/write/manifest.py)."""

from __future__ import annotations

import json

from airflow_skald.core.release.write.manifest import effective_json_bytes, to_json_bytes


def test_effective_json_is_the_same_value_with_tables_on_one_line() -> None:
    """Hierarchy tables are written compactly (one line each), everything else indented; the
    JSON value is the body's, labels that look like JSON included."""
    body = {
        "k": 5,
        "qids": [
            {"name": "zip", "hierarchy": [["02139", "0213*", "*"], ["02140", "0214*", "*"]]},
            {"name": "age"},
            {"name": "odd", "hierarchy": [['a"],["b', "[0-5)"], ["\n", "*"]]},
        ],
        "source": "/etc/skald.yaml",
    }
    data = effective_json_bytes(body)
    assert json.loads(data) == body
    tables = [line for line in data.decode().splitlines() if '"hierarchy": [[' in line]
    assert len(tables) == 2 and data.endswith(b"}\n")


def test_effective_json_with_a_value_spelt_like_a_placeholder_is_plain() -> None:
    body = {"source": "\x00hierarchy 0\x00", "qids": [{"name": "q", "hierarchy": [["a", "*"]]}]}
    assert effective_json_bytes(body) == to_json_bytes(body)


def test_effective_json_without_qids() -> None:
    assert json.loads(effective_json_bytes({"k": 2})) == {"k": 2}
