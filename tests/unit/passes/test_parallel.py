"""core.passes.parallel: contiguous groups, results in group order, workers in the caller's
environment and folder even though they are forked from a fork server started earlier."""

from __future__ import annotations

import os

from helpers_data import worker_surroundings

from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.passes.parallel import chunk_groups, map_groups


def chunks(*rows: int) -> list[ChunkRef]:
    return [ChunkRef(i, f"f{i}", 0, n) for i, n in enumerate(rows)]


def test_groups_are_contiguous_nearly_equal_and_in_order():
    groups = chunk_groups(chunks(10, 10, 10, 10, 40), 2)
    assert [[c.chunk_id for c in g] for g in groups] == [[0, 1, 2, 3], [4]]
    assert chunk_groups(chunks(5), 4) == [chunks(5)]


def test_workers_see_the_callers_environment_and_folder(tmp_path, monkeypatch):
    parts = chunks(1, 1)
    first = map_groups(worker_surroundings, (), parts, workers=2)  # the server is up now
    assert len(first) == 2 and all(pid != os.getpid() for _, _, pid in first)
    monkeypatch.setenv("SKALD_TEST_MARK", "set after the server started")
    monkeypatch.chdir(tmp_path)
    seen = map_groups(worker_surroundings, (), parts, workers=2)
    assert [(mark, cwd) for mark, cwd, _ in seen] == [
        ("set after the server started", str(tmp_path)),
    ] * 2
    monkeypatch.delenv("SKALD_TEST_MARK")
    assert {mark for mark, _, _ in map_groups(worker_surroundings, (), parts, workers=2)} == {None}
