"""release_classes' fast paths (parts summed into a dense table, keyed in the reading threads
or through a lookup; batched merges when the table would be too sparse, and back) give exactly
what ReleaseClasses.merge of the parts' own class tables gives: same labels in the same order,
same classes in the same order, same sizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_skald.core.data.io import read_release_part
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode.domain import dictionary_of
from airflow_skald.core.release.count import dense
from airflow_skald.core.release.count import parts as counting
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.count.parts import release_classes

QIDS = ["a", "b", "c"]
SENSITIVE = ["s", "t"]
POOL = {
    "a": [f"[{i}-{i + 4}]" for i in range(0, 200, 5)] + ["*"],
    "b": [f"b{i}" for i in range(12)] + ["*"],
    "c": ["x", "y", "*"],
}


def _dictionary(rng: np.random.Generator, pool: list[str], shared: bool, late: int) -> list[str]:
    """A part's dictionary: the whole pool in one order (every part alike, as skald writes
    them), or a shuffled subset that grows over the parts (labels first seen late)."""
    if shared:
        return pool
    n = min(len(pool), max(1, late + int(rng.integers(0, 4))))
    return [str(v) for v in rng.permutation(pool[:n])]


def _write_parts(tmp_path: Path, seed: int, n_parts: int, shared: bool) -> list[str]:
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n_parts):
        n = 0 if i == 5 else int(rng.integers(1, 400))  # one part empty
        columns = {}
        for q in QIDS:
            dictionary = _dictionary(rng, POOL[q], shared, late=2 + 3 * i)
            indices = rng.integers(0, len(dictionary), n).astype(np.int32)
            columns[q] = pa.DictionaryArray.from_arrays(pa.array(indices), pa.array(dictionary))
        s = rng.integers(0, 3 + i, n)  # numbers, some of them null, values growing over parts
        columns["s"] = pa.array(s, mask=rng.random(n) < 0.1, type=pa.int64())
        columns["t"] = pa.array(rng.choice(["lo", "mid", "hi", "top"], n).tolist())
        path = tmp_path / f"part-{i:05d}.parquet"
        pq.write_table(pa.table(columns), path)
        paths.append(str(path))
    return paths


def _part_classes(location: DataLocation, part: str) -> ReleaseClasses:
    """One part's classes, counted the plain way: its dictionaries, its distinct code rows."""
    table = read_release_part(location, part, [*QIDS, *SENSITIVE])
    n_columns = len(QIDS) + len(SENSITIVE)
    if not table.num_rows:
        return ReleaseClasses.empty(n_columns)
    labels, codes = [], []
    for name in [*QIDS, *SENSITIVE]:
        column = table.column(name)
        enc = dictionary_of(column) if name in QIDS else counting.value_dictionary(table, name)
        local, index = enc.dictionary.to_pylist(), enc.indices
        if any(v is None for v in local) or index.null_count:
            local, index = [*local, None], index.fill_null(len(local))
        labels.append(local)
        codes.append(index.to_numpy(zero_copy_only=False).astype(np.int64))
    rows, sizes = np.unique(np.stack(codes, axis=1), axis=0, return_counts=True)
    return ReleaseClasses(labels, rows, sizes.astype(np.int64), table.num_rows)


def _same(got: ReleaseClasses, want: ReleaseClasses) -> None:
    assert got.labels == want.labels
    assert got.n_rows == want.n_rows
    np.testing.assert_array_equal(got.codes, want.codes)
    np.testing.assert_array_equal(got.sizes, want.sizes)
    assert got.codes.dtype == np.int64 and got.sizes.dtype == np.int64


# (dense cells, cells per class, merge batch): the default; a dense table refused from the
# start (batched merges, never dense again); refused then taken up again once the merged
# classes are many enough; growing in small steps (re-laid out) within a tight bound
SETTINGS = [
    (dense.DENSE_CLASS_CELLS, dense.DENSE_CELLS_PER_CLASS, counting.MERGE_BATCH_CLASSES),
    (1, 0, 50),
    (64, 60, 100),
    (2_000, 40, 300),
]


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("seed", range(4))
def test_release_classes_equal_merge_of_part_tables(
    tmp_path: Path, monkeypatch, seed: int, settings: tuple[int, int, int], shared: bool
) -> None:
    cells, per_class, batch = settings
    monkeypatch.setattr(dense, "DENSE_CLASS_CELLS", cells)
    monkeypatch.setattr(dense, "DENSE_CELLS_PER_CLASS", per_class)
    monkeypatch.setattr(counting, "MERGE_BATCH_CLASSES", batch)
    parts = _write_parts(tmp_path, seed, n_parts=24, shared=shared)
    location = DataLocation(str(tmp_path), "parquet")
    want = ReleaseClasses.merge([_part_classes(location, p) for p in parts])
    assert want.sizes.size > 1000  # many classes, many labels
    _same(release_classes(parts, location, QIDS, SENSITIVE), want)
    # each part on its own, then merged; and the QIDs alone
    _same(
        ReleaseClasses.merge([release_classes([p], location, QIDS, SENSITIVE) for p in parts]), want
    )
    only = release_classes(parts, location, QIDS)
    assert only.labels == want.labels[: len(QIDS)]
    assert int(only.sizes.sum()) == want.n_rows == only.n_rows


def test_sparse_then_dense_again_is_taken(tmp_path: Path, monkeypatch) -> None:
    """The settings above do reach each path: refused, merged in batches, dense again."""
    monkeypatch.setattr(dense, "DENSE_CLASS_CELLS", 64)
    monkeypatch.setattr(dense, "DENSE_CELLS_PER_CLASS", 60)
    monkeypatch.setattr(counting, "MERGE_BATCH_CLASSES", 100)
    taken = []
    of = dense.DenseClasses.of.__func__

    def spy(cls, classes):
        dense = of(cls, classes)
        taken.append(dense is not None)
        return dense

    monkeypatch.setattr(dense.DenseClasses, "of", classmethod(spy))
    parts = _write_parts(tmp_path, 0, n_parts=24, shared=True)
    location = DataLocation(str(tmp_path), "parquet")
    release_classes(parts, location, QIDS, SENSITIVE)
    assert False in taken and True in taken


def test_one_label_columns(tmp_path: Path) -> None:
    """Columns of one label each (e.g. the all-"*" top node): one class, every row in it."""
    parts = []
    for i, n in enumerate([3, 0, 5]):
        path = tmp_path / f"part-{i:05d}.parquet"
        pq.write_table(pa.table({q: ["*"] * n for q in QIDS}), path)
        parts.append(str(path))
    location = DataLocation(str(tmp_path), "parquet")
    got = release_classes(parts, location, QIDS)
    want = ReleaseClasses.merge([release_classes([p], location, QIDS) for p in parts])
    _same(got, want)
    assert got.labels == [["*"]] * 3 and got.sizes.tolist() == [8] and got.n_rows == 8
