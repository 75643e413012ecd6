"""An unreadable lease counts as held until it ages; on a store that cannot tell its age (no
modification times: fsspec's own `AbstractFileSystem.modified` raises NotImplementedError) it
stays held, never expired at once (issue 34.6: two runs could otherwise write one output)."""

from __future__ import annotations

import time

import fsspec.spec
from fsspec.implementations.memory import MemoryFileSystem

from airflow_skald.core.release.write import lease_record, lease_store


class NoModifiedTimes(MemoryFileSystem):
    """The in-memory store without modification times, as several fsspec stores are."""

    modified = fsspec.spec.AbstractFileSystem.modified


def test_unreadable_lease_of_unknown_age_is_held() -> None:
    fs = NoModifiedTimes()
    path = "/verify-lease-test/.out.skald-lease"
    fs.pipe_file(path, b"garbage")
    try:
        info = lease_store.read_object(fs, path)
        assert info is not None
        later = time.time() + 10 * 365 * 86400  # ten years on it is still held
        assert info.stale(now=later) is None
        assert lease_store.read_object(fs, path).nonce == info.nonce  # the same lease at every read
        message = lease_record.busy_message("out", info, path)
        assert "unreadable lease" in message and f"delete {path}" in message
    finally:
        fs.rm(path)


def test_unreadable_lease_with_a_modification_time_ages() -> None:
    fs = MemoryFileSystem()
    path = "/verify-lease-test/.aged.skald-lease"
    fs.pipe_file(path, b"garbage")
    try:
        info = lease_store.read_object(fs, path)
        assert info.stale(now=time.time()) is None
        assert info.stale(now=time.time() + lease_record.DEFAULT_TTL_S + 60).startswith(
            "expired at"
        )
    finally:
        fs.rm(path)
