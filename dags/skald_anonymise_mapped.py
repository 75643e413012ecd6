"""DAG ``skald_anonymise_mapped``: per-chunk work as mapped task instances, merged exactly.

list_chunks -> encode_chunks[i] -> encode (merge, RAM root)
            -> histogram_chunks[i] -> histogram_lattice (merge, search)
            -> generalise_chunks[i] -> generalise (verify, manifest, commit)

Each phase's mapped instances run on whatever workers the executor has (Celery, Kubernetes);
the partial statistics (domain stats, histograms) are additive and merged exactly, so the result
equals ``skald_anonymise``'s.
"""

from __future__ import annotations

from airflow.sdk import DAG, Param

from airflow_skald.operators import EncodeOperator, GeneraliseOperator, HistogramLatticeOperator
from airflow_skald.operators.dag_params import DOC, PARAMS, RELEASE, SETTINGS

with DAG(
    dag_id="skald_anonymise_mapped",
    schedule=None,
    params={
        **PARAMS,
        "chunks_per_task": Param(
            1, type="integer", minimum=1, description="Chunks per mapped task instance."
        ),
    },
    render_template_as_native_obj=True,
    max_active_runs=4,
    tags=["skald", "anonymisation", "mapped"],
    doc_md=DOC,
    default_args={"retries": 1},
) as dag:
    groups = EncodeOperator(
        task_id="list_chunks",
        mode="list",
        chunks_per_task="{{ params.chunks_per_task }}",
        **SETTINGS,
    )
    encode_chunks = EncodeOperator.partial(
        task_id="encode_chunks", mode="partial", **SETTINGS
    ).expand(chunk_group=groups.output)
    encode = EncodeOperator(task_id="encode", mode="merge", **SETTINGS)

    histogram_chunks = HistogramLatticeOperator.partial(
        task_id="histogram_chunks", mode="partial", **SETTINGS
    ).expand(chunk_group=groups.output)
    histogram_lattice = HistogramLatticeOperator(
        task_id="histogram_lattice", mode="merge", **SETTINGS
    )

    generalise_chunks = GeneraliseOperator.partial(
        task_id="generalise_chunks", mode="partial", **SETTINGS
    ).expand(chunk_group=groups.output)
    generalise = GeneraliseOperator(
        task_id="generalise", mode="merge", outlets=[RELEASE], **SETTINGS
    )

    encode_chunks >> encode >> histogram_chunks >> histogram_lattice
    histogram_lattice >> generalise_chunks >> generalise
