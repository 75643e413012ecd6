"""What the SQL passes need of an engine's connection (`SqlSession`): run a statement built
as a sqlglot expression (values as bind parameters), fetch a small result as Arrow, and send
the worker's small tables (mapping tables, suppressed classes) as temporary tables. Every
temporary table a session made is dropped by `close`, whatever happened."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Protocol

import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.engine.sql import dialect as D

_names = itertools.count()


class SqlSession(Protocol):
    dialect: str
    #: the temporary tables this session created, dropped by `close`
    temporaries: list[str]

    def query(self, statement: exp.Expression, params: Sequence = ()) -> pa.Table: ...

    def execute(self, statement: exp.Expression, params: Sequence = ()) -> None: ...

    def send(self, prefix: str, table: pa.Table) -> str:
        """`table` as a new temporary table in the engine; returns its name."""
        ...

    def create(self, select: exp.Select, prefix: str) -> str:
        """The rows of `select` as a new temporary table in the engine (nothing crosses)."""
        ...

    def view(self, select: exp.Select, prefix: str) -> str:
        """`select` as a new temporary view in the engine (nothing is computed until read)."""
        ...

    def close(self) -> None: ...


def temporary_name(prefix: str) -> str:
    """A fresh temporary table name (a fixed prefix and a counter: no input text in it)."""
    return f"skald_{prefix}_{next(_names)}"


def create_temporary(name: str, select: exp.Expression) -> exp.Expression:
    """CREATE TEMPORARY TABLE name AS select."""
    create = exp.Create(this=D.table(name), kind="TABLE", expression=select)
    create.set("properties", exp.Properties(expressions=[exp.TemporaryProperty()]))
    return create


def drop(name: str) -> exp.Expression:
    return exp.Drop(tables=[D.table(name)], kind="TABLE", exists=True)
