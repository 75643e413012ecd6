"""Where a lease lives: its object beside the output, created only if absent (a hard link on
local disk, ``If-None-Match: *`` on S3, exclusive mode in memory, else check, write and read
back), read (an unreadable one counts as held until it ages), replaced and removed. The rule
it serves: `lease.py`."""

from __future__ import annotations

import contextlib
import math
import os
import time
import uuid

import fsspec

from airflow_skald.core.release.write.lease_record import DEFAULT_TTL_S, LeaseInfo
from airflow_skald.core.release.write.stores import is_local, protocols

SETTLE_S = 0.2  # read-back pause for stores without a create-if-absent write


def create_if_absent(fs: fsspec.AbstractFileSystem, path: str, info: LeaseInfo) -> bool:
    """Write `info` at `path` only if nothing is there; True if this call created it."""
    data = info.to_bytes()
    if is_local(fs):
        tmp = f"{path}.{info.nonce}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # atomic, fails if the name exists; the content is complete
        except FileExistsError:
            return False
        except OSError:  # a filesystem without hard links: O_EXCL (a kill right after the
            return _create_exclusive(path, data)  # create leaves an unreadable lease)
        finally:
            os.unlink(tmp)
        return True
    if set(protocols(fs)) & {"s3", "s3a", "memory"}:
        try:
            with fs.open(path, "xb") as fh:  # S3: PutObject with If-None-Match: *
                fh.write(data)
        except FileExistsError:
            return False
        return True
    # A store without conditional writes: check, write, pause, read back.
    if read_object(fs, path) is not None:
        return False
    write_object(fs, path, data)
    time.sleep(SETTLE_S)
    back = read_object(fs, path)
    return back is not None and back.nonce == info.nonce


def _create_exclusive(path: str, data: bytes) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return True


def read_object(fs: fsspec.AbstractFileSystem, path: str) -> LeaseInfo | None:
    try:
        data = fs.cat_file(path)
    except FileNotFoundError:
        return None
    try:
        return LeaseInfo.from_bytes(data)
    except (ValueError, KeyError, TypeError):
        return _unreadable(fs, path, data)


def _unreadable(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> LeaseInfo:
    """An unreadable lease (a hand-edited or foreign file) counts as held until it ages: it
    expires at its modification time + the default ttl. On a store that cannot tell that time,
    its age is unknown and it never expires (fail closed: two runs must never both write the
    output): a person deletes it."""
    try:
        mtime = fs.modified(path).timestamp()
    except Exception:  # a store without modification times (NotImplementedError)
        return LeaseInfo(
            "(unreadable lease of unknown age)",
            f"unreadable-{len(data)}-unknown-age",
            "",
            None,
            None,
            time.time(),
            time.time(),
            math.inf,
            DEFAULT_TTL_S,
        )
    return LeaseInfo(
        "(unreadable lease)",
        f"unreadable-{len(data)}-{mtime}",
        "",
        None,
        None,
        mtime,
        mtime,
        mtime + DEFAULT_TTL_S,
        DEFAULT_TTL_S,
    )


def write_object(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> None:
    if is_local(fs):  # replace atomically: a reader never sees half a lease
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return
    fs.pipe_file(path, data)


def remove_object(fs: fsspec.AbstractFileSystem, path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        fs.rm_file(path)
