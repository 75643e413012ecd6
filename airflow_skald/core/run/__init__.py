"""Orchestration: the one phase runner for the CLI and the operators, per-chunk work, workers, the per-chunk baseline."""

from airflow_skald.core.passes.startup import prepare

prepare()  # a process that runs phases: the start-up costs set aside before numpy and pyarrow
