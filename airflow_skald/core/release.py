"""Writing a release so that nothing half-written ever looks complete.

Parts are written into a staging folder beside the output (a temporary name, then a rename per
part); the verified release gets its manifest last, and the whole folder is renamed into place.
A retried run removes its own stale staging folder first, so reruns are idempotent.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from pathlib import Path

from airflow_skald.core.config import DataLocation, SkaldConfig
from airflow_skald.core.errors import DataError
from airflow_skald.core.io import filesystem, write_part

MANIFEST = "manifest.json"
REPORT = "report.html"


def part_name(chunk_id: int, fmt: str) -> str:
    return f"part-{chunk_id:05d}.{fmt}"


def staging_path(output: str, token: str) -> str:
    """Hidden sibling of the output folder, unique per run token (a CLI run, an Airflow run_id)."""
    head, tail = posixpath.split(output.rstrip("/"))
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in token)
    return posixpath.join(head, f".{tail}.skald-staging-{safe}")


def check_output_target(config: SkaldConfig) -> None:
    """Refuse outputs that would overwrite data: inside the input, or a non-release folder."""
    out = config.output.path.rstrip("/")
    inp = config.input.path.rstrip("/")
    if "://" not in out and "://" not in inp:
        out_p, in_p = Path(out).resolve(), Path(inp).resolve()
        in_dir = in_p if in_p.is_dir() or not in_p.suffix else in_p.parent
        if out_p == in_dir or in_dir in out_p.parents:
            raise DataError(f"output path {out} is inside the input folder {in_dir}")
    fs, root = filesystem(out)
    if fs.exists(root):
        if not fs.isdir(root):
            raise DataError(f"output path {out} exists and is a file")
        entries = fs.ls(root, detail=False)
        if entries and not fs.exists(posixpath.join(root, MANIFEST)):
            raise DataError(
                f"output path {out} exists and is not a skald release (no {MANIFEST}); "
                "refusing to overwrite it"
            )


def remove_stale_staging(output: str) -> None:
    """Remove staging folders of CLI runs (token ``cli-<pid>``) whose process is gone, so a
    killed run leaves no debris and concurrent runs never share one."""
    fs, root = filesystem(output)
    head, tail = posixpath.split(root.rstrip("/"))
    prefix = f".{tail}.skald-staging-cli-"
    try:
        entries = fs.ls(head or "/", detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        name = posixpath.basename(entry.rstrip("/"))
        pid = name[len(prefix) :]
        if name.startswith(prefix) and pid.isdigit() and not _alive(int(pid)):
            fs.rm(entry, recursive=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prepare_staging(staging: str) -> None:
    """A clean staging folder (a stale one from a killed attempt is removed)."""
    fs, root = filesystem(staging)
    if fs.exists(root):
        fs.rm(root, recursive=True)
    fs.makedirs(root, exist_ok=True)


def write_part_atomic(table, location: DataLocation, staging: str, name: str) -> str:
    """Write under a temporary name, then rename: a killed writer leaves only a .tmp file."""
    fs, root = filesystem(staging)
    tmp = posixpath.join(root, f".{name}.tmp")
    final = posixpath.join(root, name)
    write_part(table, location, _url(staging, tmp))
    fs.mv(tmp, final)
    return final


def _url(like: str, path: str) -> str:
    if "://" in like:
        return like.split("://", 1)[0] + "://" + path.lstrip("/")
    return path


def write_bytes_atomic(url: str, data: bytes) -> None:
    fs, root = filesystem(url)
    head, tail = posixpath.split(root)
    tmp = posixpath.join(head, f".{tail}.tmp")
    fs.makedirs(head, exist_ok=True)
    with fs.open(tmp, "wb") as fh:
        fh.write(data)
    fs.mv(tmp, root)


def commit(staging: str, output: str) -> None:
    """Move the complete staging folder into place, replacing an earlier release if any."""
    fs, src = filesystem(staging)
    _, dst = filesystem(output)
    dst = dst.rstrip("/")
    local = fs.protocol in ("file", "local") or "file" in tuple(fs.protocol)
    if local:
        old = dst + ".skald-old"
        if Path(dst).exists():
            shutil.rmtree(old, ignore_errors=True)
            Path(dst).rename(old)
        Path(src).rename(dst)
        shutil.rmtree(old, ignore_errors=True)  # also one left by a commit killed mid-way
        return
    # Object stores have no atomic folder rename: move parts first, the manifest last.
    if fs.exists(dst):
        fs.rm(dst, recursive=True)
    names = sorted(fs.ls(src, detail=False), key=lambda p: p.endswith(MANIFEST))
    for path in names:
        fs.mv(path, posixpath.join(dst, posixpath.basename(path)))
    fs.rm(src, recursive=True)


def discard(staging: str) -> None:
    fs, root = filesystem(staging)
    if fs.exists(root):
        fs.rm(root, recursive=True)
