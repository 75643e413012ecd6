"""`skald verify` of a table release from counts PostgreSQL computes (docs/design.md §2a, §2b,
ADR 0070; `verify_table_release`, which the CLI calls): in one read-only snapshot, the table's state (its comment: the release it holds),
its column names, its class table (`GROUP BY` of the released QID columns and the criteria's
attributes, with counts: `engine.sql.release.grouped_release`) and, per pseudonymised column,
the count of values that are not pseudonyms. No row crosses to the worker; what crosses is
bounded by the release's classes, as the engine's own release check (ADR 0061)."""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from airflow_skald.core.data.database.release_table import TableState, failure, state_of
from airflow_skald.core.data.database.target import TableTarget
from airflow_skald.core.data.io import filesystem
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.release.check.release_reading import read_manifest
from airflow_skald.core.release.check.verify import counted_columns, verify_release
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.table_release import is_table_release, naming_table, table_label
from airflow_skald.core.release.write.commit import MANIFEST


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
    from airflow_skald.core.engine.sql.grouped_classes import classes_of
    from airflow_skald.core.engine.sql.release import grouped_release
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


def verify_table_release(
    folder: str,
    resolve: Callable[[str], str],
    k: int | None = None,
    suppression_limit: Fraction | float | str | None = None,
    qids: list[str] | None = None,
    connection: str | None = None,
) -> dict:
    """`skald verify FOLDER` of a table release: the table's comment names the manifest in
    `folder` (its SHA-256), and the table passes every check of a folder release, judged
    from counts PostgreSQL computes (`count_table`, ADR 0070: no row crosses).
    `connection` (a URI or variable name) overrides the manifest's connection name."""
    manifest = read_manifest(folder)
    if not is_table_release(manifest):
        raise DataError(f"{folder} is not a table release (its {MANIFEST} names no output_table)")
    described = manifest["output_table"]
    target = TableTarget(str(described.get("table")), str(described.get("connection")))
    uri = resolve(connection or target.connection)
    fs, root = filesystem(folder)
    manifest_bytes = fs.cat_file(posixpath.join(root.rstrip("/"), MANIFEST))
    names, attributes = counted_columns(folder, manifest, qids)
    counted = count_table(uri, target, names, attributes, manifest.get("pseudonymised") or [])
    if not counted.state.exists:
        raise VerificationError(f"{table_label(target)} does not exist")
    release = counted.state.release
    if release is None:
        raise VerificationError(f"{table_label(target)} holds no skald release (its comment)")
    sha = hashlib.sha256(manifest_bytes).hexdigest()
    if release.get("manifest_sha256") != sha:
        raise VerificationError(
            f"{table_label(target)} holds another release than the {MANIFEST} of {folder} "
            f"(its comment names manifest sha256 {str(release.get('manifest_sha256'))[:12]}"
            f", the file's is {sha[:12]})"
        )
    if not counted.classes.n_rows:
        raise VerificationError(f"{table_label(target)} holds no rows")
    checked = (manifest, folder, k, suppression_limit, qids)
    report = _verify_counts(target, counted.classes, counted.columns, *checked)
    if counted.not_pseudonym is not None:  # as a part's check (`pseudonyms.verify`), counted
        raise VerificationError(
            f"column '{counted.not_pseudonym}' in {table_label(target)} holds a value that is not "
            "a pseudonym"
        )
    return {**report, "table": target.qualified, "manifest_sha256": sha}


def _verify_counts(
    target: TableTarget,
    classes: ReleaseClasses,
    columns: list[str],
    manifest: dict,
    folder: str,
    k: int | None,
    suppression_limit: Fraction | float | str | None,
    qids: list[str] | None,
) -> dict:
    """The table's classes (PostgreSQL's GROUP BY) verified against the manifest as `skald
    verify` verifies a folder release (its records, beside the manifest in `folder`, read
    there); messages name the table, not the folder."""
    with naming_table(target, folder):
        return verify_release(
            folder,
            k,
            suppression_limit,
            qids=qids,
            classes=classes,
            manifest=manifest,
            table_columns=columns,
        )
