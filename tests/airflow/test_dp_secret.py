"""A DP run's secret in the operators (SPEC §4e): an Airflow connection's password or a
variable, read through the secrets backends (here the environment's), handed to the run in
memory; none configured: the config's dp_key is read instead."""

from __future__ import annotations

from airflow_skald.operators.skald import EncodeOperator


def test_secret_from_connection_or_variable(monkeypatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SKALD_DP", '{"conn_type": "generic", "password": "c-key"}')
    monkeypatch.setenv("AIRFLOW_VAR_SKALD_DP_VAR", "v-key")
    assert EncodeOperator(task_id="a", dp_key_conn_id="skald_dp").dp_secret() == b"c-key"
    assert EncodeOperator(task_id="b", dp_key_variable="SKALD_DP_VAR").dp_secret() == b"v-key"
    assert EncodeOperator(task_id="c").dp_secret() is None
    op = EncodeOperator(task_id="d", dp_key_conn_id="skald_dp")
    assert "c-key" not in repr(op.__dict__)  # the operator keeps the connection's id only
