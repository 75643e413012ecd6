"""Atomic, idempotent writes and never publishing a non-anonymous release (issue 6, items 2-3).

- A real `skald run` process killed with SIGKILL in phase 3 leaves nothing that looks like a
  complete release; the rerun succeeds and is byte-identical to an uninterrupted run.
- Deterministic "kills" at every step of phase 3 and of the commit (an exception that escapes
  with the cleanup disabled, i.e. exactly the disk state a kill -9 at that point leaves).
- Re-running over an existing release replaces it whole (no stale parts) with identical bytes.
- When the final verification fails the run exits 1 and publishes nothing; `skald verify`
  catches a tampered release.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers_data import (
    REPO,
    config_dict,
    leftovers,
    release_bytes,
    release_rows,
    run_inprocess,
    setup_run,
    write_config,
    write_dataset,
)

from airflow_skald.core.passes import pipeline
from airflow_skald.core.release.write import commit as release
from airflow_skald.core.run import phase_generalise, publish, runner

# ------------------------------------------------------------------------------ helpers


def _staging(out: Path) -> list[Path]:
    return sorted(out.parent.glob(f".{out.name}.skald-staging-*"))


def _reference(tmp_path: Path, cfg: dict, capsys) -> Path:
    """An uninterrupted run of the same config into another folder."""
    ref = tmp_path / "reference"
    config = write_config(tmp_path / "reference.yaml", {**cfg, "output": {"path": str(ref)}})
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)
    assert code == 0, err
    return ref


def _assert_same_release(out: Path, ref: Path) -> None:
    assert release_bytes(out) == release_bytes(ref)
    assert release_rows(out) == release_rows(ref)
    m_out = json.loads((out / "manifest.json").read_text())
    m_ref = json.loads((ref / "manifest.json").read_text())
    for key in ("node", "dm_star", "n_suppressed", "n_records", "parts", "input_fingerprint"):
        assert m_out[key] == m_ref[key], key


def _assert_nothing_complete(out: Path) -> None:
    """After a kill: no release at `out`, and nothing anywhere with a manifest but ours."""
    assert not (out / "manifest.json").exists()
    assert not out.exists() or not any(out.iterdir())


# -------------------------------------------------------------- a real kill -9 in phase 3


def test_sigkill_mid_phase3_then_rerun_is_byte_identical(tmp_path: Path, capsys) -> None:
    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=4, rows=120, seed=3)
    cfg = config_dict(inp, out, chunk_rows=4)  # 120 chunks: phase 3 writes 120 parts
    config = write_config(tmp_path / "skald.yaml", cfg)
    ref = _reference(tmp_path, cfg, capsys)
    n_parts = len(release_bytes(ref))
    assert n_parts == 120

    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "airflow_skald.cli", "run", str(config), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(REPO),
    )
    killed_with = None
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            parts = [p for s in _staging(out) for p in s.glob("part-*")]
            if len(parts) >= 3:
                os.kill(proc.pid, signal.SIGKILL)
                killed_with = len(parts)
                break
            time.sleep(0.002)
    finally:
        if proc.poll() is None and killed_with is None:
            proc.kill()
        proc.wait(30)
    assert killed_with is not None, f"the run ended before phase 3 was caught: {proc.stderr.read()}"
    assert proc.returncode == -signal.SIGKILL
    proc.stderr.close()

    # What the kill left: a hidden staging folder with some parts and no manifest.
    _assert_nothing_complete(out)
    stale = _staging(out)
    assert stale, "expected the killed run's staging folder"
    assert not any((s / "manifest.json").exists() for s in stale)
    assert 0 < len(list(stale[0].glob("part-*"))) < n_parts

    # `skald verify` refuses the debris (no manifest, not a release).
    code, _, err = run_inprocess(["verify", str(out), "--k", "3"], capsys)
    assert code == 2, err

    # The rerun cleans up and gives the uninterrupted run's release, byte for byte.
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)
    assert code == 0, err
    _assert_same_release(out, ref)
    assert _staging(out) == []


# ----------------------------------------------- deterministic kills at each commit step


class Killed(BaseException):
    """Stands for SIGKILL: escapes every `except Exception` and the cleanup is disabled."""


def _no_cleanup(monkeypatch) -> None:
    for module in (runner, publish):  # the run's and the publish step's cleanup
        monkeypatch.setattr(module, "discard", lambda staging: None)


def _kill_at_part(n: int, before_rename: bool):
    real = pipeline.write_part_atomic
    calls = {"n": 0}

    def fake(table, location, staging, name):
        if calls["n"] == n:
            if before_rename:  # the part is written under its temporary name, not yet renamed
                from airflow_skald.core.data.io import write_part

                write_part(table, location, f"{staging}/.{name}.tmp")
            raise Killed
        calls["n"] += 1
        return real(table, location, staging, name)

    return fake


def _kill_before(target):
    def fake(*args, **kwargs):
        raise Killed

    return fake


def _kill_after(target):
    def fake(*args, **kwargs):
        target(*args, **kwargs)
        raise Killed

    return fake


def _rename_killer(when):
    """A Path class for `release` whose rename kills the run right after a matching rename."""

    class KillingPath(type(Path())):
        def rename(self, target):
            result = super().rename(target)
            if when(str(self), str(target)):
                raise Killed
            return result

    return KillingPath


KILL_POINTS = {
    "first-part-before-rename": lambda mp: mp.setattr(
        pipeline, "write_part_atomic", _kill_at_part(0, True)
    ),
    "middle-part-before-rename": lambda mp: mp.setattr(
        pipeline, "write_part_atomic", _kill_at_part(5, True)
    ),
    "between-parts": lambda mp: mp.setattr(pipeline, "write_part_atomic", _kill_at_part(7, False)),
    "all-parts-before-verify": lambda mp: mp.setattr(
        phase_generalise, "verify_release", _kill_before(phase_generalise.verify_release)
    ),
    "after-verify": lambda mp: mp.setattr(publish, "now_iso", _kill_before(publish.now_iso)),
    "manifest-written-before-commit": lambda mp: mp.setattr(
        publish, "commit", _kill_before(publish.commit)
    ),
    "old-release-moved-aside": lambda mp: mp.setattr(
        release, "Path", _rename_killer(lambda src, dst: dst.endswith(".skald-old"))
    ),
    "new-release-renamed-in": lambda mp: mp.setattr(
        release, "Path", _rename_killer(lambda src, dst: "skald-staging" in src)
    ),
}


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory) -> dict:
    """One input, its reference release and an older release (k=5), shared by the kill tests."""
    from airflow_skald.core.config.run_config import config_from_dict

    base = tmp_path_factory.mktemp("kills")
    inp = base / "in"
    write_dataset(inp, n_files=2, rows=60, seed=11)
    releases = {}
    for name, k in (("reference", 3), ("old", 5)):
        cfg = config_dict(inp, base / name, k=k, chunk_rows=10)
        runner.run(config_from_dict(cfg))
        releases[name] = base / name
    assert release_bytes(releases["old"]) != release_bytes(releases["reference"])
    return {"input": inp, **releases}


_KILL_CASES = [
    pytest.param(point, old, id=f"{point}-{'over-old-release' if old else 'fresh'}")
    for point in KILL_POINTS
    for old in (False, True)
    if old or point != "old-release-moved-aside"  # a fresh output has no old release to move
]


@pytest.mark.parametrize("point, with_old_release", _KILL_CASES)
def test_kill_at_each_step_then_rerun(
    point: str, with_old_release: bool, shared_run: dict, tmp_path: Path, capsys, monkeypatch
) -> None:
    out, ref = tmp_path / "out", shared_run["reference"]
    config = write_config(
        tmp_path / "skald.yaml", config_dict(shared_run["input"], out, chunk_rows=10)
    )
    old, flags = None, ["-q"]
    if with_old_release:  # an earlier release with other settings sits at the output path
        shutil.copytree(shared_run["old"], out)
        old = release_bytes(out)
        flags.append(
            "--overwrite"
        )  # replacing another run's release is asked for (docs/design.md §5)

    with monkeypatch.context() as mp:
        _no_cleanup(mp)
        KILL_POINTS[point](mp)
        with pytest.raises(Killed):
            run_inprocess(["run", str(config), *flags], capsys)

    # Whatever is at the output path is a complete release (old or new) or nothing at all.
    if (out / "manifest.json").exists():
        manifest = json.loads((out / "manifest.json").read_text())
        assert sorted(p.name for p in out.glob("part-*")) == manifest["parts"]
        now = release_bytes(out)
        assert now in (old, release_bytes(ref))
        code, _, err = run_inprocess(["verify", str(out), "--k", str(manifest["k"])], capsys)
        assert code == 0, err
    else:
        _assert_nothing_complete(out)
        if with_old_release and point != "new-release-renamed-in":
            # Only the rename window can lose the visible old release; it is kept aside.
            assert point == "old-release-moved-aside"
            assert (out.parent / f"{out.name}.skald-old" / "manifest.json").exists()
    for staging in _staging(out):  # debris from the kill is hidden and incomplete, or whole
        assert staging.name.startswith(".")

    code, _, err = run_inprocess(["run", str(config), *flags], capsys)
    assert code == 0, err
    _assert_same_release(out, ref)
    assert [p.name for p in leftovers(out)] == ["out"], "staging or old release left behind"
    assert not list(out.glob(".*")), "temporary files inside the release"


# ------------------------------------------------------------------- idempotent reruns


def test_rerun_over_existing_release_is_identical(tmp_path: Path, capsys) -> None:
    _, out, config, _ = setup_run(tmp_path, n_files=3, rows=40)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    first = release_bytes(out)
    first_rows = release_rows(out)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    assert release_bytes(out) == first
    assert release_rows(out) == first_rows
    assert [p.name for p in leftovers(out)] == ["out"]


def test_rerun_with_fewer_chunks_leaves_no_stale_parts(tmp_path: Path, capsys) -> None:
    _, out, config, _ = setup_run(tmp_path, n_files=3, rows=40)
    assert run_inprocess(["run", str(config), "-q", "--chunk-rows", "10"], capsys)[0] == 0
    assert len(release_bytes(out)) == 12
    assert run_inprocess(["run", str(config), "-q", "--k", "4", "--overwrite"], capsys)[0] == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(release_bytes(out)) == manifest["parts"]
    assert len(manifest["parts"]) == 3 and manifest["k"] == 4
    assert run_inprocess(["verify", str(out), "--k", "4"], capsys)[0] == 0


def test_failed_rerun_keeps_the_old_release(tmp_path: Path, capsys) -> None:
    """A rerun that fails on bad input leaves the earlier release untouched."""
    _, out, config, _ = setup_run(tmp_path, n_files=3, rows=40)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, _, err = run_inprocess(["run", str(config), "-q", "--k", "100000"], capsys)
    assert code == 2 and err.startswith("skald: error:")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in leftovers(out)] == ["out"]


# ------------------------------------------------- never publish a non-anonymous release


def _one_line(err: str, prefix: str) -> None:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), err


@pytest.mark.parametrize("flags", [[], ["--per-chunk"]], ids=["global", "per-chunk"])
def test_unsuppressing_generaliser_is_caught(
    flags: list[str], tmp_path: Path, capsys, monkeypatch
) -> None:
    """A bug that forgets to suppress small classes must fail the run, not publish."""
    _, out, config, _ = setup_run(tmp_path, n_files=3, rows=40)
    real = pipeline.generalise_table
    seen = {"suppressed": 0}

    def unsuppressing(config, plan, decision, *rest):
        seen["suppressed"] += int(decision.suppressed_keys.size)
        empty = np.zeros(0, dtype=np.int64)
        return real(config, plan, dataclasses.replace(decision, suppressed_keys=empty), *rest)

    monkeypatch.setattr(pipeline, "generalise_table", unsuppressing)
    code, stdout, err = run_inprocess(["run", str(config), "-q", *flags], capsys)
    assert seen["suppressed"] > 0, "the test data must have suppressed classes"
    assert code == 1, err
    _one_line(err, "skald: verification failed:")
    assert "3-anonymous" in err
    assert stdout == ""
    assert leftovers(out) == []


def test_tampered_staging_part_is_caught(tmp_path: Path, capsys, monkeypatch) -> None:
    """A part corrupted between writing and committing (disk, another process...)."""
    _, out, config, _ = setup_run(tmp_path, n_files=3, rows=40)
    real = pipeline.write_parts

    def then_tamper(config, plan, decision, chunks, staging, *rest, **options):
        names = real(config, plan, decision, chunks, staging, *rest, **options)
        part = Path(staging) / names[1]
        table = pq.read_table(part)
        ages = table.column("age").to_pylist()
        ages[0] = "[1-1]"  # a class of one
        table = table.set_column(table.schema.get_field_index("age"), "age", pa.array(ages))
        pq.write_table(table, part)
        return names

    monkeypatch.setattr(pipeline, "write_parts", then_tamper)
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)
    assert code == 1
    _one_line(err, "skald: verification failed:")
    assert leftovers(out) == []


def test_verification_failure_keeps_the_old_release(tmp_path: Path, capsys, monkeypatch) -> None:
    _, out, config, _ = setup_run(tmp_path, n_files=3, rows=40)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = pipeline.generalise_table

    def unsuppressing(config, plan, decision, *rest):
        empty = np.zeros(0, dtype=np.int64)
        return real(config, plan, dataclasses.replace(decision, suppressed_keys=empty), *rest)

    monkeypatch.setattr(pipeline, "generalise_table", unsuppressing)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in leftovers(out)] == ["out"]


def _tamper_release_part(out: Path, fn) -> None:
    part = sorted(out.glob("part-*.parquet"))[0]
    pq.write_table(fn(pq.read_table(part)), part)


def test_skald_verify_on_tampered_release(tmp_path: Path, capsys) -> None:
    _, out, config, _ = setup_run(tmp_path, n_files=3, rows=40)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    code, stdout, err = run_inprocess(["verify", str(out), "--k", "3"], capsys)
    assert code == 0, err
    assert json.loads(stdout)["verified"] is True

    def small_class(table: pa.Table) -> pa.Table:
        ages = table.column("age").to_pylist()
        ages[0] = "[1-1]"
        return table.set_column(table.schema.get_field_index("age"), "age", pa.array(ages))

    _tamper_release_part(out, small_class)
    code, _, err = run_inprocess(["verify", str(out), "--k", "3"], capsys)
    assert code == 1
    _one_line(err, "skald: verification failed:")
    assert "not 3-anonymous" in err


def test_skald_verify_catches_manifest_and_identifier_tampering(tmp_path: Path, capsys) -> None:
    _, out, config, _ = setup_run(tmp_path, n_files=3, rows=40)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    manifest_path = out / "manifest.json"
    good = manifest_path.read_text()

    manifest = json.loads(good)
    manifest["n_suppressed"] = 0 if manifest["n_suppressed"] else 1
    manifest_path.write_text(json.dumps(manifest))
    code, _, err = run_inprocess(["verify", str(out), "--k", "3"], capsys)
    assert code == 1, err
    _one_line(err, "skald: verification failed:")

    manifest_path.write_text(good)
    _tamper_release_part(out, lambda t: t.append_column("name", pa.array(["x"] * t.num_rows)))
    code, _, err = run_inprocess(["verify", str(out), "--k", "3"], capsys)
    assert code == 1, err
    assert "direct identifier" in err and "'name'" in err

    # A stricter k than the release was made for fails too.
    _tamper_release_part(out, lambda t: t.drop_columns(["name"]))
    code, _, err = run_inprocess(["verify", str(out), "--k", "1000"], capsys)
    assert code == 1, err


def test_all_suppressed_release_is_published_and_verifies(tmp_path: Path, capsys) -> None:
    """Regression: when the optimum suppresses every record, the all-'*' release also reads
    as the top node; the run's own check and `skald verify` must take the manifest's reading
    instead of failing a valid release."""
    inp, out = tmp_path / "in", tmp_path / "out"
    table = pa.table(
        {
            "pid": ["a", "b", "c", "d"],
            "name": ["n"] * 4,
            "address": ["x"] * 4,
            "city": ["Oslo"] * 4,
            "age": [30] * 4,
            "zip": [1001, 1002, 1003, 1010],
            "disease": ["flu"] * 4,
        }
    )
    inp.mkdir()
    pq.write_table(table, inp / "one.parquet")
    cfg = config_dict(inp, out, k=3, suppression_limit=1)
    cfg["memory"] = {"histogram_bins": 10**9}
    config = write_config(tmp_path / "skald.yaml", cfg)
    code, stdout, err = run_inprocess(["run", str(config), "-q"], capsys)
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["n_suppressed"] == 4 and manifest["n_equivalence_classes"] == 0
    code, stdout, err = run_inprocess(["verify", str(out), "--k", "3"], capsys)
    assert code == 0, err
    assert json.loads(stdout)["n_suppressed"] == 4
