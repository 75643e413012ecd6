"""`skald verify` of a table release from counts PostgreSQL computes (docs/design.md §2a, §2b,
ADR 0070): in one read-only snapshot, the table's state (its comment: the release it holds),
its column names, its class table (`GROUP BY` of the released QID columns and the criteria's
attributes, with counts: `engine.sql.release.grouped_release`) and, per pseudonymised column,
the count of values that are not pseudonyms. No row crosses to the worker; what crosses is
bounded by the release's classes, as the engine's own release check (ADR 0061)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp

from airflow_skald.core.data.database.release_table import TableState, failure, state_of
from airflow_skald.core.data.database.target import TableTarget
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.release.count.classes import ReleaseClasses


@dataclass(frozen=True)
class TableCounts:
    """What `skald verify` reads of a table release: its state, and (when it exists) its
    columns, its classes and the first pseudonymised column holding a non-pseudonym."""

    state: TableState
    columns: list[str]
    classes: ReleaseClasses | None = None
    not_pseudonym: str | None = None


def count_table(
    uri: str,
    target: TableTarget,
    qids: Sequence[str],
    attributes: Sequence[str],
    pseudonymised: Sequence[str],
) -> TableCounts:
    """The table's `TableCounts` from one REPEATABLE READ snapshot (a swap committed
    meanwhile is not half seen); DataError naming the table for a column it lacks or a
    driver's failure (one line, no password)."""
    from airflow_skald.core.engine.sql.postgres_session import PostgresSession

    label = f"output table {target.qualified}"
    try:
        session = PostgresSession(uri)
    except Exception as exc:
        raise failure(exc, uri, f"cannot read {label}") from None
    try:
        with session.db.cursor() as cur:
            cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            state = state_of(cur, target)
        if not state.exists:
            return TableCounts(state, [])
        return _counted(session, state, target, [*qids], [*attributes], pseudonymised)
    except (DataError, VerificationError):
        raise
    except Exception as exc:
        raise failure(exc, uri, f"cannot read {label}") from None
    finally:
        session.close()  # the snapshot's transaction ends with the connection


def _counted(
    session,
    state: TableState,
    target: TableTarget,
    qids: list[str],
    attributes: list[str],
    pseudonymised: Sequence[str],
) -> TableCounts:
    from airflow_skald.core.engine.sql.release import classes_of, grouped_release
    from airflow_skald.core.engine.sql.table_checks import not_pseudonyms

    table = D.table(target.name, target.schema)
    columns = session.query(exp.select(exp.Star()).from_(table).limit(0)).schema.names
    missing = [c for c in (*qids, *attributes) if c not in columns]
    if missing:
        raise DataError(f"output table {target.qualified} has no column '{missing[0]}'")
    grouped = session.query(grouped_release(table, [*qids, *attributes]))
    classes = classes_of(grouped, qids, attributes)
    present = [c for c in pseudonymised if c in columns]
    return TableCounts(state, columns, classes, not_pseudonyms(session, table, present, True))
