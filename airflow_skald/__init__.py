"""airflow-skald: SKALD k-anonymisation for datasets larger than RAM."""

__version__ = "0.1.0"
