"""DAG ``skald_from_postgres``: a PostgreSQL table k-anonymised into a table, both through
Airflow connections (docs/design.md §2a). A DAG to copy: the config names the tables and connection ids,

    input:  {table: clinic.patients, connection: clinic_db, order_by: [patient_id]}
    output: {table: research.patients_k10, connection: warehouse}   # or {path: ...}: files
    direct_identifiers: [{patient_id: pseudonymise}, name]
    pseudonym_key: {variable: skald_pseudonym_key}      # or {connection: ...}

and the params choose k and the tables per run (``input_table``, ``output_table``). The encode
task reads the table once (ADBC, COPY binary) into staged Parquet chunks; the generalise task
writes the verified release into a new table, reads it back and verifies it, and swaps it in
for the old one in one transaction (the old one stays intact if anything fails), the
manifest's SHA-256 in the table's comment; the manifest and report go to the release folder
``{[skald] artifacts}/skald-releases/{schema.table}`` (or ``output.path``). The release's
Asset is the table's URI, ``postgres://host:port/db/schema/table``.
"""

from __future__ import annotations

from airflow.sdk import DAG

from airflow_skald.operators import EncodeOperator, GeneraliseOperator, HistogramLatticeOperator
from airflow_skald.operators.dag_params import PARAMS, RELEASE, SETTINGS

DOC = """
### SKALD: a PostgreSQL table, k-anonymised into a table

The config (param `config`) names the source, `input: {table: schema.name, connection: ID}`,
and the release, `output: {table: schema.name, connection: ID}`; each `ID` an Airflow
connection (Admin > Connections, type Postgres; the REST API; or the environment variable
`AIRFLOW_CONN_ID='postgresql://user:password@host:5432/db'`). Passwords stay in Airflow: never
in logs, XCom, artifacts, manifest, report or lineage. Params: `k`, `input_table`,
`output_table` (other tables behind the same connections), `overwrite` (replace a release made
with other settings). The release table is replaced in one transaction after the new rows were
verified; its comment holds the manifest's SHA-256; manifest.json and report.html are in
`{artifacts}/skald-releases/{schema.table}/` and linked from the generalise task.
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
