"""A table as the release (docs/design.md §2a): one more release target behind the folder's commit
protocol (ADR 0005, 0200), with the same replacement rules (`ReleaseIdentity`).

The table's comment is the release's identity in the database: ``skald release {json}`` with
the SHA-256 of the manifest (the bytes of ``manifest.json`` in the release folder), the run
token, the config hash, the input fingerprint and k. So:

- **before phase 1** (`check_table_target`): a table without a skald comment is never
  replaced (like a folder without a manifest); a release there is replaced only by a retry
  of its run, an identical rerun, or with ``overwrite``;
- **at the commit** (`publish_table`, after the staged parts were verified and the manifest
  written into the staging folder): the parts go into a new table, which is read back and
  verified as `skald verify` verifies a release; then one transaction swaps it in, after
  checking (under the table's advisory lock, with the run's lease) that the release in place
  is still the one the run found when it began, or its own: a stale retry never rolls a newer
  release back, and of two racing runs only one writes;
- `skald verify FOLDER` of a table release (`engine.sql.table_counts.verify_table_release`)
  checks that the table's comment names this manifest, then verifies the table from the
  counts PostgreSQL computes (no row read, ADR 0070).

The release folder keeps the records (manifest, report, run record, config), never the rows.
"""

from __future__ import annotations

import hashlib
import logging
import os
import posixpath
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction

from airflow_skald.core.data.database.release_table import (
    TableState,
    TableWriter,
    cannot_keep,
    table_properties,
    table_state,
)
from airflow_skald.core.data.database.target import TableTarget
from airflow_skald.core.data.io import filesystem
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.release.write.commit import MANIFEST, _output_of
from airflow_skald.core.release.write.leftovers import read_back_path, remove_read_backs
from airflow_skald.core.release.write.output_target import (
    ReleaseIdentity,
    refuse_superseded,
    replacement_message,
)
from airflow_skald.core.transform import registry

log = logging.getLogger("airflow_skald")

_READ_BACK_ROWS = 1_000_000  # rows per part read back (memory: two parts)


def table_identity(manifest: dict, manifest_bytes: bytes) -> dict:
    """What the table's comment holds: the manifest's SHA-256 and the release's identity."""
    return {
        "manifest_sha256": hashlib.sha256(manifest_bytes).hexdigest(),
        **ReleaseIdentity.from_manifest(manifest).to_dict(),
    }


def table_label(target: TableTarget) -> str:
    return f"output table {target.qualified}"


def _foreign(target: TableTarget) -> DataError:
    return DataError(
        f"{table_label(target)} exists and is not a skald release (its comment names no skald "
        "release); refusing to replace it"
    )


def found_token(target: TableTarget, state: TableState) -> str | None:
    """The run token of the release in the table (None: no table; a foreign table refused)."""
    if not state.exists:
        return None
    release = state.release
    if release is None:
        raise _foreign(target)
    return str(release.get("run_token") or "")


def check_table_target(
    target: TableTarget,
    uri: str,
    identity: ReleaseIdentity | None,
    overwrite: bool,
    columns: Sequence[str] | None = None,
    qids: Sequence[str] = (),
    k: int = 1,
) -> None:
    """Before any work: the schema exists; a table there is a skald release, replaced only as
    a folder release is (`ReleaseIdentity.may_replace`, or `overwrite`; an identity without
    input fingerprint: judged before a database input is read, as if the input were the
    same), and only if the new table can keep what the old one has (`table_properties`; with
    the release's `columns`, its `qids` and `k` once they are known)."""
    state = table_state(uri, target)
    if not state.schema_exists:
        raise DataError(f"{table_label(target)}: schema {target.schema} does not exist")
    found_token(target, state)
    if identity is None or not state.exists:
        return
    existing = ReleaseIdentity.from_manifest(state.release)
    if not overwrite and not identity.may_replace(existing):
        raise DataError(replacement_message(f"table {target.qualified}", existing, identity))
    props = table_properties(uri, target)
    problems = props.problems(columns, qids, k) if props is not None else []
    if problems:
        raise DataError(cannot_keep(target, problems))


def table_in_place(target: TableTarget, uri: str) -> str | None:
    """The run token of the release in the table ("" without one), None when there is none."""
    return found_token(target, table_state(uri, target))


def check_table_not_superseded(
    target: TableTarget, uri: str, token: str, predecessor: str | None
) -> None:
    """`check_not_superseded` for a table: the release in it is this run's or its
    predecessor's."""
    refuse_superseded(f"table {target.qualified}", table_in_place(target, uri), token, predecessor)


def publish_table(
    target: TableTarget,
    uri: str,
    staging: str,
    manifest: dict,
    manifest_bytes: bytes,
    predecessor: str | None,
    check_lease: Callable[[], None] | None = None,
    output: str | None = None,
    written: bool = False,
) -> None:
    """Write, verify and swap in the table release whose parts and manifest are staged;
    then remove the parts from the staging folder (its records go to the release folder
    `output`, beside which the rows are read back: `leftovers.read_back_path`). `written`:
    the engine holding the rows wrote the new table itself (`new_table_name` of the run's
    token) and the run checked it from the engine's GROUP BY of it (docs/design.md §2b):
    nothing is staged, loaded or read back, the new table is only swapped in."""
    token = str(manifest["run_token"])

    def judge(state: TableState) -> None:
        if check_lease is not None:
            check_lease()  # a run that lost the output's lease publishes nothing
        refuse_superseded(
            f"table {target.qualified}", found_token(target, state), token, predecessor
        )

    with TableWriter(uri, target, token, written=written) as writer:
        judge(writer.state())  # before the rows are written: a stale retry stops here
        t0 = time.perf_counter()
        done = "checked in the engine" if written else _load(writer, staging, manifest, output)
        writer.swap(table_identity(manifest, manifest_bytes), judge)
    log.info(
        "table release %s: %s, swapped in (%.1f s)",
        target.qualified,
        done,
        time.perf_counter() - t0,
    )
    if written:
        return
    fs, root = filesystem(staging)
    for name in manifest["parts"]:
        fs.rm(posixpath.join(root.rstrip("/"), name))


def _load(writer: TableWriter, staging: str, manifest: dict, output: str | None) -> str:
    """The staged parts into the writer's new table, read back and verified; what was done."""
    parts = [staging.rstrip("/") + "/" + name for name in manifest["parts"]]
    chunk_rows = int(manifest.get("settings", {}).get("chunk_rows") or _READ_BACK_ROWS)
    t0 = time.perf_counter()
    rows = writer.load(parts)
    loaded = time.perf_counter() - t0
    with _private_folder(output or _output_of(staging), writer.token) as back:
        copied = writer.read_back(back, min(chunk_rows, _READ_BACK_ROWS))
        report = _verify_rows(writer.target, back, copied, manifest, staging)
    verified = "verified" if report["verified"] is True else "verified in part"
    return (
        f"{rows} rows written ({loaded:.1f} s), read back and {verified} "
        f"({time.perf_counter() - t0 - loaded:.1f} s)"
    )


def _verify_rows(
    target: TableTarget,
    folder: str,
    parts: list[str],
    manifest: dict,
    records: str | None,
    k: int | None = None,
    suppression_limit: Fraction | float | str | None = None,
    qids: list[str] | None = None,
) -> dict:
    """The table's rows (read back as `parts` in `folder`) verified against the manifest as
    `skald verify` verifies a folder release; messages name the table, not the folder."""
    from airflow_skald.core.release.check.verify import verify_release

    if records is not None:  # the files the transformations keep beside (counts, steps)
        fs, root = filesystem(records)
        for name in registry.kept_files(manifest):
            source = posixpath.join(root.rstrip("/"), name)
            if fs.exists(source):
                with open(os.path.join(folder, name), "wb") as fh:
                    fh.write(fs.cat_file(source))
    if not parts:
        raise VerificationError(f"{table_label(target)} holds no rows")
    names = [posixpath.basename(p) for p in parts]
    with naming_table(target, folder):
        return verify_release(
            folder, k, suppression_limit, qids=qids, manifest={**manifest, "parts": names}
        )


@contextmanager
def naming_table(target: TableTarget, folder: str) -> Iterator[None]:
    """A verify failure's message naming the table where it names the folder verified."""
    try:
        yield
    except (DataError, VerificationError) as exc:
        text = str(exc).replace(f"the {MANIFEST} of {folder} about to be written", MANIFEST)
        raise type(exc)(text.replace(folder, table_label(target))) from None


class _private_folder:
    """A folder only this user reads (the rows a run reads back), removed at exit: beside its
    release folder (`leftovers.read_back_path`: the next run or the retry removes what a
    killed one left)."""

    def __init__(self, output: str, token: str = "") -> None:
        self.output, self.token = output, token

    def __enter__(self) -> str:
        remove_read_backs(self.output)  # of killed runs (the caller holds the lease)
        self.path = read_back_path(self.output, self.token)
        return self.path

    def __exit__(self, *exc_info) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def is_table_release(manifest: dict | None) -> bool:
    return isinstance(manifest, dict) and isinstance(manifest.get("output_table"), dict)
