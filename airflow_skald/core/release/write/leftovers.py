"""What a killed run leaves beside its output, and who removes it (issue 40 item 6, ADR 0033).

A kill -9 runs no clean-up. Everything a run writes therefore has a place that follows from
the output (and the run's token), so that the next run on the output, or the run's retry,
holding the output's lease, finds it and removes it (`clear_leftovers`):

- the rows a table release reads back to verify them (`read_back_path`): a private folder
  (0700) beside the release folder, ``.{name}.skald-read-back-{token}``, or, when the release
  folder is on object storage, in the system's temporary folder under a name derived from
  the release folder's URL; removed when the check is done, and by the next publish or run;
- a folder release moved aside by a commit (``{output}.skald-old``) once the new one is in
  place (a kill after the commit's second rename);
- a table release whose swap committed but whose folder commit did not (a kill between the
  two): the table holds the run's release, its records wait in the run's staging folder.
  The next run (another token) removes the parts there (the table has the rows) and commits
  the records into the release folder, so the folder describes the table again; a retry of
  the same run does it itself (it publishes its own release again).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath
import shutil
import tempfile

from airflow_skald.core.data.database.release_table import table_state
from airflow_skald.core.data.database.target import TableTarget
from airflow_skald.core.data.io import filesystem
from airflow_skald.core.release.write.commit import MANIFEST, commit, staging_path
from airflow_skald.core.release.write.stores import is_local

log = logging.getLogger("airflow_skald")

READ_BACK = ".skald-read-back-"


def _segment(token: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in token)


def _read_back_home(output: str) -> tuple[str, str]:
    """The folder that holds `output`'s read-back folders, and their names' prefix."""
    fs, root = filesystem(output)
    root = root.rstrip("/")
    if is_local(fs):
        head, tail = posixpath.split(root)
        return head or ".", f".{tail}{READ_BACK}"
    tag = hashlib.sha256(output.rstrip("/").encode()).hexdigest()[:16]
    return tempfile.gettempdir(), f"skald{READ_BACK}{tag}-"


def read_back_path(output: str, token: str) -> str:
    """A private local folder (0700, emptied) for run `token`'s read-back of its table
    release whose records go to `output`."""
    home, prefix = _read_back_home(output)
    path = os.path.join(home, prefix + _segment(token))
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(home, exist_ok=True)
    os.mkdir(path, 0o700)
    os.chmod(path, 0o700)  # whatever the umask
    return path


def remove_read_backs(output: str) -> None:
    """Every read-back folder of `output` (the caller holds its lease: none is in use)."""
    home, prefix = _read_back_home(output)
    try:
        names = os.listdir(home)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix):
            log.info("removing %s, left by an interrupted run", name)
            shutil.rmtree(os.path.join(home, name), ignore_errors=True)


def remove_old_aside(output: str) -> None:
    """A release a commit moved aside (``{output}.skald-old``), once a complete release is in
    place (a commit killed between its two renames leaves the one aside as the release)."""
    fs, root = filesystem(output)
    if not is_local(fs):
        return
    root = root.rstrip("/")
    if os.path.isfile(os.path.join(root, MANIFEST)) and os.path.isdir(root + ".skald-old"):
        log.info("removing %s.skald-old, left by an interrupted commit", root)
        shutil.rmtree(root + ".skald-old", ignore_errors=True)


def finish_table_commit(target: TableTarget, uri: str, output: str, holder: str) -> bool:
    """A table release swapped in by a run other than `holder` that was killed before its
    folder commit: its staged records (the manifest the table's comment names) committed
    into the release folder, its staged parts removed first. True if it did so."""
    state = table_state(uri, target)
    release = state.release if state.exists else None
    token = str((release or {}).get("run_token") or "")
    if not token or token == holder:
        return False
    fs, out = filesystem(output)
    sha = release.get("manifest_sha256")
    if _sha(fs, posixpath.join(out.rstrip("/"), MANIFEST)) == sha:
        return False
    staging = staging_path(output, token)
    _, staged = filesystem(staging)
    manifest = posixpath.join(staged.rstrip("/"), MANIFEST)
    if _sha(fs, manifest) != sha:
        return False
    for name in json.loads(fs.cat_file(manifest)).get("parts") or []:
        part = posixpath.join(staged.rstrip("/"), posixpath.basename(name))
        if fs.exists(part):
            fs.rm(part)
    commit(staging, output)
    log.info("committed the records of run %s's table release %s, whose run was interrupted",
             token, target.qualified)  # fmt: skip
    return True


def _sha(fs, path: str) -> str | None:
    try:
        return hashlib.sha256(fs.cat_file(path)).hexdigest()
    except (FileNotFoundError, NotADirectoryError):
        return None


def clear_leftovers(output: str, token: str, table: TableTarget | None, uri: str | None) -> None:
    """What killed runs left beside `output`, removed (or completed) by run `token`, which
    holds the output's lease."""
    if table is not None and uri is not None:
        finish_table_commit(table, uri, output, token)
    remove_old_aside(output)
    remove_read_backs(output)
