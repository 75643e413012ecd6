"""Reading a release folder as its manifest describes it: the manifest (checked against its
schema, `Manifest`), and the part files it lists (or, without one, every part-* file).

Each failure is one line naming the file, never a value read from it: `DataError` (bad input,
exit 2) for a release that cannot be read as described, `VerificationError` (exit 1) for a
part-* file the manifest does not list (see `verify`'s docstring).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence

import fsspec
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from airflow_skald.core.data.files import filesystem, full_path
from airflow_skald.core.data.io import local_path
from airflow_skald.core.data.location import FORMATS, DataLocation
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy.registry import check_entry
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.count.parts import release_classes
from airflow_skald.core.release.write.commit import MANIFEST
from airflow_skald.core.release.write.manifest_schema import Manifest


def release_parts(path: str) -> tuple[list[str], str]:
    """Part files of a release folder, sorted, and their format."""
    names = _listing(path)
    for fmt in ("parquet", "csv"):
        parts = [p for p in names if posixpath.basename(p).startswith("part-") and p.endswith(fmt)]
        if parts:
            return parts, fmt
    raise DataError(f"no release parts (part-*.parquet|csv) in {path}")


def _listing(path: str) -> list[str]:
    """Every entry of a release folder, sorted (URLs on object stores)."""
    fs, root = filesystem(path)
    if not fs.isdir(root):
        raise DataError(f"release folder not found: {path}")
    return sorted(full_path(fs, n) for n in fs.ls(root, detail=False))


def listed_parts(path: str, manifest: dict | None) -> tuple[list[str], str]:
    """The parts to verify and their format: with a manifest that lists its parts, exactly
    those, in its order (DataError naming the first one missing; VerificationError naming a
    part-* file of the folder it does not list, which a reader of the folder would take for
    part of the release); without, every part-* file of the folder (`release_parts`)."""
    listed = (manifest or {}).get("parts")
    if listed is None:
        return release_parts(path)
    fmt = manifest.get("output_format") or listed[0].rsplit(".", 1)[-1]
    found = {posixpath.basename(p): p for p in _listing(path)}
    missing = [n for n in listed if n not in found]
    if missing:
        raise DataError(
            f"{missing[0]} of {path} is missing ({MANIFEST} lists {len(listed)} part(s), "
            f"{len(missing)} missing)"
        )
    known = set(listed)
    extra = [
        n
        for n in found
        if n.startswith("part-") and n.endswith(tuple(f".{f}" for f in FORMATS)) and n not in known
    ]
    if extra:
        raise VerificationError(f"{extra[0]} of {path} is not one of the parts {MANIFEST} lists")
    return [found[n] for n in listed], fmt


def read_manifest(path: str) -> dict | None:
    """The release's manifest.json, None if it has none; DataError naming it if it cannot be
    read, is not a JSON object, or a field verify reads has the wrong type (`check_manifest`)."""
    fs, root = filesystem(path)
    target = posixpath.join(root, MANIFEST)
    where = f"{MANIFEST} of {path}"
    try:
        if not fs.exists(target):
            return None
        with fs.open(target, "rb") as fh:
            raw = fh.read()
    except OSError:
        raise DataError(f"{where} cannot be read") from None
    try:
        manifest = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested beyond parsing
        raise DataError(f"{where} is not valid JSON") from None
    if not isinstance(manifest, dict):
        raise DataError(f"{where} is not a JSON object")
    check_manifest(manifest, where)
    return manifest


def check_manifest(manifest: dict, where: str) -> None:
    """DataError ("manifest.json of X: k must be an integer >= 2") for the first field that is
    not what the manifest schema (`Manifest`) says, then for a privacy model entry this
    version cannot re-check. Values are never quoted."""
    Manifest.parse(manifest, where)
    models = (manifest.get("privacy") or {}).get("models", [])

    def bad(what: str) -> DataError:
        return DataError(f"{where}: {what}")

    for i, d in enumerate(models):
        problem = check_entry(d)
        if problem is not None:
            raise bad(f"privacy.models[{i}]{problem}")


def count_parts(
    parts: list[str], location: DataLocation, qids: list[str], sensitive: Sequence[str] = ()
) -> ReleaseClasses:
    """The classes of the written parts, or DataError naming the part at fault: missing, not
    a readable Parquet/CSV file, or without a column (pyarrow's own messages may quote rows)."""
    try:
        return release_classes(parts, location, qids, sensitive)
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        part = getattr(exc, "skald_part", parts[0])
        name = f"{posixpath.basename(part)} of {location.path}"
        if isinstance(exc, FileNotFoundError):  # gone since the folder was listed
            raise DataError(f"{name} is missing") from None
        unreadable = DataError(f"{name} is not a readable {KIND[location.format]} file")
        try:
            columns = column_names(location, part)
        except (pa.ArrowException, OSError, ValueError):
            raise unreadable from None
        missing = [q for q in (*qids, *sensitive) if q not in columns]
        if missing:
            raise DataError(f"{name} has no column '{missing[0]}'") from None
        if isinstance(exc, pa.ArrowException | OSError):  # its footer reads, its data not
            raise unreadable from None
        raise


KIND = {"parquet": "Parquet", "csv": "CSV"}


def column_names(location: DataLocation, part: str) -> list[str]:
    """A part's column names from its schema alone (a Parquet footer, a CSV header)."""
    local = local_path(part)
    if location.format == "parquet" and local is not None:
        return pq.read_schema(local).names
    with fsspec.open(part, "rb") as fh:
        if location.format == "parquet":
            return pq.read_schema(fh).names
        options = pacsv.ParseOptions(delimiter=location.delimiter)
        return pacsv.open_csv(fh, parse_options=options).schema.names
