"""No accidental replacement, one writer per output (issue 12 item 3), on local disk.

- `check_output_target(output, input, identity, overwrite)`: a release is replaced only by a
  retry of the run that made it (same run token), an identical rerun (same config hash and
  input fingerprint) or with `overwrite`; otherwise one line naming the release's k and run.
  The older refusals (output inside the input, a file, a non-release folder) still hold.
- `output_lease`: a second run to the same output fails at once naming the holder and leaves
  its staging and release alone; a retry (same token) takes over; a lease whose holder died
  (pid gone) or stopped renewing (expired) is taken over; a lost lease stops the commit.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers_data import REPO, config_dict, release_bytes, write_dataset

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import DataError
from airflow_skald.core.passes import pipeline
from airflow_skald.core.release.write import lease as leases
from airflow_skald.core.release.write import lease_store
from airflow_skald.core.release.write.commit import MANIFEST, commit, prepare_staging, staging_path
from airflow_skald.core.release.write.lease import (
    LeaseLostError,
    OutputBusyError,
    acquire_lease,
    lease_path,
    output_lease,
    read_lease,
)
from airflow_skald.core.release.write.output_target import ReleaseIdentity, check_output_target
from airflow_skald.core.run import runner

OLD = ReleaseIdentity("cli-123", "1a2b3c4d5e6f" + "0" * 52, "f" * 64, 10)


def _release(out: Path, identity: ReleaseIdentity | None = OLD, **extra) -> Path:
    """A folder that looks like a committed release made by `identity`."""
    out.mkdir(parents=True)
    (out / "part-00000.parquet").write_bytes(b"PAR1 not really")
    manifest = dict(extra)
    if identity is not None:
        manifest |= {
            "k": identity.k,
            "run_token": identity.run_token,
            "config_sha256": identity.config_sha256,
            "input_fingerprint": identity.input_fingerprint,
        }
    (out / MANIFEST).write_text(json.dumps(manifest))
    return out


def _loc(path: Path | str) -> DataLocation:
    return DataLocation(str(path), "parquet", ",")


def _check(out: Path, identity: ReleaseIdentity, overwrite: bool = False, inp: Path | None = None):
    check_output_target(_loc(out), _loc(inp or out.parent / "in"), identity, overwrite)


# ------------------------------------------------------------------ check_output_target


def test_another_runs_release_is_refused_with_one_line_naming_k_and_run(tmp_path: Path) -> None:
    out = _release(tmp_path / "out")
    ours = ReleaseIdentity("cli-999", "9" * 64, "f" * 64, 50)
    with pytest.raises(DataError) as err:
        _check(out, ours)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"output {out} holds a release made with k=10 by run cli-123")
    assert "(config 1a2b3c4d5e6f)" in msg and "this run has k=50, config 999999999999" in msg
    assert msg.endswith("pass --overwrite (DAG param overwrite) to replace it")
    assert "another input" not in msg  # same input fingerprint
    assert (out / MANIFEST).exists()


@pytest.mark.parametrize(
    "ours",
    [
        pytest.param(ReleaseIdentity("cli-123", "9" * 64, "e" * 64, 50), id="retry-same-token"),
        pytest.param(
            ReleaseIdentity("cli-777", OLD.config_sha256, OLD.input_fingerprint, 10),
            id="identical-rerun",
        ),
    ],
)
def test_retry_and_identical_rerun_may_replace(tmp_path: Path, ours: ReleaseIdentity) -> None:
    _check(_release(tmp_path / "out"), ours)


def test_overwrite_replaces_any_release(tmp_path: Path) -> None:
    out = _release(tmp_path / "out")
    ours = ReleaseIdentity("cli-1", "2" * 64, "3" * 64, 5)
    with pytest.raises(DataError, match="another input"):
        _check(out, ours)
    _check(out, ours, overwrite=True)


def test_same_config_other_input_is_not_identical(tmp_path: Path) -> None:
    out = _release(tmp_path / "out")
    ours = ReleaseIdentity("cli-2", OLD.config_sha256, "0" * 64, 10)
    with pytest.raises(DataError, match=r"made with k=10 by run cli-123 .*this run has another"):
        _check(out, ours)


def test_release_without_run_token_or_unreadable_manifest(tmp_path: Path) -> None:
    ours = ReleaseIdentity("cli-2", "2" * 64, "3" * 64, 5)
    old = _release(tmp_path / "old", None, k=7, config_sha256="4" * 64, input_fingerprint="5")
    with pytest.raises(DataError, match="made with k=7 by an earlier run"):
        _check(old, ours)
    bad = tmp_path / "bad"
    _release(bad)
    (bad / MANIFEST).write_text("{not json")
    with pytest.raises(DataError, match="cannot be read; pass --overwrite"):
        _check(bad, ours)
    _check(bad, ours, overwrite=True)


def test_empty_or_missing_output_is_free(tmp_path: Path) -> None:
    ours = ReleaseIdentity("cli-2", "2" * 64, "3" * 64, 5)
    _check(tmp_path / "missing", ours)
    (tmp_path / "empty").mkdir()
    _check(tmp_path / "empty", ours)


def test_older_refusals_hold_even_with_overwrite(tmp_path: Path) -> None:
    ours = ReleaseIdentity("cli-2", "2" * 64, "3" * 64, 5)
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "a.parquet").write_bytes(b"x")
    with pytest.raises(DataError, match="is inside the input folder"):
        _check(inp / "out", ours, overwrite=True, inp=inp)
    (tmp_path / "file").write_text("x")
    with pytest.raises(DataError, match="exists and is a file"):
        _check(tmp_path / "file", ours, overwrite=True)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "thesis.docx").write_text("x")
    with pytest.raises(DataError, match="is not a skald release"):
        _check(foreign, ours, overwrite=True)


def test_release_moved_aside_by_a_killed_commit_is_still_protected(tmp_path: Path) -> None:
    """A local commit killed between its two renames leaves the old release in
    `{out}.skald-old` and no output: it is still the release in place."""
    _release(tmp_path / "out.skald-old")
    ours = ReleaseIdentity("cli-2", "2" * 64, "3" * 64, 5)
    with pytest.raises(DataError, match="made with k=10 by run cli-123"):
        _check(tmp_path / "out", ours)
    _check(tmp_path / "out", ours, overwrite=True)


def test_the_older_form_still_works(tmp_path: Path) -> None:
    """`check_output_target(config)`: today's call sites, no identity check."""
    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=1, rows=10)
    _release(out)
    check_output_target(config_from_dict(config_dict(inp, out)))  # replaces, as before
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "x.txt").write_text("x")
    with pytest.raises(DataError, match="not a skald release"):
        check_output_target(config_from_dict(config_dict(inp, tmp_path / "foreign")))


def test_identity_of_real_runs(tmp_path: Path, monkeypatch) -> None:
    """`ReleaseIdentity.of_run` matches what a real run's manifest records."""
    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=2, rows=30)
    config = config_from_dict(config_dict(inp, out, k=3, chunk_rows=20))
    manifest = runner.run(config)
    chunks = pipeline.list_chunks(config)
    again = ReleaseIdentity.of_run(config, chunks, "cli-other")
    existing = ReleaseIdentity.from_manifest(manifest)
    assert (again.config_sha256, again.input_fingerprint, again.k) == (
        existing.config_sha256,
        existing.input_fingerprint,
        3,
    )
    check_output_target(config.output, config.input, again, overwrite=False)  # identical rerun
    other = config_from_dict(config_dict(inp, out, k=4, chunk_rows=20))
    with pytest.raises(
        DataError, match=r"made with k=3 by (run cli-|an earlier run).*this run has k=4"
    ):
        check_output_target(
            other.output, other.input, ReleaseIdentity.of_run(other, chunks, "cli-x"), False
        )


# ---------------------------------------------------------------------------- the lease


def test_second_run_is_refused_and_leaves_the_holders_work_alone(tmp_path: Path) -> None:
    out = _release(tmp_path / "out")
    before = release_bytes(out)
    with output_lease(str(out), "run-A") as held:
        staging = staging_path(str(out), "run-A")
        prepare_staging(staging)
        (Path(staging) / "part-00000.parquet").write_bytes(b"A's part")
        with pytest.raises(OutputBusyError) as err, output_lease(str(out), "run-B"):
            pytest.fail("B must not get the lease")
        msg = str(err.value)
        assert "\n" not in msg
        assert msg.startswith(f"output {out} is being written by run run-A since 20")
        assert f"delete {lease_path(str(out))} if it is gone" in msg
        assert (Path(staging) / "part-00000.parquet").read_bytes() == b"A's part"
        assert release_bytes(out) == before
        held.check()  # A still holds it
    assert read_lease(str(out)) is None  # released at the end of the block
    assert not Path(lease_path(str(out))).exists()


def test_retry_of_the_same_run_takes_over_its_lease(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    first = acquire_lease(out, "dag-run-1", pid=None)
    second = acquire_lease(out, "dag-run-1", pid=None)  # a retried task of the same run
    assert second.info.nonce != first.info.nonce
    second.check()
    with pytest.raises(LeaseLostError, match="run dag-run-1 lost its lease"):
        first.check()
    first.release()  # not its own any more: left in place
    assert read_lease(out).nonce == second.info.nonce
    second.release()
    assert read_lease(out) is None


def test_expired_lease_is_taken_over_and_fences_the_old_holder(tmp_path: Path) -> None:
    out = _release(tmp_path / "out")
    slow = acquire_lease(str(out), "run-slow", ttl_s=0.2, pid=None)
    with pytest.raises(OutputBusyError):
        acquire_lease(str(out), "run-new")
    time.sleep(0.3)
    assert read_lease(str(out)).stale().startswith("expired at")
    new = acquire_lease(str(out), "run-new")
    # The slow run wakes up and tries to publish: its commit stops before touching anything.
    staging = staging_path(str(out), "run-slow")
    prepare_staging(staging)
    (Path(staging) / MANIFEST).write_text("{}")
    before = release_bytes(out)
    with pytest.raises(LeaseLostError, match="now held by run run-new"):
        commit(staging, str(out), lease=slow)
    assert release_bytes(out) == before and Path(staging).exists()
    new.release()


def test_heartbeat_keeps_a_long_run_s_lease(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    with output_lease(out, "run-long", ttl_s=0.6) as held:
        first_expiry = held.info.expires
        time.sleep(1.3)  # twice the ttl: only the heartbeat keeps it live
        assert read_lease(out).stale() is None
        with pytest.raises(OutputBusyError):
            acquire_lease(out, "run-other")
        assert held.info.expires > first_expiry
        held.check()


_HOLDER = """
import sys, time
from airflow_skald.core.release.write.lease import acquire_lease
acquire_lease(sys.argv[1], sys.argv[2], ttl_s=3600)
print("held", flush=True)
time.sleep(120)
"""


def _holder(out: str, token: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, out, token],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=str(REPO),
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_lease_of_a_killed_process_is_taken_over_at_once(tmp_path: Path) -> None:
    """A CLI run killed with SIGKILL leaves its lease (ttl one hour); its process is gone, so
    the next run on this host takes it over without waiting."""
    out = str(tmp_path / "out")
    proc = _holder(out, "cli-killed")
    try:
        with pytest.raises(OutputBusyError, match="being written by run cli-killed"):
            acquire_lease(out, "cli-next")  # alive: refused
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
    assert read_lease(out).stale() == f"its process {proc.pid} is gone"
    with output_lease(out, "cli-next") as held:
        assert read_lease(out).nonce == held.info.nonce


def test_only_one_of_many_simultaneous_runs_gets_the_lease(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    barrier = threading.Barrier(8)
    won, refused = [], []

    def contender(i: int) -> None:
        barrier.wait()
        try:
            won.append(acquire_lease(out, f"run-{i}"))
        except OutputBusyError:
            refused.append(i)

    threads = [threading.Thread(target=contender, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(won) == 1 and len(refused) == 7
    won[0].check()


def test_many_runs_taking_over_a_stale_lease_leave_one_holder(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    acquire_lease(out, "run-dead", ttl_s=0.05, pid=None)
    time.sleep(0.1)
    barrier = threading.Barrier(6)
    won = []

    def contender(i: int) -> None:
        barrier.wait()
        with contextlib.suppress(OutputBusyError):
            won.append(acquire_lease(out, f"run-{i}", pid=None))

    threads = [threading.Thread(target=contender, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert won, "someone takes over the stale lease"
    valid = []
    for held in won:
        try:
            held.check()
            valid.append(held)
        except LeaseLostError:
            pass
    assert len(valid) == 1  # a loser that slipped through is fenced at its commit


def test_unreadable_lease_counts_as_held_until_it_ages(tmp_path: Path, monkeypatch) -> None:
    out = str(tmp_path / "out")
    Path(lease_path(out)).write_text("garbage")
    with pytest.raises(OutputBusyError, match=r"\(unreadable lease\)"):
        acquire_lease(out, "run-1")
    monkeypatch.setattr(lease_store, "DEFAULT_TTL_S", -1.0)  # as if it were older than the ttl
    acquire_lease(out, "run-1").release()


def test_airflow_run_keeps_its_lease_across_tasks(tmp_path: Path) -> None:
    """An Airflow run's tasks: the early ones keep the lease ("never"), the committing task
    releases it on success only, so a failed commit keeps it for the run's own retry."""
    out = str(tmp_path / "out")
    token = "skald_anonymise-manual__2026-11-26"
    with output_lease(out, token, ttl_s=3600, pid=None, release="never"):  # encode
        pass
    with pytest.raises(OutputBusyError, match=f"run {token} since"):
        acquire_lease(out, "another-run")
    with (
        pytest.raises(RuntimeError),
        output_lease(out, token, ttl_s=3600, pid=None, release="on_success"),
    ):
        raise RuntimeError("the commit task fails")
    assert read_lease(out).token == token  # kept for the retry
    with output_lease(out, token, ttl_s=3600, pid=None, release="on_success"):  # the retry
        pass
    assert read_lease(out) is None
    with pytest.raises(ValueError, match="release must be"):
        output_lease(out, token, release="sometimes").__enter__()


def test_lease_without_hard_links_falls_back_to_o_excl(tmp_path: Path, monkeypatch) -> None:
    def no_links(src, dst):
        raise PermissionError("this filesystem has no hard links")

    monkeypatch.setattr(lease_store.os, "link", no_links)
    out = str(tmp_path / "out")
    held = acquire_lease(out, "run-1")
    with pytest.raises(OutputBusyError):
        acquire_lease(out, "run-2")
    assert read_lease(out).nonce == held.info.nonce
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.skald-lease"]  # no temporaries
    held.release()


def test_mapped_writers_check_the_token_without_taking_over(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    held = acquire_lease(out, "run-1", pid=None)
    leases.check_lease_token(out, "run-1")  # a mapped task of the same run: fine
    held.check()  # and the holder's nonce is unchanged
    with pytest.raises(LeaseLostError, match="run run-2 does not hold the lease"):
        leases.check_lease_token(out, "run-2")
    held.release()
    leases.check_lease_token(out, "run-2")  # nobody holds it: nothing to fence


# ------------------------------------------------------------- `skald run` end to end


def test_cli_refuses_to_replace_another_runs_release_unless_overwrite(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    from helpers_data import run_inprocess, setup_run

    _, out, config, _ = setup_run(tmp_path, n_files=2, rows=30)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    first = release_bytes(out)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0  # identical rerun
    code, _, err = run_inprocess(["run", str(config), "-q", "--k", "4"], capsys)
    assert code == 2, err
    assert err.startswith(f"skald: error: output {out} holds a release made with k=3 by run cli-")
    assert "--overwrite" in err and len(err.strip().splitlines()) == 1
    assert release_bytes(out) == first
    code, _, err = run_inprocess(["run", str(config), "-q", "--k", "4", "--overwrite"], capsys)
    assert code == 0, err
    assert json.loads((out / MANIFEST).read_text())["k"] == 4
    assert not Path(lease_path(str(out))).exists()


def test_cli_refuses_a_rewritten_input_with_the_same_layout(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """Same config, same files, rows and chunks, but one input file rewritten with another
    value (as a later extract would be): not an identical rerun, so the release stays unless
    `--overwrite`; rewriting it back byte for byte but later still counts as a new input."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from helpers_data import run_inprocess, setup_run

    inp, out, config, _ = setup_run(tmp_path, n_files=2, rows=30)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    first = release_bytes(out)
    manifest = json.loads((out / MANIFEST).read_text())
    file = sorted(inp.glob("*.parquet"))[1]
    df = pq.read_table(file).to_pandas()
    df.iloc[0, -1] = df.iloc[-1, -1]  # one cell of the last column takes another row's value
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), file)
    stat = file.stat()
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a later write
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)
    assert code == 2, err
    assert err.startswith(f"skald: error: output {out} holds a release made with k=3 by run cli-")
    assert release_bytes(out) == first
    assert json.loads((out / MANIFEST).read_text()) == manifest
    assert run_inprocess(["run", str(config), "-q", "--overwrite"], capsys)[0] == 0
    replaced = json.loads((out / MANIFEST).read_text())
    assert replaced["input_fingerprint"] != manifest["input_fingerprint"]
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0  # identical rerun again


def test_cli_run_to_a_busy_output_fails_and_leaves_the_other_alone(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """Another run (a live process) holds the output's lease: `skald run` exits 2 naming it,
    and that run's staging folder and the release in place are untouched."""
    from helpers_data import run_inprocess, setup_run

    _, out, config, _ = setup_run(tmp_path, n_files=2, rows=30)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    before = release_bytes(out)
    proc = _holder(str(out), "cli-other")
    try:
        staging = Path(staging_path(str(out), "cli-other"))
        staging.mkdir()
        (staging / "part-00000.parquet").write_bytes(b"the other run's part")
        code, _, err = run_inprocess(["run", str(config), "-q", "--overwrite"], capsys)
        assert code == 2, err
        assert err.startswith(f"skald: error: output {out} is being written by run cli-other")
        assert (staging / "part-00000.parquet").read_bytes() == b"the other run's part"
        assert release_bytes(out) == before
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)  # the holder died
    assert code == 0, err
