"""A stale retry never rolls a release back (issue 18, defect 1), on local disk and on S3.

Two Airflow-like runs of the runner to one output, each task a fresh ``Run`` over the run's
persistent store (as the operators do): run A commits k=3; run B replaces it with k=5 and
``overwrite``; then A's generalise task is retried (a clear). The retry must fail with one line
naming B and leave B's bytes in place; a retry of A while A's release is still in place, and
a first run to an empty output, commit as before.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import s3fs
from helpers_data import config_dict, write_dataset
from helpers_s3 import s3_server

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.data.io import filesystem
from airflow_skald.core.errors import DataError
from airflow_skald.core.passes import store as run_store
from airflow_skald.core.release.write import lease as leases
from airflow_skald.core.release.write.commit import MANIFEST
from airflow_skald.core.run import runner as R


class Store(run_store.MemoryStore):
    """A run's artifact folder that outlives its tasks (like RunArtifacts)."""

    persistent = True


def _config(inp: str, out: str, k: int, overwrite: bool = False):
    cfg = config_dict(inp, out, k=k)
    return config_from_dict(cfg).with_overrides({"overwrite": overwrite})


def _encode_and_search(config, store: Store, token: str) -> None:
    run = R.Run(config, store, token)
    with R.claim_output(run, 3600):
        R.layout(run)
        run.check_target()
    R.run_all(R.ENCODE, run)
    R.run_all(R.HISTOGRAM_PHASE, run)


def _generalise(config, store: Store, token: str) -> dict:
    run = R.Run(config, store, token)  # a fresh task process
    with R.claim_output(run, 3600, release="on_success"):
        R.prepare_staging(run.staging)
        return R.run_all(R.GENERALISE, run)


def _release(out: str) -> dict[str, bytes]:
    fs, root = filesystem(out)
    fs.invalidate_cache()
    return {p[len(root) :]: fs.cat_file(p) for p in sorted(fs.find(root))}


def _scenario(inp: str, out: str) -> None:
    a, b = Store(), Store()
    config_a, config_b = _config(inp, out, 3), _config(inp, out, 5, overwrite=True)
    _encode_and_search(config_a, a, "dag-A")
    assert _generalise(config_a, a, "dag-A")["k"] == 3
    assert _generalise(config_a, a, "dag-A")["k"] == 3  # A's own release: a retry may redo it
    _encode_and_search(config_b, b, "dag-B")
    assert _generalise(config_b, b, "dag-B")["k"] == 5
    before = _release(out)
    with pytest.raises(DataError) as err:
        _generalise(config_a, a, "dag-A")  # the stale retry of A
    message = str(err.value)
    assert "\n" not in message and "replaced by run dag-B" in message and "dag-A" in message
    assert _release(out) == before  # B's bytes, untouched
    assert b'"k": 5' in before[f"/{MANIFEST}"]


def test_stale_retry_is_refused_on_local_disk(tmp_path: Path) -> None:
    write_dataset(tmp_path / "in", n_files=2, rows=40)
    _scenario(str(tmp_path / "in"), str(tmp_path / "rel" / "x"))


def test_stale_retry_is_refused_on_s3(tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as mp, s3_server(mp, tmp_path / "aws"):
        bucket = f"skald-{uuid.uuid4().hex[:10]}"
        fs = s3fs.S3FileSystem()
        fs.mkdir(bucket)
        for path in write_dataset(tmp_path / "in", n_files=2, rows=40):
            fs.put_file(str(path), f"{bucket}/in/{path.name}")
        _scenario(f"s3://{bucket}/in", f"s3://{bucket}/rel/x")


def test_a_run_records_the_release_it_found(tmp_path: Path) -> None:
    """target.json: the release in place at the first attempt's check; a retry keeps it."""
    write_dataset(tmp_path / "in", n_files=1, rows=40)
    inp, out = str(tmp_path / "in"), str(tmp_path / "out")
    a = Store()
    _encode_and_search(_config(inp, out, 3), a, "dag-A")
    assert run_store.read_json(a, R.TARGET) == {"output": out, "predecessor": None}
    _generalise(_config(inp, out, 3), a, "dag-A")
    _encode_and_search(_config(inp, out, 3), a, "dag-A")  # a clear of the whole run
    assert R.Run(_config(inp, out, 3), a, "dag-A").predecessor() is None
    _generalise(_config(inp, out, 3), a, "dag-A")  # its commit frees the output
    c = Store()
    _encode_and_search(_config(inp, out, 4, overwrite=True), c, "dag-C")
    assert R.Run(_config(inp, out, 4), c, "dag-C").predecessor() == "dag-A"


def test_refused_retry_leaves_no_staging(tmp_path: Path) -> None:
    write_dataset(tmp_path / "in", n_files=1, rows=40)
    inp, out = str(tmp_path / "in"), str(tmp_path / "rel" / "x")
    a, b = Store(), Store()
    _encode_and_search(_config(inp, out, 3), a, "dag-A")
    _encode_and_search(_config(inp, out, 3), a, "dag-A")
    _generalise(_config(inp, out, 3), a, "dag-A")
    _encode_and_search(_config(inp, out, 5, overwrite=True), b, "dag-B")
    _generalise(_config(inp, out, 5), b, "dag-B")
    with pytest.raises(DataError, match="replaced by run dag-B"):
        _generalise(_config(inp, out, 3), a, "dag-A")
    # the refused retry keeps the lease (on_success), as a failed commit does: the operators'
    # on_failure_callback frees it (release_run_lease), and only for its own run
    assert leases.read_lease(out).token == "dag-A"
    assert not leases.release_run_lease(out, "dag-B")
    assert leases.release_run_lease(out, "dag-A") and leases.read_lease(out) is None
    assert sorted(p.name for p in (tmp_path / "rel").iterdir()) == ["x"]


def test_a_lease_of_a_finished_airflow_run_is_stale(tmp_path: Path) -> None:
    """A judge (the operators ask Airflow for the holder's DAG run state) frees a lease whose
    holder is no longer running; without one, or while it runs, the run is refused."""
    out = str(tmp_path / "out")
    holder = {"dag_id": "d", "run_id": "r1"}
    leases.acquire_lease(out, "d-r1", ttl_s=3600, pid=None, holder=holder)
    assert leases.read_lease(out).holder == holder
    with pytest.raises(leases.OutputBusyError, match="run d-r1"):
        leases.acquire_lease(out, "d-r2", pid=None, judge=lambda info: None)
    states = {"r1": "failed"}

    def judge(info):
        state = states[info.holder["run_id"]]
        return None if state == "running" else f"its DAG run is {state}"

    taken = leases.acquire_lease(
        out, "d-r2", pid=None, holder={"dag_id": "d", "run_id": "r2"}, judge=judge
    )
    with pytest.raises(leases.LeaseLostError):
        leases.check_lease_token(out, "d-r3")
    states["r2"] = "running"
    with pytest.raises(leases.OutputBusyError):
        leases.acquire_lease(out, "d-r3", pid=None, judge=judge)
    states["r2"] = "success"
    leases.check_lease_token(out, "d-r3", judge)  # no running holder: nothing to fence
    assert leases.acquire_lease(out, "d-r3", pid=None, judge=judge).token == "d-r3"
    assert leases.read_lease(out).nonce != taken.info.nonce
