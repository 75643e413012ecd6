"""The output a run writes, judged before any work and again at the commit: not the input, a
folder that can be created, not foreign data (`check_output_target`); a release there is
replaced only by a retry of its run or an identical rerun, else with ``overwrite``
(`ReleaseIdentity`); and at the commit, the release in place is still the one the run found
(`check_not_superseded`: a stale retry never rolls a newer release back)."""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import GLOB_CHARS, ChunkRef, filesystem
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import DataError
from airflow_skald.core.release.write.commit import COMMIT_MARKER, MANIFEST
from airflow_skald.core.release.write.stores import fresh, is_local

#: the manifest's key a differentially private release holds (never an identical rerun)
DP_KEY = "differential_privacy"


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
            dp=DP_KEY in manifest,
        )

    def to_dict(self) -> dict:
        """The identity as `from_manifest` reads it back (a table release's comment)."""
        return {
            "run_token": self.run_token,
            "config_sha256": self.config_sha256,
            "input_fingerprint": self.input_fingerprint,
            "k": self.k,
            **({DP_KEY: True} if self.dp else {}),
        }

    @classmethod
    def of_run(
        cls, config: SkaldConfig, chunks: Sequence[ChunkRef] | None, token: str | None
    ) -> ReleaseIdentity:
        """This run's identity, from its effective config and chunk list (before phase 1;
        `chunks` None: before a database input is read, no input fingerprint yet)."""
        from airflow_skald.core.release.write.manifest import input_fingerprint

        dp = config.randomised  # a random draw: never replaced
        fingerprint = None
        if chunks is not None:
            fingerprint = input_fingerprint(list(chunks), config.chunk_rows)
        return cls(token, config.fingerprint(), fingerprint, config.min_class_size, dp)

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
    fresh(fs, root)
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
    if is_local(fs):
        _check_creatable(out, root)
    if manifest_at is None and is_local(fs):  # a local commit killed between its renames
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


def release_in_place(output: str) -> str | None:
    """The run token of the release at `output` (its manifest's ``run_token``; a local
    release moved aside by a commit killed between its renames counts), "" for a release
    without one, None when no release is there."""
    fs, root = filesystem(output)
    root = root.rstrip("/")
    fresh(fs, root)
    candidates = [posixpath.join(root, MANIFEST)]
    if is_local(fs):
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
