"""What a release table keeps of the one it replaces, as statements and refusals (ADR 0032):
the privileges made equal (granted, revoked, grant options), what no release can keep, what
a release without a column no longer needs, and the table's description in its comment."""

from __future__ import annotations

from airflow_skald.core.data.database.release_table import (
    comment_description,
    comment_text,
    parse_comment,
)
from airflow_skald.core.data.database.table_properties import Kept, TableProperties, literal

T = '"research"."people"'


def _props(**kw) -> TableProperties:
    base = {"owner": '"owner"', "owner_ok": True, "owner_creates": True, "writer": "skald"}
    return TableProperties(**{**base, "acl": set(), **kw})


def test_privileges_are_made_equal_to_the_old_table_s():
    old = {('"owner"', "SELECT", False), ("reader", "SELECT", True), ("PUBLIC", "UPDATE", False)}
    new = {('"owner"', "SELECT", False), ("nosy", "SELECT", False), ("PUBLIC", "UPDATE", True)}
    assert _props(acl=old).acl_statements(T, new) == [
        f"REVOKE GRANT OPTION FOR UPDATE ON {T} FROM PUBLIC",
        f"REVOKE SELECT ON {T} FROM nosy",
        f"GRANT SELECT ON {T} TO reader WITH GRANT OPTION",
    ]
    assert _props(acl=old).acl_statements(T, old) == []


def test_what_cannot_be_kept_and_what_a_missing_column_makes_moot():
    kept = [
        Kept("index by_name", ("name",), ("CREATE INDEX ...",)),
        Kept("constraint one_each", ("age", "zip"), ("ALTER TABLE ...",), unique=True),
        Kept("its comment on column name", ("name",), ("COMMENT ...",), of_column="name"),
        Kept("policy all", (), ("CREATE POLICY ...",)),
    ]
    props = _props(kept=kept, blockers=["view research.v depends on it"], owner_ok=False)
    assert props.problems(["age", "zip", "city"], qids=["age", "zip"], k=3) == [
        "view research.v depends on it",
        'it is owned by role "owner", of which the connection\'s role skald is not a member '
        "(the new table could not be given that owner)",
        "index by_name uses column name, which the release does not have",
        "constraint one_each is unique on quasi-identifiers (age, zip), which a release with "
        "k=3 repeats",
    ]
    assert props.problems(None, qids=["age"], k=3)[2:] == []  # columns not known yet
    statements = [s for _, s in props.statements(T, ["age", "zip"])]
    assert "COMMENT ..." not in statements and statements[-1] == f'ALTER TABLE {T} OWNER TO "owner"'


def test_the_description_after_the_release_identity_is_kept():
    identity = {"manifest_sha256": "ab", "run_token": "cli-1"}
    text = comment_text(identity, "Research extract\nask the data office")
    assert parse_comment(text) == identity
    assert comment_description(text) == "Research extract\nask the data office"
    assert comment_description(comment_text(identity)) is None
    assert parse_comment(comment_text(identity) + " trailing") is None  # not ours
    assert literal("it's a \\ path") == "E'it''s a \\\\ path'"
