"""Release parts read back as plain columns of their input types (ADR 0006).

Phase 3 keeps text dictionary-encoded and writes Parquet dictionary pages without Arrow's schema;
readers must still see plain text, and columns Parquet cannot restore alone (here a timezone-aware
timestamp) must keep their exact type.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers_data import config_dict, make_table, write_table

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.run import runner

TEXT = ["city", "age", "zip", "disease"]  # generalised QIDs are text, and so is the sensitive one


def _release(tmp_path: Path, monkeypatch, table: pa.Table) -> list[Path]:
    inp, out = tmp_path / "in", tmp_path / "out"
    for i in range(2):
        write_table(table.slice(i * 60, 60), inp / f"chunk-{i}.parquet")
    manifest = runner.run(config_from_dict(config_dict(inp, out, chunk_rows=25)))
    assert manifest["n_records"] == 120
    return [out / p for p in manifest["parts"]]


def test_parts_read_back_as_plain_text(tmp_path: Path, monkeypatch) -> None:
    parts = _release(tmp_path, monkeypatch, make_table(120, seed=3))
    for part in parts:
        schema = pq.read_schema(part)
        for name in TEXT:
            assert schema.field(name).type == pa.string(), (part.name, name)
        assert b"ARROW:schema" not in (pq.read_metadata(part).metadata or {})
        frame = pq.read_table(part).to_pandas()
        assert not any(isinstance(frame[c].dtype, pd.CategoricalDtype) for c in TEXT)
        # dictionary pages hold each value once: same text read plainly or as a dictionary
        plain = pq.read_table(part, columns=TEXT)
        encoded = pq.read_table(part, columns=TEXT, read_dictionary=TEXT)
        for name in TEXT:
            column = encoded.column(name)
            for chunk in column.chunks:
                values = chunk.dictionary.to_pylist()
                assert len(values) == len(set(values)), (part.name, name)
            assert column.cast(pa.string()).equals(plain.column(name))


def test_types_parquet_cannot_restore_keep_arrow_schema(tmp_path: Path, monkeypatch) -> None:
    table = make_table(120, seed=4)
    stamps = pa.array(
        np.arange(120, dtype=np.int64) * 3_600_000_000, pa.timestamp("us", tz="Europe/Oslo")
    )
    parts = _release(tmp_path, monkeypatch, table.append_column("seen", stamps))
    rows = 0
    for part in parts:
        released = pq.read_table(part)
        assert released.schema.field("seen").type == pa.timestamp("us", tz="Europe/Oslo")
        for name in TEXT:
            assert released.schema.field(name).type == pa.string(), (part.name, name)
        rows += released.num_rows
    assert rows == 120


def test_nullable_passthrough_text_survives_both_modes(tmp_path: Path, monkeypatch) -> None:
    """A released text column with nulls keeps every value and null, in order (mask), and only
    the kept rows' values (drop)."""
    notes = [None if i % 7 == 0 else f"note-{i % 5}" for i in range(120)]
    table = make_table(120, seed=5).append_column("note", pa.array(notes, pa.string()))
    masked = _release(tmp_path / "mask", monkeypatch, table)
    released = [r for p in masked for r in pq.read_table(p).to_pylist()]
    assert [r["note"] for r in released] == notes

    cfg = config_dict(tmp_path / "mask" / "in", tmp_path / "drop", chunk_rows=25)
    cfg["suppressed_records"] = "drop"
    manifest = runner.run(config_from_dict(cfg))
    kept = [r for p in manifest["parts"] for r in pq.read_table(tmp_path / "drop" / p).to_pylist()]
    qids = ["city", "age", "zip"]
    masked_rows = [r for r in released if all(r[q] == "*" for q in qids)]
    assert len(masked_rows) == manifest["n_suppressed"] > 0
    assert kept == [r for r in released if not all(r[q] == "*" for q in qids)]


def test_pandas_categorical_passthrough_column(tmp_path: Path, monkeypatch) -> None:
    """A column written from a pandas Categorical comes back as dictionary<int8, ordered>; its
    chunks may leave entries unused: the part keeps only used values and reads back as text
    (found in review: it crashed on the index type)."""
    frame = make_table(120, seed=6).to_pandas()
    frame.loc[5, "disease"] = "rare"
    frame["disease"] = pd.Categorical(frame["disease"], ordered=True)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    assert pa.types.is_dictionary(table.schema.field("disease").type)
    parts = _release(tmp_path, monkeypatch, table)
    released = [r["disease"] for p in parts for r in pq.read_table(p).to_pylist()]
    assert released == frame["disease"].astype(str).tolist()
    for part in parts:
        stored = pq.read_table(part, read_dictionary=["disease"]).column("disease")
        values = set(stored.to_pylist())
        for chunk in stored.chunks:
            assert set(chunk.dictionary.to_pylist()) == values  # nothing unused


@pytest.mark.parametrize(
    "label, masked, n, entries, indices",
    [
        ("*", [], 4, ["*"], [0, 0, 0, 0]),
        ("*", [1, 3], 4, ["*"], [0, 0, 0, 0]),  # the top's '*' and masked rows': one entry
        ("Any", [1, 3], 4, ["Any", "*"], [0, 1, 0, 1]),
        ("Any", [0, 1], 2, ["*"], [0, 0]),  # every row masked: the bin is not listed
        ("Any", [], 0, [], []),
    ],
)
def test_a_qid_of_one_bin_is_written_as_the_general_case(label, masked, n, entries, indices):
    # a QID whose level at the node has one bin skips the codes' inverse: the same column as
    # codes 0 and masked rows' code 1 through `_dense_inverse`, labels, '*' listed once
    import airflow_skald.core.generalise.part as part

    column = part._one_bin_column(label, np.asarray(masked, dtype=np.int64), n)
    assert column.dictionary.to_pylist() == entries
    assert column.indices.to_pylist() == indices
    codes = np.zeros(n, dtype=np.int64)
    codes[masked] = 1
    uniq, inv = part._dense_inverse(codes, 2)
    general = [label] * int((uniq < 1).sum()) + ([part.TOP] if uniq.size and uniq[-1] == 1 else [])
    distinct, remap = np.unique(np.asarray(general, dtype=object), return_inverse=True)
    if len(set(general)) < len(general):
        general, inv = distinct.tolist(), remap[inv]
    assert general == entries and inv.tolist() == indices
