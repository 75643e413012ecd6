"""Params and templated settings shared by the SKALD DAGs in dags/ (importable by user DAGs)."""

from __future__ import annotations

from airflow.sdk import Param

from airflow_skald.operators.release_event import RELEASE_ALIAS

PARAMS = {
    "config": Param(
        None,
        type=["null", "string"],
        minLength=1,
        description="Path of the skald.yaml the workers read (SPEC section 2).",
    ),
    "input_path": Param(
        None,
        type=["null", "string"],
        description="Overrides input.path: a file, folder, glob or fsspec URL (s3://...).",
    ),
    "output_path": Param(
        None,
        type=["null", "string"],
        description="Overrides output.path: where the release and its manifest go.",
    ),
    "k": Param(50, type="integer", minimum=2, description="k of k-anonymity (integer >= 2)."),
    "suppression_limit": Param(
        None,
        type=["null", "number"],
        minimum=0,
        maximum=1,
        description="Fraction of all records that may be suppressed (0..1); empty = the file's.",
    ),
    "histogram_bins": Param(
        None,
        type=["null", "integer"],
        minimum=2,
        description="N_RAM, the histogram size bound; empty = the file's, or derived (n*d/16).",
    ),
    "chunk_rows": Param(
        None,
        type=["null", "integer"],
        minimum=1,
        description="Rows per chunk; empty = the file's.",
    ),
}

# Rendered as native objects (the DAGs set render_template_as_native_obj=True): k stays an int,
# an empty param stays None.
SETTINGS = {
    "config": "{{ params.config }}",
    "input_path": "{{ params.input_path }}",
    "output_path": "{{ params.output_path }}",
    "k": "{{ params.k }}",
    "suppression_limit": "{{ params.suppression_limit }}",
    "histogram_bins": "{{ params.histogram_bins }}",
    "chunk_rows": "{{ params.chunk_rows }}",
}

# Releases, for lineage and auditing: an AssetAlias that each run resolves to the Asset of its
# output location, with one event per release holding its figures (release_event.py).
RELEASE = RELEASE_ALIAS

DOC = """
### SKALD k-anonymisation

Releases a k-anonymised copy of a dataset larger than RAM (see the project README).
Artifacts (domain statistics, root histogram, decision, manifest) are written to
`{[skald] artifacts}/{dag_id}/{run_id}/`; the release goes to the config's output path.
Trigger with a conf such as `{"config": "/data/skald.yaml", "k": 10}`.
"""
