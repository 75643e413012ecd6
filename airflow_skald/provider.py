"""Provider metadata read by Airflow's ProvidersManager (entry point ``apache_airflow_provider``).

Kept import-free: Airflow calls this while it is still starting up.
"""

from __future__ import annotations

from airflow_skald import __version__


def get_provider_info() -> dict:
    """Describe this package to Airflow (operators, extra links) without importing them."""
    return {
        "package-name": "airflow-skald",
        "name": "SKALD k-anonymisation",
        "description": "k-anonymisation of datasets larger than RAM (SKALD), as Airflow operators.",
        "versions": [__version__],
        "operators": [
            {
                "integration-name": "SKALD",
                "python-modules": ["airflow_skald.operators"],
            }
        ],
        "extra-links": ["airflow_skald.operators.links.SkaldManifestLink"],
    }
