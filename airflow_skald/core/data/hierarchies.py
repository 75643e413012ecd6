"""Categorical generalisation hierarchies (inline YAML or ARX CSV files).

A hierarchy is a table: column 0 the original value, column i its label at level i, the
last column the top: one label for every value (``*``, or a constant such as ARX's ``[0,99]``;
``*`` is appended only when the last column given has more than one label, docs/design.md §3). ARX users bring their files unchanged (``value;l1;...;*``): a
leading UTF-8 byte order mark is skipped, and so are empty cells at the end of a row (a
delimiter ending every row adds no level). An empty value or label before the last one is an
error, as is a file whose rows are single cells holding ',' or tabs (the wrong separator).
"""

from __future__ import annotations

import codecs
import csv
import datetime
import functools
import hashlib
import io
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from airflow_skald.core.errors import ConfigError

TOP_LABEL = "*"
_REPEATS_LISTED = 10
_OTHER_DELIMITERS = ((",", "','", "a ','"), ("\t", "tabs", "a tab"))
log = logging.getLogger("airflow_skald")


@dataclass(frozen=True)
class Hierarchy:
    """A validated, functional hierarchy: ``table[v, level]`` is value v's label at that level."""

    name: str
    table: np.ndarray  # object array of str, shape (n_values, n_levels); column 0 = values
    # built from a rule: how many of its levels held one label for every value of the data
    # (the top stands for them, docs/design.md §3a); differential privacy refuses such a QID
    dropped: int = field(default=0, compare=False)
    # built from a rule over the values found in the input (not listed in full): its leaves,
    # and so Loss's domain shares, come from the data (ADR 0027)
    built: bool = field(default=False, compare=False)

    @property
    def values(self) -> np.ndarray:
        return self.table[:, 0]

    @property
    def top_level(self) -> int:
        return self.table.shape[1] - 1

    @functools.cached_property
    def sha256(self) -> str:
        """What manifests name the hierarchy by: the SHA-256 of `json.dumps` of its rows as
        validated (each row the value, then its label at every level up to the top, an
        appended `*` included; repeated rows dropped), in file order. Computed once (settings,
        fingerprint and manifest all name it; a 100,000-row table takes ~0.1 s)."""
        return hashlib.sha256(json.dumps(self.table.tolist()).encode()).hexdigest()

    @classmethod
    def from_rows(
        cls,
        name: str,
        rows: Sequence[Sequence[object]],
        row_numbers: Sequence[int] | None = None,
        source: Path | str | None = None,
    ) -> Hierarchy:
        """Validate rows (scalar non-empty cells, equal length, functional) and append ``*``
        when the last column has more than one label (a constant last column is the top: a
        level above it could not change any class).

        A row repeated identically is dropped with a warning (published ARX files do this); the
        same value with other labels is an error. `row_numbers` name the rows in messages
        (default 1, 2, ...), `source` the file they come from; blank rows are skipped.
        """
        where = _where(name, source)
        numbers = list(row_numbers) if row_numbers is not None else range(1, len(rows) + 1)
        kept: list[list[str]] = []
        kept_numbers: list[int] = []
        for number, row in zip(numbers, rows, strict=True):
            cells = [_cell_text(where, cell, number) for cell in row]
            if any(cells):
                kept.append(cells)
                kept_numbers.append(number)
        if not kept:
            raise ConfigError(f"{where} is empty")
        for number, r in zip(kept_numbers, kept, strict=True):
            if "" in r:
                level = r.index("")
                what = "an empty value" if level == 0 else f"an empty label at level {level}"
                raise ConfigError(f"{where}: row {number} has {what}")
        width = len(kept[0])
        for number, r in zip(kept_numbers, kept, strict=True):
            if len(r) != width:
                raise ConfigError(
                    f"{where}: row {number} has {len(r)} levels, row {kept_numbers[0]} has {width}"
                )
        table = _with_top(np.array(kept, dtype=object))
        table = _without_repeated_rows(where, table, kept_numbers)
        for level in range(1, table.shape[1] - 1):
            pairs = {tuple(p) for p in table[:, level : level + 2].tolist()}
            children = [a for a, _ in pairs]
            if len(children) != len(set(children)):
                dup = next(a for a in children if children.count(a) > 1)
                raise ConfigError(
                    f"{where} is inconsistent: level-{level} label '{dup}' "
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
    def from_csv_text(
        cls, name: str, text: str, delimiter: str = ";", source: Path | str | None = None
    ) -> Hierarchy:
        """ARX format: one row per value, ``;``-separated, no header; rows numbered by line.

        A leading byte order mark is skipped; empty cells ending a row are not levels (ARX
        exports and spreadsheets often end every row with the delimiter).
        """
        text = text.removeprefix("\ufeff")
        table = _plain_table(text, delimiter)
        if table is not None:
            return cls(name=name, table=_with_top(table))
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        rows: list[list[str]] = []
        numbers: list[int] = []
        for row in reader:
            while row and not row[-1].strip():
                row.pop()
            if row:
                rows.append(row)
                numbers.append(reader.line_num)
        _check_delimiter(_where(name, source), rows, numbers, delimiter)
        return cls.from_rows(name, rows, numbers, source)

    @classmethod
    def from_file(cls, name: str, path: Path) -> Hierarchy:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigError(
                f"cannot read hierarchy file {path} of '{name}': {exc.strerror}"
            ) from None
        except ValueError:  # e.g. a NUL byte in the path
            raise ConfigError(f"invalid hierarchy file path for '{name}': {path!r}") from None
        skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
        try:
            text = data[skip:].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"hierarchy file {path} of '{name}' is not UTF-8 text (byte {exc.start + skip})"
            ) from None
        return cls.from_csv_text(name, text, source=path)


def _with_top(table: np.ndarray) -> np.ndarray:
    """The table with `*` appended when its last column has more than one label (docs/design.md §3)."""
    if len(set(table[:, -1].tolist())) == 1:
        return table
    return np.concatenate([table, np.full((len(table), 1), TOP_LABEL, dtype=object)], 1)


def _plain_table(text: str, delimiter: str) -> np.ndarray | None:
    """The rows of a plain ARX file read by pyarrow in one pass (vectorised checks), or None
    for any other file, which `csv` then reads row by row to name what is odd or wrong.

    Plain: no quotes, two or more cells per row, all rows of equal length, no cell empty or
    with surrounding blanks (columns empty in every row, a delimiter ending each row, are
    dropped), each value listed once, every label with one parent.
    """
    if '"' in text or delimiter not in text:
        return None
    try:
        first = text[: text.find("\n")] if "\n" in text else text
        n = first.rstrip("\r").count(delimiter) + 1
        names = [f"c{i}" for i in range(n)]
        read = pacsv.read_csv(
            pa.py_buffer(text.encode()),
            read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False
            ),
        )
    except (pa.ArrowInvalid, ValueError):
        return None
    columns = [read.column(i).combine_chunks() for i in range(n)]
    while columns and pc.all(pc.equal(columns[-1], "")).as_py():
        columns.pop()
    if len(columns) < 2 or read.num_rows == 0:
        return None
    for col in columns:
        if pc.any(pc.equal(col, "")).as_py():
            return None
        if not pc.all(pc.equal(pc.utf8_trim_whitespace(col), col)).as_py():
            return None
    codes = [pc.dictionary_encode(col) for col in columns]
    if len(codes[0].dictionary) != read.num_rows:
        return None
    for child, parent in zip(codes[1:-1], codes[2:], strict=True):
        # functional: each distinct (child, parent) pair has a child of its own
        up = len(parent.dictionary)
        pairs = np.unique(
            child.indices.to_numpy().astype(np.int64) * up + parent.indices.to_numpy()
        )
        if len(np.unique(pairs // up)) != len(pairs):
            return None
    table = np.empty((read.num_rows, len(columns)), dtype=object)
    for i, col in enumerate(columns):
        table[:, i] = col.to_numpy(zero_copy_only=False)
    return table


def _where(name: str, source: Path | str | None) -> str:
    """How messages name a hierarchy: by its QID, and by its file when it has one."""
    return f"hierarchy of '{name}'" + (f" in file {source}" if source is not None else "")


def _check_delimiter(where: str, rows: list[list[str]], numbers: list[int], delimiter: str) -> None:
    """A file of single cells holding ',' or tabs was written with the wrong separator: say so
    here, not later as values of the data missing from a one-level hierarchy."""
    if not rows or any(len(row) > 1 for row in rows):
        return
    for other, label, one in _OTHER_DELIMITERS:
        hits = [n for n, row in zip(numbers, rows, strict=True) if other in row[0]]
        if hits:
            raise ConfigError(
                f"{where} looks separated by {label} instead of '{delimiter}': every row is "
                f"one cell and row {hits[0]} holds {one}"
            )


def _cell_text(where: str, cell: object, row: int) -> str:
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
        f"{where}: row {row} has {what} where a value or label must be a string or a number{hint}"
    )


def _without_repeated_rows(where: str, table: np.ndarray, numbers: list[int]) -> np.ndarray:
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
                f"{where}: value '{value}' is listed twice with different labels "
                f"(rows {numbers[j]} and {numbers[i]})"
            )
        else:
            repeats.append(f"{numbers[i]} (as {numbers[j]})")
    more = ", ..." if len(repeats) > _REPEATS_LISTED else ""
    log.warning(
        "%s: %d row(s) repeat an earlier identical row and are ignored: rows %s%s",
        where,
        len(repeats),
        ", ".join(repeats[:_REPEATS_LISTED]),
        more,
    )
    return table[keep]


def hierarchy_of(item: dict, name: str, base_dir: Path | None) -> Hierarchy:
    """A QID's hierarchy as its config entry gives it: inline (`hierarchy`) or an ARX hierarchy
    file (`hierarchy_file`, relative to the config's folder)."""
    if "hierarchy" in item:
        return Hierarchy.from_mapping(name, item["hierarchy"])
    hfile = Path(str(item["hierarchy_file"]))
    if not hfile.is_absolute() and base_dir is not None:
        hfile = base_dir / hfile
    return Hierarchy.from_file(name, hfile)
