"""What the SQL engines over local Parquet files (DuckDB, Spark) share: the one-line refusal of
an input or output they do not read or write, and the input listed as one chunk per file
(docs/design.md §2b)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from airflow_skald.core.data.files import local_path
from airflow_skald.core.data.io import ChunkRef, count_rows, file_version, list_input_files
from airflow_skald.core.engine.base import Engine
from airflow_skald.core.engine.sql.pseudonyms import check_hashable
from airflow_skald.core.engine.sql.support import check_supported
from airflow_skald.core.errors import ConfigError

if TYPE_CHECKING:
    from airflow_skald.core.config.skald_config import SkaldConfig
    from airflow_skald.core.passes.state import Run


class ParquetFilesEngine(Engine):
    """An engine that reads local Parquet files and writes a Parquet folder release."""

    #: the input formats it reads (DuckDB: CSV too, `csv_input`)
    input_formats: ClassVar[tuple[str, ...]] = ("parquet",)

    def require(self) -> None:
        """The engine's package installed, or one line saying how."""
        raise NotImplementedError

    def check(self, config: SkaldConfig) -> None:
        prefix = f"execution.engine {self.name}"
        if config.database is not None:
            raise ConfigError(
                f"{prefix} reads Parquet files: a database table input runs with "
                "execution: chunks (or the postgresql engine)"
            )
        if config.input.format not in self.input_formats:
            raise ConfigError(
                f"{prefix} reads Parquet files; input.format is {config.input.format}"
            )
        if config.output_table is not None or config.output.format != "parquet":
            raise ConfigError(
                f"{prefix} writes a Parquet folder release; output.format is {config.output.format}"
            )
        for path in (config.input.path, config.output.path):
            if local_path(path) is None:
                raise ConfigError(f"{prefix} reads and writes local paths only: {path}")
        check_supported(config, self)
        check_hashable(config, prefix)  # hashed in the engine: its text must be pyarrow's
        self.require()

    def list_input(self, run: Run) -> list[ChunkRef]:
        location = run.config.input
        files = list_input_files(location)
        if location.format == "csv":  # every row parsed by the engine, not by the worker
            counts = self.csv_row_counts(run, files)
        else:
            counts = [count_rows(location, f) for f in files]
        return [ChunkRef(i, f, 0, counts[i], file_version(f)) for i, f in enumerate(files)]

    def csv_row_counts(self, run: Run, files: list[str]) -> list[int]:
        """Each CSV input file's records, counted by the engine (engines reading CSV)."""
        raise NotImplementedError

    def _files(self, run: Run) -> list[str]:
        """The input files, one per chunk, in chunk order."""
        return [c.file for c in run.chunks()]
