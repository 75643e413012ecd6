"""Airflow operators for SKALD: thin shells over ``airflow_skald.core.run.runner``.

Importing this package imports Airflow's task SDK but not the core (pandas, pyarrow, numpy):
the core is imported inside ``execute`` only, so DAG parsing stays fast.
"""

from __future__ import annotations

from airflow_skald.operators.links import SkaldManifestLink
from airflow_skald.operators.skald import (
    EncodeOperator,
    GeneraliseOperator,
    HistogramLatticeOperator,
)

__all__ = [
    "EncodeOperator",
    "GeneraliseOperator",
    "HistogramLatticeOperator",
    "SkaldManifestLink",
]
