"""The figures docs/design.md §5 lists in every manifest (DM*, ARX's DM*, DM, Sweeney's precision), so
results compare with ARX and the literature, whatever the objective."""

from airflow_skald.core.quality.dm import DM
from airflow_skald.core.quality.dm_star import DMStar
from airflow_skald.core.quality.dm_star_arx import DMStarARX
from airflow_skald.core.quality.metric import Metric
from airflow_skald.core.quality.precision import Precision

OBJECTIVE: Metric = DMStar()
REPORTED: tuple[Metric, ...] = (DMStar(), DMStarARX(), DM(), Precision())
