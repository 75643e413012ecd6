"""Writing a release so that nothing half-written ever looks complete.

Parts are written into a staging folder beside the output (a temporary name, then a rename per
part); the verified release gets its manifest last, and the whole folder is renamed into place.
A retried run removes its own stale staging folder first, so reruns are idempotent.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import posixpath
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_skald.core.data.files import local_path
from airflow_skald.core.data.io import filesystem, write_part
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import DataError
from airflow_skald.core.release.write.stores import fresh, is_local

if TYPE_CHECKING:
    from airflow_skald.core.release.write.lease import Lease

MANIFEST = "manifest.json"
REPORT = "report.html"
COMMIT_MARKER = ".skald-commit"  # in an output on object storage while a commit copies into it


def part_name(chunk_id: int, fmt: str) -> str:
    return f"part-{chunk_id:05d}.{fmt}"


def staging_path(output: str, token: str) -> str:
    """Hidden sibling of the output folder, unique per run token (a CLI run, an Airflow run_id)."""
    head, tail = posixpath.split(output.rstrip("/"))
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in token)
    return posixpath.join(head, f".{tail}.skald-staging-{safe}")


def remove_stale_staging(output: str, holder: str | None = None) -> None:
    """Remove staging folders of CLI runs (token ``cli-<pid>[-<nonce>]``) that are debris, so a
    killed run leaves none behind: those whose process is gone or, when the caller holds the
    output's lease as run `holder`, every other CLI run's (no other run may write here now;
    one whose lease expired is fenced at its commit anyway). Airflow runs' staging folders
    stay: a retried task of that run may still need their parts."""
    fs, root = filesystem(output)
    head, tail = posixpath.split(root.rstrip("/"))
    prefix = f".{tail}.skald-staging-cli-"
    try:
        entries = fs.ls(head or "/", detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return
    ours = staging_path(root, holder).rsplit("/", 1)[-1] if holder else None
    for entry in entries:
        name = posixpath.basename(entry.rstrip("/"))
        if not name.startswith(prefix) or name == ours:
            continue
        pid = name[len(prefix) :].split("-", 1)[0]  # cli-<pid> or cli-<pid>-<nonce>
        if holder or (pid.isdigit() and not _alive(int(pid))):
            fs.rm(entry, recursive=True)


def cli_token() -> str:
    """A CLI run's token: ``cli-<pid>-<nonce>``. The pid ties its staging folder and lease to a
    live process; the nonce makes it unique, since pids repeat (in a container every run may
    be pid 1) and a token shared by two runs would make the second a "retry" of the first."""
    return f"cli-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# What an unusable location (not a transient failure) raises when a folder is created there.
_UNUSABLE = (PermissionError, FileExistsError, NotADirectoryError, FileNotFoundError)


def prepare_staging(staging: str, private: bool = False) -> None:
    """A clean staging folder (a stale one from a killed attempt is removed); `private`: a
    table release's, 0700 (`set_staging_private`)."""
    fs, root = filesystem(staging)
    try:
        if fs.exists(root):
            fs.rm(root, recursive=True)
        fs.makedirs(root, exist_ok=True)
        set_staging_private(staging, private)
    except OSError as exc:
        if not isinstance(exc, _UNUSABLE) and exc.errno != errno.EROFS:
            raise  # not the location's fault (a network error, a full disk...)
        raise DataError(
            f"cannot create the output folder {_output_of(staging)}: "
            f"{exc.filename or staging}: {exc.strerror or type(exc).__name__}"
        ) from None


def set_staging_private(staging: str, private: bool) -> None:
    """A local staging folder 0700 (`private`: a table release's generalised rows, which the
    table's policies and grants guard, wait there for the swap) or as the umask makes a
    folder (the records folder the swap leaves behind)."""
    path = local_path(staging)
    if path is None or not os.path.isdir(path):
        return
    if private:
        os.chmod(path, 0o700)
        return
    umask = os.umask(0o077)
    os.umask(umask)
    os.chmod(path, 0o777 & ~umask)


def _output_of(staging: str) -> str:
    """The output folder a staging folder (see `staging_path`) belongs to."""
    head, tail = posixpath.split(staging.rstrip("/"))
    name = tail[1:].split(".skald-staging-", 1)[0] if tail.startswith(".") else tail
    return posixpath.join(head, name)


def write_part_atomic(table, location: DataLocation, staging: str, name: str) -> str:
    """Write under a temporary name, then rename: a killed writer leaves only a .tmp file.
    On object stores an object appears whole or not at all, so it is written in place (a
    rename there would be a second copy)."""
    fs, root = filesystem(staging)
    final = posixpath.join(root, name)
    if not is_local(fs):
        write_part(table, location, _url(staging, final))
        return final
    tmp = posixpath.join(root, f".{name}.tmp")
    write_part(table, location, _url(staging, tmp))
    fs.mv(tmp, final)
    return final


def _url(like: str, path: str) -> str:
    if "://" in like:
        return like.split("://", 1)[0] + "://" + path.lstrip("/")
    return path


def write_bytes_atomic(url: str, data: bytes) -> None:
    fs, root = filesystem(url)
    if not is_local(fs):  # one PUT: whole or nothing
        fs.pipe_file(root, data)
        return
    head, tail = posixpath.split(root)
    tmp = posixpath.join(head, f".{tail}.tmp")
    fs.makedirs(head, exist_ok=True)
    with fs.open(tmp, "wb") as fh:
        fh.write(data)
    fs.mv(tmp, root)


def commit(staging: str, output: str, lease: Lease | None = None) -> None:
    """Move the complete staging folder into place, replacing an earlier release if any.

    With `lease`, the run first checks it still holds the output's lease (a run whose lease
    expired and was taken over publishes nothing)."""
    if lease is not None:
        lease.check()
    fs, src = filesystem(staging)
    _, dst = filesystem(output)
    src, dst = src.rstrip("/"), dst.rstrip("/")
    if is_local(fs):
        old = dst + ".skald-old"
        if Path(dst).exists():
            shutil.rmtree(old, ignore_errors=True)
            Path(dst).rename(old)
        Path(src).rename(dst)
        shutil.rmtree(old, ignore_errors=True)  # also one left by a commit killed mid-way
        return
    _commit_objects(fs, src, dst, lease)


def _commit_objects(fs, src: str, dst: str, lease: Lease | None) -> None:
    """Object stores have no rename: copy the objects server-side, the manifest last.

    0. a marker ``.skald-commit`` goes into the output (a later run knows the folder holds an
       interrupted commit, not foreign data); 1. the earlier release's manifest is deleted, so
       it stops looking complete; 2. its other objects that the new release does not have go;
       3. the new parts and report are copied and their sizes checked; 4. the manifest is
       copied last; 5. the marker and the staging folder are deleted. A crash before step 4
       leaves no manifest at the output: nothing there looks complete.
    """
    fresh(fs, src)
    fresh(fs, dst)
    staged = {  # a killed writer's hidden temporaries are not part of the release
        posixpath.basename(e["name"].rstrip("/")): e
        for e in fs.ls(src, detail=True)
        if e.get("type") != "directory" and not posixpath.basename(e["name"]).startswith(".")
    }
    if MANIFEST not in staged:
        raise RuntimeError(f"staging folder {src} has no {MANIFEST}: nothing to commit")
    marker = posixpath.join(dst, COMMIT_MARKER)
    fs.pipe_file(marker, json.dumps({"staging": src}).encode())
    with contextlib.suppress(FileNotFoundError):
        fs.rm_file(posixpath.join(dst, MANIFEST))
    for path in fs.find(dst):
        name = path[len(dst) + 1 :]
        if name not in staged and name != COMMIT_MARKER:
            fs.rm_file(path)
    for name in sorted(n for n in staged if n != MANIFEST):
        _copy_object(fs, posixpath.join(src, name), posixpath.join(dst, name))
    fresh(fs, dst)
    copied = {posixpath.basename(e["name"]): e.get("size") for e in fs.ls(dst, detail=True)}
    for name, entry in staged.items():
        if name != MANIFEST and copied.get(name) != entry.get("size"):
            raise OSError(f"commit to {dst}: {name} was not copied whole")
    if lease is not None:
        lease.check()
    _copy_object(fs, posixpath.join(src, MANIFEST), posixpath.join(dst, MANIFEST))
    fs.rm_file(marker)
    fs.rm(src, recursive=True)
    fresh(fs, dst)


def _copy_object(fs, src: str, dst: str) -> None:
    """One server-side copy (a seam for tests that crash a commit mid-way)."""
    fs.copy(src, dst)


def discard(staging: str) -> None:
    fs, root = filesystem(staging)
    if fs.exists(root):
        fs.rm(root, recursive=True)
