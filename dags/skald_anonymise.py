"""DAG ``skald_anonymise``: the three SKALD phases as three tasks (one worker each)."""

from __future__ import annotations

from airflow.sdk import DAG

from airflow_skald.operators import EncodeOperator, GeneraliseOperator, HistogramLatticeOperator
from airflow_skald.operators.dag_params import DOC, PARAMS, RELEASE, SETTINGS

with DAG(
    dag_id="skald_anonymise",
    schedule=None,
    params=PARAMS,
    render_template_as_native_obj=True,
    max_active_runs=4,
    tags=["skald", "anonymisation"],
    doc_md=DOC,
    default_args={"retries": 1},
) as dag:
    encode = EncodeOperator(task_id="encode", **SETTINGS)
    histogram_lattice = HistogramLatticeOperator(task_id="histogram_lattice", **SETTINGS)
    generalise = GeneraliseOperator(task_id="generalise", outlets=[RELEASE], **SETTINGS)

    encode >> histogram_lattice >> generalise
