"""One secret for pseudonyms and the DP sample is refused (ADR 0030): the command line exits 2
with one line naming the settings, before any work (no output, no staging, no lease), whether
both settings read it from the same place or from two; with two secrets the same run releases,
and errors about a secret reference never echo the name given (a pasted secret)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from tests.helpers_data import (
    CITIES,
    CITY_HIERARCHY,
    release_rows,
    run_subprocess,
    write_config,
    write_table,
)

SECRET = "one-secret-for-both-5c0e7a91d2b84f36"
OTHER = "the-dp-secret-of-its-own-8e21b7c4"


@pytest.fixture
def data(tmp_path) -> Path:
    n = 600
    table = pa.table(
        {
            "pid": [f"P{i:05d}" for i in range(n)],
            "city": [CITIES[i % len(CITIES)] for i in range(n)],
        }
    )
    write_table(table, tmp_path / "in" / "part-0.parquet")
    return tmp_path / "in"


def _config(tmp_path: Path, data: Path, pseudonym_key: dict, dp_key: dict) -> Path:
    """Both keys configured; under DP no column is pseudonymised (a pseudonym would be
    released as it is, ADR 0027), so `pid` is dropped and the run still reads both keys."""
    cfg = {
        "input": {"path": str(data)},
        "output": {"path": str(tmp_path / "out")},
        "direct_identifiers": ["pid"],
        "quasi_identifiers": [{"name": "city", "type": "categorical", "hierarchy": CITY_HIERARCHY}],
        "privacy": {"differential_privacy": {"epsilon": 2.0, "delta": 1e-5, "node": {"city": 1}}},
        "quality": {"objective": "loss"},
        "suppressed_records": "drop",
        "pseudonym_key": pseudonym_key,
        "dp_key": dp_key,
    }
    return write_config(tmp_path / "skald.yaml", cfg)


def _nothing_written(tmp_path: Path) -> None:
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "skald.yaml"]


@pytest.mark.parametrize("dp_source", ["env", "file"])
def test_one_secret_for_pseudonyms_and_dp_is_refused_before_any_work(
    tmp_path, data, monkeypatch, dp_source
) -> None:
    monkeypatch.setenv("SKALD_TEST_PSEUDONYM_KEY", SECRET)
    monkeypatch.setenv("SKALD_TEST_DP_KEY", SECRET)
    (tmp_path.parent / f"{tmp_path.name}.key").write_text(SECRET + "\n")
    dp_key = (
        {"env": "SKALD_TEST_DP_KEY"}
        if dp_source == "env"
        else {"file": str(tmp_path.parent / f"{tmp_path.name}.key")}
    )
    cfg = _config(tmp_path, data, {"env": "SKALD_TEST_PSEUDONYM_KEY"}, dp_key)
    done = run_subprocess(["run", str(cfg)])
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pseudonym_key and dp_key hold the same secret" in lines[0]
    assert SECRET not in done.stderr + done.stdout
    _nothing_written(tmp_path)


def test_two_secrets_release(tmp_path, data, monkeypatch) -> None:
    monkeypatch.setenv("SKALD_TEST_PSEUDONYM_KEY", SECRET)
    monkeypatch.setenv("SKALD_TEST_DP_KEY", OTHER)
    cfg = _config(tmp_path, data, {"env": "SKALD_TEST_PSEUDONYM_KEY"}, {"env": "SKALD_TEST_DP_KEY"})
    done = run_subprocess(["run", str(cfg)])
    assert done.returncode == 0, done.stderr
    assert release_rows(tmp_path / "out")
    # the same pseudonym key pseudonymises in a run without DP (a pseudonym is never released
    # under DP: it would show whether its person was sampled, ADR 0027)
    body = yaml.safe_load(cfg.read_text())
    body["direct_identifiers"] = [{"pid": "pseudonymise"}]
    body["privacy"] = {"k": 2}
    body["output"]["path"] = str(tmp_path / "out-k")
    body.pop("dp_key")
    done = run_subprocess(["run", str(write_config(tmp_path / "k.yaml", body))])
    assert done.returncode == 0, done.stderr
    rows = release_rows(tmp_path / "out-k")
    assert rows and all(len(r["pid"]) == 64 for r in rows)


@pytest.mark.parametrize("setting", ["pseudonym_key", "dp_key"])
@pytest.mark.parametrize("kind", ["env", "file", "variable"])
def test_a_secret_pasted_as_a_name_is_never_echoed(
    tmp_path, data, monkeypatch, setting, kind
) -> None:
    pasted = "supersecretvalue0d9c8b7a6f5e4d3c"
    assert pasted not in os.environ
    monkeypatch.setenv("SKALD_TEST_PSEUDONYM_KEY", SECRET)
    monkeypatch.setenv("SKALD_TEST_DP_KEY", OTHER)
    refs = {
        "pseudonym_key": {"env": "SKALD_TEST_PSEUDONYM_KEY"},
        "dp_key": {"env": "SKALD_TEST_DP_KEY"},
    }
    refs[setting] = {kind: pasted}
    cfg = _config(tmp_path, data, refs["pseudonym_key"], refs["dp_key"])
    done = run_subprocess(["run", str(cfg)])
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"{setting}.{kind}" in done.stderr
    assert pasted not in done.stderr + done.stdout
    _nothing_written(tmp_path)
