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


class TemporaryRelations:
    """The temporary tables and views a session makes by SQL, dropped by `drop_temporaries`
    (views first, the last made first: a view before the views it reads): what the DuckDB and
    PostgreSQL sessions share. A subclass runs statements by `execute`."""

    def __init__(self) -> None:
        self.temporaries: list[str] = []
        self.views: list[str] = []

    def execute(self, statement: exp.Expression, params: Sequence = ()) -> None:
        raise NotImplementedError

    def create(self, select: exp.Select, prefix: str) -> str:
        """The rows of `select` as a new temporary table in the engine (nothing crosses)."""
        name = temporary_name(prefix)
        self.temporaries.append(name)
        self.execute(create_temporary(name, select))
        return name

    def view(self, select: exp.Select, prefix: str) -> str:
        """`select` as a new temporary view (a name the passes read as their relation)."""
        name = temporary_name(prefix)
        self.views.append(name)
        view = exp.Create(this=D.table(name), kind="VIEW", expression=select)
        view.set("properties", exp.Properties(expressions=[exp.TemporaryProperty()]))
        self.execute(view)
        return name

    def drop_temporaries(self) -> None:
        for name in reversed(self.views):
            self.execute(exp.Drop(tables=[D.table(name)], kind="VIEW", exists=True))
        for name in self.temporaries:
            self.execute(drop(name))
        self.views.clear()
        self.temporaries.clear()


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
