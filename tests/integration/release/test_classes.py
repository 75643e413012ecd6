"""The verifier's class tables: merged across parts exactly as counting the rows would."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers_data import config_dict, write_dataset

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.passes import pipeline
from airflow_skald.core.release.check.verify import verify_release
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.count.parts import release_classes
from airflow_skald.core.run import runner

LABELS = {"a": ["[0-9]", "[10-19]", "*"], "b": ["x", "y", "*"]}


def _parts(tmp_path: Path, seed: int, n_parts: int, rows: int) -> tuple[list[str], Counter]:
    rng = np.random.default_rng(seed)
    expected: Counter = Counter()
    parts = []
    for i in range(n_parts):
        n = int(rng.integers(0, rows))  # some parts are empty
        columns = {q: rng.choice(v, n).tolist() for q, v in LABELS.items()}
        if n and i % 2:  # one part with all-"*" rows (masked records)
            columns = {q: ["*"] * n for q in LABELS}
        expected.update(zip(columns["a"], columns["b"], strict=True))
        path = tmp_path / f"part-{i:05d}.parquet"
        pq.write_table(pa.table({**columns, "s": list(range(n))}, schema=_schema()), path)
        parts.append(str(path))
    return parts, expected


def _schema() -> pa.Schema:
    return pa.schema([("a", pa.string()), ("b", pa.string()), ("s", pa.int64())])


@pytest.mark.parametrize("seed", range(5))
def test_release_classes_count_every_tuple(tmp_path: Path, seed: int) -> None:
    parts, expected = _parts(tmp_path, seed, n_parts=6, rows=300)
    classes = release_classes(parts, DataLocation(str(tmp_path), "parquet"), ["a", "b"])
    assert classes.named() == expected
    assert classes.n_rows == sum(expected.values())
    star = classes.star_mask()
    assert int(classes.sizes[star].sum()) == expected[("*", "*")]
    # merging per-part tables in any grouping gives the same classes
    one = [release_classes([p], DataLocation(str(tmp_path), "parquet"), ["a", "b"]) for p in parts]
    regrouped = ReleaseClasses.merge([ReleaseClasses.merge(one[:3]), ReleaseClasses.merge(one[3:])])
    assert regrouped.named() == expected and regrouped.n_rows == classes.n_rows


def test_classes_in_label_order_do_not_depend_on_how_they_were_listed() -> None:
    """The same classes, their labels and rows listed in another order (another chunking, an
    engine's GROUP BY), read in label order are the same arrays (a null label last)."""
    labels = [["b", "a", "*"], ["y", None, "x"]]
    codes = np.asarray([[0, 0], [2, 1], [1, 2], [1, 0]], np.int64)
    sizes = np.asarray([5, 3, 7, 2], np.int64)
    first = ReleaseClasses(labels, codes, sizes, 17)
    perm = np.asarray([3, 1, 0, 2])  # the rows in another order, the labels too:
    relabel = [np.asarray([2, 0, 1]), np.asarray([1, 2, 0])]  # first's index -> other's
    moved = np.stack([relabel[j][codes[perm, j]] for j in range(2)], axis=1)
    other = ReleaseClasses([["a", "*", "b"], ["x", "y", None]], moved, sizes[perm], 17)
    a, b = first.in_label_order(), other.in_label_order()
    assert a.labels == b.labels == [["*", "a", "b"], ["x", "y", None]]
    assert a.codes.tolist() == b.codes.tolist() == [[0, 2], [1, 0], [1, 1], [2, 1]]
    assert a.sizes.tolist() == b.sizes.tolist() == [3, 7, 2, 5]
    assert a.named() == first.named() and a.n_rows == 17


def test_no_star_label_means_no_star_class() -> None:
    classes = ReleaseClasses([["x"], ["y"]], np.zeros((1, 2), np.int64), np.asarray([4]), 4)
    assert not classes.star_mask().any()


def test_verification_from_group_tables_equals_reading_every_part(
    tmp_path: Path, monkeypatch
) -> None:
    """The mapped DAG's final step merges the tables its tasks counted from their own written
    parts (`pipeline.count_written`) instead of re-reading the release: same report; a table
    that disagrees with the release's figures fails."""
    write_dataset(tmp_path / "in", n_files=3, rows=60, seed=2)
    config = config_from_dict(config_dict(tmp_path / "in", tmp_path / "out", chunk_rows=20))
    manifest = runner.run(config)
    out = str(tmp_path / "out")
    groups = [manifest["parts"][:4], manifest["parts"][4:]]
    merged = ReleaseClasses.merge([pipeline.count_written(config, out, g) for g in groups])
    assert verify_release(out, config.min_class_size, classes=merged) == verify_release(
        out, config.min_class_size
    )
    broken = ReleaseClasses(merged.labels, merged.codes, merged.sizes.copy(), merged.n_rows)
    broken.sizes[np.argmax(~merged.star_mask())] = 1  # a class below k
    with pytest.raises(VerificationError):
        verify_release(out, config.min_class_size, classes=broken)
