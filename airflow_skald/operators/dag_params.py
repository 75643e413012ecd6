"""Params and templated settings shared by the SKALD DAGs in dags/ (importable by user DAGs)."""

from __future__ import annotations

from airflow.sdk import Param

from airflow_skald.core.settings.table import SETTINGS as SETTINGS_TABLE
from airflow_skald.operators.release_event import RELEASE_ALIAS

# The draft the Params' schemas name (they use only its keywords). jsonschema checks a schema
# against its draft's metaschema at every validation, and Airflow validates each Param many
# times when it serializes a DAG (the dag-processor's parse, a trigger, dag.test(): ~1,800
# validations for the DAGs in dags/): against the default draft (2020-12, whose metaschema
# resolves $dynamicRef) a check costs ~2 ms, against draft 7's ~0.3 ms; same verdicts.
DRAFT = {"$schema": "http://json-schema.org/draft-07/schema#"}


def _params() -> dict[str, Param]:
    """One Param per row of the settings table (core.settings), plus the config file.

    The type, and the bounds as values to refuse (`Setting.param_schema`): no top-level
    minimum/maximum, which the trigger form would clamp a number to (k=1 sent as 2); the
    trigger refuses an out-of-range value naming the rule, the run's first task checks every
    value again, and an empty param means the config file's value.
    """
    params = {
        "config": Param(
            None,
            **DRAFT,
            type=["null", "string"],
            description="Path of the skald.yaml the workers read (required; docs/design.md §2).",
        )
    }
    for setting in SETTINGS_TABLE:
        if setting.param:
            params[setting.name] = Param(
                None, **DRAFT, **setting.param_schema(), description=setting.description
            )
    return params


PARAMS = _params()

# Rendered as native objects (the DAGs set render_template_as_native_obj=True): k stays an int,
# an empty param stays None.
SETTINGS = {name: f"{{{{ params.{name} }}}}" for name in PARAMS}

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
