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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.files import local_path
from airflow_skald.core.data.io import GLOB_CHARS, ChunkRef, filesystem, write_part
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import DataError

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


@dataclass(frozen=True)
class ReleaseIdentity:
    """What makes two releases "the same": the run that made it (its token, unique per run:
    ``cli_token()`` for the CLI, ``{dag_id}-{run_id}`` in Airflow, whose retries share it),
    the effective config's hash, the input's fingerprint, and k (for messages). Read from a
    manifest's ``run_token``, ``config_sha256``, ``input_fingerprint`` and ``k``."""

    run_token: str | None
    config_sha256: str | None
    input_fingerprint: str | None
    k: int | None = None
    dp: bool = False  # differentially private: never an identical rerun (docs/design.md §4e)

    @classmethod
    def from_manifest(cls, manifest: dict) -> ReleaseIdentity:
        return cls(
            run_token=manifest.get("run_token"),
            config_sha256=manifest.get("config_sha256"),
            input_fingerprint=manifest.get("input_fingerprint"),
            k=manifest.get("k"),
            dp="differential_privacy" in manifest,
        )

    @classmethod
    def of_run(
        cls, config: SkaldConfig, chunks: Sequence[ChunkRef] | None, token: str | None
    ) -> ReleaseIdentity:
        """This run's identity, from its effective config and chunk list (before phase 1;
        `chunks` None: before a database input is read, no input fingerprint yet)."""
        from airflow_skald.core.release.write.manifest import input_fingerprint

        dp = any(m.config_key == "differential_privacy" for m in config.privacy)
        fingerprint = input_fingerprint(list(chunks)) if chunks is not None else None
        return cls(token, config.fingerprint(), fingerprint, config.k, dp)

    def may_replace(self, existing: ReleaseIdentity) -> bool:
        """A retry of the run that made `existing`, or an identical rerun (never of a DP
        release, nor by a DP run: each draws its own sample, and releases compose). This
        identity without input fingerprint (a database input not read yet) is judged as if
        its input were the same: what it refuses is refused whatever the input."""
        if self.run_token and existing.run_token == self.run_token:
            return True
        if self.dp or existing.dp:
            return False
        same_input = self.input_fingerprint is None or (
            existing.input_fingerprint == self.input_fingerprint
        )
        return (
            self.config_sha256 is not None
            and existing.config_sha256 == self.config_sha256
            and same_input
        )


OVERWRITE_HINT = "pass --overwrite (DAG param overwrite) to replace it"


def check_output_target(
    output: DataLocation | SkaldConfig,
    input: DataLocation | None = None,
    identity: ReleaseIdentity | None = None,
    overwrite: bool = False,
) -> None:
    """Refuse, before any work, an output that this run must not write:

    - the input file, inside an input folder (or a glob's base folder), an existing file, a
      non-empty folder that is not a skald release (no manifest.json), or (local disk) a
      folder that cannot be created (below a file, on a read-only or pseudo file system),
      whatever `overwrite` says;
    - with `identity`: a release made by another run with another config or input, unless
      `overwrite` (a retry of the same run token, or an identical rerun, may replace it).

    ``check_output_target(config)`` (the older form) makes only the first checks.
    """
    if isinstance(output, SkaldConfig):
        output, input = output.output, output.input
    out = output.path.rstrip("/")
    if input is not None:
        _check_not_input(out, input.path.rstrip("/"))
    fs, root = filesystem(out)
    root = root.rstrip("/")
    _fresh(fs, root)
    manifest_at = None
    if fs.exists(root):
        if not fs.isdir(root):
            raise DataError(f"output path {out} exists and is a file")
        entries = fs.ls(root, detail=False)
        names = {posixpath.basename(e.rstrip("/")) for e in entries}
        if MANIFEST in names:
            manifest_at = posixpath.join(root, MANIFEST)
        elif entries and COMMIT_MARKER not in names:  # the marker: an interrupted commit
            raise DataError(
                f"output path {out} exists and is not a skald release (no {MANIFEST}); "
                "refusing to overwrite it"
            )
    if _is_local(fs):
        _check_creatable(out, root)
    if manifest_at is None and _is_local(fs):  # a local commit killed between its renames
        aside = root + ".skald-old"
        if os.path.isfile(posixpath.join(aside, MANIFEST)):
            manifest_at = posixpath.join(aside, MANIFEST)
    if identity is None or overwrite or manifest_at is None:
        return
    try:
        existing = ReleaseIdentity.from_manifest(json.loads(fs.cat_file(manifest_at)))
    except (ValueError, OSError):
        raise DataError(
            f"output {out} holds a release whose {MANIFEST} cannot be read; {OVERWRITE_HINT}"
        ) from None
    if identity.may_replace(existing):
        return
    raise DataError(replacement_message(out, existing, identity))


def _check_not_input(out: str, inp: str) -> None:
    """Refuse an output that is the input file, or is (or lies inside) an input folder or a
    glob's base folder. A single-file input has no input folder: a sibling output is fine."""
    if "://" in out or "://" in inp:
        return
    out_p = Path(out).resolve()
    if any(ch in inp for ch in GLOB_CHARS):  # the folder above the first component with a wildcard
        parts = Path(inp).parts
        first = next(i for i, part in enumerate(parts) if any(ch in part for ch in GLOB_CHARS))
        in_dir = Path(*parts[:first]).resolve() if first else Path.cwd()
    else:
        in_p = Path(inp).resolve()
        if in_p.is_file() or (not in_p.exists() and in_p.suffix):
            if out_p == in_p:
                raise DataError(f"output path {out} is the input file {in_p}")
            return  # below the input file: _check_creatable names the file
        in_dir = in_p
    if out_p == in_dir or in_dir in out_p.parents:
        raise DataError(f"output path {out} is inside the input folder {in_dir}")


def _check_creatable(out: str, root: str) -> None:
    """The folder that will hold the output (and, beside it, its staging folder and lease)
    exists or can be created, and a file can be created in it: otherwise one line naming the
    path at fault, before anything is read or written. Probes with a file it removes at once;
    creates no folder."""
    parent = os.path.dirname(os.path.abspath(root)) or "/"
    nearest = parent
    while not os.path.lexists(nearest):
        up = os.path.dirname(nearest)
        if up == nearest:
            break
        nearest = up
    if not os.path.isdir(nearest):
        raise DataError(f"cannot create the output folder {out}: {nearest} is not a folder")
    probe = os.path.join(nearest, f".{os.path.basename(root)}.skald-probe-{uuid.uuid4().hex}")
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as exc:
        raise DataError(
            f"cannot create the output folder {out}: {nearest} is not writable "
            f"({exc.strerror or type(exc).__name__})"
        ) from None
    with contextlib.suppress(OSError):
        os.unlink(probe)


def replacement_message(out: str, existing: ReleaseIdentity, ours: ReleaseIdentity) -> str:
    by = f"run {existing.run_token}" if existing.run_token else "an earlier run"
    k = existing.k if existing.k is not None else "?"
    config = (existing.config_sha256 or "?")[:12]
    differs = []
    if ours.k is not None and ours.k != existing.k:
        differs.append(f"k={ours.k}")
    if ours.config_sha256 != existing.config_sha256:
        differs.append(f"config {(ours.config_sha256 or '?')[:12]}")
    if ours.input_fingerprint is not None and ours.input_fingerprint != existing.input_fingerprint:
        differs.append("another input")
    this = f"; this run has {', '.join(differs)}" if differs else ""
    return (
        f"output {out} holds a release made with k={k} by {by} (config {config}){this}: "
        f"{OVERWRITE_HINT}"
    )


def _fresh(fs, path: str) -> None:
    """Forget cached listings (s3fs caches them per process; another run may have written)."""
    with contextlib.suppress(Exception):
        fs.invalidate_cache(path)
        fs.invalidate_cache(posixpath.dirname(path))


def _is_local(fs) -> bool:
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    return "file" in protocols or "local" in protocols


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
    if not _is_local(fs):
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
    if not _is_local(fs):  # one PUT: whole or nothing
        fs.pipe_file(root, data)
        return
    head, tail = posixpath.split(root)
    tmp = posixpath.join(head, f".{tail}.tmp")
    fs.makedirs(head, exist_ok=True)
    with fs.open(tmp, "wb") as fh:
        fh.write(data)
    fs.mv(tmp, root)


def release_in_place(output: str) -> str | None:
    """The run token of the release at `output` (its manifest's ``run_token``; a local
    release moved aside by a commit killed between its renames counts), "" for a release
    without one, None when no release is there."""
    fs, root = filesystem(output)
    root = root.rstrip("/")
    _fresh(fs, root)
    candidates = [posixpath.join(root, MANIFEST)]
    if _is_local(fs):
        candidates.append(posixpath.join(root + ".skald-old", MANIFEST))
    for path in candidates:
        try:
            body = json.loads(fs.cat_file(path))
        except FileNotFoundError:
            continue
        except (ValueError, OSError):
            return ""
        return str(body.get("run_token") or "") if isinstance(body, dict) else ""
    return None


def check_not_superseded(output: str, token: str, predecessor: str | None) -> None:
    """Refuse to commit over a release that another run put in place after this run checked
    the output: the release at `output` must be this run's own (`token`, a retry) or the one
    that was there when the run began (`predecessor`: its run token, None if none was).
    A stale retry of an older run never rolls a newer release back."""
    refuse_superseded(output, release_in_place(output), token, predecessor)


def refuse_superseded(output: str, found: str | None, token: str, predecessor: str | None) -> None:
    """The rule of `check_not_superseded` given the run token `found` in place (a table
    release's comment names it)."""
    if found is None or found in (token, predecessor):
        return
    by = f"run {found}" if found else "another run"
    raise DataError(
        f"output {output} was replaced by {by} after run {token} began; this retry does not "
        "roll it back (start a new run to release again)"
    )


def commit(staging: str, output: str, lease: Lease | None = None) -> None:
    """Move the complete staging folder into place, replacing an earlier release if any.

    With `lease`, the run first checks it still holds the output's lease (a run whose lease
    expired and was taken over publishes nothing)."""
    if lease is not None:
        lease.check()
    fs, src = filesystem(staging)
    _, dst = filesystem(output)
    src, dst = src.rstrip("/"), dst.rstrip("/")
    if _is_local(fs):
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
    _fresh(fs, src)
    _fresh(fs, dst)
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
    _fresh(fs, dst)
    copied = {posixpath.basename(e["name"]): e.get("size") for e in fs.ls(dst, detail=True)}
    for name, entry in staged.items():
        if name != MANIFEST and copied.get(name) != entry.get("size"):
            raise OSError(f"commit to {dst}: {name} was not copied whole")
    if lease is not None:
        lease.check()
    _copy_object(fs, posixpath.join(src, MANIFEST), posixpath.join(dst, MANIFEST))
    fs.rm_file(marker)
    fs.rm(src, recursive=True)
    _fresh(fs, dst)


def _copy_object(fs, src: str, dst: str) -> None:
    """One server-side copy (a seam for tests that crash a commit mid-way)."""
    fs.copy(src, dst)


def discard(staging: str) -> None:
    fs, root = filesystem(staging)
    if fs.exists(root):
        fs.rm(root, recursive=True)
