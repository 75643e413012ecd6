"""Where chunks are read from or a release is written to: a path (file, folder, glob or fsspec
URL) and its format."""

from __future__ import annotations

from dataclasses import dataclass

FORMATS = ("parquet", "csv")


@dataclass(frozen=True)
class DataLocation:
    """Where chunks are read from or a release is written to."""

    path: str
    format: str = "parquet"
    delimiter: str = ","
