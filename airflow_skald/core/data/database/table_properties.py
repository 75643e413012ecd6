"""What a release table keeps of the table it replaces (docs/design.md §2a, ADR 0032).

A table release is written whole into a new table and swapped in for the old one. Who may
read what, and how the table is used, belong to the old table, not to its rows: its owner,
its grants (table and column), row-level security (ENABLE, FORCE) and its policies, its
indexes, constraints (NOT NULL, CHECK, UNIQUE, PRIMARY KEY, EXCLUDE, its own FOREIGN KEYs),
triggers and rules, and the comments on its columns, indexes, constraints, policies and
triggers. `read_properties` reads them from the catalogs (the definitions as PostgreSQL
prints them: ``pg_get_indexdef``, ``pg_get_constraintdef``, ``pg_get_expr``,
``pg_get_triggerdef``, ``pg_get_ruledef``; the columns each one uses from ``pg_depend``);
`TableProperties.statements` gives what reproduces them on the new table once it bears the old
one's name, all run in the swap's transaction (a failure rolls the whole swap back).

What cannot be kept is refused, in one line naming it (`TableProperties.problems`): before
phase 1 (the release's columns known from the input) and again in the swap (the new table's
columns): a view or another table's foreign key that depends on the table, a partition or
inheritance, a publication, an owner the writer may not give the new table, an object on a
column the release does not have, a unique key made of quasi-identifiers only (a k-anonymous
release repeats them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from airflow_skald.core.data.database.source import quote_ident

_OPTION = {True: " WITH GRANT OPTION", False: ""}
_CMD = {"r": "SELECT", "a": "INSERT", "w": "UPDATE", "d": "DELETE", "*": "ALL"}
_TRIGGER_STATE = {
    "D": "DISABLE TRIGGER",
    "R": "ENABLE REPLICA TRIGGER",
    "A": "ENABLE ALWAYS TRIGGER",
}

# The columns each dependent object (class, oid) uses, as a JSON array of names.
_USES = """
SELECT d.classid::regclass::text, d.objid::bigint,
       array_to_json(array_agg(DISTINCT a.attname::text))::text
FROM pg_depend d
JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = to_regclass($1)
  AND d.refobjsubid > 0
GROUP BY 1, 2
"""

_TABLE = """
SELECT quote_ident(r.rolname), pg_has_role(current_user, c.relowner, 'MEMBER'),
       has_schema_privilege(c.relowner, c.relnamespace, 'CREATE'), current_user::text,
       c.relrowsecurity, c.relforcerowsecurity
FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
WHERE c.oid = to_regclass($1)
"""

# Table privileges, the owner's default ones included (a NULL ACL is the owner's all).
ACL = """
SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END,
       a.privilege_type::text, a.is_grantable
FROM pg_class c CROSS JOIN LATERAL aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a
LEFT JOIN pg_roles r ON r.oid = a.grantee
WHERE c.oid = to_regclass($1)
"""

_COLUMNS = """
SELECT a.attname::text, a.attnotnull, col_description(a.attrelid, a.attnum),
       array_to_json(array(
           SELECT json_build_array(
               CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END,
               x.privilege_type, x.is_grantable)
           FROM aclexplode(a.attacl) x LEFT JOIN pg_roles r ON r.oid = x.grantee))::text
FROM pg_attribute a
WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""

_CONSTRAINTS = """
SELECT k.oid::bigint, k.conname::text, k.contype::text, pg_get_constraintdef(k.oid),
       obj_description(k.oid, 'pg_constraint')
FROM pg_constraint k
WHERE k.conrelid = to_regclass($1) AND k.contype IN ('p', 'u', 'x', 'c', 'f')
ORDER BY array_position(ARRAY['p', 'u', 'x', 'c', 'f'], k.contype::text), k.conname
"""

_INDEXES = """
SELECT i.indexrelid::bigint, c.relname::text, pg_get_indexdef(i.indexrelid), i.indisunique,
       i.indisclustered, obj_description(i.indexrelid, 'pg_class')
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = to_regclass($1)
  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid
                  AND k.conrelid = i.indrelid AND k.contype IN ('p', 'u', 'x'))
ORDER BY c.relname
"""

_CLUSTERED = """
SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = to_regclass($1) AND i.indisclustered
"""

_TRIGGERS = """
SELECT t.oid::bigint, t.tgname::text, pg_get_triggerdef(t.oid), t.tgenabled::text,
       obj_description(t.oid, 'pg_trigger')
FROM pg_trigger t WHERE t.tgrelid = to_regclass($1) AND NOT t.tgisinternal
ORDER BY t.tgname
"""

_RULES = """
SELECT w.oid::bigint, w.rulename::text, pg_get_ruledef(w.oid)
FROM pg_rewrite w WHERE w.ev_class = to_regclass($1) AND w.rulename <> '_RETURN'
ORDER BY w.rulename
"""

_POLICIES = """
SELECT p.oid::bigint, p.polname::text, p.polcmd::text, p.polpermissive,
       (SELECT string_agg(CASE WHEN o = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END, ', ')
        FROM unnest(p.polroles) o LEFT JOIN pg_roles r ON r.oid = o),
       pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid),
       obj_description(p.oid, 'pg_policy')
FROM pg_policy p WHERE p.polrelid = to_regclass($1)
ORDER BY p.polname
"""

# What depends on the table from outside it (it could not be dropped, or would lose it): views
# and rules, foreign keys, inheritance, publications, and any other object PostgreSQL records
# a normal dependency of (a function's SQL body or argument of its row type, another table's
# column of that type or policy reading it); the table's own policies, triggers, defaults
# and constraints are kept instead.
_BLOCKERS = """
SELECT DISTINCT CASE v.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view '
       ELSE 'a rule of table ' END || v.oid::regclass::text || ' depends on it'
FROM pg_depend d JOIN pg_rewrite w ON w.oid = d.objid JOIN pg_class v ON v.oid = w.ev_class
WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
  AND d.refobjid = to_regclass($1) AND v.oid <> d.refobjid
UNION ALL
SELECT 'foreign key ' || quote_ident(k.conname) || ' of table ' || k.conrelid::regclass::text
       || ' points to it'
FROM pg_constraint k
WHERE k.confrelid = to_regclass($1) AND k.contype = 'f' AND k.conrelid <> k.confrelid
UNION ALL
SELECT 'it is a partition or child of table ' || h.inhparent::regclass::text
FROM pg_inherits h WHERE h.inhrelid = to_regclass($1)
UNION ALL
SELECT 'table ' || h.inhrelid::regclass::text || ' inherits from it'
FROM pg_inherits h WHERE h.inhparent = to_regclass($1)
UNION ALL
SELECT 'it is in publication ' || quote_ident(p.pubname)
FROM pg_publication_rel x JOIN pg_publication p ON p.oid = x.prpubid
WHERE x.prrelid = to_regclass($1)
UNION ALL
SELECT DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid) || ' depends on it'
FROM pg_depend d
WHERE d.deptype = 'n' AND (
    (d.refclassid = 'pg_class'::regclass AND d.refobjid = to_regclass($1))
    OR (d.refclassid = 'pg_type'::regclass
        AND d.refobjid = (SELECT c.reltype FROM pg_class c WHERE c.oid = to_regclass($1))))
  AND d.classid NOT IN ('pg_rewrite'::regclass, 'pg_constraint'::regclass)
  AND NOT (d.classid = 'pg_policy'::regclass
           AND d.objid IN (SELECT oid FROM pg_policy WHERE polrelid = to_regclass($1)))
  AND NOT (d.classid = 'pg_trigger'::regclass
           AND d.objid IN (SELECT oid FROM pg_trigger WHERE tgrelid = to_regclass($1)))
  AND NOT (d.classid = 'pg_attrdef'::regclass
           AND d.objid IN (SELECT oid FROM pg_attrdef WHERE adrelid = to_regclass($1)))
  AND NOT (d.classid = 'pg_class'::regclass AND d.objid = to_regclass($1))
"""


def literal(text: str) -> str:
    """A string constant, whatever ``standard_conforming_strings`` says."""
    return "E'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass(frozen=True)
class Kept:
    """One property of the old table: what it is (for messages), the columns it uses, and
    the statements that give it to the new table once it bears the old one's name."""

    what: str
    columns: tuple[str, ...]
    sql: tuple[str, ...]
    unique: bool = False  # a unique key: the release's rows must not repeat its columns
    # a property of one column (NOT NULL, comment, grant): moot, not lost, when the release
    # no longer has the column (no one can read what is not there)
    of_column: str | None = None


@dataclass
class TableProperties:
    """The old table's properties (see the module's list)."""

    owner: str  # quoted
    owner_ok: bool  # the writer may give the new table this owner (a member of the role)
    owner_creates: bool  # the owner may create in the schema (ALTER TABLE OWNER needs it)
    writer: str
    acl: set[tuple[str, str, bool]]
    kept: list[Kept] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)

    def problems(
        self, columns: Iterable[str] | None, qids: Iterable[str] = (), k: int = 1
    ) -> list[str]:
        """What cannot be kept on a release with `columns` (None: not known yet), whose
        quasi-identifiers `qids` repeat in classes of at least `k` rows."""
        out = list(self.blockers)
        if not self.owner_ok:
            out.append(
                f"it is owned by role {self.owner}, of which the connection's role "
                f"{self.writer} is not a member (the new table could not be given that owner)"
            )
        elif not self.owner_creates:
            out.append(
                f"its owner {self.owner} may not create in its schema (the new table could "
                "not be given that owner)"
            )
        have = set(columns) if columns is not None else None
        qid_set = set(qids)
        for item in self.kept:
            missing = [c for c in item.columns if have is not None and c not in have]
            if missing and item.of_column is None:
                out.append(f"{item.what} uses column {missing[0]}, which the release does not have")
            elif item.unique and k >= 2 and item.columns and set(item.columns) <= qid_set:
                out.append(
                    f"{item.what} is unique on quasi-identifiers ({', '.join(item.columns)}), "
                    f"which a release with k={k} repeats"
                )
        return out

    def statements(self, table: str, columns: Iterable[str]) -> list[tuple[str, str]]:
        """(what, statement): what gives the new table, renamed to `table` (the old one's
        quoted name) and with `columns`, these properties and the old owner (then
        `acl_statements`)."""
        have = set(columns)
        kept = [i for i in self.kept if i.of_column is None or i.of_column in have]
        out = [(item.what, s) for item in kept for s in item.sql]
        out.append((f"its owner {self.owner}", f"ALTER TABLE {table} OWNER TO {self.owner}"))
        return out

    def acl_statements(self, table: str, new_acl: set[tuple[str, str, bool]]) -> list[str]:
        """REVOKE and GRANT statements that make the table's privileges the old ones."""
        old = {(g, p): o for g, p, o in self.acl}
        new = {(g, p): o for g, p, o in new_acl}
        out = []
        for (grantee, privilege), option in sorted(new.items()):
            if (grantee, privilege) not in old:
                out.append(f"REVOKE {privilege} ON {table} FROM {grantee}")
            elif option and not old[grantee, privilege]:
                out.append(f"REVOKE GRANT OPTION FOR {privilege} ON {table} FROM {grantee}")
        for (grantee, privilege), option in sorted(old.items()):
            if (grantee, privilege) not in new or (option and not new[grantee, privilege]):
                out.append(f"GRANT {privilege} ON {table} TO {grantee}" + _OPTION[option])
        return out


def read_acl(cur, relation: str) -> set[tuple[str, str, bool]]:
    cur.execute(ACL, (relation,))
    return {(g, p, bool(o)) for g, p, o in cur.fetchall()}


def read_properties(cur, schema: str, name: str) -> TableProperties:
    """The properties of the table `schema.name`, which exists; its statements name it so."""
    relation = f"{quote_ident(schema)}.{quote_ident(name)}"
    t = _Table(relation, quote_ident(schema))
    cur.execute(_USES, (relation,))
    uses = {(c, int(o)): tuple(sorted(json.loads(a))) for c, o, a in cur.fetchall()}
    cur.execute(_TABLE, (relation,))
    owner, owner_ok, creates, writer, rls, force = cur.fetchone()
    props = TableProperties(owner, bool(owner_ok), bool(creates), writer, read_acl(cur, relation))
    cur.execute(_BLOCKERS, (relation,))
    props.blockers = [r[0] for r in cur.fetchall()]
    props.kept += _columns(cur, t)
    props.kept += _constraints(cur, t, uses)
    props.kept += _indexes(cur, t, uses)
    props.kept += _triggers_and_rules(cur, t, uses)
    for on, what in ((rls, "ENABLE"), (force, "FORCE")):
        if on:
            sql = f"ALTER TABLE {relation} {what} ROW LEVEL SECURITY"
            props.kept.append(Kept(f"row-level security ({what})", (), (sql,)))
    props.kept += _policies(cur, t, uses)
    return props


@dataclass(frozen=True)
class _Table:
    relation: str  # "schema"."name"
    schema: str  # "schema"


def _comment(kind: str, name: str, text: str | None) -> tuple[str, ...]:
    return (f"COMMENT ON {kind} {name} IS {literal(text)}",) if text is not None else ()


def _columns(cur, t: _Table) -> list[Kept]:
    cur.execute(_COLUMNS, (t.relation,))
    out = []
    for name, not_null, comment, grants in cur.fetchall():
        col = quote_ident(name)
        sql: list[tuple[str, str]] = []
        if not_null:
            sql.append(("NOT NULL", f"ALTER TABLE {t.relation} ALTER COLUMN {col} SET NOT NULL"))
        sql += [("its comment", s) for s in _comment("COLUMN", f"{t.relation}.{col}", comment)]
        for grantee, privilege, option in json.loads(grants):
            grant = f"GRANT {privilege} ({col}) ON {t.relation} TO {grantee}"
            sql.append((f"the grant of {privilege} to {grantee}", grant + _OPTION[option]))
        for what, statement in sql:
            out.append(Kept(f"{what} on column {name}", (name,), (statement,), of_column=name))
    return out


def _constraints(cur, t: _Table, uses: dict) -> list[Kept]:
    cur.execute(_CONSTRAINTS, (t.relation,))
    out = []
    for oid, name, kind, definition, comment in cur.fetchall():
        quoted = quote_ident(name)
        sql = (f"ALTER TABLE {t.relation} ADD CONSTRAINT {quoted} {definition}",)
        sql += _comment("CONSTRAINT", f"{quoted} ON {t.relation}", comment)
        columns = uses.get(("pg_constraint", int(oid)), ())
        out.append(Kept(f"constraint {name}", columns, sql, unique=kind in ("p", "u")))
    return out


def _indexes(cur, t: _Table, uses: dict) -> list[Kept]:
    cur.execute(_INDEXES, (t.relation,))
    out = []
    for oid, name, definition, unique, clustered, comment in cur.fetchall():
        quoted = quote_ident(name)
        sql = (definition,) + _comment("INDEX", f"{t.schema}.{quoted}", comment)
        if clustered:
            sql += (f"ALTER TABLE {t.relation} CLUSTER ON {quoted}",)
        columns = uses.get(("pg_class", int(oid)), ())
        out.append(Kept(f"index {name}", columns, sql, unique=bool(unique)))
    return out


def _triggers_and_rules(cur, t: _Table, uses: dict) -> list[Kept]:
    cur.execute(_TRIGGERS, (t.relation,))
    out = []
    for oid, name, definition, enabled, comment in cur.fetchall():
        quoted = quote_ident(name)
        sql = (definition,) + _comment("TRIGGER", f"{quoted} ON {t.relation}", comment)
        if enabled in _TRIGGER_STATE:
            sql += (f"ALTER TABLE {t.relation} {_TRIGGER_STATE[enabled]} {quoted}",)
        out.append(Kept(f"trigger {name}", uses.get(("pg_trigger", int(oid)), ()), sql))
    cur.execute(_RULES, (t.relation,))
    for oid, name, definition in cur.fetchall():
        out.append(Kept(f"rule {name}", uses.get(("pg_rewrite", int(oid)), ()), (definition,)))
    return out


def _policies(cur, t: _Table, uses: dict) -> list[Kept]:
    cur.execute(_POLICIES, (t.relation,))
    out = []
    for oid, name, cmd, permissive, roles, qual, check, comment in cur.fetchall():
        quoted = quote_ident(name)
        kind = "PERMISSIVE" if permissive else "RESTRICTIVE"
        sql = f"CREATE POLICY {quoted} ON {t.relation} AS {kind} FOR {_CMD[cmd]}"
        sql += f" TO {roles or 'PUBLIC'}"
        sql += f" USING ({qual})" if qual is not None else ""
        sql += f" WITH CHECK ({check})" if check is not None else ""
        statements = (sql,) + _comment("POLICY", f"{quoted} ON {t.relation}", comment)
        out.append(Kept(f"policy {name}", uses.get(("pg_policy", int(oid)), ()), statements))
    return out
