"""Categorical generalisation hierarchies (inline YAML or ARX CSV files).

A hierarchy is a table: column 0 the original value, column i its label at level i, the
last column the top ``*``. ARX users bring their files unchanged (``value;l1;...;*``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from airflow_skald.core.errors import ConfigError

TOP_LABEL = "*"


@dataclass(frozen=True)
class Hierarchy:
    """A validated, functional hierarchy: ``table[v, level]`` is value v's label at that level."""

    name: str
    table: np.ndarray  # object array of str, shape (n_values, n_levels); column 0 = values

    @property
    def values(self) -> np.ndarray:
        return self.table[:, 0]

    @property
    def top_level(self) -> int:
        return self.table.shape[1] - 1

    @classmethod
    def from_rows(cls, name: str, rows: list[list[str]]) -> Hierarchy:
        """Validate rows (equal length, unique values, functional) and append ``*`` if missing."""
        rows = [[str(c).strip() for c in r] for r in rows if any(str(c).strip() for c in r)]
        if not rows:
            raise ConfigError(f"hierarchy of '{name}' is empty")
        width = len(rows[0])
        for i, r in enumerate(rows):
            if len(r) != width:
                raise ConfigError(
                    f"hierarchy of '{name}': row {i + 1} has {len(r)} levels, row 1 has {width}"
                )
        table = np.array(rows, dtype=object)
        if not all(table[:, -1] == TOP_LABEL):
            table = np.concatenate([table, np.full((len(rows), 1), TOP_LABEL, dtype=object)], 1)
        values, counts = np.unique(table[:, 0].astype(str), return_counts=True)
        if (counts > 1).any():
            raise ConfigError(
                f"hierarchy of '{name}': value '{values[counts > 1][0]}' is listed twice"
            )
        for level in range(1, table.shape[1] - 1):
            pairs = {tuple(p) for p in table[:, level : level + 2].tolist()}
            children = [a for a, _ in pairs]
            if len(children) != len(set(children)):
                dup = next(a for a in children if children.count(a) > 1)
                raise ConfigError(
                    f"hierarchy of '{name}' is inconsistent: level-{level} label '{dup}' "
                    f"has two parents at level {level + 1}"
                )
        return cls(name=name, table=table)

    @classmethod
    def from_mapping(cls, name: str, mapping: dict) -> Hierarchy:
        """Inline YAML form: ``value -> [label level 1, label level 2, ...]`` (top implied)."""
        if not isinstance(mapping, dict) or not mapping:
            raise ConfigError(f"hierarchy of '{name}' must be a non-empty mapping")
        rows = []
        for value, labels in mapping.items():
            if isinstance(labels, str | int | float):
                labels = [labels]
            if not isinstance(labels, list):
                raise ConfigError(f"hierarchy of '{name}': labels of a value must be a list")
            rows.append([str(value), *[str(x) for x in labels]])
        return cls.from_rows(name, rows)

    @classmethod
    def from_csv_text(cls, name: str, text: str, delimiter: str = ";") -> Hierarchy:
        """ARX format: one row per value, ``;``-separated, no header."""
        rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if r]
        return cls.from_rows(name, rows)

    @classmethod
    def from_file(cls, name: str, path: Path) -> Hierarchy:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot read hierarchy file {path} of '{name}': {exc.strerror}"
            ) from None
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"hierarchy file {path} of '{name}' is not UTF-8 text (byte {exc.start})"
            ) from None
        except ValueError:  # e.g. a NUL byte in the path
            raise ConfigError(f"invalid hierarchy file path for '{name}': {path!r}") from None
        return cls.from_csv_text(name, text)
