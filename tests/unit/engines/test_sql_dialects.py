"""The engine path's SQL is built by sqlglot and written per dialect by name (docs/design.md
§2b): every statement the passes run over a small table in DuckDB, written again for
PostgreSQL, Spark, Trino, Snowflake, BigQuery and Databricks, parses back in that dialect to
the same statement; identifiers are quoted (a column name holding a quote stays one name)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot
from sqlglot import exp

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql import passes
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.duckdb_session import DuckDBSession
from airflow_skald.core.passes import pipeline as P
from airflow_skald.core.transform.local_recoding import LocalRecoding

ODD = 'ci"ty; DROP'  # a column name that would break SQL pasted into a string


class Recording(DuckDBSession):
    """A real DuckDB session that also keeps every statement it ran."""

    def __init__(self):
        super().__init__(1)
        self.statements: list[exp.Expression] = []

    def query(self, statement, params=()):
        self.statements.append(statement)
        return super().query(statement, params)

    def execute(self, statement, params=()):
        self.statements.append(statement)
        return super().execute(statement, params)


@pytest.fixture(scope="module")
def statements(tmp_path_factory) -> list[exp.Expression]:
    folder = tmp_path_factory.mktemp("dialects")
    rng = np.random.default_rng(3)
    n = 120
    table = pa.table(
        {
            ODD: [["a", "b", "c"][j] for j in rng.integers(0, 3, n)],
            "age": pa.array(rng.integers(20, 60, n), pa.int64()),
            "w": pa.array(rng.integers(0, 40, n) / 4, pa.float64()),
            "s": [["x", "y", None][j] for j in rng.integers(0, 3, n)],
        }
    )
    pq.write_table(table, folder / "in.parquet")
    raw = {
        "input": {"path": str(folder / "in.parquet"), "format": "parquet"},
        "output": {"path": str(folder / "out"), "format": "parquet"},
        "quasi_identifiers": [
            {
                "name": ODD,
                "type": "categorical",
                "hierarchy": {"a": ["ab"], "b": ["ab"], "c": ["c"]},
            },
            {"name": "age", "type": "numerical", "min_width": 1},
            {"name": "w", "type": "numerical", "min_width": 0.25},
        ],
        "sensitive_attributes": ["s"],
        "privacy": {
            "k": 2,
            "l_diversity": [{"attribute": "s", "l": 2}],
            "suppression_limit": 0.1,
        },
        "memory": {"histogram_bins": 300, "root": "adaptive"},
    }
    cfg = config_from_dict(raw)
    session = Recording()
    view = exp.Create(
        this=D.table("skald_input"),
        kind="VIEW",
        expression=exp.select(exp.Star()).from_(D.table("t")),
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )
    session.db.register("t", table)
    session.execute(view)
    source = SqlInput("skald_input", table.schema, "the input")
    chunks = P.list_chunks(cfg)
    stats = passes.domain_stats(session, source, cfg, chunks)
    plan = P.plan_root(cfg, stats)
    counts = passes.histogram(session, source, cfg, plan)
    plan = plan.with_root(counts.node, counts.bounded_bins)
    decision = P.search_lattice(cfg, plan, counts)
    passes.write_parts(
        session, source, [("p", source)], cfg, plan, decision, lambda s, _: session.query(s)
    )
    # local recoding's release: each row at its step's node (the step tables, ADR 0063)
    recoding = replace(cfg, transformations=(*cfg.transformations, LocalRecoding(Fraction(1, 100))))
    recoded = P.search_lattice(recoding, plan, counts)
    assert recoded.steps
    passes.write_parts(
        session, source, [("p", source)], recoding, plan, recoded, lambda s, _: session.query(s)
    )
    # a research subset given by keys (ADR 0068): the flag's view, the subset's counts and rows
    keys = {"age": pa.array(range(20, 40), pa.int64()), ODD: ["a", "b"] * 10}
    pq.write_table(pa.table(keys), folder / "keys.parquet")
    keyed = config_from_dict(
        {
            **raw,
            "research_subset": {"path": str(folder / "keys.parquet"), "key": ["age", ODD]},
            "privacy": {
                "k": 2,
                "delta_presence": {"min": 0.0, "max": 1.0},
                "l_diversity": [{"attribute": "s", "l": 2}],
                "suppression_limit": 0.1,
            },
        }
    )
    stats = passes.domain_stats(session, source, keyed, chunks)
    plan = P.plan_root(keyed, stats)
    counts = passes.histogram(session, source, keyed, plan)
    plan = plan.with_root(counts.node, counts.bounded_bins)
    decision = P.search_lattice(keyed, plan, counts)
    passes.write_parts(
        session, source, [("p", source)], keyed, plan, decision, lambda s, _: session.query(s)
    )
    session.close()
    return session.statements


@pytest.mark.parametrize("dialect", D.DIALECTS)
def test_every_statement_is_written_and_parsed_back_in_each_dialect(statements, dialect):
    kinds = {type(s).__name__ for s in statements}
    assert {"Select", "Create", "Drop"} <= kinds
    assert any(s.find(exp.DPipe) for s in statements)  # a subset keyed by two columns (ADR 0068)
    for statement in statements:
        text = D.render(statement, dialect)
        again = sqlglot.parse_one(text, read=dialect)
        assert D.render(again, dialect) == text
        for column in statement.find_all(exp.Column):
            if column.name == ODD:  # quoted as one identifier, never pasted
                assert ODD not in text.replace(D.render(D.column(ODD), dialect), "")


def test_an_unknown_dialect_is_refused():
    with pytest.raises(ValueError, match="unknown SQL dialect"):
        D.render(exp.select(D.number(1)), "oracle9")


def test_a_duckdb_error_is_one_line_naming_duckdb():
    from airflow_skald.core.errors import DataError

    session = DuckDBSession(1)
    try:
        with pytest.raises(DataError) as err:
            session.query(exp.select(exp.cast(D.text("not a number"), exp.DataType.build("INT"))))
    finally:
        session.close()
    assert str(err.value).startswith("DuckDB: ") and "\n" not in str(err.value)
