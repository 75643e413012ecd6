"""transform/encoded.py's protocols name only what encode's Plan and Dimension provide: a
rename in encode that the protocols did not follow fails here, not in a run (ADR 0072)."""

import dataclasses
import inspect

from airflow_skald.core.encode.dimensions import Dimension
from airflow_skald.core.encode.domain_stats import DomainStats
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.transform.encoded import EncodedDimension, EncodedPlan, EncodedStats


def members(protocol: type) -> set[str]:
    own = set(protocol.__annotations__) | {
        n for n, v in vars(protocol).items() if not n.startswith("_") and callable(v)
    }
    return own | {n for n, v in vars(protocol).items() if isinstance(v, property)}


def provided(cls: type) -> set[str]:
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    return fields | {n for n, _ in inspect.getmembers(cls)}


def test_plan_dimension_and_stats_provide_every_member_the_protocols_read() -> None:
    for protocol, cls in (
        (EncodedPlan, Plan),
        (EncodedDimension, Dimension),
        (EncodedStats, DomainStats),
    ):
        assert members(protocol) - provided(cls) == set(), (protocol.__name__, cls.__name__)
        assert members(protocol)  # the protocol names something
