"""The Spark engine's input (docs/design.md §2b, ADR 0056, ADR 0077): Parquet as stored, or CSV
parsed as the chunk path's reader parses it (`data.io._csv_batches`: pyarrow's CSV reader,
numerical QIDs as doubles, every other column text), as temporary views the passes read.

CSV: Spark's CSV reader with an explicit schema of text columns (nothing inferred), the header
row skipped (its names are pyarrow's, `column_names`), `input.delimiter`, `"` quotes doubled
inside a quoted value (Spark's escape set to the quote), a row with too few or too many cells
an error (`FAILFAST`), blank lines skipped (both readers). Text is never null (the chunk path's
`strings_can_be_null=False`): an empty cell reads as "". A numerical QID's cell is pyarrow's:
an unquoted empty cell or one of pyarrow's null texts is null; anything else, trimmed of spaces
and tabs, must match pyarrow's number grammar (`NUMBER`: digits with an optional point and
exponent, inf/infinity/nan in any case, a sign) and is Spark's cast to DOUBLE (both round
correctly); a text outside the grammar is refused as the chunk path refuses it (phase 0, one
scan counting every file's rows), naming the file, the column and the first such row. Spark's
own cast reads more (`1d`, `0x1p3`, `1_000`): the grammar, not the cast, decides. A quoted
empty cell is told apart (Spark's `emptyValue` set to `QUOTED_EMPTY`): "" in text, refused in
a number, as pyarrow. Left as DuckDB's engine leaves it: a quoted null text ("NA") in a
numerical QID is null here, refused by the chunk path (Spark, as DuckDB, does not tell which
cells were quoted).

A record's row in its file (the first-record order, §4c, and the utility analysis's sample):
Parquet's `_metadata.row_index`; CSV's from Spark's scan, which reads each file split by split
(`_metadata.file_block_start`) and numbers a task's rows in order (`monotonically_increasing_id`):
a row's number is the rows of its file's earlier splits plus its place in its split. Several
files are one view as a UNION ALL of one scan per file, each with its index in the input
(`FILE`), so no file path is ever matched as text."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.csv_errors import _locate_csv_problem
from airflow_skald.core.data.io import column_names
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.csv_input import NULL_TEXTS, numeric_columns
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.spark_session import SparkSqlSession
from airflow_skald.core.errors import DataError

ROW = "file_row_number"  # `passes.ROW_COLUMN`
FILE = "skald_file"  # a row's file: its index in the view's files
_SPLIT, _ID = "skald_split", "skald_id"
#: what Spark reads a quoted empty cell as (an unquoted one is null); never a real cell's text
QUOTED_EMPTY = "\x01skald:quoted-empty\x01"
#: pyarrow's number texts (after trimming spaces and tabs), as a Java regular expression
NUMBER = "^[+-]?(([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))$"
_NAN = "^[+-]?(?i:nan)$"
_INF = "^[+]?(?i:inf|infinity)$"
_MINUS_INF = "^-(?i:inf|infinity)$"


def _reader(session: SparkSqlSession, config: SkaldConfig, files: Sequence[str]) -> Any:
    """CSV files' cells as text, as Spark parses them with pyarrow's options (the header row
    of each file skipped)."""
    from pyspark.sql.types import StringType, StructField, StructType

    names = column_names(config.input, files[0])
    schema = StructType([StructField(n, StringType()) for n in names])
    options = {
        "header": True,
        "sep": config.input.delimiter,
        "quote": '"',
        "escape": '"',
        "mode": "FAILFAST",
        "emptyValue": QUOTED_EMPTY,
        "encoding": "UTF-8",
        "multiLine": False,
    }
    return session.spark.read.schema(schema).options(**options).csv(list(files))


def _frame(session: SparkSqlSession, config: SkaldConfig, files: Sequence[str]) -> Any:
    if config.input.format == "csv":
        return _reader(session, config, files)
    return session.spark.read.parquet(*files)


def _raw(session: SparkSqlSession, config: SkaldConfig, files: Sequence[str], rows: bool) -> str:
    """The files' rows as a temporary view: one scan of them all, or (`rows`) a UNION ALL of
    one scan per file, each row with its file's index (`FILE`) and its row in the file
    (Parquet: `ROW`) or its split and place in its task (CSV: see `_numbered`)."""
    if not rows:
        return session.name(_frame(session, config, files), "raw")
    if config.input.format == "csv":
        extra = [
            f"_metadata.file_block_start AS {_SPLIT}",
            f"monotonically_increasing_id() AS {_ID}",
        ]
    else:
        extra = [f"_metadata.row_index AS {ROW}"]
    whole = None
    for i, f in enumerate(files):
        frame = _frame(session, config, [f]).selectExpr("*", f"{i} AS {FILE}", *extra)
        whole = frame if whole is None else whole.unionByName(frame)
    return session.name(whole, "raw")


def _trimmed(cell: exp.Expression) -> exp.Expression:
    return exp.RegexpReplace(
        this=cell, expression=D.text("^[ \t]+|[ \t]+$"), replacement=D.text("")
    )


def _null_number(cell: exp.Expression) -> exp.Expression:
    """A cell pyarrow reads as a null number: an unquoted empty cell or a null text."""
    return exp.or_(
        exp.Is(this=cell, expression=exp.Null()),
        exp.In(this=cell, expressions=[D.text(t) for t in NULL_TEXTS]),
    )


def _like(cell: exp.Expression, pattern: str) -> exp.Expression:
    return exp.RegexpLike(this=cell, expression=D.text(pattern))


def not_a_number(cell: exp.Expression) -> exp.Expression:
    """A cell of a numerical QID the chunk path's reader refuses."""
    unreadable = exp.Not(this=_like(_trimmed(cell), NUMBER))
    return exp.and_(exp.Not(this=exp.paren(_null_number(cell))), unreadable)


def _number(cell: exp.Expression) -> exp.Expression:
    """A numerical QID's value as pyarrow reads it (a cell outside the grammar was refused)."""
    text = _trimmed(cell)
    special = [
        (_NAN, "NaN"),
        (_INF, "Infinity"),
        (_MINUS_INF, "-Infinity"),
    ]
    ifs = [exp.If(this=_null_number(cell), true=exp.Null())]
    ifs += [exp.If(this=_like(text, p), true=D.double(float(v))) for p, v in special]
    return exp.Case(ifs=ifs, default=exp.TryCast(this=text, to=exp.DataType.build("DOUBLE")))


def _text(cell: exp.Expression) -> exp.Expression:
    """A text cell as the chunk path reads it: never null, a quoted empty cell ""."""
    empty = exp.or_(
        exp.Is(this=cell, expression=exp.Null()), exp.EQ(this=cell, expression=D.text(QUOTED_EMPTY))
    )
    return exp.Case(ifs=[exp.If(this=empty, true=D.text(""))], default=cell)


def _numbered(raw: str, columns: list[exp.Expression]) -> exp.Select:
    """`columns` of the CSV view `raw` with each row's number in its file (`ROW`) and the file
    (`FILE`): the rows of the file's earlier splits plus the row's place in its split."""
    split, ident = D.column(_SPLIT), D.column(_ID)
    earlier = exp.Window(
        this=exp.Sum(this=D.count_star()),
        partition_by=[D.column(FILE)],
        order=exp.Order(expressions=[exp.Ordered(this=split)]),
    )
    splits = (
        exp.select(
            D.column(FILE),
            split,
            exp.Min(this=ident).as_("first_id"),
            exp.Sub(this=earlier, expression=D.count_star()).as_("before"),
        )
        .from_(D.table(raw))
        .group_by(D.column(FILE), split)
    )
    row = D.total([D.column("before", "s"), D.column(_ID, "r")])
    row = exp.Sub(this=row, expression=D.column("first_id", "s"))
    return (
        exp.select(*columns, row.as_(ROW), D.column(FILE, "r").as_(FILE))
        .from_(exp.alias_(D.table(raw), "r"))
        .join(exp.alias_(exp.Subquery(this=splits), "s"), using=[FILE, _SPLIT], join_type="inner")
    )


def input_select(
    session: SparkSqlSession, config: SkaldConfig, files: Sequence[str], rows: bool = False
) -> exp.Select:
    """The rows of `files` as the chunk path reads them (`rows`: with each row's number in its
    file, `ROW`, and its file's index in `files`, `FILE`)."""
    raw = _raw(session, config, files, rows)
    if config.input.format != "csv":
        return exp.select(exp.Star()).from_(D.table(raw))
    names = column_names(config.input, files[0])
    numeric = set(numeric_columns(config))
    columns = [
        (_number(D.column(n, "r")) if n in numeric else _text(D.column(n, "r"))).as_(n)
        for n in names
    ]
    if rows:
        return _numbered(raw, columns)
    return exp.select(*columns).from_(exp.alias_(D.table(raw), "r"))


def view(
    session: SparkSqlSession,
    config: SkaldConfig,
    files: Sequence[str],
    rows: bool = False,
    schema: pa.Schema | None = None,
) -> SqlInput:
    """A temporary view of `input_select`, as the passes' input (`schema`: its Arrow schema
    when known, e.g. one file's view of a whole input's; else asked of Spark)."""
    relation = session.view(input_select(session, config, files, rows), "input")
    if schema is None:
        schema = session.query(exp.select(exp.Star()).from_(D.table(relation)).limit(0)).schema
    where = f"file {files[0]}" if len(files) == 1 else f"the {len(files)} input files"
    return SqlInput(relation, schema, where)


def count_csv_rows(
    session: SparkSqlSession, config: SkaldConfig, files: Sequence[str]
) -> list[int]:
    """Each CSV file's records, every row parsed (a malformed row refused naming Spark), in one
    scan with the count of each numerical QID's cells the chunk path's reader does not read as
    numbers: refused in one line naming the file, the column and the first such row."""
    numeric = numeric_columns(config)
    raw = _raw(session, config, files, rows=True)
    flags = [
        exp.Sum(this=exp.If(this=not_a_number(D.column(n)), true=D.number(1), false=D.number(0)))
        for n in numeric
    ]
    select = (
        exp.select(
            D.column(FILE), D.count_star().as_("n"), *[c.as_(f"b{i}") for i, c in enumerate(flags)]
        )
        .from_(D.table(raw))
        .group_by(D.column(FILE))
    )
    with _malformed(config, files):
        found = {r[FILE]: r for r in session.query(select).to_pylist()}
    for i, f in enumerate(files):
        bad = [n for j, n in enumerate(numeric) if (found.get(i, {}).get(f"b{j}") or 0) > 0]
        if bad:
            _refuse_first(session, config, f, bad)
    return [int(found[i]["n"]) if i in found else 0 for i in range(len(files))]


def _spark_errors() -> tuple[type[BaseException], ...]:
    from pyspark.errors import PySparkException

    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:  # a Spark Connect client without py4j
        return (PySparkException,)
    return (PySparkException, Py4JJavaError)


@contextlib.contextmanager
def _malformed(config: SkaldConfig, files: Sequence[str]) -> Iterator[None]:
    """Spark's refusal of a malformed CSV row as the chunk path's one line, naming the file and
    the row (found by the chunk path's slow re-read on this error path; Spark's own message
    quotes the row, so it is not repeated)."""
    try:
        yield
    except _spark_errors():
        for f in files:
            row, _ = _locate_csv_problem(config.input, f, None)
            if row is not None:
                raise DataError(f"cannot read CSV file {f}: malformed CSV at row {row}") from None
        raise DataError(f"cannot read CSV files in {config.input.path}: malformed CSV") from None


def _refuse_first(session: SparkSqlSession, config: SkaldConfig, file: str, bad: list[str]) -> None:
    """The error path: the first row of `file` where one of the `bad` columns is not a number."""
    raw = _raw(session, config, [file], rows=True)
    order = column_names(config.input, file)
    scan = exp.Subquery(this=_numbered(raw, [D.column(n, "r").as_(n) for n in order]))
    firsts = [
        exp.Min(
            this=exp.If(this=not_a_number(D.column(n)), true=D.column(ROW), false=exp.Null())
        ).as_(f"r{i}")
        for i, n in enumerate(bad)
    ]
    row = session.query(exp.select(*firsts).from_(exp.alias_(scan, "f"))).to_pylist()[0]
    rows = {n: int(row[f"r{i}"]) for i, n in enumerate(bad)}
    name = min(rows, key=lambda n: (rows[n], order.index(n)))  # the first row, then column
    raise DataError(
        f"cannot read CSV file {file}: column '{name}' holds text that is not a number at "
        f"row {rows[name] + 1}"
    )
