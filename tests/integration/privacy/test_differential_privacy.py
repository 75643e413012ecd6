"""(ε, δ)-differential privacy end to end (docs/design.md §4e): the release holds classes of at least k
sampled records only, the sample is Binomial(N, β)-sized and independent of chunking and
workers, a retry of the run reproduces the release byte for byte, another run draws afresh and
is never an identical rerun, the secret reaches no written file and no output, and without a
secret the run is refused with one line."""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path

import pytest
from arx_answers import dp_grid_point

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.errors import DataError
from airflow_skald.core.run import runner
from tests.helpers_data import (
    release_bytes,
    release_rows,
    run_subprocess,
    write_config,
    write_dataset,
)
from tests.helpers_dp import dp_config_dict

SECRET = "dp-test-secret-7f3a9c1e-not-a-real-key"
ENV = "SKALD_TEST_DP_KEY"
QIDS = ("city", "age", "zip")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("dp") / "in"
    write_dataset(folder, n_files=3, rows=1500)
    return folder


def _config(tmp: Path, data: Path, out: str = "out", **dp) -> Path:
    cfg = dp_config_dict(data, tmp / out, ENV, search_steps=12, **dp)
    cfg["quality"] = {"objective": "precision"}
    cfg["suppressed_records"] = "drop"
    return write_config(tmp / f"{out}.yaml", cfg)


@pytest.fixture(autouse=True)
def secret(monkeypatch) -> None:
    monkeypatch.setenv(ENV, SECRET)


def test_release_keeps_k_and_a_binomial_sample(tmp_path, data) -> None:
    m = runner.run(load_config(_config(tmp_path, data)), token="run-a")
    dp = m["differential_privacy"]
    n, beta, k = dp["records_input"], dp["beta"], dp["k"]
    assert (n, k, beta) == (4500, 103, 0.8504313807773648)
    assert abs(dp["records_sampled"] - n * beta) < 5 * math.sqrt(n * beta * (1 - beta))
    rows = release_rows(tmp_path / "out")
    assert len(rows) == dp["records_released"] == n - m["n_suppressed"]
    sizes = Counter(tuple(r[q] for q in QIDS) for r in rows)
    assert sizes and min(sizes.values()) >= k  # every released class: >= k sampled records
    assert m["suppression_limit"] == 1.0 and m["k"] == k
    assert dp["node"] == m["node"] and "compose" in dp["composition"]
    assert "Differential privacy" in (tmp_path / "out" / "report.html").read_text()


def test_fixed_node_spends_all_of_epsilon(tmp_path, data) -> None:
    node = {"city": 1, "age": 3, "zip": 2}
    m = runner.run(load_config(_config(tmp_path, data, node=node)), token="run-f")
    dp = m["differential_privacy"]
    assert m["node"] == node and dp["mode"] == "fixed"
    arx = dp_grid_point(2, 1e-5, "fixed")  # ARX 3.9.2's k and β at ε = 2, δ = 1e-5
    assert (dp["k"], dp["beta"]) == (arx["k"], arx["beta"]) == (114, 0.8646647167633871)


def test_sample_does_not_depend_on_chunks_or_workers(tmp_path, data) -> None:
    """... and the utility analysis, a statistic of every input record, is left out with the
    sentence saying why (docs/design.md §4e: no figure of the unsampled input)."""
    utility = {"utility_target": "city", "utility_folds": 2, "utility_models": ["naive_bayes"]}
    a = load_config(_config(tmp_path, data, "a")).with_overrides(utility)
    b = load_config(_config(tmp_path, data, "b")).with_overrides({"chunk_rows": 400, **utility})
    ma = runner.run(a, token="same-run")
    mb = runner.run(b, token="same-run", workers=2)
    assert ma["chunks"] == 6 and mb["chunks"] == 12
    assert ma["differential_privacy"] == mb["differential_privacy"]
    assert release_rows(tmp_path / "a") == release_rows(tmp_path / "b")
    assert ma["utility"] == mb["utility"]
    assert set(ma["utility"]) == {"settings", "left_out"}
    assert "differential privacy" in ma["utility"]["left_out"]


def test_retry_reproduces_another_run_draws_afresh(tmp_path, data) -> None:
    config = load_config(_config(tmp_path, data))
    first = runner.run(config, token="run-r")
    before = release_bytes(tmp_path / "out")
    rows_before = release_rows(tmp_path / "out")
    again = runner.run(config, token="run-r")  # a retry of the same run replaces it
    assert release_bytes(tmp_path / "out") == before
    assert again["differential_privacy"] == first["differential_privacy"]
    with pytest.raises(DataError, match="overwrite"):  # never an identical rerun
        runner.run(config, token="run-s")
    runner.run(config.with_overrides({"overwrite": True}), token="run-s")
    assert release_bytes(tmp_path / "out") != before
    # another run draws another sample, so other records are released (two independent
    # β-samples of 4500 records coincide with probability (β² + (1 - β)²)^4500, nil)
    assert release_rows(tmp_path / "out") != rows_before


def test_secret_reaches_no_file_and_no_output(tmp_path, data) -> None:
    cfg = _config(tmp_path, data)
    done = run_subprocess(["run", str(cfg)])
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "manifest.json" for p in written)
    for p in written:
        assert SECRET.encode() not in p.read_bytes(), p


def test_no_secret_is_refused_with_one_line(tmp_path, data) -> None:
    cfg = _config(tmp_path, data)
    env = os.environ.pop(ENV)
    try:
        done = run_subprocess(["run", str(cfg)])
    finally:
        os.environ[ENV] = env
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "dp_key.env" in lines[0]
    assert ENV not in lines[0]  # the name given is not echoed (it may be a pasted secret)
    assert not (tmp_path / "out").exists()


def test_per_chunk_is_refused(tmp_path, data) -> None:
    from airflow_skald.core.errors import ConfigError
    from airflow_skald.core.run.baseline import run_per_chunk

    with pytest.raises(ConfigError, match="per-chunk"):
        run_per_chunk(load_config(_config(tmp_path, data)))


def test_verify_rechecks_k_and_names_what_it_cannot(tmp_path, data, capsys) -> None:
    """`skald verify` of a DP release re-checks k per class (and the sampled records' count),
    and names the sample's and the node's draws as not re-checked ("partial", exit 4); a
    class cut below k is refused."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.helpers_data import run_inprocess

    m = runner.run(load_config(_config(tmp_path, data)), token="run-v")
    code, stdout, err = run_inprocess(["verify", str(tmp_path / "out")], capsys)
    assert code == 4, err
    report = json.loads(stdout)
    assert report["verified"] == "partial" and report["k"] == m["differential_privacy"]["k"]
    (entry,) = report["not_rechecked"]
    assert entry["model"] == "differential-privacy" and "Binomial(N, beta)" in entry["reason"]
    assert "exponential mechanism" in entry["reason"]
    part = sorted((tmp_path / "out").glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    cities = table.column("city").to_pylist()
    cities[0] = "Atlantis"  # one record in a class of its own: below k
    i = table.schema.get_field_index("city")
    pq.write_table(table.set_column(i, "city", pa.array(cities)), part)
    code, _, err = run_inprocess(["verify", str(tmp_path / "out")], capsys)
    assert code == 1 and f"is not {m['differential_privacy']['k']}-anonymous" in err, err
    from airflow_skald.core.release.check.audit import audit

    (named,) = audit(load_config(_config(tmp_path, data)))["not_checked"]  # the input's audit
    assert named["model"] == "differential-privacy" and "secret" in named["reason"]
