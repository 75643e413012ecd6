"""The output's lease as an Airflow run holds it across its tasks (ADR 0105): how long it lasts
between tasks, who judges a holder stale (`dag_run_gone`: its DAG run no longer runs), and the
`on_failure_callback` that frees it when a run failed for good."""

from __future__ import annotations

from airflow_skald.core.settings.setting import is_empty

LEASE_TTL_S = 6 * 3600  # an Airflow run's lease spans its tasks: longer than any gap


def release_lease_on_failure(context) -> None:
    """``on_failure_callback`` of every SKALD task: the run failed for good (no retry left),
    so the output's lease it holds (named in the run's ``target.json``) is deleted. Never
    raises: a callback's error would hide the task's own."""
    import logging

    log = logging.getLogger("airflow_skald")
    try:
        from airflow_skald.core.data.database.extract import remove_staged
        from airflow_skald.core.data.database.source import staged_path
        from airflow_skald.core.release.write.lease import release_run_lease
        from airflow_skald.core.run.runner import TARGET
        from airflow_skald.operators.artifacts import RunArtifacts

        task = context.get("task")
        root = getattr(task, "artifacts", None)
        store = RunArtifacts.from_context(None if is_empty(root) else root, context)
        if not store.exists(TARGET):
            return
        output = store.read_json(TARGET)["output"]
        if release_run_lease(output, f"{store.dag_id}-{store.run_id}"):
            log.info("run %s failed: released its lease on output %s", store.run_id, output)
            remove_staged(staged_path(output))  # a database input's chunks, if any
    except Exception as exc:  # pragma: no cover - storage unreachable
        log.warning("could not release the output lease of the failed run: %s", exc)


def dag_run_gone(info) -> str | None:
    """A lease judge (core.release.write.lease.Judge): a lease held by an Airflow DAG run that is no
    longer queued or running (failed, succeeded, marked) is stale. None when it still runs or
    the Execution API cannot tell (then only the lease's expiry frees it)."""
    holder = getattr(info, "holder", None) or {}
    if not holder.get("dag_id") or not holder.get("run_id"):
        return None
    try:
        from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

        state = RuntimeTaskInstance.get_dagrun_state(holder["dag_id"], holder["run_id"])
    except Exception:
        return None
    state = str(getattr(state, "value", state))
    if state in ("queued", "running"):
        return None
    return f"its DAG run {holder['dag_id']}/{holder['run_id']} is {state}"
