"""`execution: {engine: duckdb}` end to end through the CLI (docs/design.md §2b): the same
manifest figures and released rows (as a multiset) as `execution: chunks`; what the engine
does not run yet refused before any work in one line (exit 2, nothing written); a SIGKILL
while DuckDB writes the release leaves the previous release as it was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from engine_compare import (
    CITIES,
    PROFIT,
    UTILITY,
    assert_same_release,
    config,
    same_utility_as_chunks,
    write_files,
)
from engine_compare import run_cli as _run

REPO = Path(__file__).resolve().parents[3]
KEPT = ("node", "dm_star", "n_suppressed", "n_equivalence_classes", "min_class_size")


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


@pytest.mark.parametrize(
    "settings",
    [
        {"privacy": {"l_diversity": [{"attribute": "disease", "l": 2}]}},
        {"quality": {"objective": "loss"}, "suppressed_records": "drop"},
        {
            "direct_identifiers": [{"pid": "pseudonymise"}],
            "pseudonym_key": {"env": "SKALD_TEST_KEY"},
        },
        {  # ARX's ProfitabilityProsecutor and publisher payout: each class's loss (ADR 0046)
            "privacy": {"profitability": PROFIT, "suppression_limit": 0.2},
            "quality": {"objective": "publisher_payout"},
        },
    ],
)
def test_the_duckdb_engine_releases_what_the_chunk_path_releases(
    tmp_path, capsys, monkeypatch, settings
):
    monkeypatch.setenv("SKALD_TEST_KEY", KEY)
    texts = _statements(monkeypatch)
    inp = write_files(tmp_path / "in", 2, 150, 11)
    out = {}
    for engine in ("chunks", "duckdb"):
        out[engine] = tmp_path / f"out-{engine}"
        cfg = config(inp, out[engine], execution={"engine": engine}, **settings)
        code, err = _run(tmp_path, cfg, engine, capsys)
        assert code == 0, err
    assert_same_release(out["duckdb"], out["chunks"])
    assert texts and not any(KEY in t or KEY.encode().hex() in t for t in texts)


KEY = "a-pseudonym-key-0f3c9e7d1b2a4c68"


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_duckdb_gathers_the_utility_analysis_of_the_chunk_path(tmp_path, capsys, fmt):
    """The manifest's `utility` section from DuckDB's counts and its join of the sampled rows
    (ADR 0077) on two files' Parquet and CSV row numbers: the chunk path's, byte for byte
    (`assert_same_release` compares every manifest key), a sample smaller than the input."""
    manifest = same_utility_as_chunks(tmp_path, capsys, fmt, {"engine": "duckdb"})
    assert manifest["utility"]["sample"]["records"] == 200
    assert manifest["utility"]["classification"]["models"]


def test_duckdb_samples_the_chunk_paths_records_of_files_it_does_not_cut(tmp_path, capsys):
    """Two files of 300 records, `chunk_rows` 150: the chunk path reads four chunks, DuckDB
    two files, numbered per file; the same sample of 200 of the 600 records, so the same
    `utility` section, and every manifest key but the chunk count and the parts' names the
    chunk path's, the input fingerprint too: DuckDB's run over the chunk path's release is an
    identical rerun, replaced without --overwrite."""
    manifest = same_utility_as_chunks(tmp_path, capsys, "parquet", {"engine": "duckdb"}, 300)
    assert manifest["utility"]["sample"]["records"] == 200
    cfg = config(tmp_path / "in", tmp_path / "out-chunks", execution={"engine": "duckdb"})
    code, err = _run(tmp_path, {**cfg, "utility": UTILITY}, "rerun", capsys)
    assert code == 0, err
    rerun = _manifest(tmp_path / "out-chunks")
    assert rerun["engine"] == "duckdb" and rerun["chunks"] == 2


def _statements(monkeypatch) -> list[str]:
    """Every SQL text DuckDB is given during the test (the sessions' own methods, observed)."""
    from airflow_skald.core.engine.sql import duckdb_session

    texts: list[str] = []
    real = duckdb_session.DuckDBSession.__init__

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        execute = self.db.execute

        def observed(sql, *params):
            texts.append(sql)
            return execute(sql, *params)

        self.db = _Observed(self.db, observed)

    monkeypatch.setattr(duckdb_session.DuckDBSession, "__init__", init)
    return texts


class _Observed:
    """A DuckDB connection whose execute is observed; everything else is the connection's."""

    def __init__(self, db, execute):
        self._db, self.execute = db, execute

    def __getattr__(self, name):
        return getattr(self._db, name)


REFUSED = [
    ({"output": {"format": "csv"}}, "writes a Parquet folder release"),
    (
        {
            "privacy": {"k": 3, "differential_privacy": {"epsilon": 2, "delta": 1e-6}},
            "sensitive_attributes": [],
            "direct_identifiers": ["pid", "age", "zip", "income", "disease", "score"],
            "quasi_identifiers": [{"name": "city", "type": "categorical", "hierarchy": CITIES}],
            "quality": {"objective": "precision"},
        },
        "differential privacy",
    ),
]


@pytest.mark.parametrize("change,message", REFUSED)
def test_what_the_engine_does_not_run_is_refused_before_any_work(
    tmp_path, capsys, monkeypatch, change, message
):
    monkeypatch.setenv("SKALD_TEST_KEY", "k" * 32)
    inp = write_files(tmp_path / "in", 1, 40, 1)
    out = tmp_path / "out"
    cfg = config(inp, out, execution={"engine": "duckdb"})
    for key, value in change.items():
        merged = isinstance(cfg.get(key), dict) and key != "privacy"
        cfg[key] = {**cfg[key], **value} if merged else value
    code, err = _run(tmp_path, cfg, "refused", capsys)
    assert code == 2
    assert message in err and "execution.engine duckdb" in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "refused.yaml"]


def _big_input(folder: Path) -> Path:
    folder.mkdir()
    rng = np.random.default_rng(5)
    for i in range(4):
        n = 50_000
        pq.write_table(
            pa.table(
                {
                    "pid": np.arange(n) + i * n,
                    "city": pa.array(rng.choice(["Oslo", "Bergen", "Lund", "Malmo"], n)),
                    "age": pa.array(rng.integers(18, 80, n), pa.int64()),
                    "zip": pa.array(rng.choice([1001, 1002, 1010, 1100], n), pa.int64()),
                    "income": pa.array(rng.integers(0, 4000, n) / 4, pa.float64()),
                    "disease": pa.array(rng.choice(["flu", "gout", "none"], n)),
                    "score": pa.array(rng.integers(0, 9, n), pa.int64()),
                }
            ),
            folder / f"in-{i}.parquet",
        )
    return folder


def test_sigkill_while_duckdb_writes_leaves_the_previous_release(tmp_path, capsys):
    inp = _big_input(tmp_path / "in")
    out = tmp_path / "out"
    cfg = config(inp, out, execution={"engine": "duckdb"})
    cfg["quasi_identifiers"] = cfg["quasi_identifiers"][:2]  # a small lattice: the writes dominate
    cfg["direct_identifiers"] = ["pid", "zip", "income"]
    assert _run(tmp_path, cfg, "first", capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    cfg["privacy"]["k"] = 7
    path = tmp_path / "second.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "airflow_skald.cli", "run", str(path), "-q", "--overwrite"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=str(REPO),
    )
    deadline = time.monotonic() + 120
    writing = []
    while time.monotonic() < deadline and proc.poll() is None and not writing:
        writing = list(tmp_path.glob(".out.skald-staging-*/*"))  # phase 3 has begun
        time.sleep(0.002)
    assert writing and proc.poll() is None, "the run ended before DuckDB wrote its parts"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # the next run clears what the killed one left and publishes
    code, err = _run(tmp_path, cfg, "third", capsys, "--overwrite")
    assert code == 0, err
    assert (json.loads(before["manifest.json"])["k"], _manifest(out)["k"]) == (3, 7)
    assert not list(tmp_path.glob(".out.skald-staging-*"))


@pytest.mark.parametrize(
    "bad,message",
    [(float("nan"), "1 null/NaN value(s)"), (float("-inf"), "infinite values")],
)
def test_a_nan_or_infinite_numerical_qid_is_refused_as_the_chunk_path_refuses_it(
    tmp_path, capsys, bad, message
):
    """A double QID's NaN is a null and an infinity refused, in one line naming the column (a
    NaN once slipped through: DuckDB folds a range test against Parquet's statistics, which
    leave NaN out, to true)."""
    inp = write_files(tmp_path / "in", 1, 40, 1)
    data = pq.read_table(inp / "in-000.parquet")
    income = data.column("income").to_numpy().copy()
    income[3] = bad
    column = data.schema.get_field_index("income")
    pq.write_table(data.set_column(column, "income", pa.array(income)), inp / "in-000.parquet")
    for engine in ("chunks", "duckdb"):
        cfg = config(inp, tmp_path / f"out-{engine}", execution={"engine": engine})
        code, err = _run(tmp_path, cfg, engine, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"column 'income' has {message}" in err
        assert not (tmp_path / f"out-{engine}").exists()


@pytest.mark.parametrize("bins", [None, 1 << 26])
def test_duckdb_is_set_from_the_runs_budget_threads_and_folder(tmp_path, bins):
    """memory_limit = one chunk of records plus N_RAM bins (derived as n d / 16, or given),
    threads = the run's workers, spilling into a private folder beside the run's staging
    folder, gone at close (ADR 0077)."""
    from airflow_skald.core.config.run_config import config_from_dict
    from airflow_skald.core.engine.sql.duckdb_engine import DuckDBEngine
    from airflow_skald.core.passes.state import Run
    from airflow_skald.core.settings.execution import ExecutionSettings

    cfg = config(tmp_path / "in", tmp_path / "out", chunk_rows=1 << 20)
    if bins is not None:
        cfg["memory"] = {"histogram_bins": bins}
    run = Run(config=config_from_dict(cfg))
    engine = DuckDBEngine(ExecutionSettings("duckdb"), workers=3)
    settings = "SELECT current_setting('memory_limit'), current_setting('threads'), "
    settings += "current_setting('temp_directory')"
    with engine._session(run, bytes_per_record=2048) as session:  # a chunk of 2 GiB
        limit, threads, spill = session.db.execute(settings).fetchone()
        assert Path(spill).is_dir()
    assert limit == ("4.0 GiB" if bins is None else "3.0 GiB")  # 2 GiB + bins x 16 B
    assert threads == 3
    staging = Path(run.staging)
    assert Path(spill).parent == staging.parent == tmp_path
    assert Path(spill).name.startswith(staging.name + ".spill-") and not Path(spill).exists()
    with engine._session(run) as session:  # before phase 1 knows the record size: the floor
        assert session.db.execute(settings).fetchone()[0] == "1.0 GiB"
