"""`SkaldBaseOperator`: what the three SKALD operators (``operators.skald``) share.

A config file plus per-run settings (DAG params), over one phase of the runner
(``airflow_skald.core.run.runner``): the run opened (the conf checked, the config loaded with
this run's settings, one log line stating them, `settings_line`), its phase driven in the
task's ``mode``, template fields rendered so that a bad template fails at once, OpenLineage
facets. Settings (empty = the config file's value): one keyword per row of
``airflow_skald.core.settings.table.SETTINGS`` marked for the operators, its signature, template
field and ``:param`` line written from the table (``operators/keywords.py``).
Nothing is done in ``__init__``; the core is imported inside ``execute``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any

from airflow.sdk import BaseOperator

from airflow_skald.core.settings.setting import is_empty
from airflow_skald.core.text import decimal_text
from airflow_skald.operators.keywords import NAMES, TEMPLATED, docstring, signature, take_settings
from airflow_skald.operators.lease import release_lease_on_failure

MODES = ("all", "partial", "merge")
PATH_SETTINGS = ("config", "input_path", "output_path")  # rendered again: may hold {{ ds }}


class SkaldBaseOperator(BaseOperator):
    """A config file plus per-run settings (DAG params), over one phase of the runner.

    :param config: path of the skald.yaml the workers read (templated)
    :param artifacts: root of the run artifact folders; default ``[skald] artifacts``
        (templated)
    :param mode: ``all``, ``partial`` (with ``chunk_group``) or ``merge``
    :param chunk_group: ``{"group": i, "chunk_ids": [...]}`` of a mapped task (templated)
    :param dp_key_conn_id: differential privacy: the Airflow connection whose password (or
        extra ``key``) is the secret, as the config's ``dp_key: {connection: ID}`` (secrets
        backend, `operators.secrets.provide_secrets`); never logged, nor in XCom or artifacts
    :param dp_key_variable: differential privacy: the Airflow variable holding the secret, as
        ``dp_key: {variable: NAME}``, in place of a connection

    The per-run settings follow: one keyword per row of ``core.settings.table.SETTINGS``
    marked ``operator`` (``operators/keywords.py``; empty or None: the config file's value),
    their ``:param`` lines written from the table below.
    """

    template_fields: Sequence[str] = ("config", "artifacts", "chunk_group", *TEMPLATED)
    ui_color = "#e8f0fe"
    modes: tuple[str, ...] = MODES

    def __init__(
        self,
        *,
        config: str | None = None,
        artifacts: str | None = None,
        mode: str = "all",
        chunk_group: dict | None = None,
        dp_key_conn_id: str | None = None,
        dp_key_variable: str | None = None,
        **kwargs: Any,
    ) -> None:
        settings = take_settings(kwargs)  # the table's keywords (`__init__.__signature__`)
        super().__init__(**kwargs)
        if mode not in self.modes:
            raise ValueError(
                f"{type(self).__name__}: mode must be one of {self.modes}, not {mode!r}"
            )
        self.config, self.artifacts = config, artifacts
        self.mode, self.chunk_group = mode, chunk_group
        # where a DP run's secret lives in Airflow: a connection's password, or a variable
        self.dp_key_conn_id, self.dp_key_variable = dp_key_conn_id, dp_key_variable
        for name, value in settings.items():
            setattr(self, name, value)
        # a run that failed for good frees its output at once (defect: a 6 h lock)
        callbacks = self.on_failure_callback
        if callbacks is None:
            callbacks = []
        elif callable(callbacks):
            callbacks = [callbacks]
        self.on_failure_callback = [*callbacks, release_lease_on_failure]

    __init__.__signature__ = signature(__init__)  # type: ignore[attr-defined]
    __doc__ = docstring(__doc__)

    def execute(self, context) -> Any:
        """Open the run, drive the phase; bad input fails at once, without retries."""
        from airflow.sdk.exceptions import AirflowFailException

        from airflow_skald.core.errors import SkaldInputError

        try:
            return self.run_phase(self.open_run(context), context)
        except SkaldInputError as exc:
            raise AirflowFailException(f"{type(exc).__name__}: {exc}") from None

    def run_phase(self, run, context) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def render_template_fields(self, context, jinja_env=None) -> None:
        """Airflow's rendering, field by field: a template that cannot render (``{{ ds }}``
        in a run without a logical date) fails the task at once, without retries, in one
        line naming the setting and what is missing (``operators/templates.py``)."""
        import jinja2
        from airflow.sdk.exceptions import AirflowFailException

        from airflow_skald.operators.templates import template_failure

        env = jinja_env or self.get_template_env()
        for name in self.template_fields:
            template = getattr(self, name, None)
            try:
                self._do_render_template_fields(self, (name,), context, env, set())
            except jinja2.TemplateError as exc:
                raise AirflowFailException(template_failure(name, template, exc, context)) from None

    # ---------------------------------------------------------------- the run
    def open_run(self, context):
        """The run's conf checked, its config loaded with this run's settings (each parsed
        once, by the settings table), and the settings stated in the task's first log line."""
        from airflow_skald.core.config.run_config import load_config
        from airflow_skald.core.data.database.connection import table_uri, unresolved_table_uri
        from airflow_skald.core.data.database.target import default_folder
        from airflow_skald.core.errors import ConfigError
        from airflow_skald.core.run.runner import Run
        from airflow_skald.core.settings.table import check_run_conf
        from airflow_skald.operators.artifacts import RunArtifacts
        from airflow_skald.operators.connections import resolver
        from airflow_skald.operators.secrets import connection_uri, provide_secrets

        dag = context.get("dag")
        dag_run = context.get("dag_run")
        if dag is not None and dag_run is not None:
            check_run_conf(getattr(dag_run, "conf", None), dag.params.keys())
        if is_empty(self.config):
            raise ConfigError(
                "no SKALD config: set the DAG param 'config' (path of a skald.yaml readable "
                "by the workers) or the operator's config argument"
            )
        settings = {n: self.render_path(n, getattr(self, n), context) for n in NAMES}
        config = load_config(self.render_path("config", self.config, context), settings, True)
        # secrets named in an Airflow connection or variable (pseudonym_key, dp_key)
        config = provide_secrets(config, self.dp_key_conn_id, self.dp_key_variable)
        store = RunArtifacts.from_context(
            None if is_empty(self.artifacts) else self.artifacts, context
        )
        table = config.output_table
        if table is not None and not table.folder_given and is_empty(settings["output_path"]):
            # a table release's records: in the artifacts store, {artifacts}/skald-releases/T
            folder = default_folder(str(store.root), table)
            config = config.with_overrides({"output_path": folder})
        self.log.info("SKALD %s (%s): %s", self.task_id, self.mode, settings_line(config))
        self._lineage = {"input": config.input.path, "output": config.output.path, "manifest": None}
        run = Run(config, store, token=f"{store.dag_id}-{store.run_id}")
        run.resolve_connection = resolver(
            config
        )  # an Airflow connection id (a database's, Spark's)
        # OpenLineage's naming of a PostgreSQL table; until its connection is found (a missing
        # one fails the task here) the connection's id stands for its host and database
        if config.database is not None and config.database.table:
            source = config.database
            self._lineage["input"] = unresolved_table_uri(source.connection, source.table)
            self._lineage["input"] = table_uri(connection_uri(source.connection), source.table)
        if table is not None:
            self._lineage["output"] = unresolved_table_uri(table.connection, table.qualified)
            self._lineage["output"] = table_uri(connection_uri(table.connection), table.qualified)
        run.record.airflow = {"dag_id": store.dag_id, "run_id": store.run_id}
        started = getattr(dag_run, "start_date", None)  # the DAG run's, not this task's
        if started is not None:
            run.record.started_at = started.astimezone(UTC).isoformat(timespec="seconds")
        return run

    def render_path(self, name: str, value: Any, context) -> Any:
        """A path setting whose value (a param or conf value) holds a template, rendered with
        the run's context: ``rel/daily-{{ ds }}`` -> ``rel/daily-2026-11-27``. Airflow renders
        a field once, so ``{{ params.output_path }}`` yields the param's text as it was typed;
        this second pass renders it as text (sandboxed), never as a native object."""
        if name not in PATH_SETTINGS or not isinstance(value, str) or "{" not in value:
            return value
        import jinja2

        from airflow_skald.core.errors import ConfigError
        from airflow_skald.operators.templates import template_failure

        dag = context.get("dag")
        env = dag.get_template_env(force_sandboxed=True) if dag is not None else None
        try:
            return str(self.render_template(value, context, jinja_env=env))
        except jinja2.TemplateError as exc:  # bad input: no retry (execute)
            raise ConfigError(template_failure(name, value, exc, context)) from None

    def get_openlineage_facets_on_complete(self, task_instance):
        """OpenLineage (``apache-airflow-providers-openlineage``): the input dataset; for the
        task that published the release, the release as output dataset and the
        ``skald_release`` run facet (figures only; ``operators/lineage.py``)."""
        from airflow_skald.operators.lineage import operator_lineage

        seen = getattr(self, "_lineage", None) or {}
        return operator_lineage(seen.get("input"), seen.get("output"), seen.get("manifest"))

    def group(self) -> tuple[int, list[int]]:
        group = self.chunk_group
        if not isinstance(group, dict) or "group" not in group or "chunk_ids" not in group:
            raise ValueError(
                f"mode='partial' needs chunk_group={{'group': i, 'chunk_ids': [...]}} (got {group!r}); "
                "map it over the return value of EncodeOperator(mode='list')"
            )
        return int(group["group"]), [int(c) for c in group["chunk_ids"]]

    def drive(self, phase, run) -> Any:
        """The phase in this task's mode: all chunks, one group, or the merge."""
        from airflow_skald.core.run import runner as R

        if self.mode == "partial":
            group, chunk_ids = self.group()
            R.run_group(phase, run, group, chunk_ids)
            return None
        return R.run_merge(phase, run) if self.mode == "merge" else R.run_all(phase, run)


def settings_line(config) -> str:
    """The run's settings on one line (paths, thresholds; never a data value)."""
    from airflow_skald.core.config.policy import describe_privacy  # heavy: not at DAG parsing

    criteria = "; ".join(
        ", ".join(f"{k}={v}" for k, v in m.items()) for m in describe_privacy(config)[1:]
    )
    return (
        f"config={config.source} input={config.input.path} output={config.output.path} "
        + (f"table={config.output_table.qualified} " if config.output_table else "")
        + f"k={config.min_class_size} suppression_limit={decimal_text(config.suppression.limit)} "
        f"criteria=[{criteria}] root={config.root} "
        f"histogram_bins={config.histogram_bins or 'derived'} chunk_rows={config.chunk_rows} "
        f"suppressed_records={config.suppression.records} overwrite={config.overwrite} "
        f"execution={config.execution} "  # the engine's name only: a connection may hold a secret
        f"config_sha256={config.fingerprint()[:12]}"
    )
