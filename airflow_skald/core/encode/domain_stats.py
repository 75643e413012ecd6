"""Phase 1's statistics: what one pass over the chunks learnt about each QID's domain.

`QidStats` per QID (observed labels or distinct values, min/max, what was cut or normalised)
and `DomainStats` over some chunks (rows, columns, record size, files checked, the criteria's
attributes). Partial statistics merge exactly, so chunks may be scanned in any order or in
parallel. They hold personal data (encoded values): artifact storage, never XCom.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import DataError


@dataclass
class QidStats:
    """What phase 1 learnt about one QID."""

    name: str
    values: list | None = (
        None  # categorical: sorted observed labels; encoded: sorted distinct values
    )
    min: float | int | None = None
    max: float | int | None = None
    integral: bool = True  # every value seen is a whole number
    numeric: bool = False  # masked codes: every value is a number (docs/design.md §3a: needs `pad`)
    finer: bool = False  # dates: some value was finer than the first level and was cut
    zoned: bool = False  # dates: some value had a time zone and was normalised to UTC

    def merge(self, other: QidStats) -> QidStats:
        values = None
        if self.values is not None:
            values = _union_sorted(self.values, other.values)
        return QidStats(
            name=self.name,
            values=values,
            min=_opt(min, self.min, other.min),
            max=_opt(max, self.max, other.max),
            integral=self.integral and other.integral,
            numeric=self.numeric and other.numeric,
            finer=self.finer or other.finer,
            zoned=self.zoned or other.zoned,
        )


def _opt(fn, a, b):
    if a is None:
        return b
    if b is None:
        return a
    return fn(a, b)


def _union_sorted(a: list, b: list) -> list:
    return np.union1d(np.asarray(a), np.asarray(b)).tolist()


@dataclass
class DomainStats:
    """Merged phase-1 statistics over some chunks (exactly additive)."""

    n_rows: int
    n_chunks: int
    columns: list[str]
    bytes_per_record: int
    qids: dict[str, QidStats]
    files_checked: list[str] = field(default_factory=list)
    sensitive: dict[str, SensitiveStats] = field(default_factory=dict)  # criteria's attributes

    @staticmethod
    def merge(parts: Sequence[DomainStats]) -> DomainStats:
        """Combine partial statistics; schema drift between parts is an error."""
        if not parts:
            raise DataError("no chunks were scanned")
        first = parts[0]
        out = DomainStats(
            first.n_rows,
            first.n_chunks,
            first.columns,
            first.bytes_per_record,
            dict(first.qids),
            list(first.files_checked),
            dict(first.sensitive),
        )
        for p in parts[1:]:
            if p.columns != out.columns:
                raise DataError(drift_message(out.columns, p.columns, p.files_checked[:1]))
            out.n_rows += p.n_rows
            out.n_chunks += p.n_chunks
            out.qids = {n: out.qids[n].merge(p.qids[n]) for n in out.qids}
            out.sensitive = {n: out.sensitive[n].merge(p.sensitive[n]) for n in out.sensitive}
            out.files_checked += [f for f in p.files_checked if f not in out.files_checked]
        return out

    def to_dict(self) -> dict:
        out = {
            "n_rows": self.n_rows,
            "n_chunks": self.n_chunks,
            "columns": self.columns,
            "bytes_per_record": self.bytes_per_record,
            "files_checked": self.files_checked,
            "qids": {n: vars(q) for n, q in self.qids.items()},
        }
        if self.sensitive:
            out["sensitive"] = {n: s.to_dict() for n, s in self.sensitive.items()}
        return out

    @classmethod
    def from_dict(cls, d: dict) -> DomainStats:
        return cls(
            n_rows=d["n_rows"],
            n_chunks=d["n_chunks"],
            columns=list(d["columns"]),
            bytes_per_record=d["bytes_per_record"],
            files_checked=list(d.get("files_checked", [])),
            qids={n: QidStats(**q) for n, q in d["qids"].items()},
            sensitive={
                n: SensitiveStats.from_dict(n, v) for n, v in d.get("sensitive", {}).items()
            },
        )

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_dict(), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> DomainStats:
        return cls.from_dict(json.loads(data))


def drift_message(expected: list[str], got: list[str], files: list[str]) -> str:
    where = f" in file {files[0]}" if files else ""
    extra = [c for c in got if c not in expected]
    missing = [c for c in expected if c not in got]
    if extra:
        return f"schema drift{where}: unexpected column '{extra[0]}' not in the first file"
    if missing:
        return f"schema drift{where}: column '{missing[0]}' is missing"
    return f"schema drift{where}: columns are in a different order than in the first file"
