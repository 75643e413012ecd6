"""The release's class table from the engine's GROUP BY of what it wrote (a column `n` of
counts per (QID, sensitive) tuple): read batch by batch as the cursor delivers it, each
column's labels kept once (in the order they are first seen) and each row as codes into
them, so the worker holds the classes' codes, never the grouped rows' text (issue 43: the
chosen node's classes grow with the input's records). `release_classes` counts the same
classes from the parts' rows."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.encode.domain import dictionary_of
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.release.count.classes import ReleaseClasses, distinct_classes
from airflow_skald.core.release.count.parts import column_dictionary


def classes_of(
    grouped: pa.Table | Iterable[pa.RecordBatch], qids: list[str], sensitive: list[str]
) -> ReleaseClasses:
    """The release's classes from the engine's GROUP BY (a table, or its batches as they
    arrive): as `release_classes` counts them from the parts' rows."""
    batches = grouped.to_batches() if isinstance(grouped, pa.Table) else grouped
    columns = [_Labels(name, name in qids) for name in [*qids, *sensitive]]
    counts = []
    for batch in batches:
        for column in columns:
            column.add(batch.column(column.name))
        counts.append(batch.column("n").to_numpy().astype(np.int64))
    weights = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
    del counts
    n_rows = int(weights.sum(dtype=np.int64))
    if not weights.size:
        return ReleaseClasses.empty(len(columns), n_rows)
    labels = [column.labels() for column in columns]  # a QID's empty value refused here
    codes = [column.codes() for column in columns]
    radices = [max(len(x), 1) for x in labels]
    small = np.int32 if max(radices) < 2**31 else np.int64  # the classes' codes, kept
    classes, sizes = distinct_classes(codes, radices, weights, dtype=small, owned=True)
    return ReleaseClasses(labels, classes, sizes, n_rows)


class _Labels:
    """One column's labels in the order first seen over the batches (a whole column's
    dictionary encoding), its rows' codes into them (int32); an empty value (null) is coded
    after every label, as None."""

    def __init__(self, name: str, qid: bool):
        self.name, self.qid = name, qid
        self.known: pa.Array | None = None
        self.parts: list[np.ndarray] = []
        self.nulls = False
        self._none = -1  # the code of an empty value (set by `labels`)

    def add(self, column: pa.Array) -> None:
        enc = dictionary_of(column) if self.qid else column_dictionary(column)
        local = enc.dictionary
        if self.known is None:
            self.known, where = local, np.arange(len(local), dtype=np.int32)
        else:  # labels seen before keep their code; new ones follow, in this batch's order
            found = pc.index_in(local, value_set=self.known, skip_nulls=False)
            new = found.is_null().to_numpy(zero_copy_only=False)
            where = found.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32)
            where[new] = len(self.known) + np.arange(int(new.sum()), dtype=np.int32)
            if new.any():
                self.known = pa.concat_arrays([self.known, local.filter(pa.array(new))])
        index = enc.indices
        if index.null_count:
            self.nulls = True
            index = index.fill_null(len(local))
        where = np.append(where, np.int32(-1))  # a null row: coded once every label is known
        self.parts.append(where[index.to_numpy(zero_copy_only=False)])

    def labels(self) -> list:
        out = self.known.to_pylist() if self.known is not None else []
        if self.nulls or any(v is None for v in out):
            if self.qid:
                raise VerificationError(f"release column '{self.name}' has empty values")
            self.nulls = True
            out.append(None)
        self._none = len(out) - 1
        return out

    def codes(self) -> np.ndarray:
        """The rows' codes (after `labels`)."""
        codes = np.concatenate(self.parts) if len(self.parts) > 1 else self.parts[0]
        self.parts = []
        if self.nulls:
            codes[codes < 0] = self._none
        return codes
