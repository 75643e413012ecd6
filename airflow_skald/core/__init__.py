"""Pure-Python SKALD core: no Airflow import anywhere below this package."""
