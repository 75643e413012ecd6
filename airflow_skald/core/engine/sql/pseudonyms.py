"""Pseudonyms computed by the engine (docs/design.md §2a, §2b): HMAC-SHA-256 of each value's
text in the pseudonyms' domain, as `transform.pseudonyms.hashing.Hasher` makes them, 64 lowercase
hex digits, a null staying null.

The key never enters SQL text: its inner and outer pads go to the engine as a one-row
temporary table (data, like the mapping tables), joined to the released rows; the
statement names the table only. DuckDB's, Spark's and PostgreSQL's functions; other
dialects are not built yet."""

from __future__ import annotations

import hashlib

import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.coding import INPUT
from airflow_skald.core.engine.sql.session import SqlSession
from airflow_skald.core.settings import keyed

KEY = "pk"  # the key table's alias


def send_key(session: SqlSession, secret: bytes) -> str:
    """The key's pads and the domain's framed label as a one-row temporary table."""
    key = hashlib.sha256(secret).digest() if len(secret) > 64 else secret
    key = key.ljust(64, b"\0")
    row = {
        "ipad": [bytes(b ^ 0x36 for b in key)],
        "opad": [bytes(b ^ 0x5C for b in key)],
        "domain": [keyed.message(keyed.PSEUDONYM)],
    }
    return session.send("key", pa.table({k: pa.array(v, pa.binary()) for k, v in row.items()}))


def _f(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _concat(*parts: exp.Expression) -> exp.Expression:
    out = parts[0]
    for p in parts[1:]:
        out = exp.DPipe(this=out, expression=p)
    return out


def pseudonym(column: str, typ: pa.DataType, dialect: str = "duckdb") -> exp.Expression:
    """The pseudonym of `column`'s value (its text: a number's decimal text), in DuckDB's
    functions or Spark's (`dialect` "spark": encode/hex/unhex/sha2 over binary) or
    PostgreSQL's ("postgres": convert_to/sha256/decode/encode over bytea)."""
    value: exp.Expression = D.column(column, INPUT)
    if not (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
        value = exp.cast(value, exp.DataType.build("VARCHAR"))
    if dialect == "postgres":
        return _postgres(value)
    spark = dialect == "spark"
    data = _f("encode", value, D.text("UTF-8")) if spark else _f("encode", value)
    to_hex = "hex" if spark else "to_hex"
    length = _f(
        "unhex", _f("lpad", _f(to_hex, _f("octet_length", data)), D.number(16), D.text("0"))
    )
    key = (D.column("ipad", KEY), D.column("domain", KEY), length, data)
    if spark:  # sha2 gives lowercase hex text, as DuckDB's sha256
        inner = _f("sha2", _f("concat", *key), D.number(256))
        return _f("sha2", _f("concat", D.column("opad", KEY), _f("unhex", inner)), D.number(256))
    inner = _f("sha256", _concat(*key))
    return _f("sha256", _concat(D.column("opad", KEY), _f("unhex", inner)))


def _postgres(value: exp.Expression) -> exp.Expression:
    """HMAC-SHA-256 of `value`'s UTF-8 bytes in PostgreSQL (11+), as lowercase hex text."""
    data = _f("convert_to", value, D.text("UTF8"))
    length = _f(
        "decode",
        _f("lpad", _f("to_hex", _f("octet_length", data)), D.number(16), D.text("0")),
        D.text("hex"),
    )
    inner = _f("sha256", _concat(D.column("ipad", KEY), D.column("domain", KEY), length, data))
    outer = _f("sha256", _concat(D.column("opad", KEY), inner))
    return _f("encode", outer, D.text("hex"))


def hashable(typ: pa.DataType) -> bool:
    """Types whose text the engine writes as pyarrow does (text, whole numbers)."""
    return pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_integer(typ)


def check_hashable(config, prefix: str, schema: pa.Schema | None = None) -> None:
    """Refuse (one line) a pseudonymised column whose text the engine would not write as
    pyarrow does (`hashable`); `schema`: the input's (default: its first file's)."""
    from airflow_skald.core.data.io import list_input_files, schema_of
    from airflow_skald.core.errors import ConfigError
    from airflow_skald.core.transform.pseudonyms import Pseudonyms

    pseudonyms = config.transformation(Pseudonyms)
    if not (pseudonyms and pseudonyms.names):
        return
    if schema is None:
        schema = schema_of(config.input, list_input_files(config.input)[0])
    if schema is None:  # CSV: every pseudonymised column is read as text
        return
    for name in pseudonyms.names:
        if name in schema.names and not hashable(schema.field(name).type):
            raise ConfigError(
                f"{prefix}: pseudonymised column '{name}' is {schema.field(name).type}; "
                "the engine hashes text and whole numbers (use execution: chunks)"
            )
