"""Categorical generalisation hierarchies (inline YAML or ARX CSV files).

A hierarchy is a table: column 0 the original value, column i its label at level i, the
last column the top ``*``. ARX users bring their files unchanged (``value;l1;...;*``).
"""

from __future__ import annotations

import csv
import datetime
import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from airflow_skald.core.errors import ConfigError

TOP_LABEL = "*"
_REPEATS_LISTED = 10
log = logging.getLogger("airflow_skald")


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
    def from_rows(
        cls, name: str, rows: Sequence[Sequence[object]], row_numbers: Sequence[int] | None = None
    ) -> Hierarchy:
        """Validate rows (scalar cells, equal length, functional) and append ``*`` if missing.

        A row repeated identically is dropped with a warning (published ARX files do this); the
        same value with other labels is an error. `row_numbers` name the rows in messages
        (default 1, 2, ...); blank rows are skipped.
        """
        numbers = list(row_numbers) if row_numbers is not None else range(1, len(rows) + 1)
        kept: list[list[str]] = []
        kept_numbers: list[int] = []
        for number, row in zip(numbers, rows, strict=True):
            cells = [_cell_text(name, cell, number) for cell in row]
            if any(cells):
                kept.append(cells)
                kept_numbers.append(number)
        if not kept:
            raise ConfigError(f"hierarchy of '{name}' is empty")
        width = len(kept[0])
        for number, r in zip(kept_numbers, kept, strict=True):
            if len(r) != width:
                raise ConfigError(
                    f"hierarchy of '{name}': row {number} has {len(r)} levels, "
                    f"row {kept_numbers[0]} has {width}"
                )
        table = np.array(kept, dtype=object)
        if not all(table[:, -1] == TOP_LABEL):
            table = np.concatenate([table, np.full((len(kept), 1), TOP_LABEL, dtype=object)], 1)
        table = _without_repeated_rows(name, table, kept_numbers)
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
        """Inline YAML form: ``value -> [label level 1, label level 2, ...]`` (top implied).

        Row i of messages is the i-th value of the mapping. A lone label needs no list.
        """
        if not isinstance(mapping, dict) or not mapping:
            raise ConfigError(f"hierarchy of '{name}' must be a non-empty mapping")
        rows = [
            [value, *(labels if isinstance(labels, list) else [labels])]
            for value, labels in mapping.items()
        ]
        return cls.from_rows(name, rows)

    @classmethod
    def from_csv_text(cls, name: str, text: str, delimiter: str = ";") -> Hierarchy:
        """ARX format: one row per value, ``;``-separated, no header; rows numbered by line."""
        reader = csv.reader(io.StringIO(text), delimiter=delimiter)
        rows: list[list[str]] = []
        numbers: list[int] = []
        for row in reader:
            if row:
                rows.append(row)
                numbers.append(reader.line_num)
        return cls.from_rows(name, rows, numbers)

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


def _cell_text(name: str, cell: object, row: int) -> str:
    """A value or label as text: strings and numbers only (a YAML ``NO`` is a boolean)."""
    if isinstance(cell, str):
        return cell.strip()
    if isinstance(cell, int | float) and not isinstance(cell, bool):
        return str(cell)
    if isinstance(cell, bool):
        what, hint = "a boolean", " (YAML reads unquoted yes/no/on/off/true/false so: quote it)"
    elif cell is None:
        what, hint = "a null", " (an empty, ~ or null entry: quote it or fill it in)"
    elif isinstance(cell, datetime.date):
        what, hint = "a date", " (quote it)"
    elif isinstance(cell, list | tuple):
        what, hint = "a list", " (labels of a value are one flat list)"
    elif isinstance(cell, dict):
        what, hint = "a mapping", ""
    else:
        what, hint = f"a {type(cell).__name__}", ""
    raise ConfigError(
        f"hierarchy of '{name}': row {row} has {what} where a value or label must be "
        f"a string or a number{hint}"
    )


def _without_repeated_rows(name: str, table: np.ndarray, numbers: list[int]) -> np.ndarray:
    """Drop rows identical to an earlier row (one warning); other labels for a value: error."""
    values = table[:, 0].tolist()
    if len(set(values)) == len(values):
        return table
    first: dict[str, int] = {}
    keep: list[int] = []
    repeats: list[str] = []
    for i, value in enumerate(values):
        j = first.setdefault(value, i)
        if j == i:
            keep.append(i)
        elif table[i].tolist() != table[j].tolist():
            raise ConfigError(
                f"hierarchy of '{name}': value '{value}' is listed twice with different labels "
                f"(rows {numbers[j]} and {numbers[i]})"
            )
        else:
            repeats.append(f"{numbers[i]} (as {numbers[j]})")
    more = ", ..." if len(repeats) > _REPEATS_LISTED else ""
    log.warning(
        "hierarchy of '%s': %d row(s) repeat an earlier identical row and are ignored: rows %s%s",
        name,
        len(repeats),
        ", ".join(repeats[:_REPEATS_LISTED]),
        more,
    )
    return table[keep]
