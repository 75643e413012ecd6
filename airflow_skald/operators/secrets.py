"""Secrets the operators read from Airflow (docs/design.md §2a): a database input's connection (its URI,
password included), and every secret reference of the config (``core/settings/secret.py``:
``pseudonym_key``, ``dp_key``) naming ``{connection: ID}`` (the connection's password, or its
extra ``key``) or ``{variable: NAME}``. Read in the task, masked in its logs at once, handed
to the core in memory only: never in XCom, artifacts, manifest, report or lineage."""

from __future__ import annotations

from typing import Any


def provide_secrets(
    config: Any, dp_key_conn_id: str | None = None, dp_key_variable: str | None = None
) -> Any:
    """The config with every secret it names in an Airflow connection or variable read and
    handed over in memory (`SecretRef.provide`), masked in the task's logs at once. The
    operators' dp_key_conn_id / dp_key_variable name the DP secret as ``dp_key: {connection:
    ID}`` / ``{variable: NAME}`` would (they replace the config's dp_key)."""
    from dataclasses import replace

    from airflow_skald.core.settings.secret import SecretRef
    from airflow_skald.core.transform import registry as transform_registry

    if dp_key_conn_id or dp_key_variable:
        kind, name = (
            ("connection", dp_key_conn_id) if dp_key_conn_id else ("variable", dp_key_variable)
        )
        config = replace(config, dp_key=SecretRef("dp_key", kind, str(name)))
    for ref in (*transform_registry.secrets_of(config.transformations), config.dp_key):
        if ref is not None and ref.from_airflow:
            ref.provide(airflow_secret(ref))
    return config


def airflow_secret(ref: Any) -> str:
    """The secret a reference names in Airflow: a connection's password (or its extra
    ``key``) or a variable, through the secrets backends; masked in the task's logs."""
    from airflow_skald.core.errors import ConfigError

    where = ref.where  # the setting, never the name given (it may be a pasted secret)
    try:
        if ref.kind == "connection":
            from airflow.sdk import Connection

            conn = Connection.get(ref.name)
            secret = conn.password or conn.extra_dejson.get("key")
        else:
            from airflow.sdk import Variable

            secret = Variable.get(ref.name, default=None)
    except Exception as exc:  # the lookup's message (it names the id) is not echoed
        raise ConfigError(f"{where}: not found ({type(exc).__name__})") from None
    if not secret:
        raise ConfigError(f"{where} holds no secret")
    mask(str(secret))
    return str(secret)


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
