"""DAG ``skald_from_postgres``: a PostgreSQL table k-anonymised, read through an Airflow
connection (SPEC §2a). A DAG to copy: the config names the table and the connection id,

    input: {table: clinic.patients, connection: clinic_db, order_by: [patient_id]}
    direct_identifiers: [{patient_id: pseudonymise}, name]
    pseudonym_key: {variable: skald_pseudonym_key}      # or {connection: ...}

and the params choose k, the table (``input_table``) and the release folder (``output_path``)
per run. The encode task reads the table once (ADBC, COPY binary) into staged Parquet chunks
beside the release; the three phases read those; they are deleted once the release is
committed (or the run failed for good).
"""

from __future__ import annotations

from airflow.sdk import DAG

from airflow_skald.operators import EncodeOperator, GeneraliseOperator, HistogramLatticeOperator
from airflow_skald.operators.dag_params import PARAMS, RELEASE, SETTINGS

DOC = """
### SKALD: a PostgreSQL table, k-anonymised

The config (param `config`) names the source: `input: {table: schema.name, connection: ID}`,
`ID` an Airflow connection (Admin > Connections, type Postgres, or the environment variable
`AIRFLOW_CONN_ID='postgresql://user:password@host:5432/db'`). Its password stays in Airflow:
never in logs, XCom, artifacts, manifest or report. Params: `k`, `input_table` (another table
behind the same connection), `output_path` (the release folder; manifest.json and report.html
beside the parts). The encode task's log states the rows extracted and their order.
"""

with DAG(
    dag_id="skald_from_postgres",
    schedule=None,
    params=PARAMS,
    render_template_as_native_obj=True,
    max_active_runs=4,
    tags=["skald", "anonymisation", "postgres"],
    doc_md=DOC,
    default_args={"retries": 1},
) as dag:
    encode = EncodeOperator(task_id="encode", **SETTINGS)
    histogram_lattice = HistogramLatticeOperator(task_id="histogram_lattice", **SETTINGS)
    generalise = GeneraliseOperator(task_id="generalise", outlets=[RELEASE], **SETTINGS)

    encode >> histogram_lattice >> generalise
