"""Quality metrics (one module each). The search minimises ``OBJECTIVE``; the manifest reports
every metric in ``REPORTED`` so results compare with ARX and the literature (SPEC §5)."""

from airflow_skald.core.quality.dm import DM
from airflow_skald.core.quality.dm_star import DMStar
from airflow_skald.core.quality.dm_star_arx import DMStarARX
from airflow_skald.core.quality.metric import Metric, Scored, sum_squares
from airflow_skald.core.quality.precision import Precision, precision

OBJECTIVE: Metric = DMStar()
REPORTED: tuple[Metric, ...] = (DMStar(), DMStarARX(), DM(), Precision())

__all__ = [
    "DM",
    "OBJECTIVE",
    "REPORTED",
    "DMStar",
    "DMStarARX",
    "Metric",
    "Precision",
    "Scored",
    "precision",
    "sum_squares",
]
