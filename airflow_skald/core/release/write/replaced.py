"""The records of replaced releases, kept beside the output that replaced them.

When a run commits over a release another run made, that release's records (manifest, report,
run record, effective config, YAML: figures and settings, never a data value) are copied first
into ``.{name}.skald-replaced/{run token}/`` beside the output, where they stay. So an auditor
(the plugin's links of a replaced release) finds them next to the output, wherever the
run-artifact store is or was: moving ``[skald] artifacts`` (local -> S3) does not break them.
A retry of the run that made the release in place copies nothing. The operators' generalise
task keeps them (``archive_replaced``, under the output's lease, before it commits); the CLI
keeps none (it serves no links).
"""

from __future__ import annotations

import posixpath

from airflow_skald.core.data.io import filesystem
from airflow_skald.core.release.write.manifest import (
    CONFIG_YAML,
    EFFECTIVE_JSON,
    MANIFEST_JSON,
    REPORT_HTML,
    RUN_JSON,
)
from airflow_skald.core.release.write.output_target import release_in_place

#: what is kept of a replaced release (never its parts)
RECORDS = (MANIFEST_JSON, REPORT_HTML, RUN_JSON, EFFECTIVE_JSON, CONFIG_YAML)


def _segment(token: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in token)


def archive_path(output: str, token: str) -> str:
    """Where the records of run `token`'s replaced release at `output` are kept (a URL for
    object stores, like the output)."""
    head, tail = posixpath.split(output.rstrip("/"))
    return posixpath.join(head, f".{tail}.skald-replaced", _segment(token))


def archive_replaced(output: str, token: str) -> str | None:
    """Before run `token` commits: keep the records of the release in place if another run
    made it. Returns that run's token (None: nothing to keep)."""
    found = release_in_place(output)
    if not found or found == token:
        return None
    fs, root = filesystem(output)
    root = root.rstrip("/")
    _, target = filesystem(archive_path(output, found))
    fs.makedirs(target, exist_ok=True)
    for name in RECORDS:
        source = f"{root}/{name}"
        if fs.exists(source):
            fs.pipe_file(f"{target}/{name}", fs.cat_file(source))
    return found


def archived_file(output: str, token: str, name: str) -> bytes | None:
    """A record of run `token`'s replaced release at `output`, None if none was kept."""
    if name not in RECORDS:
        return None
    fs, path = filesystem(archive_path(output, token) + "/" + name)
    try:
        return fs.cat_file(path) if fs.exists(path) else None
    except (FileNotFoundError, NotADirectoryError):
        return None
