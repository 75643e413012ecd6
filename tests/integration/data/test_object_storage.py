"""Releases on object storage for real (issue 12 item 6): an S3 server (moto's server mode)
on a free 127.0.0.1 port, reached through fsspec/s3fs as any S3 endpoint would be.

- The lease: a PUT with ``If-None-Match: *`` creates it only if absent; a second run is refused
  naming the first, a retry takes over, an expired lease is taken over, losers are fenced.
- The commit without rename: objects copied server-side, the manifest last, the staging
  deleted after; a crash after any number of copies (injected, or a real SIGKILL of a
  committing process) leaves no manifest at the output, and the retry completes the release.
- `skald run` with input on local disk and output s3://, then `skald verify s3://...`.
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
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
import s3fs
from helpers_data import (
    REPO,
    config_dict,
    run_inprocess,
    run_subprocess,
    write_config,
    write_dataset,
)
from helpers_s3 import s3_server

from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import DataError
from airflow_skald.core.release.write import commit as release
from airflow_skald.core.release.write.commit import (
    COMMIT_MARKER,
    MANIFEST,
    REPORT,
    commit,
    prepare_staging,
    staging_path,
    write_bytes_atomic,
    write_part_atomic,
)
from airflow_skald.core.release.write.lease import (
    LeaseLostError,
    OutputBusyError,
    acquire_lease,
    lease_path,
    output_lease,
    read_lease,
)
from airflow_skald.core.release.write.output_target import ReleaseIdentity, check_output_target


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory) -> str:
    """moto's S3 server on a free loopback port; AWS_* variables point every client (this
    process's s3fs and the `skald` subprocesses) at it. Stopped after the module."""
    with pytest.MonkeyPatch.context() as mp, s3_server(mp, tmp_path_factory.mktemp("aws")) as url:
        yield url


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    name = f"skald-{uuid.uuid4().hex[:10]}"
    _fs().mkdir(name)
    return name


def _fs() -> s3fs.S3FileSystem:
    """The process's client, its cached listings dropped (objects change behind its back)."""
    fs = s3fs.S3FileSystem()
    fs.invalidate_cache()
    return fs


def _names(url: str) -> list[str]:
    path = url.removeprefix("s3://")
    fs = _fs()
    return sorted(p[len(path) + 1 :] for p in fs.find(path)) if fs.exists(path) else []


def _stage(out: str, token: str, parts: int, tag: str = "new") -> str:
    """A staged release on S3: parts, report and manifest, as finalise_release leaves it."""
    staging = staging_path(out, token)
    prepare_staging(staging)
    location = DataLocation(staging, "parquet", ",")
    for i in range(parts):
        table = pa.table({"age": [f"[{i}-{i + 9}]"] * 3, "tag": [tag] * 3})
        write_part_atomic(table, location, staging, release.part_name(i, "parquet"))
    write_bytes_atomic(f"{staging}/{REPORT}", f"<html>{tag}</html>".encode())
    manifest = {"k": 3, "parts": [release.part_name(i, "parquet") for i in range(parts)]}
    write_bytes_atomic(f"{staging}/{MANIFEST}", json.dumps({**manifest, "tag": tag}).encode())
    return staging


def _release_names(parts: int) -> list[str]:
    return sorted([MANIFEST, REPORT, *(release.part_name(i, "parquet") for i in range(parts))])


def _manifest(out: str) -> dict | None:
    path = f"{out.removeprefix('s3://')}/{MANIFEST}"
    fs = _fs()
    return json.loads(fs.cat_file(path)) if fs.exists(path) else None


# ---------------------------------------------------------------------------- the lease


def test_lease_on_s3_second_run_refused_retry_takes_over(bucket: str) -> None:
    out = f"s3://{bucket}/out"
    with output_lease(out, "dag-run-1", pid=None) as held:
        assert lease_path(out) == f"s3://{bucket}/.out.skald-lease"
        assert _names(f"s3://{bucket}") == [".out.skald-lease"]
        with pytest.raises(OutputBusyError) as err:
            acquire_lease(out, "dag-run-2")
        msg = str(err.value)
        assert msg.startswith(f"output {out} is being written by run dag-run-1 since 20")
        assert "\n" not in msg and f"delete s3://{bucket}/.out.skald-lease" in msg
        retry = acquire_lease(out, "dag-run-1", pid=None)  # a retried task of the same run
        with pytest.raises(LeaseLostError):
            held.check()
        retry.check()
        retry.release()
    assert read_lease(out) is None and _names(f"s3://{bucket}") == []


def test_lease_on_s3_expiry_and_one_winner(bucket: str) -> None:
    out = f"s3://{bucket}/out"
    barrier = threading.Barrier(6)
    won: list = []

    def contender(i: int) -> None:
        barrier.wait()
        with contextlib.suppress(OutputBusyError):
            won.append(acquire_lease(out, f"run-{i}", ttl_s=3, pid=None))

    threads = [threading.Thread(target=contender, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(won) == 1  # If-None-Match: exactly one PUT succeeds
    time.sleep(3.1)  # the winner stops renewing: its lease expires
    taker = acquire_lease(out, "run-next", pid=None)
    with pytest.raises(LeaseLostError, match="now held by run run-next"):
        won[0].check()
    taker.release()


# ------------------------------------------------------------------- commit, no rename


def test_commit_copies_parts_then_manifest_last_and_never_renames(bucket: str, monkeypatch) -> None:
    out = f"s3://{bucket}/out"
    commit(_stage(out, "old-run", 5, tag="old"), out)  # an earlier release with more parts
    assert _names(out) == _release_names(5)

    staging = _stage(out, "run-1", 3)
    order: list[str] = []
    real = release._copy_object

    def recording(fs, src, dst):
        order.append(dst.rsplit("/", 1)[-1])
        real(fs, src, dst)

    def no_rename(*args, **kwargs):
        raise AssertionError("object stores have no rename: the commit must copy")

    monkeypatch.setattr(release, "_copy_object", recording)
    monkeypatch.setattr(s3fs.S3FileSystem, "mv", no_rename)
    assert not [n for n in _names(staging) if n.startswith(".")]  # parts written in place
    _fs().pipe_file(
        f"{staging.removeprefix('s3://')}/.part-00009.parquet.tmp", b"debris"
    )  # a killed writer
    with output_lease(out, "run-1") as held:
        commit(staging, out, lease=held)
    assert order[-1] == MANIFEST and sorted(order) == _release_names(3)
    assert _names(out) == _release_names(3)  # the old release's extra parts are gone
    assert _manifest(out)["tag"] == "new"
    assert _names(f"s3://{bucket}") == [f"out/{n}" for n in _release_names(3)]  # no staging


class Killed(BaseException):
    """Stands for a crash: escapes `except Exception`, nothing cleans up."""


@pytest.mark.parametrize("copied", [0, 2, 4], ids=["before-any-copy", "mid-parts", "all-parts"])
@pytest.mark.parametrize("old", [False, True], ids=["fresh", "over-old-release"])
def test_crash_mid_commit_leaves_no_manifest(bucket: str, monkeypatch, copied: int, old: bool):
    """A crash after `copied` of the 5 objects (4 parts and the report; the manifest would be
    the 6th) leaves no manifest at the output, so nothing there looks complete; a retry of the
    run (same staging) completes the release; a later run is not blocked by the debris."""
    out = f"s3://{bucket}/out"
    if old:
        commit(_stage(out, "old-run", 6, tag="old"), out)
    staging = _stage(out, "run-1", 4)
    real, calls = release._copy_object, {"n": 0}

    def crashing(fs, src, dst):
        if calls["n"] == copied:
            raise Killed
        calls["n"] += 1
        real(fs, src, dst)

    monkeypatch.setattr(release, "_copy_object", crashing)
    with pytest.raises(Killed):
        commit(staging, out)
    monkeypatch.setattr(release, "_copy_object", real)

    left = _names(out)
    assert MANIFEST not in left and _manifest(out) is None
    assert COMMIT_MARKER in left  # marks the debris as an interrupted commit
    assert _names(staging) == _release_names(4)  # the staged release is whole
    # A run checking the output before its work is not told "not a skald release".
    other = ReleaseIdentity("run-2", "2" * 64, "3" * 64, 5)
    check_output_target(DataLocation(out, "parquet"), None, other, overwrite=False)

    commit(staging, out)  # the retry
    assert _names(out) == _release_names(4) and _manifest(out)["tag"] == "new"
    assert not _fs().exists(staging.removeprefix("s3://"))


_SLOW_COMMIT = """
import sys, time
from airflow_skald.core.release.write import commit as release
real, n = release._copy_object, [0]
def slow(fs, src, dst):
    real(fs, src, dst)
    n[0] += 1
    if n[0] == 2:
        print("copied 2", flush=True)
        time.sleep(120)
release._copy_object = slow
release.commit(sys.argv[1], sys.argv[2])
"""


def test_sigkill_mid_commit_leaves_no_manifest(bucket: str) -> None:
    """A real process killed with SIGKILL after copying 2 of 5 objects over an old release."""
    out = f"s3://{bucket}/out"
    commit(_stage(out, "old-run", 3, tag="old"), out)
    staging = _stage(out, "run-1", 4)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_COMMIT, staging, out],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=str(REPO),
    )
    try:
        assert proc.stdout.readline().strip() == "copied 2"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    left = _names(out)
    assert _manifest(out) is None and COMMIT_MARKER in left
    assert len([n for n in left if n.startswith("part-")]) >= 2
    commit(staging, out)
    assert _names(out) == _release_names(4) and _manifest(out)["tag"] == "new"


def test_replacement_rules_on_s3(bucket: str) -> None:
    out = f"s3://{bucket}/out"
    loc = DataLocation(out, "parquet")
    fs = _fs()
    fs.pipe_file(f"{bucket}/foreign/notes.txt", b"x")
    with pytest.raises(DataError, match="is not a skald release"):
        check_output_target(DataLocation(f"s3://{bucket}/foreign", "parquet"), None, None, True)
    staging = _stage(out, "run-1", 2)
    fs.pipe_file(
        f"{staging.removeprefix('s3://')}/{MANIFEST}",
        json.dumps(
            {"k": 10, "run_token": "cli-123", "config_sha256": "a" * 64, "input_fingerprint": "b"}
        ).encode(),
    )
    commit(staging, out)
    ours = ReleaseIdentity("cli-9", "c" * 64, "b", 50)
    with pytest.raises(DataError, match=r"holds a release made with k=10 by run cli-123"):
        check_output_target(loc, None, ours, overwrite=False)
    check_output_target(loc, None, ours, overwrite=True)
    check_output_target(loc, None, ReleaseIdentity("cli-8", "a" * 64, "b", 10), False)


# ------------------------------------------------------------------ the CLI end to end


def test_skald_run_to_s3_then_verify(bucket: str, tmp_path: Path, capsys, monkeypatch) -> None:
    inp = tmp_path / "in"
    write_dataset(inp, n_files=3, rows=40)
    out = f"s3://{bucket}/releases/adult-k3"
    config = write_config(tmp_path / "skald.yaml", config_dict(inp, out, chunk_rows=20))

    done = run_subprocess(["run", str(config), "-q"])
    assert done.returncode == 0, done.stderr
    names = _names(out)
    # the run record and the config (effective and as written) beside it
    assert names == sorted([*_release_names(6), "run.json", "effective.json", "skald.yaml"])
    manifest = _manifest(out)
    assert manifest["k"] == 3 and manifest["verified"] is True and manifest["chunks"] == 6
    assert _names(f"s3://{bucket}/releases") == [f"adult-k3/{n}" for n in names]  # no debris

    checked = run_subprocess(["verify", out, "--k", "3"])
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["verified"] is True and report["n_records"] == 120
    assert report["n_suppressed"] == manifest["n_suppressed"]
    # issue 18 item 8: no INFO chatter of the S3 client ("Found credentials in environment...")
    assert not [line for line in checked.stderr.splitlines() if "credentials" in line.lower()]

    parts = {n: _fs().cat_file(f"{out.removeprefix('s3://')}/{n}") for n in names}
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)  # an identical rerun
    assert code == 0, err
    assert _names(out) == names
    for name in manifest["parts"]:
        assert _fs().cat_file(f"{out.removeprefix('s3://')}/{name}") == parts[name]
