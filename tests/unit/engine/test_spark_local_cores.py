"""The shuffle partitions of a local Spark the engine starts follow its cores (ADR 0082)."""

import os

from airflow_skald.core.engine.sql.spark_session import local_cores


def test_a_local_masters_cores_are_read_from_its_url() -> None:
    assert [local_cores(m) for m in ("local", "local[2]", "local[3, 4]")] == [1, 2, 3]
    assert local_cores("local[*]") == (os.cpu_count() or 1)
    assert [local_cores(m) for m in ("local[0]", "local[x]", "local[]")] == [None, None, None]
