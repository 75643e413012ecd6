"""`output: {table, connection, path?}` (docs/design.md §2a): parsed once where it enters; the release
folder defaults beside the config and follows an `output_table` override; bad entries are one
line naming the field; a password in a config's connection is refused."""

from __future__ import annotations

import pytest
from helpers_data import config_dict

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import ConfigError


def _config(tmp_path, **output) -> dict:
    body = config_dict(tmp_path / "in", tmp_path / "unused")
    body["output"] = {"table": "research.people", "connection": "WAREHOUSE", **output}
    return body


def test_table_release_settings_and_its_folder(tmp_path):
    config = config_from_dict(_config(tmp_path), base_dir=tmp_path)
    assert config.output_table.qualified == "research.people"
    assert config.output.path == str(tmp_path / "skald-releases" / "research.people")
    assert config.settings()["output_table"] == {
        "table": "research.people",
        "connection": "WAREHOUSE",
    }
    moved = config.with_overrides({"output_table": "research.other"})
    assert moved.output_table.table == "research.other"
    assert moved.output.path == str(tmp_path / "skald-releases" / "research.other")
    assert moved.fingerprint() != config.fingerprint()
    bare = config_from_dict(_config(tmp_path, table="people", path="rel"), base_dir=tmp_path)
    assert bare.output_table.qualified == "public.people" and bare.output.path == str(
        tmp_path / "rel"
    )
    kept = bare.with_overrides({"output_table": "other"})  # a folder given stays
    assert kept.output.path == str(tmp_path / "rel")


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ({"table": "a.b.c"}, "output.table must be a table name: name or schema.name"),
        ({"table": "x", "colour": 1}, "unknown key 'colour'"),
        ({"table": "x", "connection": ""}, "output.connection is required"),
        (
            {"table": "x", "connection": "postgresql://u:pw@h/db"},
            "output.connection: the URI holds a password",
        ),
    ],
)
def test_bad_output_tables_are_one_line(tmp_path, output, message):
    body = _config(tmp_path)
    body["output"] = {"connection": "WAREHOUSE", **output}
    with pytest.raises(ConfigError, match=message) as err:
        config_from_dict(body, base_dir=tmp_path)
    assert "pw" not in str(err.value).replace("password", "")
    with pytest.raises(ConfigError, match="output_table: the config's output is not a database"):
        config_from_dict(config_dict(tmp_path / "in", tmp_path / "o")).with_overrides(
            {"output_table": "x"}
        )
