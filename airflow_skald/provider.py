"""Provider metadata read by Airflow's ProvidersManager (entry point ``apache_airflow_provider``).

Kept import-free: Airflow calls this while it is still starting up, so it names classes and
modules as strings and imports none of them.
"""

from __future__ import annotations

from airflow_skald import __version__


def get_provider_info() -> dict:
    """Describe this package to Airflow (operators, extra links, config) without importing them."""
    return {
        "package-name": "airflow-skald",
        "name": "SKALD k-anonymisation",
        "description": "k-anonymisation of datasets larger than RAM (SKALD), as Airflow operators",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "SKALD",
                "tags": ["software"],
            }
        ],
        "operators": [
            {
                "integration-name": "SKALD",
                "python-modules": ["airflow_skald.operators.skald"],
            }
        ],
        "extra-links": [
            "airflow_skald.operators.links.SkaldManifestLink",
            "airflow_skald.operators.links.SkaldReportLink",
        ],
        "config": {
            "skald": {
                "description": "Settings of the SKALD operators.",
                "options": {
                    "artifacts": {
                        "description": (
                            "Root of the per-run artifact folders "
                            "({artifacts}/{dag_id}/{run_id}/): a local folder or an "
                            "ObjectStoragePath URL such as s3://aws_default@bucket/skald. "
                            "Empty means $AIRFLOW_HOME/skald/artifacts. Workers and the "
                            "API server must all reach it."
                        ),
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "s3://minio_default@skald/artifacts",
                        "default": "",
                    }
                },
            }
        },
    }
