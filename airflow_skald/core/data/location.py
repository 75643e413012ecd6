"""Where chunks are read from or a release is written to: a path (file, folder, glob or fsspec
URL) and its format; and a config's section of files (`input:`, `output:`, a research subset's
keys) parsed into one, its path made absolute (against the config file's folder, or the
working directory) or kept as a URL."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.parse import choice as _choice
from airflow_skald.core.settings.parse import mapping as _mapping
from airflow_skald.core.settings.parse import no_unknown as _no_unknown

FORMATS = ("parquet", "csv")


@dataclass(frozen=True)
class DataLocation:
    """Where chunks are read from or a release is written to."""

    path: str
    format: str = "parquet"
    delimiter: str = ","


def parse_location(raw: Any, where: str, base_dir: Path | None) -> DataLocation:
    """An `input:`/`output:` (or research subset) section of files: path, format, delimiter."""
    raw = _mapping(raw, where)
    _no_unknown(raw, {"path", "format", "delimiter"}, where)
    path = raw.get("path")
    if not isinstance(path, str) or not path:
        raise ConfigError(f"{where}.path is required")
    fmt = _choice(raw.get("format", "parquet"), FORMATS, f"{where}.format")
    delimiter = raw.get("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise ConfigError(f"{where}.delimiter must be one character")
    return DataLocation(path=absolute_path(path, base_dir), format=fmt, delimiter=delimiter)


def absolute_path(path: str, base_dir: Path | None) -> str:
    """A URL as given; a local path made absolute against `base_dir` (else the working
    directory) and normalised."""
    if "://" in path:
        return path
    p = Path(path).expanduser()
    if not p.is_absolute():
        p = (base_dir or Path.cwd()) / p
    text = str(p.absolute())
    if ".." in Path(text).parts:  # what the system opens: a `..` after a symlink leaves its target
        return os.path.realpath(text)
    return os.path.normpath(text)  # `.`, `//` and a trailing `/` dropped
