"""A database connection as the command line names it (docs/design.md §2a): a URI, or the name of an
environment variable holding one. The Airflow operators resolve a connection id instead
(``operators/connections.py``). A password is never shown: messages and settings carry the
connection's name, or its URI without the password (`redacted`)."""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from airflow_skald.core.errors import ConfigError

SCHEMES = ("postgresql", "postgres")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_uri(text: str) -> bool:
    return "://" in text


def check_named(connection: str, where: str) -> None:
    """A connection as a config file may name it: a URI without a password (the file is
    archived with the release), or a name (an environment variable, an Airflow connection)."""
    if is_uri(connection):
        parts = urlsplit(connection)
        if parts.scheme not in SCHEMES:
            raise ConfigError(f"{where}: only PostgreSQL URIs (postgresql://...) are supported")
        if parts.password or "password=" in parts.query:
            raise ConfigError(
                f"{where}: the URI holds a password; put the URI in an environment variable "
                "(or an Airflow connection) and give its name"
            )
    elif not _ENV_NAME.match(connection):
        raise ConfigError(f"{where} must be a postgresql:// URI or a connection name")


def resolve_uri(connection: str) -> str:
    """The URI a CLI run connects with: `connection` itself, or the environment variable it
    names."""
    if is_uri(connection):
        return normalised(connection)
    value = os.environ.get(connection)
    if not value:
        raise ConfigError(
            f"connection {connection}: no such environment variable (set it to a postgresql:// URI)"
        )
    if not is_uri(value):
        raise ConfigError(f"connection {connection}: the variable does not hold a URI")
    return normalised(value)


def normalised(uri: str) -> str:
    """libpq's scheme (Airflow writes ``postgres://``)."""
    return "postgresql://" + uri.split("://", 1)[1] if uri.startswith("postgres://") else uri


def _passwords(uri: str) -> list[str]:
    """Every form of the URI's password a message could quote: the user info's and a
    `password=` query parameter's (libpq takes both), as written and percent-decoded."""
    parts = urlsplit(uri)
    found = [parts.password] if parts.password else []
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k == "password"]
    found += [x for p in found for x in (unquote(p), quote(p, safe=""))]
    return sorted({p for p in found if p}, key=len, reverse=True)


def redacted(uri: str) -> str:
    """The URI without its password (for messages)."""
    parts = urlsplit(uri)
    if parts.password is not None:
        host = parts.hostname or ""
        netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
        parts = parts._replace(netloc=netloc)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(k == "password" for k, _ in query):
        kept = [(k, "***" if k == "password" else v) for k, v in query]
        parts = parts._replace(query=urlencode(kept, safe="*"))
    return urlunsplit(parts)


def scrub(message: str, uri: str) -> str:
    """A driver's message with the connection's password removed, in any form it quotes it."""
    for password in _passwords(uri):
        message = message.replace(password, "***")
    return message


def namespace(uri: str) -> tuple[str, str]:
    """OpenLineage's naming of a PostgreSQL database: (``postgres://host:port``, db name)."""
    parts = urlsplit(normalised(uri))
    host = parts.hostname or "localhost"
    return f"postgres://{host}:{parts.port or 5432}", parts.path.lstrip("/") or "postgres"


def table_uri(uri: str, table: str) -> str:
    """A table as OpenLineage names it, as one URI: ``postgres://host:port/db.schema.table``
    (schema ``public`` when the name has none)."""
    ns, db = namespace(uri)
    qualified = table if "." in table else f"public.{table}"
    return f"{ns}/{db}.{qualified}"


def unresolved_table_uri(connection: str, table: str) -> str:
    """A table whose connection is not (yet) known, named as OpenLineage names a table with
    the connection's name in place of its host and database:
    ``postgres://{connection}/{schema}.{table}``."""
    qualified = table if "." in table else f"public.{table}"
    return f"postgres://{quote(connection, safe='')}/{qualified}"


def table_asset_uri(uri: str, table: str) -> str:
    """A table as an Airflow Asset names it (the postgres provider's form):
    ``postgres://host:port/db/schema/table``."""
    ns, db = namespace(uri)
    schema, _, name = (table if "." in table else f"public.{table}").rpartition(".")
    return f"{ns}/{db}/{schema}/{name}"
