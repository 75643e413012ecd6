"""Property (docs/design.md §4e "Data independence", issue 40): a DP release, its manifest, report and
run record hold no value derived from a record the keyed sample left out. Over many draws
(data, where the planted records sit among the unsampled rows, a searched or a fixed node,
mask or drop) with a fixed secret: an outlier zip, an outlier age and a city (with its
country) no other record has are planted in rows the run's own sample leaves out, and no
written byte of the release (parts, manifest, report, run.json) holds any of them."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.passes.state import Run
from airflow_skald.core.run import runner
from tests.helpers_data import CITY_HIERARCHY, make_table, write_config
from tests.helpers_dp import dp_config_dict

SECRET = "dp-property-secret-0c4f2a9e71"
ENV = "SKALD_TEST_DP_PROPERTY_KEY"
ROWS = 1200
#: outliers (zip above the cuts, age above them), long enough that no hash or count a release
#: writes holds them by chance (a 4-digit age was found inside a manifest's SHA-256)
ZIP, AGE = 8675309, 7345113
CITY, COUNTRY = "Xyzzyville", "Qwertystan"  # a city only the planted records have
PLANTED = [str(ZIP), str(AGE), CITY, COUNTRY]
#: the files a release writes that may describe the data (the config archive holds the
#: configured hierarchy, data-independent by definition, and is not published)
PUBLISHED = ("part-", "manifest.json", "report.html", "run.json")


#: how zip is configured: cut points (valid), or levels phase 1 would take from the data
ZIP_KINDS = {
    "bins": None,
    "encode": {"name": "zip", "type": "numerical", "min_width": 1, "encode": True},
    "plain": {"name": "zip", "type": "numerical", "min_width": 1},
}


def _config(tmp: Path, mode: str, node: bool, zip_kind: str, objective: str | None) -> Path:
    dp = {"search_steps": 6} | ({"node": {"city": 1, "age": 1, "zip": 0}} if node else {})
    cfg = dp_config_dict(tmp / "in", tmp / "out", ENV, **dp)
    if objective is not None:  # None: DP's default, loss
        cfg["quality"] = {"objective": objective}
    cfg["quasi_identifiers"][2] = ZIP_KINDS[zip_kind] or cfg["quasi_identifiers"][2]
    cfg["quasi_identifiers"][0]["hierarchy"] = {**CITY_HIERARCHY, CITY: [COUNTRY]}
    cfg["suppressed_records"] = mode
    return write_config(tmp / "c.yaml", cfg)


def _unsampled(config, token: str) -> list[int]:
    """Rows the run's own sample leaves out (through the run, whatever derives its key)."""
    run = Run(config, token=token)
    runner.layout(run)
    sample = run.row_sample()
    keeps = [bool(x) for c in run.chunks() for x in sample.keeps(c, c.n_rows)]
    return [i for i, kept in enumerate(keeps) if not kept]


def _plant(table: pa.Table, rows: list[int]) -> pa.Table:
    for name, value in (("zip", ZIP), ("age", AGE), ("city", CITY)):
        column = table.column(name).to_pylist()
        for i in rows:
            column[i] = value
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, pa.array(column, table.schema.field(name).type))
    return table


@settings(max_examples=14, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**16),
    picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=3),
    mode=st.sampled_from(["mask", "drop"]),
    node=st.booleans(),
    zip_kind=st.sampled_from(["bins", "bins", "encode", "plain"]),
    objective=st.sampled_from([None, "loss", "precision", "dm", "aecs"]),
)
def test_no_unsampled_value_is_published(
    tmp_path_factory, monkeypatch, seed, picks, mode, node, zip_kind, objective
):
    """A config whose levels phase 1 would take from the data is refused before any work, and
    so is a search scored by loss over a rule-built QID (loss weighs age's and zip's bins by
    the values found in the whole input, the planted outliers included); every other release
    holds no planted value, and no Loss weighed by them."""
    monkeypatch.setenv(ENV, SECRET)
    tmp = tmp_path_factory.mktemp("dp-prop")
    table = make_table(ROWS, seed=seed)
    (tmp / "in").mkdir()
    pq.write_table(table, tmp / "in" / "data.parquet")  # the layout the sample is drawn over
    path = _config(tmp, mode, node, zip_kind, objective)
    if zip_kind != "bins":
        with pytest.raises(ConfigError, match="quasi-identifier 'zip'"):
            load_config(path)
        assert not (tmp / "out").exists()
        return
    if objective in (None, "loss") and not node:
        with pytest.raises(ConfigError, match="quasi-identifier 'age': .*loss.* whole input"):
            load_config(path)
        assert not (tmp / "out").exists()
        return
    config = load_config(path)
    token = f"prop-{seed}"
    unsampled = _unsampled(config, token)
    rows = sorted({unsampled[p % len(unsampled)] for p in picks})
    pq.write_table(_plant(table, rows), tmp / "in" / "data.parquet")
    m = runner.run(config, token=token)
    assert m["differential_privacy"]["records_sampled"] <= ROWS - len(rows)
    written = [p for p in (tmp / "out").iterdir() if p.name.startswith(PUBLISHED)]
    assert any(p.name == "run.json" for p in written) and any(
        p.suffix == ".parquet" for p in written
    )
    assert "loss" not in m["quality_models"]["scores"]
    assert [r["name"] for r in m["quality_models"]["qids"] if "loss" in r] == ["city"]
    for path in written:
        data = path.read_bytes()
        for value in PLANTED:  # a number as a token of its own, not inside a hex digest
            token = re.escape(value.encode())
            if value.isdigit():
                token = rb"(?<![0-9A-Za-z])" + token + rb"(?![0-9A-Za-z])"
            assert not re.search(token, data), (value, path.name)
