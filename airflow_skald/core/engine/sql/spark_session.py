"""Spark as an engine (docs/design.md §2b, ADR 0056): a local SparkSession (`local[N]`) or a
Spark Connect server (`sc://host:port`). pyspark is imported here only (the optional extra
`airflow-skald[spark]`); a Spark Connect URI through Spark Connect's own client session (ADR 0069).

The worker's small tables (mapping, label, suppressed-key tables) go in as temporary views
over DataFrames made from Arrow (data, never SQL text); a table the passes make from a query
is checkpointed on the executors (`localCheckpoint`) and named as a temporary view. `close`
drops every view the session made; the SparkSession itself is left running (one per process:
a local one ends with the process, a Spark Connect session with the server's timeout)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.session import temporary_name
from airflow_skald.core.errors import ConfigError

#: Spark settings of a local session the engine starts (an existing session keeps its own)
LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # no progress bars on the CLI's stderr
    "spark.sql.session.timeZone": "UTC",
}
#: per-session settings, set on every session the engine uses
SESSION_CONF = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.session.timeZone": "UTC",
}
CONNECT_SCHEMES = ("sc://", "spark-connect://")


def _pyspark(connect: bool = False):
    """pyspark's SparkSession (`connect`: Spark Connect's client session, whose builder needs
    no environment change and works beside a local session in the same process)."""
    try:
        if connect:
            from pyspark.sql.connect.session import SparkSession
        else:
            from pyspark.sql import SparkSession
    except ImportError:
        raise ConfigError(
            "execution engine spark needs the pyspark package: pip install 'airflow-skald[spark]'"
        ) from None
    return SparkSession


def is_local(connection: str) -> bool:
    """`local`, `local[N]`, `local[*]`: a master URL of a Spark in this process."""
    return connection == "local" or (connection.startswith("local[") and connection[-1] == "]")


#: shuffle partitions per core of a local session the engine starts (Spark's default is 200
#: whatever the cores: at local[2] its GROUP BYs of millions of bins cost ~20 % more CPU, ADR 0082)
PARTITIONS_PER_CORE = 4


def local_cores(connection: str) -> int | None:
    """The cores of a local master URL: `local` 1, `local[N]` (or `local[N,F]`) N, `local[*]`
    the machine's; None for what Spark itself is left to judge."""
    inside = connection[len("local[") : -1].split(",")[0].strip() if connection != "local" else "1"
    if inside == "*":
        return os.cpu_count() or 1
    return int(inside) if inside.isdigit() and int(inside) > 0 else None


def spark_of(connection: str) -> Any:
    """The SparkSession for a master URL (`local[N]`) or a Spark Connect URI (`sc://...`,
    Airflow's `spark-connect://` as Spark Connect's scheme)."""
    if is_local(connection):
        session = _pyspark()
        builder = session.builder.master(connection).appName("skald")
        for key, value in LOCAL_CONF.items():
            builder = builder.config(key, value)
        cores = local_cores(connection)
        if cores and session.getActiveSession() is None:  # one the engine starts (else its own)
            partitions = str(PARTITIONS_PER_CORE * cores)
            builder = builder.config("spark.sql.shuffle.partitions", partitions)
        spark = builder.getOrCreate()
    elif connection.startswith(CONNECT_SCHEMES):
        builder = _pyspark(connect=True).builder
        spark = builder.remote("sc://" + connection.split("://", 1)[1]).getOrCreate()
    else:
        raise ConfigError(
            "execution.connection of the spark engine is local[N] or a Spark Connect URI "
            "sc://host:port (or the name of one)"
        )
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    return spark


class SparkSqlSession:
    """The SQL passes' session (`session.SqlSession`) over a SparkSession."""

    dialect = "spark"

    def __init__(self, spark: Any):
        self.spark = spark
        self.temporaries: list[str] = []

    def frame(self, statement: exp.Expression) -> Any:
        return self.spark.sql(D.render(statement, self.dialect))

    def query(self, statement: exp.Expression, params: Sequence = ()) -> pa.Table:
        if params:  # the passes send values as tables; a statement never has parameters
            raise ValueError("the spark session takes no bind parameters")
        return self.frame(statement).toArrow()

    def execute(self, statement: exp.Expression, params: Sequence = ()) -> None:
        if params:
            raise ValueError("the spark session takes no bind parameters")
        self.frame(statement).collect()

    def name(self, frame: Any, prefix: str) -> str:
        """`frame` as a new temporary view; returns its name."""
        name = temporary_name(prefix)
        self.temporaries.append(name)
        frame.createOrReplaceTempView(name)
        return name

    def send(self, prefix: str, table: pa.Table) -> str:
        return self.name(self.spark.createDataFrame(table), prefix)

    def create(self, select: exp.Select, prefix: str) -> str:
        return self.name(self.frame(select).localCheckpoint(), prefix)

    def view(self, select: exp.Select, prefix: str) -> str:
        """`select` as a new temporary view (a name the passes read as their relation)."""
        return self.name(self.frame(select), prefix)

    def close(self) -> None:
        for name in self.temporaries:
            self.spark.catalog.dropTempView(name)
        self.temporaries.clear()
