"""CategoricalDimension.key_part (airflow_skald/core/encode/dimensions.py), the per-row lookup of
phases 2 and 3, on every form a column arrives in (plain text, integers, dictionary-encoded
with unused entries, chunked with a different dictionary per chunk, sliced) against a Python
oracle; a value phase 1 did not see, or a null, is an error naming the column and row only."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.dimensions import CategoricalDimension
from airflow_skald.core.errors import DataError

LEVELS = [["10", "20", "30", "40"], ["low", "high"], ["*"]]
PARENT = {"10": "low", "20": "low", "30": "high", "40": "high"}
CHUNK = ChunkRef(0, "in.parquet", 100, 1000)


def _dimension() -> CategoricalDimension:
    labels = [np.array(sorted(x), dtype=object) for x in LEVELS]
    to_level = [
        np.arange(4),
        np.array([list(labels[1]).index(PARENT[v]) for v in labels[0]]),
        np.zeros(4, dtype=np.int64),
    ]
    return CategoricalDimension("age", [4, 2, 1], labels, to_level)


def _oracle(values: list[str], level: int, stride: int) -> list[int]:
    labels = [sorted(x) for x in LEVELS]
    label = {0: lambda v: v, 1: lambda v: PARENT[v], 2: lambda v: "*"}[level]
    return [labels[level].index(label(v)) * stride for v in values]


def _forms(values: list[str]) -> dict[str, pa.Array | pa.ChunkedArray]:
    text = pa.array(values, pa.string())
    unused = pa.array(["99", *reversed(LEVELS[0])])  # "99": in the dictionary, in no row
    indices = pa.array([unused.to_pylist().index(v) for v in values], pa.int32())
    half = len(values) // 2
    return {
        "text": text,
        "integers": pa.array([int(v) for v in values], pa.int64()),
        "dictionary with an unused entry": pa.DictionaryArray.from_arrays(indices, unused),
        "chunks with their own dictionaries": pa.chunked_array(
            [text[:half].dictionary_encode(), text[half:].dictionary_encode()]
        ),
        "sliced": pa.concat_arrays([pa.array(["40"]), text])[1:].dictionary_encode(),
    }


@pytest.mark.parametrize(("level", "stride"), [(0, 1), (1, 1), (1, 12), (2, 5), (0, 3)])
def test_key_part_equals_the_oracle_on_every_column_form(level, stride):
    rng = np.random.default_rng(level * 10 + stride)
    values = [LEVELS[0][i] for i in rng.integers(0, 4, 500)]
    dim = _dimension()
    want = _oracle(values, level, stride)
    for form, column in _forms(values).items():
        got = dim.key_part(column, CHUNK, level, stride)
        assert got.dtype == np.int64, form
        assert got.tolist() == want, form


def test_a_value_phase_one_did_not_see_names_column_and_row_not_the_value():
    dim = _dimension()
    values = ["10", "20", "30", "secret-77", "40"]
    for column in (pa.array(values), pa.array(values).dictionary_encode()):
        with pytest.raises(DataError) as err:
            dim.key_part(column, CHUNK, 1, 1)
        message = str(err.value)
        assert "'age'" in message and "row 104 of file in.parquet" in message
        assert "secret-77" not in message


def test_a_null_is_an_error_with_its_row():
    dim = _dimension()
    for column in (pa.array(["10", None, "20"]), pa.array(["10", None, "20"]).dictionary_encode()):
        with pytest.raises(DataError, match=r"'age' has 1 null.*row 102 of file in.parquet"):
            dim.key_part(column, CHUNK, 0, 1)
