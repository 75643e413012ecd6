"""An engine's Airflow connection as the URI the core connects with (docs/design.md §2b,
ADR 0069): the operators resolve connection ids here, the core never imports Airflow.

- PostgreSQL (a database input or output, the `postgresql` engine): the connection's URI
  (`secrets.connection_uri`).
- Spark Connect (the `spark` engine's `execution.connection`): a connection of type
  ``spark_connect`` (the apache-spark provider's), ``spark-connect``, ``sc`` or ``generic``
  with a host and a port is Spark Connect's URI ``sc://host:port/;param=value`` with the
  parameters Spark Connect's client reads (its ``ChannelBuilder``): ``token`` = the
  connection's password, ``user_id`` = its login, ``use_ssl`` from the extra, as the
  apache-spark provider's ``SparkConnectHook`` builds it. The token is masked in the task's
  logs at once and never leaves the run's memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from airflow_skald.operators.secrets import connection_uri, mask

#: the Airflow connection types read as a Spark Connect server
SPARK_CONNECT_TYPES = ("spark_connect", "spark-connect", "sc", "generic")
#: Spark Connect's default port
SPARK_CONNECT_PORT = 15002


def spark_connect_uri(conn: Any) -> str:
    """Spark Connect's URI of an Airflow connection (see the module docstring)."""
    from airflow_skald.core.errors import ConfigError

    kind = conn.conn_type or ""
    if kind not in SPARK_CONNECT_TYPES or not conn.host:
        raise ConfigError(
            f"execution.connection {conn.conn_id}: the spark engine takes an Airflow connection "
            f"of type spark_connect (or generic) with a host and a port, not {kind or 'no type'}"
            + ("" if conn.host else " without a host")
        )
    params = {}
    if conn.login:
        params["user_id"] = conn.login
    if conn.password:
        mask(conn.password)
        params["token"] = conn.password
    extra = conn.extra_dejson or {}
    if str(extra.get("use_ssl", "")).lower() in ("true", "1", "yes"):
        params["use_ssl"] = "true"
    tail = "".join(f";{k}={quote(str(v), safe='')}" for k, v in params.items())
    return f"sc://{conn.host}:{conn.port or SPARK_CONNECT_PORT}" + (f"/{tail}" if tail else "")


def spark_uri(conn_id: str) -> str:
    """The `spark` engine's connection id as Spark Connect's URI."""
    from airflow.sdk import Connection

    from airflow_skald.core.errors import ConfigError

    try:
        conn = Connection.get(conn_id)
    except Exception as exc:  # the lookup's message is not echoed
        raise ConfigError(
            f"execution.connection {conn_id}: not found ({type(exc).__name__})"
        ) from None
    return spark_connect_uri(conn)


def resolver(config: Any) -> Callable[[str], str]:
    """How the run resolves a connection id: the `spark` engine's `execution.connection` as
    Spark Connect's URI, every other (a database's) as its PostgreSQL URI."""
    spark = config.execution_connection if config.execution == "spark" else None
    if not spark:
        return connection_uri

    def resolve(conn_id: str) -> str:
        return spark_uri(conn_id) if conn_id == spark else connection_uri(conn_id)

    return resolve
