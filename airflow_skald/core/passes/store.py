"""A run's artifact store: the names of what each phase persists, and the store they go
through (the Airflow run's artifact folder, or memory for a CLI run)."""

from __future__ import annotations

import json
from typing import Any, Protocol

from airflow_skald.core.transform.microaggregation.at_node import (
    MICROAGGREGATES as MICROAGGREGATES,  # class aggregates at the node: PERSONAL DATA (§4f)
)

# Artifact names inside a run's store (documented in docs/adr/0101).
CHUNKS = "chunks.json"  # chunk layout and groups (file paths, offsets, row counts)
TARGET = "target.json"  # the output and the release in place when the run began (its run token)
DOMAIN_STATS = "domain_stats.json"  # phase 1 statistics: distinct values = PERSONAL DATA
PLAN = "plan.json"  # phase 1's decision: the RAM root and its figures (no values)
HISTOGRAM = "histogram.bin"  # phase 2 root histogram (counts per bin code)
DECISION = "decision.json"  # chosen node, figures, suppressed class keys (codes, no values)
TIMINGS = "timings/"  # wall-clock seconds per task: the only artifacts a retry changes


class Store(Protocol):
    """Where a run keeps its partials and phase results."""

    def read_bytes(self, name: str) -> bytes: ...
    def write_bytes(self, name: str, data: bytes) -> Any: ...
    def exists(self, name: str) -> bool: ...


class MemoryStore:
    """A store for one process (a CLI run): nothing is written anywhere."""

    persistent = False  # artifacts kept only for a later task's retry are not kept here

    def __init__(self) -> None:
        self.items: dict[str, bytes] = {}

    def read_bytes(self, name: str) -> bytes:
        return self.items[name]

    def write_bytes(self, name: str, data: bytes) -> None:
        self.items[name] = data

    def exists(self, name: str) -> bool:
        return name in self.items


def read_json(store: Store, name: str) -> Any:
    return json.loads(store.read_bytes(name))


def write_json(store: Store, name: str, body: Any) -> None:
    store.write_bytes(name, json.dumps(body, sort_keys=True, indent=1).encode() + b"\n")
