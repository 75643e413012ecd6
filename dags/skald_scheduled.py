"""Scheduled SKALD releases: the two ways such data arrives (README "Scheduled releases").

``skald_daily``: a daily partitioned input, released per logical date into a dated output::

    <config folder>/date=2026-03-01/*.parquet  ->  <config folder>/releases/daily-2026-03-01/

The paths are the params' defaults, templated with ``{{ ds }}`` and relative to the config
file's folder (the operators render and resolve them). Catchup and backfills are idempotent: a
date run again reproduces its release byte for byte (an identical rerun may replace it); a date
whose input changed is refused, naming the release in place, unless ``overwrite``; nothing is
ever half-replaced (staging, verified, then committed).

``skald_on_asset``: data-aware scheduling: runs whenever an upstream DAG (or the REST API)
updates the input Asset, and releases into one output (replaced each time: ``overwrite``
defaults to true). The release's asset event lists the input event(s) it was made from
(``input_events``: URI, time, upstream DAG and run).

Set up with environment variables of the Airflow processes (or edit the defaults below):

- ``SKALD_SCHEDULED_CONFIG``: the skald.yaml both DAGs read (required for scheduled runs);
- ``SKALD_SCHEDULED_START``: the daily DAG's first logical date (default 2026-01-01);
- ``SKALD_SCHEDULED_CATCHUP``: ``true`` to run every past date since the start;
- ``SKALD_INPUT_ASSET``: the URI of the input Asset (default ``file:///data/skald/incoming``).
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, Asset, Param

from airflow_skald.operators import EncodeOperator, GeneraliseOperator, HistogramLatticeOperator
from airflow_skald.operators.dag_params import PARAMS, RELEASE, SETTINGS

CONFIG = os.environ.get("SKALD_SCHEDULED_CONFIG") or None
START = dt.datetime.fromisoformat(os.environ.get("SKALD_SCHEDULED_START") or "2026-01-01")
CATCHUP = (os.environ.get("SKALD_SCHEDULED_CATCHUP") or "").lower() in ("1", "true", "yes")
INPUT_ASSET = Asset(
    os.environ.get("SKALD_INPUT_ASSET") or "file:///data/skald/incoming", group="skald-input"
)


def _params(**defaults) -> dict[str, Param]:
    """The SKALD params with other defaults (a scheduled run has no conf)."""
    params = dict(PARAMS)
    for name, value in defaults.items():
        old = params[name]
        params[name] = Param(value, description=old.description, **old.schema)
    return params


def _tasks() -> None:
    encode = EncodeOperator(task_id="encode", **SETTINGS)
    histogram_lattice = HistogramLatticeOperator(task_id="histogram_lattice", **SETTINGS)
    generalise = GeneraliseOperator(task_id="generalise", outlets=[RELEASE], **SETTINGS)
    encode >> histogram_lattice >> generalise


with DAG(
    dag_id="skald_daily",
    schedule="@daily",
    start_date=START.replace(tzinfo=dt.UTC),
    catchup=CATCHUP,
    params=_params(
        config=CONFIG,
        input_path="date={{ ds }}",
        output_path="releases/daily-{{ ds }}",
    ),
    render_template_as_native_obj=True,
    max_active_runs=2,
    tags=["skald", "anonymisation", "scheduled"],
    doc_md=__doc__,
    default_args={"retries": 1},
):
    _tasks()

with DAG(
    dag_id="skald_on_asset",
    schedule=[INPUT_ASSET],
    start_date=START.replace(tzinfo=dt.UTC),
    params=_params(config=CONFIG, output_path="releases/from-asset", overwrite=True),
    render_template_as_native_obj=True,
    max_active_runs=1,
    tags=["skald", "anonymisation", "scheduled"],
    doc_md=__doc__,
    default_args={"retries": 1},
):
    _tasks()
