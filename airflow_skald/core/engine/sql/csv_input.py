"""CSV input in the DuckDB engine (docs/design.md §2b: "DuckDB ... also over Parquet/CSV files";
ADR 0064): DuckDB's `read_csv` configured to parse as the chunk path's reader does
(`data.io._csv_batches`: pyarrow's CSV reader), so every pass sees the same values.

- The header row names the columns (the chunk path's `column_names`); nothing is sniffed
  (`auto_detect` off, every column declared VARCHAR); the delimiter is `input.delimiter`,
  quotes are pyarrow's (`"`, doubled inside a quoted value); a row with too few or too many
  cells is an error; blank lines are skipped (both readers).
- Text is never null (the chunk path sets `strings_can_be_null=False`): DuckDB's null for an
  empty cell is read back as "".
- A numerical QID is read as a double (`encode.domain.csv_types`): pyarrow's null texts
  (`ConvertOptions().null_values`) are null, anything else is DuckDB's cast to DOUBLE, which
  reads the numbers pyarrow reads to the same double (both round correctly). A text pyarrow
  refuses, DuckDB's cast refuses too, except digits grouped by "_" (DuckDB reads `1_000`):
  both are counted as not a number where each file's rows are counted (phase 0, one scan),
  and the first such row is named, as the chunk path names it.
- A record's row in its file (the first-record order, §4c) is its place in DuckDB's scan,
  `ROW_NUMBER() OVER ()` over one file: DuckDB computes it as a streaming window in the
  order the file is read while insertion order is preserved (its default), which is the
  file's order; the code is `file << 32 | row` (ADR 0053), ordered as the chunk path's chunk
  codes are (its chunks cut the same files in the same order).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow.csv as pacsv
from sqlglot import exp

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import column_names
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.session import SqlSession
from airflow_skald.core.errors import DataError

#: pyarrow's null texts for a typed (non-text) CSV column: the chunk path's nulls
NULL_TEXTS: tuple[str, ...] = tuple(pacsv.ConvertOptions().null_values)
ROW = "file_row_number"  # `passes.ROW_COLUMN`


def _option(name: str, value: exp.Expression) -> exp.Expression:
    return exp.EQ(this=exp.var(name), expression=value)


def read_csv(files: Sequence[str], names: Sequence[str], delimiter: str) -> exp.Expression:
    """read_csv([files], ...) with every column VARCHAR, parsed as pyarrow does."""
    columns = exp.Struct(
        expressions=[exp.PropertyEQ(this=D.text(n), expression=D.text("VARCHAR")) for n in names]
    )
    args = [
        exp.Array(expressions=[D.text(f) for f in files]),
        _option("header", exp.true()),
        _option("auto_detect", exp.false()),
        _option("columns", columns),
        _option("delim", D.text(delimiter)),
        _option("quote", D.text('"')),
        _option("escape", D.text('"')),
        _option("strict_mode", exp.true()),
        _option("null_padding", exp.false()),
    ]
    return exp.Table(this=exp.Anonymous(this="read_csv", expressions=args))


def numeric_columns(config: SkaldConfig) -> list[str]:
    """The columns the chunk path reads from CSV as numbers (`csv_types`: numerical QIDs)."""
    return [q.name for q in config.quasi_identifiers if q.type == "numerical"]


def _is_null_text(text: exp.Expression) -> exp.Expression:
    return exp.In(this=text, expressions=[D.text(t) for t in NULL_TEXTS])


def _number(text: exp.Expression) -> exp.Expression:
    """A numerical QID's value: null for pyarrow's null texts, else the text as a double."""
    value = exp.TryCast(this=text, to=exp.DataType.build("DOUBLE"))
    return exp.Case(ifs=[exp.If(this=_is_null_text(text), true=exp.Null())], default=value)


def _not_a_number(text: exp.Expression) -> exp.Expression:
    """A text the chunk path's reader refuses as a number."""
    cast = exp.TryCast(this=text, to=exp.DataType.build("DOUBLE"))
    grouped = exp.GT(this=exp.StrPosition(this=text, substr=D.text("_")), expression=D.number(0))
    unreadable = exp.or_(exp.Is(this=cast, expression=exp.Null()), grouped)
    return exp.and_(exp.Not(this=_is_null_text(text)), exp.paren(unreadable))


def _text(name: str) -> exp.Expression:
    return exp.Coalesce(this=D.column(name), expressions=[D.text("")])


def csv_select(config: SkaldConfig, files: Sequence[str], rows: bool = False) -> exp.Select:
    """The input's rows as the chunk path reads them (`rows`: one file, with each row's
    number in it, 0-based, as `ROW`)."""
    names = column_names(config.input, files[0])
    numeric = set(numeric_columns(config))
    columns = [(_number(_text(n)) if n in numeric else _text(n)).as_(n) for n in names]
    if rows:
        row = exp.Sub(this=exp.Window(this=exp.RowNumber()), expression=D.number(1))
        columns.append(row.as_(ROW))
    return exp.select(*columns).from_(read_csv(files, names, config.input.delimiter))


def count_rows(session: SqlSession, config: SkaldConfig, file: str) -> int:
    """A file's records, every row parsed (a malformed row is told here, naming the file), in
    the same scan as the count of each numerical QID's texts the chunk path's reader does not
    read as numbers: refused in one line naming the file, the column and the first such row."""
    numeric = numeric_columns(config)
    names = column_names(config.input, file)
    counts = [
        exp.Sum(this=exp.If(this=_not_a_number(_text(n)), true=D.number(1), false=D.number(0)))
        for n in numeric
    ]
    select = exp.select(
        D.count_star().as_("n"), *[c.as_(f"b{i}") for i, c in enumerate(counts)]
    ).from_(read_csv([file], names, config.input.delimiter))
    try:
        found = session.query(select).to_pylist()[0]
    except DataError as exc:
        raise DataError(f"cannot read CSV file {file}: {exc}") from None
    bad = [n for i, n in enumerate(numeric) if (found[f"b{i}"] or 0) > 0]
    if bad:
        _refuse_first(session, config, file, bad)
    return int(found["n"])


def _refuse_first(session: SqlSession, config: SkaldConfig, file: str, bad: list[str]) -> None:
    """The error path: the first row of `file` where one of the `bad` columns is not a number."""
    scan = exp.Subquery(this=csv_rows(config, file), alias=exp.TableAlias(this=D.name("f")))
    firsts = [
        exp.Min(this=exp.If(this=_not_a_number(D.column(n)), true=D.column(ROW))).as_(f"r{i}")
        for i, n in enumerate(bad)
    ]
    row = session.query(exp.select(*firsts).from_(scan)).to_pylist()[0]
    rows = {n: int(row[f"r{i}"]) for i, n in enumerate(bad)}
    order = column_names(config.input, file)
    name = min(rows, key=lambda n: (rows[n], order.index(n)))  # the first row, then column
    raise DataError(
        f"cannot read CSV file {file}: column '{name}' holds text that is not a number at "
        f"row {rows[name] + 1}"
    )


def csv_rows(config: SkaldConfig, file: str) -> exp.Select:
    """One file's cells as text (empty for DuckDB's null) and each row's number."""
    names = column_names(config.input, file)
    row = exp.Sub(this=exp.Window(this=exp.RowNumber()), expression=D.number(1))
    columns = [_text(n).as_(n) for n in names]
    return exp.select(*columns, row.as_(ROW)).from_(read_csv([file], names, config.input.delimiter))
