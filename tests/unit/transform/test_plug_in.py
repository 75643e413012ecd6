"""A transformation is one package and one registry line (issue 42, ADR 0060): a throw-away
top-coding (a numeric column's values above a limit released as the limit), written here and
registered in the test only, runs end to end through the runner on a small table: its YAML
section parsed, its settings in the config hash, its phase 3 step on every part, its manifest
key (in the schema's order, parsed back by `skald verify`), its release check and its report
lines; nothing of it is shipped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers_data import config_dict, make_table, release_rows, write_table

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.data.io import read_release_part
from airflow_skald.core.errors import ConfigError, VerificationError
from airflow_skald.core.release.check.verify import verify_release
from airflow_skald.core.release.write.manifest_schema import Manifest
from airflow_skald.core.run import runner
from airflow_skald.core.transform import registry
from airflow_skald.core.transform.base import ManifestKey, ParseContext, Transformation

LIMIT = 70_000


@dataclass(frozen=True)
class TopCoding(Transformation):
    """``top_coding: {column: income, limit: 70000}``: values above the limit become it."""

    column: str
    limit: int

    name: ClassVar[str] = "top_coding"
    config_sections: ClassVar[tuple[str, ...]] = ("top_coding",)
    manifest_keys: ClassVar[Mapping[str, ManifestKey]] = {
        "top_coded": ManifestKey(
            {"type": "object"}, "an object", "a column's values above a limit released as it"
        )
    }

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: ParseContext) -> TopCoding | None:
        entry = raw.get("top_coding")
        if entry is None:
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("limit"), int):
            raise ConfigError("top_coding.limit must be an integer")
        return cls(str(entry["column"]), entry["limit"])

    def settings_entry(self) -> dict[str, Any]:
        return {"top_coding": {"column": self.column, "limit": self.limit}}

    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def release_part(self, table: pa.Table) -> pa.Table:
        i = table.schema.get_field_index(self.column)
        capped = pc.min_element_wise(table.column(i), pa.scalar(self.limit, pa.int64()))
        return table.set_column(i, self.column, capped)

    def manifest_section(self) -> dict[str, Any]:
        return {"top_coded": {"column": self.column, "limit": self.limit}}

    @classmethod
    def check_release(
        cls, manifest: Mapping[str, Any], location: Any, parts: Sequence[str]
    ) -> None:
        coded = manifest.get("top_coded")
        if not coded:
            return
        for part in parts:
            column = read_release_part(location, part, [coded["column"]]).column(0)
            if pc.max(column).as_py() > coded["limit"]:
                raise VerificationError(f"column '{coded['column']}' holds a value over its limit")

    @classmethod
    def report_rows(cls, manifest: Mapping[str, Any]) -> list[list[str]]:
        coded = manifest.get("top_coded")
        return [["top-coded", f"{coded['column']} at {coded['limit']}"]] if coded else []


@pytest.fixture
def top_coding(monkeypatch):
    """The one registry line, in the test only."""
    monkeypatch.setattr(registry, "TRANSFORMATIONS", (*registry.TRANSFORMATIONS, TopCoding))


def _incomes(seed: int, n: int) -> pa.Array:
    return pa.array([20_000 + (i * 7919 + seed * 104_729) % 80_000 for i in range(n)], pa.int64())


def _write_input(folder) -> list[int]:
    incomes = []
    for i in range(2):
        table = make_table(40, seed=i, start=i * 40)
        table = table.append_column("income", _incomes(i, 40))
        incomes += table["income"].to_pylist()
        write_table(table, folder / f"chunk-{i:03d}.parquet", "parquet")
    return incomes


def test_a_transformation_registered_in_a_test_runs_end_to_end(tmp_path, top_coding) -> None:
    incomes = _write_input(tmp_path / "in")
    assert max(incomes) > LIMIT  # something to top-code
    cfg = config_dict(tmp_path / "in", tmp_path / "out", chunk_rows=40)
    cfg["top_coding"] = {"column": "income", "limit": LIMIT}
    config = config_from_dict(cfg)
    assert config.transformation(TopCoding) == TopCoding("income", LIMIT)
    assert config.settings()["top_coding"] == {"column": "income", "limit": LIMIT}
    manifest = runner.run(config)

    rows = release_rows(tmp_path / "out")
    assert [r["income"] for r in rows] == [min(v, LIMIT) for v in incomes]  # phase 3, each part
    assert manifest["top_coded"] == {"column": "income", "limit": LIMIT}
    keys = list(manifest)  # written before output_format, as its ManifestKey says
    assert keys.index("top_coded") == keys.index("output_format") - 1
    assert Manifest.json_schema()["properties"]["top_coded"]["type"] == "object"
    report = (tmp_path / "out" / "report.html").read_text()
    assert "top-coded" in report and f"income at {LIMIT}" in report
    verify_release(str(tmp_path / "out"))  # the manifest parsed with its key; the check passes

    part = tmp_path / "out" / "part-00000.parquet"  # a value over the limit: the check says so
    table = pq.read_table(part)
    i = table.schema.get_field_index("income")
    pq.write_table(table.set_column(i, "income", pa.array([LIMIT + 1] * 40, pa.int64())), part)
    with pytest.raises(VerificationError, match="column 'income' holds a value over its limit"):
        verify_release(str(tmp_path / "out"))


def test_without_its_registry_line_its_section_is_refused(tmp_path) -> None:
    cfg = config_dict(tmp_path / "in", tmp_path / "out")
    cfg["top_coding"] = {"column": "income", "limit": LIMIT}
    with pytest.raises(ConfigError, match="top_coding"):
        config_from_dict(cfg)
    assert "top_coded" not in Manifest.json_schema()["properties"]
