"""CSV read errors told without the data: pyarrow's messages quote the offending row or
value, so only where (row, column) is kept, found by a slow re-read on the error path."""

from __future__ import annotations

import re

import fsspec

from airflow_skald.core.data.location import DataLocation


def safe_csv_error(
    exc: Exception, location: DataLocation | None = None, file: str | None = None
) -> str:
    """pyarrow's CSV errors quote the offending row or value: keep only where, never what."""
    msg = str(exc)
    m = re.search(r"Expected (\d+) columns, got (\d+)", msg)
    found = re.search(r"[Rr]ow #(\d+)", msg)
    row = found.group(1) if found else None
    col = re.search(r"In CSV column #(\d+)", msg)
    conversion = bool(col and "conversion error" in msg)
    utf8 = conversion and "UTF8" in msg
    name = None
    if row is None and (m or conversion) and location is not None and file is not None:
        index = int(col.group(1)) if conversion else None
        bad = (lambda t: "\ufffd" in t) if utf8 else (lambda t: not _is_number(t))
        n, name = _locate_csv_problem(location, file, index, bad)
        row = None if n is None else str(n)
    where = f" at row {row}" if row else ""
    if m:
        ragged = f"ragged row {row}" if row else "ragged row"
        return f"{ragged}: expected {m.group(1)} columns, got {m.group(2)}"
    if conversion:
        column = f"column '{name}'" if name else f"column #{col.group(1)}"
        if utf8:
            return f"{column} holds text that is not valid UTF-8{where}"
        return f"{column} holds text that is not a number{where}"
    if "Empty CSV file" in msg or "empty" in msg.lower():
        return "the file is empty"
    return "malformed CSV" + where


_ARROW_NULLS = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND"}
_ARROW_NULLS |= {"1.#QNAN", "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null"}


def _locate_csv_problem(
    location: DataLocation, file: str, col_index: int | None, bad=None
) -> tuple[int | None, str | None]:
    """Error path only: re-read the file slowly to find the 1-based data row that is ragged
    (col_index None) or whose column col_index holds a `bad` text, and that column's name."""
    import csv

    name = None
    try:
        with fsspec.open(file, "rt", encoding="utf-8", errors="replace", newline="") as fh:
            reader = csv.reader(fh, delimiter=location.delimiter)
            header = next(reader, None) or []
            if col_index is not None and col_index < len(header):
                name = header[col_index]
            row = 0
            for record in reader:
                if not record:
                    continue
                row += 1
                if col_index is None:
                    if len(record) != len(header):
                        return row, name
                elif col_index < len(record) and bad(record[col_index]):
                    return row, name
    except (OSError, csv.Error, UnicodeError):
        pass
    return None, name


def _is_number(text: str) -> bool:
    if text.strip() in _ARROW_NULLS:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True
