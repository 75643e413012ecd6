"""Secrets the operators read from Airflow (SPEC §2a): a database input's connection (its URI,
password included), and a pseudonym key given as ``pseudonym_key: {connection: ID}`` (the
connection's password, or its extra ``key``) or ``{variable: NAME}``. Read in the task, masked in its logs at once, handed to the core in
memory only: never in XCom, artifacts, manifest, report or lineage."""

from __future__ import annotations

from typing import Any


def provide_pseudonym_key(config: Any) -> None:
    """Read the config's pseudonym key from Airflow when it names a connection or variable."""
    from airflow_skald.core.errors import ConfigError
    from airflow_skald.core.settings.pseudonym import AIRFLOW_SOURCES

    key = config.pseudonym_key
    if key is None or key.kind not in AIRFLOW_SOURCES:
        return
    secret = None
    try:
        if key.kind == "connection":
            from airflow.sdk import Connection

            conn = Connection.get(key.name)
            secret = conn.password or conn.extra_dejson.get("key")
        else:
            from airflow.sdk import Variable

            secret = Variable.get(key.name, default=None)
    except Exception as exc:  # the lookup's message names the id, never a secret
        raise ConfigError(
            f"pseudonym_key {{{key.kind}: {key.name}}}: not found ({type(exc).__name__})"
        ) from None
    if not secret:
        raise ConfigError(f"pseudonym_key {{{key.kind}: {key.name}}} holds no key")
    mask(str(secret))
    key.provide(str(secret))


def mask(secret: str) -> None:
    """Airflow's log masker redacts `secret` from every later log line of the task."""
    try:
        from airflow.sdk.log import mask_secret
    except ImportError:  # pragma: no cover - older SDK layout
        return
    mask_secret(secret)


def connection_uri(conn_id: str) -> str:
    """A database input's Airflow connection as the URI the core connects with; its
    password masked in the task's logs."""
    from airflow.sdk import Connection

    from airflow_skald.core.data.database.connection import normalised
    from airflow_skald.core.errors import ConfigError

    try:
        conn = Connection.get(conn_id)
    except Exception as exc:
        raise ConfigError(f"connection {conn_id}: not found ({type(exc).__name__})") from None
    if conn.password:
        mask(conn.password)
    return normalised(conn.get_uri())
