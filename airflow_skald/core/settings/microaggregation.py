"""A quasi-identifier's `microaggregation:` entry (docs/design.md §4f) as validated values: a leaf
module, so the config reads it without importing the transformation (`core.transform`).

```yaml
quasi_identifiers:
  - {name: age, type: numerical, min_width: 1, microaggregation: {function: mean, cluster: true}}
```

It is a per-QID setting of the file only (no CLI flag or DAG param: a QID's transformation is
part of its definition, as its hierarchy is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_skald.core.errors import ConfigError

#: ARX's `MicroAggregationFunction`s the product offers (`set` is not offered)
FUNCTIONS = ("mean", "geometric_mean", "median", "mode", "interval")


@dataclass(frozen=True)
class QidMicroaggregation:
    """`function`: one of FUNCTIONS; `cluster`: the QID stays in the lattice and its level
    forms the classes (ARX's `performClustering`), else it leaves the lattice."""

    function: str
    cluster: bool

    def describe(self) -> dict[str, Any]:
        return {"function": self.function, "cluster": self.cluster}


def parse_microaggregation(raw: Any, where: str) -> QidMicroaggregation:
    """`{function: ..., cluster: true|false}` (both required: leaving the lattice or not
    changes what the classes are, so it is never a silent default)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: microaggregation must be a mapping")
    unknown = sorted(str(k) for k in set(raw) - {"function", "cluster"})
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} in {where}: microaggregation")
    function = raw.get("function")
    if function not in FUNCTIONS:
        raise ConfigError(
            f"{where}: microaggregation.function must be one of {', '.join(FUNCTIONS)}"
        )
    cluster = raw.get("cluster")
    if not isinstance(cluster, bool):
        raise ConfigError(f"{where}: microaggregation.cluster must be true or false")
    return QidMicroaggregation(function, cluster)
