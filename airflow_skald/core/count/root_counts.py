"""Phase 2's partial and merged result: the root node's class counts and, per sensitive
attribute that a privacy criterion names, the counts per (root class, value) (docs/design.md §4b).

Both are histograms (`Histogram`): the (class, value) table is the root histogram with one more
axis, the attribute's value code, innermost (key = class key * m + code). Counts are additive,
so partials counted over any chunks merge exactly. A k-only run has no value tables, and its
byte form is the class histogram's own (unchanged).

`sums`: per microaggregated QID counted as sums (`encode.class_sums`), a table over the class
bins whose "counts" are the sums of the bins' value offsets (a bin summing to 0 is absent);
additive and rolled up as the class counts are.

`node` is the lattice node the counts are at (the root in paper mode; in adaptive mode a node
of phase 1's root chain, ADR 0012), so partials counted at different nodes can be merged by
rolling them up (`adaptive_root.merge_on_chain`). It prefixes the byte form when set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from airflow_skald.core.count.histogram import Histogram


@dataclass
class RootCounts:
    classes: Histogram
    values: Mapping[str, Histogram] = field(default_factory=dict)
    node: tuple[int, ...] | None = None
    sums: Mapping[str, Histogram] = field(default_factory=dict)

    @property
    def n_records(self) -> int:
        return self.classes.n_records

    @property
    def n_bins(self) -> int:
        """Non-empty bins held: classes, plus (class, value) pairs of every attribute."""
        return self.classes.n_bins + sum(h.n_bins for h in self.values.values())

    @property
    def bounded_bins(self) -> int:
        """The non-empty bins N_RAM bounds (docs/design.md §4a, §4b): the (class, value) pairs of the
        attributes criteria name, summed, when there are any; else the classes."""
        if self.values:
            return sum(h.n_bins for h in self.values.values())
        return self.classes.n_bins

    @staticmethod
    def merge(parts: Sequence[RootCounts]) -> RootCounts:
        """Exact sum of counts at the same node (adaptive_root.merge_on_chain rolls first)."""
        names = list(parts[0].values)
        nodes = {p.node for p in parts}
        if len(nodes) > 1:
            raise ValueError(f"counts at different nodes {sorted(nodes)} cannot be summed")
        return RootCounts(
            Histogram.merge([p.classes for p in parts]),
            {a: Histogram.merge([p.values[a] for p in parts]) for a in names},
            node=parts[0].node,
            sums={a: Histogram.merge([p.sums[a] for p in parts]) for a in parts[0].sums},
        )

    def compact(self) -> RootCounts:
        return RootCounts(
            self.classes.compact(),
            {a: h.compact() for a, h in self.values.items()},
            self.node,
            {a: h.compact() for a, h in self.sums.items()},
        )

    def to_bytes(self) -> bytes:
        body = self._body()
        if self.node is None:
            return body
        return b"SKALDRN1" + json.dumps(list(self.node)).encode() + b"\n" + body

    def _body(self) -> bytes:
        if not self.values and not self.sums:
            return self.classes.to_bytes()
        tables = [*self.values.values(), *self.sums.values()]
        blobs = [self.classes.to_bytes(), *(h.to_bytes() for h in tables)]
        head = {"values": list(self.values), "sizes": [len(b) for b in blobs]}
        if self.sums:
            head["sums"] = list(self.sums)
        return b"SKALDRC1" + json.dumps(head).encode() + b"\n" + b"".join(blobs)

    @classmethod
    def from_bytes(cls, data: bytes) -> RootCounts:
        if data.startswith(b"SKALDRN1"):
            head, _, body = data[8:].partition(b"\n")
            counts = cls.from_bytes(body)
            counts.node = tuple(int(x) for x in json.loads(head))
            return counts
        if not data.startswith(b"SKALDRC1"):
            return cls(Histogram.from_bytes(data))
        head, _, body = data[8:].partition(b"\n")
        meta = json.loads(head)
        blobs, at = [], 0
        for size in meta["sizes"]:
            blobs.append(body[at : at + size])
            at += size
        tables = [Histogram.from_bytes(b) for b in blobs[1:]]
        n = len(meta["values"])
        values = dict(zip(meta["values"], tables[:n], strict=True))
        sums = dict(zip(meta.get("sums", []), tables[n:], strict=True))
        return cls(Histogram.from_bytes(blobs[0]), values, sums=sums)
