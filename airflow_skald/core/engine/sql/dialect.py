"""The SQL the engines run, built as sqlglot expressions and written per dialect by name
(docs/design.md §2b): identifiers are quoted by sqlglot, values are bind parameters or
literals sqlglot writes; no name is pasted into a string."""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

#: the dialects the SQL layer writes (sqlglot's names); duckdb and postgres run here
DIALECTS: tuple[str, ...] = (
    "duckdb",
    "postgres",
    "spark",
    "trino",
    "snowflake",
    "bigquery",
    "databricks",
)


def render(expression: exp.Expression, dialect: str) -> str:
    """One statement's text in `dialect`, every identifier quoted."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown SQL dialect '{dialect}' (one of {', '.join(DIALECTS)})")
    if dialect == "postgres":
        expression = expression.transform(_postgres)
    return expression.sql(dialect=dialect, identify=True)


def _postgres(node: exp.Expression) -> exp.Expression:
    """PostgreSQL has no isnan() (its NaN equals itself); its DIV() is NUMERIC's (each row's
    operands converted, ~5x the CPU of a scan, ADR 0061): `int_div`'s non-negative integer
    expression divided as a BIGINT, which truncates as DIV does."""
    if isinstance(node, exp.IsNan):
        nan = exp.cast(exp.Literal.string("NaN"), exp.DataType.build("DOUBLE"))
        return exp.EQ(this=node.this, expression=nan)
    if isinstance(node, exp.IntDiv):
        return exp.Div(this=bigint(node.this), expression=node.expression, typed=True)
    return node


def name(identifier: str) -> exp.Identifier:
    return exp.to_identifier(identifier, quoted=True)


def column(identifier: str, table: str | None = None) -> exp.Column:
    return exp.column(name(identifier), table=name(table) if table else None)


def table(identifier: str, schema: str | None = None) -> exp.Table:
    """A table (in `schema`, when given), each part quoted."""
    return exp.Table(this=name(identifier), db=name(schema) if schema else None)


def number(value: int) -> exp.Literal:
    return exp.Literal.number(int(value))


def double(value: float) -> exp.Expression:
    """A double as its shortest round-trip text, cast (not a decimal literal)."""
    return exp.cast(exp.Literal.string(repr(float(value))), exp.DataType.build("DOUBLE"))


def bigint(expression: exp.Expression) -> exp.Expression:
    return exp.cast(expression, exp.DataType.build("BIGINT"))


def text(value: str) -> exp.Literal:
    return exp.Literal.string(value)


def count_star() -> exp.Expression:
    return exp.Count(this=exp.Star())


def total(terms: Sequence[exp.Expression]) -> exp.Expression:
    """terms[0] + terms[1] + ... (0 for none)."""
    if not terms:
        return number(0)
    out = terms[0]
    for t in terms[1:]:
        out = exp.Add(this=out, expression=t)
    return out


def times(expression: exp.Expression, factor: int) -> exp.Expression:
    if factor == 1:
        return expression
    return exp.Mul(this=expression, expression=number(factor))


def int_div(expression: exp.Expression, divisor: int) -> exp.Expression:
    """Floor division of a non-negative integer expression."""
    if divisor == 1:
        return expression
    return exp.IntDiv(this=expression, expression=number(divisor))


def paren(expression: exp.Expression) -> exp.Paren:
    return exp.Paren(this=expression)
