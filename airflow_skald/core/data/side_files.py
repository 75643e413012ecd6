"""The files a release keeps beside its parts (``sensitive_counts.json``,
``population_counts.json``, ``recoding_steps.json``, the effective config), read back as
`skald verify` reads them: a file the manifest names with its SHA-256 is refused when it is
missing or another."""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_skald.core.data.io import filesystem
from airflow_skald.core.errors import DataError, VerificationError


def read_archived(path: str, name: str) -> bytes | None:
    """A file the release keeps beside its parts (None: it has none)."""
    fs, root = filesystem(path)
    target = posixpath.join(root, name)
    try:
        if not fs.exists(target):
            return None
        with fs.open(target, "rb") as fh:
            return fh.read()
    except OSError:
        raise DataError(f"{name} of {path} cannot be read") from None


def read_named(path: str, manifest: Mapping[str, Any] | None, key: str, file: str) -> bytes | None:
    """The bytes of a file the manifest names under `key` with its SHA-256 (None: it names
    none): DataError if it is missing, VerificationError if its SHA-256 is another."""
    entry = (manifest or {}).get(key)
    if not isinstance(entry, dict):
        return None
    name = f"{file} of {path}"
    data = read_archived(path, file)
    if data is None:
        raise DataError(f"{name} is missing (manifest.json names it)")
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        raise VerificationError(f"{name} is not the file manifest.json names (its sha256 differs)")
    return data


def labels_digest(ordered: Sequence[tuple[str, ...]]) -> str:
    """One SHA-256 naming sorted QID label tuples (the side files' `labels_sha256`)."""
    text = json.dumps([list(t) for t in ordered], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
