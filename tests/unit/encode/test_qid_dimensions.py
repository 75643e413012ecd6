"""Rule QIDs' dimensions map raw values to the codes of their built hierarchy's labels the
same way whatever the column's type and however its values arrive in chunks (span tables grown
chunk by chunk, entries remembered), and a value phase 1 never saw is an error."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.domain import scan_table
from airflow_skald.core.encode.qid_dimensions import build_dimensions
from airflow_skald.core.errors import DataError

UTC = dt.UTC


def dims_of(qid: dict, column: pa.Array):
    config = config_from_dict(
        {
            "input": {"path": "/nowhere"},
            "output": {"path": "/nowhere-out"},
            "quasi_identifiers": [qid],
            "privacy": {"k": 2},
        }
    )
    table = pa.table({qid["name"]: column})
    stats = scan_table(config, table, ChunkRef(0, "t", 0, len(column)))
    (dim,) = build_dimensions(config.quasi_identifiers, stats)
    return dim


def labels_at(dim, column: pa.Array, level: int) -> list[str]:
    codes = dim.codes_at(pa.chunked_array([column]), ChunkRef(0, "t", 0, len(column)), level)
    return dim.labels(level, codes)


def test_date_columns_of_every_type_give_the_same_labels():
    days = [dt.date(2020, 12, 31), dt.date(2021, 1, 3), dt.date(2021, 1, 4), dt.date(2019, 2, 1)]
    stamps = [dt.datetime(d.year, d.month, d.day, 23, 59, tzinfo=UTC) for d in days]
    zoned = [t.astimezone(dt.timezone(dt.timedelta(hours=-5))).isoformat() for t in stamps]
    qid = {"name": "d", "type": "date", "levels": ["day", "week", "year"]}
    columns = [
        pa.array(days, pa.date32()),
        pa.array(stamps, pa.timestamp("s", "UTC")),
        pa.array(stamps, pa.timestamp("ns", "UTC")),
        pa.array([t.replace(microsecond=5) for t in stamps], pa.timestamp("us", "UTC")),
        pa.array(zoned),  # ISO text with a zone: UTC first
    ]
    for column in columns:
        dim = dims_of(qid, column)
        assert labels_at(dim, column, 0) == ["2020-12-31", "2021-01-03", "2021-01-04", "2019-02-01"]
        assert labels_at(dim, column, 1) == ["2020-W53", "2020-W53", "2021-W01", "2019-W05"]
        assert labels_at(dim, column, 2) == ["2020", "2020", "2021", "2019"]
        # chunks in another order and fewer at a time: the remembered tables grow
        for part in (column.slice(2, 2), column.slice(0, 1), column.slice(3, 1)):
            assert labels_at(dim, part, 1) == labels_at(dims_of(qid, column), part, 1)


def test_numbers_read_as_codes_and_values_not_seen_in_phase_1():
    column = pa.array([2139, 10001, 94110, 2139])
    dim = dims_of({"name": "zip", "type": "masked", "pad": "0"}, column)
    assert labels_at(dim, column, 0) == ["02139", "10001", "94110", "02139"]
    assert labels_at(dim, column, 2) == ["021**", "100**", "941**", "021**"]
    with pytest.raises(DataError, match="'zip' has a value not seen in phase 1 .*row 2 "):
        labels_at(dim, pa.array([2139, 10002]), 0)  # inside the span: a hole
    with pytest.raises(DataError, match="'zip' has a value not seen in phase 1"):
        labels_at(dim, pa.array([99999]), 0)  # outside it: the table grows, then refuses
    text = pa.array(["E11.9", "I10.0", "E11.9"]).dictionary_encode()
    icd = dims_of({"name": "icd", "type": "masked", "steps": [1, 3]}, text)
    assert labels_at(icd, text, 2) == ["E1***", "I1***", "E1***"]
    with pytest.raises(DataError, match="'icd' has a value not seen in phase 1"):
        labels_at(icd, pa.array(["J45.1"]), 0)


def test_intervals_codes_follow_the_numerical_quantisation():
    column = pa.array(np.array([17, 18, 44, 90, 97, 30], dtype=np.int64))
    qid = {"name": "age", "type": "numerical", "min_width": 1, "bins": [0, 18, 30, 45, 65, 90]}
    dim = dims_of({**qid, "group": [2], "above": "90+"}, column)
    assert labels_at(dim, column, 0) == ["[17-17]", "[18-18]", "[44-44]", "[90-90]", "[97-97]",
                                         "[30-30]"]  # fmt: skip
    assert labels_at(dim, column, 1) == ["[0-18)", "[18-30)", "[30-45)", "90+", "90+", "[30-45)"]
    assert labels_at(dim, column, 2) == ["[0-30)", "[0-30)", "[30-65)", "90+", "90+", "[30-65)"]
    floats = pa.array([17.0, 18.0, 90.0])
    assert labels_at(dims_of({**qid, "above": "90+"}, floats), floats, 1) == [
        "[0-18)",
        "[18-30)",
        "90+",
    ]
