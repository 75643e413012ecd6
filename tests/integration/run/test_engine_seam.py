"""The engine seam (docs/design.md §2b, ADR 0050): the runner asks the run's engine, whichever
is registered under `execution.engine`, for phase 1's statistics, the root histogram and the
written release; an engine registered here (the chunk engine's work, its calls counted) gives
the release the chunk engine gives."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from helpers_data import setup_run
from skald_testdata import read_release

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.engine import registry
from airflow_skald.core.engine.chunks import ChunkEngine
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.run import runner as R
from airflow_skald.core.run.baseline import run_per_chunk
from airflow_skald.core.settings.execution import ExecutionSettings

CALLS: Counter = Counter()


class CountingEngine(ChunkEngine):
    """Not the chunk engine by name: what it is asked is counted, the work is the chunks'."""

    name = "counting"
    groups = False

    def list_input(self, run):
        CALLS["list_input"] += 1
        return super().list_input(run)

    def domain_stats(self, run):
        CALLS["domain_stats"] += 1
        return super().domain_stats(run)

    def root_counts(self, run):
        CALLS["root_counts"] += 1
        return super().root_counts(run)

    def first_rows(self, run, plan, node, keys):
        CALLS["first_rows"] += 1
        return super().first_rows(run, plan, node, keys)

    def write_release(self, run):
        CALLS["write_release"] += 1
        return super().write_release(run)


@pytest.fixture
def counting(monkeypatch):
    monkeypatch.setitem(registry.ENGINES, CountingEngine.name, CountingEngine)
    CALLS.clear()
    return CALLS


def test_the_runner_drives_the_registered_engine_and_gets_the_same_release(
    tmp_path, counting
) -> None:
    inp, out, config, cfg = setup_run(tmp_path, n_files=3, rows=40)
    chunks = R.run(load_config(config))
    expected = read_release(out)
    other = load_config(config, {"output_path": str(tmp_path / "out-engine")})
    other = dataclasses.replace(other, execution_settings=ExecutionSettings("counting"))
    manifest = R.run(other)
    assert dict(counting) == {
        "list_input": 1,
        "domain_stats": 1,
        "root_counts": 1,
        "write_release": 1,
        **({"first_rows": counting["first_rows"]} if counting["first_rows"] else {}),
    }
    for key in ("node", "root_node", "dm_star", "n_suppressed", "n_equivalence_classes"):
        assert manifest[key] == chunks[key], key
    assert read_release(tmp_path / "out-engine").equals(expected)


def test_chunk_groups_and_per_chunk_runs_are_the_chunk_engines_own(tmp_path, counting) -> None:
    _, out, cfg, _ = setup_run(tmp_path, n_files=2, rows=20)
    config = dataclasses.replace(load_config(cfg), execution_settings=ExecutionSettings("counting"))
    with pytest.raises(ConfigError, match="need execution: chunks"):
        R.run_group(R.ENCODE, R.Run(config), 0, [0])
    with pytest.raises(ConfigError, match="need execution: chunks"):  # before phase 1
        run_per_chunk(config)
    with pytest.raises(ConfigError, match="need execution: chunks"):  # the DAG's list task
        R.begin_run(R.Run(config), 60.0, None, 1, mapped=True)
    assert not out.exists() and counting == {}
