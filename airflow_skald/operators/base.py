"""`SkaldBaseOperator`: what the three SKALD operators (``operators.skald``) share.

A config file plus per-run settings (DAG params), over one phase of the runner
(``airflow_skald.core.run.runner``): the run opened (the conf checked, the config loaded with
this run's settings, one log line stating them, `settings_line`), its phase driven in the
task's ``mode``, template fields rendered so that a bad template fails at once, OpenLineage
facets. Settings (all templated; empty = the config file's value): one explicit keyword per row
of ``airflow_skald.core.settings.table.SETTINGS``, documented in `SkaldBaseOperator`.
Nothing is done in ``__init__``; the core is imported inside ``execute``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any

from airflow.sdk import BaseOperator

from airflow_skald.core.settings.setting import is_empty
from airflow_skald.core.settings.table import OVERRIDE_KEYS
from airflow_skald.core.text import decimal_text
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

    The per-run settings, one keyword per row of ``core.settings.table.SETTINGS`` (empty or
    None: the config file's value; tests/unit/operators checks these against the table):

    :param input_path: Overrides input.path: a file, folder, glob or fsspec URL (s3://...).
        (templated)
    :param input_table: Overrides input.table: the database table read (the config's input
        names its connection). (templated)
    :param output_table: Overrides output.table: the table the release replaces (the config's
        output names its connection). (templated)
    :param output_path: Overrides output.path: where the release and its manifest go. (templated)
    :param k: k of k-anonymity (an integer >= 2); empty = the config file's privacy.k. (templated)
    :param suppression_limit: Fraction of all records that may be suppressed (0..1, e.g. 0.01 = 1
        %); empty = the config file's. (templated)
    :param histogram_bins: N_RAM, the histogram size bound; empty = the file's, or derived from the
        chunk size. (templated)
    :param chunk_rows: Rows per chunk; empty = the config file's. (templated)
    :param suppressed_records: mask: keep suppressed rows with every QID '*'; drop: leave them out.
        (templated)
    :param l: l of the one configured l-diversity criterion; empty = the config file's. (templated)
    :param t: t of the one configured t-closeness criterion; empty = the config file's. (templated)
    :param c: c of the one configured recursive (c,l)-diversity criterion; empty = the file's.
        (templated)
    :param entropy_estimator: How the one configured entropy l-diversity criterion estimates
        entropy: shannon (ARX's default) or grassberger (ARX's EntropyEstimator.GRASSBERGER);
        empty = the file's. (templated)
    :param average_risk: Largest average re-identification risk of the configured average-risk
        model; empty = the config file's. (templated)
    :param sample_uniqueness: Largest share of sample-unique records (sample-uniqueness model);
        empty = the file's. (templated)
    :param population_uniqueness: Largest estimated share of population-unique records
        (population-uniqueness model); empty = the file's. (templated)
    :param k_map: k of the configured k-map model; empty = the config file's. (templated)
    :param b_likeness: beta of the one configured b-likeness criterion; empty = the config file's.
        (templated)
    :param d_disclosure: delta of the one configured d-disclosure criterion; empty = the config
        file's. (templated)
    :param dp_epsilon: epsilon of (epsilon, delta)-differential privacy; empty = the config file's.
        (templated)
    :param dp_delta: delta of (epsilon, delta)-differential privacy; empty = the config file's.
        (templated)
    :param dp_search_budget: The part of epsilon differential privacy spends on choosing the node
        (ARX's DP search budget, default 0.1); empty = the config file's. (templated)
    :param dp_search_steps: Pivot draws of differential privacy's search (expansions; default 100);
        empty = the config file's. (templated)
    :param risk_threshold: Risk analysis: a record is at risk when its prosecutor risk exceeds
        this; empty = the file's (default 0.2). (templated)
    :param risk_sampling_fraction: Risk analysis: the input's share of the population (population
        uniques); empty = the file's (default: the input is the population). (templated)
    :param risk_population: Risk analysis: the population's size, in place of a sampling fraction;
        empty = the file's. (templated)
    :param root: How N_RAM bounds the root: adaptive (its non-empty bins; default) or paper
        (possible bins). (templated)
    :param objective: What the search minimises (docs/design.md §4d): dm_star (the paper's, default),
        dm_star_arx, dm, aecs, loss, nu_entropy, precision, height (ARX's quality models).
        (templated)
    :param gs_factor: ARX's gs factor weighting generalisation against suppression (0..1; default
        0.5). (templated)
    :param aggregate: How a multi-dimensional objective combines the QIDs (rank: ARX's RANK,
        the weighted values largest first, compared in turn); empty = the model's default
        (loss: geometric_mean, precision: arithmetic_mean, nu_entropy and height: sum).
        (templated)
    :param local_recoding: Local recoding (docs/design.md §4f): the share of ALL records each step must
        release (e.g. 0.01); empty = the file's (off when the file has no
        transformation.local_recoding). (templated)
    :param local_recoding_gs: Local recoding: the gs factor of the steps (0..1); empty = the
        objective's. (templated)
    :param local_recoding_steps: Local recoding: the most steps; empty = unlimited (as ARX).
        (templated)
    :param utility_target: Utility analysis: the column classifiers predict, trained on the release
        and on the original (docs/design.md §5); empty = the file's (none: no classifiers). (templated)
    :param utility_models: Utility analysis: the classifiers (comma-separated); empty = the file's
        (default all: logistic_regression, naive_bayes, random_forest). (templated)
    :param utility_folds: Utility analysis: cross-validation folds; empty = the file's (default
        10). (templated)
    :param utility_max_records: Utility analysis: records in its sample; empty = the file's
        (default 100000). (templated)
    :param utility_features: Utility analysis: the columns classifiers learn from
        (comma-separated); empty = the file's (default: the QIDs). (templated)
    :param utility_contingency: Utility analysis: QID pairs whose contingency the report shows
        (a:b,c:d); empty = the file's. (templated)
    :param overwrite: Replace an existing release made by another run with other settings.
        (templated)
    """

    template_fields: Sequence[str] = ("config", "artifacts", "chunk_group", *OVERRIDE_KEYS)
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
        input_path: str | None = None,
        input_table: str | None = None,
        output_table: str | None = None,
        output_path: str | None = None,
        k: int | str | None = None,
        suppression_limit: float | str | None = None,
        histogram_bins: int | str | None = None,
        chunk_rows: int | str | None = None,
        suppressed_records: str | None = None,
        l: int | str | None = None,  # noqa: E741 (the setting's name)
        t: float | str | None = None,
        c: float | str | None = None,
        entropy_estimator: str | None = None,
        average_risk: float | str | None = None,
        sample_uniqueness: float | str | None = None,
        population_uniqueness: float | str | None = None,
        k_map: int | str | None = None,
        b_likeness: float | str | None = None,
        d_disclosure: float | str | None = None,
        dp_epsilon: float | str | None = None,
        dp_delta: float | str | None = None,
        dp_search_budget: float | str | None = None,
        dp_search_steps: int | str | None = None,
        risk_threshold: float | str | None = None,
        risk_sampling_fraction: float | str | None = None,
        risk_population: int | str | None = None,
        root: str | None = None,
        objective: str | None = None,
        gs_factor: float | str | None = None,
        aggregate: str | None = None,
        local_recoding: float | str | None = None,
        local_recoding_gs: float | str | None = None,
        local_recoding_steps: int | str | None = None,
        utility_target: str | None = None,
        utility_models: list | str | None = None,
        utility_folds: int | str | None = None,
        utility_max_records: int | str | None = None,
        utility_features: list | str | None = None,
        utility_contingency: list | str | None = None,
        overwrite: bool | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if mode not in self.modes:
            raise ValueError(
                f"{type(self).__name__}: mode must be one of {self.modes}, not {mode!r}"
            )
        self.config, self.artifacts = config, artifacts
        self.mode, self.chunk_group = mode, chunk_group
        # where a DP run's secret lives in Airflow: a connection's password, or a variable
        self.dp_key_conn_id, self.dp_key_variable = dp_key_conn_id, dp_key_variable
        self.input_path = input_path
        self.input_table = input_table
        self.output_table = output_table
        self.output_path = output_path
        self.k = k
        self.suppression_limit = suppression_limit
        self.histogram_bins = histogram_bins
        self.chunk_rows = chunk_rows
        self.suppressed_records = suppressed_records
        self.l = l
        self.t = t
        self.c = c
        self.entropy_estimator = entropy_estimator
        self.average_risk = average_risk
        self.sample_uniqueness = sample_uniqueness
        self.population_uniqueness = population_uniqueness
        self.k_map = k_map
        self.b_likeness = b_likeness
        self.d_disclosure = d_disclosure
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.dp_search_budget = dp_search_budget
        self.dp_search_steps = dp_search_steps
        self.risk_threshold = risk_threshold
        self.risk_sampling_fraction = risk_sampling_fraction
        self.risk_population = risk_population
        self.root = root
        self.objective = objective
        self.gs_factor = gs_factor
        self.aggregate = aggregate
        self.local_recoding = local_recoding
        self.local_recoding_gs = local_recoding_gs
        self.local_recoding_steps = local_recoding_steps
        self.utility_target = utility_target
        self.utility_models = utility_models
        self.utility_folds = utility_folds
        self.utility_max_records = utility_max_records
        self.utility_features = utility_features
        self.utility_contingency = utility_contingency
        self.overwrite = overwrite
        # a run that failed for good frees its output at once (defect: a 6 h lock)
        callbacks = self.on_failure_callback
        if callbacks is None:
            callbacks = []
        elif callable(callbacks):
            callbacks = [callbacks]
        self.on_failure_callback = [*callbacks, release_lease_on_failure]

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
        settings = {n: self.render_path(n, getattr(self, n), context) for n in OVERRIDE_KEYS}
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
        run.resolve_connection = connection_uri  # a database's Airflow connection id
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
        if self.mode == "partial":
            group, chunk_ids = self.group()
            phase.run_group(run, group, chunk_ids)
            return None
        return phase.run_merge(run) if self.mode == "merge" else phase.run_all(run)


def settings_line(config) -> str:
    """The run's settings on one line (paths, thresholds; never a data value)."""
    from airflow_skald.core.config.policy import describe_privacy  # heavy: not at DAG parsing

    criteria = "; ".join(
        ", ".join(f"{k}={v}" for k, v in m.items()) for m in describe_privacy(config)[1:]
    )
    return (
        f"config={config.source} input={config.input.path} output={config.output.path} "
        + (f"table={config.output_table.qualified} " if config.output_table else "")
        + f"k={config.k} suppression_limit={decimal_text(config.suppression_limit)} "
        f"criteria=[{criteria}] root={config.root} "
        f"histogram_bins={config.histogram_bins or 'derived'} chunk_rows={config.chunk_rows} "
        f"suppressed_records={config.suppressed_records} overwrite={config.overwrite} "
        f"config_sha256={config.fingerprint()[:12]}"
    )
