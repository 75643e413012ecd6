"""What the PostgreSQL engine checks in the database itself (docs/design.md §2a, §2b, ADR 0061):
the privileges the run needs, before any pass (one line naming the missing one); the input's
row count and version (the manifest's input identity, computed by the engine: no row
crosses); the pseudonymised columns of the table it wrote (as `skald verify` checks a part's,
`transform.pseudonyms.verify`, counted by the engine; `skald verify` of a table release too,
ADR 0070)."""

from __future__ import annotations

import hashlib

from sqlglot import exp

from airflow_skald.core.data.database.target import TableTarget
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.session import SqlSession
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.transform.pseudonyms import Pseudonyms
from airflow_skald.core.transform.pseudonyms.hashing import PSEUDONYM_CHARS


def _f(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def check_privileges(session: SqlSession, table: str | None, target: TableTarget) -> None:
    """The session's role may read the input table (a query's tables: when its view is
    made), make temporary tables (the worker's mapping tables) and create the new table in
    the output's schema; else DataError, one line naming what is missing, before any work."""
    schema_exists = _f("to_regnamespace", D.text(target.schema))
    needs = (
        []
        if table is None
        else [(_f("has_table_privilege", D.text(table), D.text("SELECT")), f"SELECT on {table}")]
    )
    needs += [
        (
            _f("has_database_privilege", _f("current_database"), D.text("TEMPORARY")),
            "TEMPORARY on the database (its temporary tables hold the mapping tables)",
        ),
        (
            exp.And(
                this=exp.Not(this=exp.Is(this=schema_exists, expression=exp.Null())),
                expression=_f("has_schema_privilege", D.text(target.schema), D.text("CREATE")),
            ),
            f"CREATE on schema {target.schema} (the release's new table)",
        ),
    ]
    select = exp.select(*[check.as_(f"p{i}") for i, (check, _) in enumerate(needs)])
    row = session.query(select).to_pylist()[0]
    for i, (_, what) in enumerate(needs):
        if not row[f"p{i}"]:
            raise DataError(
                f"execution.engine postgresql: the connection's role lacks {what}; grant it "
                "or use execution: chunks"
            )


def fingerprint(session: SqlSession, source: SqlInput, table: exp.Table | None) -> tuple[int, str]:
    """The input's row count and its version, computed by the engine in one scan, as
    `io.file_version` gives a file's (size, modification): the table's storage
    (`pg_relation_filenode`: a TRUNCATE, VACUUM FULL or rewrite changes it), its rows and the
    newest transaction that wrote a row (`max(xmin)`: an insert or update moves it, a delete
    the count). A relation without row versions (a view, a foreign table, a query: `table`
    None) is fingerprinted by its content: the sum of each row's 64-bit text hash
    (`hashtextextended`), slower."""
    stored = table is not None and _stored(session, table)
    if stored:
        newest = exp.Max(this=exp.cast(exp.cast(D.column("xmin"), "TEXT"), "BIGINT"))
        node = _f("pg_relation_filenode", _f("to_regclass", D.text(_regclass(table))))
        what = exp.Concat(
            expressions=[exp.cast(newest, "TEXT"), D.text("@"), exp.cast(node, "TEXT")]
        )
        relation: exp.Expression = table
    else:
        row = exp.cast(exp.column(D.name("r")), "TEXT")
        hashed = exp.cast(_f("hashtextextended", row, D.number(0)), "NUMERIC")
        what = exp.cast(exp.Sum(this=hashed), "TEXT")
        relation = exp.alias_(D.table(source.relation), "r")
    select = exp.select(D.count_star().as_("n"), what.as_("h")).from_(relation)
    found = session.query(select).to_pylist()[0]
    n = int(found["n"])
    body = f"{source.where}:{n}:{found['h']}"
    label = "pgversion:" if stored else "pgsum:"
    return n, label + hashlib.sha256(body.encode()).hexdigest()


def _regclass(table: exp.Table) -> str:
    return ".".join(f'"{p}"' for p in (table.db, table.name) if p)


def _stored(session: SqlSession, table: exp.Table) -> bool:
    """Whether `table` keeps row versions (a table, partitioned or not, a materialised view)."""
    kind = _f("to_regclass", D.text(_regclass(table)))
    select = (
        exp.select(D.column("relkind"))
        .from_(exp.to_table("pg_catalog.pg_class"))
        .where(exp.EQ(this=D.column("oid"), expression=kind))
    )
    found = session.query(select).column("relkind").to_pylist()
    return bool(found) and found[0] in ("r", "p", "m")


def pseudonyms_well_formed(session: SqlSession, table: exp.Table, config, label: str) -> None:
    """Every pseudonymised column of the written table holds 64 lowercase hex digits (or
    null): counted by the engine, VerificationError naming the column otherwise."""
    pseudonyms = config.transformation(Pseudonyms)
    bad = not_pseudonyms(session, table, pseudonyms.names if pseudonyms else ())
    if bad is not None:
        raise VerificationError(
            f"column '{bad}' in table {label} holds a value that is not a pseudonym"
        )


def not_pseudonyms(session: SqlSession, table: exp.Table, names, empty: bool = False) -> str | None:
    """The first of `names` whose column in `table` holds a value other than 64 lowercase
    hex digits or null (`empty`: or ''), counted by the engine (`COUNT(*)` of the rows the
    pattern refuses: no value crosses); None when every column holds pseudonyms only."""
    digits = f"[0-9a-f]{{{PSEUDONYM_CHARS}}}"
    pattern = D.text(f"^({digits})?$" if empty else f"^{digits}$")
    for name in names:
        bad = exp.Not(this=exp.RegexpLike(this=D.column(name), expression=pattern))
        select = exp.select(D.count_star().as_("n")).from_(table).where(bad)
        if int(session.query(select).column("n")[0].as_py()):
            return name
    return None
