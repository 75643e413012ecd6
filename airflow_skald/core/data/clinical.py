"""A synthetic clinical table (`skald generate --schema clinical`) whose QIDs need the
hierarchy builders of docs/design.md §3a: date of birth and admission time (dates), ZIP codes as text with
leading zeros and ICD-10 diagnosis codes (masked codes), length of stay (intervals), sex; the
sensitive attribute is the discharge outcome.

Like the paper's table (paper_table.py, random_streams.py) rows are drawn with numpy from streams keyed by
`(seed, block)`, a block being a fixed run of `_BLOCK_ROWS` rows, so a row depends only on the
seed and its global row number: the same rows whatever the chunking, no Python per row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

COLUMNS: tuple[str, ...] = (
    "patient_id",
    "birth_date",
    "admitted",
    "zip",
    "sex",
    "icd10",
    "length_of_stay",
    "outcome",
)
_BLOCK_ROWS = 1 << 14
_EPOCH = np.datetime64("1970-01-01", "D")
_BIRTH_FIRST = (np.datetime64("1925-01-01", "D") - _EPOCH).astype(int)
_BIRTH_LAST = (np.datetime64("2023-12-31", "D") - _EPOCH).astype(int)
_ADMIT_FIRST = (np.datetime64("2019-01-01", "D") - _EPOCH).astype(int)
_ADMIT_DAYS = 4 * 365 + 1  # 2019 .. 2022, ISO weeks across four year ends
# ZIP codes of a few US regions; New England's start with 0 (written as text, zeros kept).
_ZIP_PREFIXES = ("021", "024", "064", "100", "112", "191", "303", "606", "752", "941")
_ICD10 = (
    "A41.9", "C34.1", "C50.9", "E11.9", "E11.6", "E66.0", "F32.9", "F41.1", "I10.0", "I21.4",
    "I25.1", "I48.9", "I50.9", "I63.9", "J18.9", "J44.1", "J45.9", "K35.8", "K80.2", "M17.1",
    "N17.9", "N18.3", "N39.0", "S72.0", "Z38.0",
)  # fmt: skip
_ICD10_WEIGHTS = np.array(
    [3, 1, 1, 6, 2, 2, 3, 2, 8, 3, 4, 3, 4, 2, 6, 4, 3, 2, 2, 2, 2, 2, 3, 2, 4]
)
_OUTCOMES = ("home", "home with care", "transferred", "readmitted", "deceased")
_OUTCOME_WEIGHTS = np.array([0.62, 0.14, 0.1, 0.11, 0.03])


def _block(seed: int, block: int) -> dict[str, np.ndarray]:
    """Every column's raw draws of one block of rows (numpy only)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(block,)))
    n = _BLOCK_ROWS
    birth = rng.integers(_BIRTH_FIRST, _BIRTH_LAST + 1, n)
    day = rng.integers(0, _ADMIT_DAYS, n)
    minute = rng.integers(0, 24 * 60, n)
    admitted = (_ADMIT_FIRST + day).astype(np.int64) * 86400 + minute * 60
    region = rng.integers(0, len(_ZIP_PREFIXES), n)
    local = rng.zipf(1.6, n) % 100
    stay = np.minimum(rng.geometric(0.22, n), 90)
    return {
        "birth": birth,
        "admitted": admitted,
        "region": region,
        "local": local,
        "sex": rng.integers(0, 2, n),
        "icd": rng.choice(len(_ICD10), n, p=_ICD10_WEIGHTS / _ICD10_WEIGHTS.sum()),
        "stay": stay,
        "outcome": rng.choice(len(_OUTCOMES), n, p=_OUTCOME_WEIGHTS),
    }


def clinical_table(seed: int, start: int, stop: int) -> pa.Table:
    """Global rows [start, stop) of the clinical table."""
    first, last = start // _BLOCK_ROWS, (stop - 1) // _BLOCK_ROWS
    blocks = [_block(seed, b) for b in range(first, last + 1)]
    cols = {k: np.concatenate([b[k] for b in blocks]) for k in blocks[0]}
    lo = start - first * _BLOCK_ROWS
    cols = {k: v[lo : lo + stop - start] for k, v in cols.items()}
    prefixes = pa.array(_ZIP_PREFIXES).take(pa.array(cols["region"]))
    local = pc.utf8_lpad(pa.array(cols["local"]).cast(pa.string()), width=2, padding="0")
    ids = pc.utf8_lpad(pa.array(np.arange(start, stop)).cast(pa.string()), width=9, padding="0")
    return pa.table(
        {
            "patient_id": pc.binary_join_element_wise("P", ids, ""),
            "birth_date": pa.array(cols["birth"].astype(np.int32), pa.date32()),
            "admitted": pa.array(cols["admitted"], pa.timestamp("s", "UTC")),
            "zip": pc.binary_join_element_wise(prefixes, local, ""),
            "sex": pa.array(np.array(["F", "M"])[cols["sex"]]),
            "icd10": pa.array(_ICD10).take(pa.array(cols["icd"])),
            "length_of_stay": pa.array(cols["stay"].astype(np.int64)),
            "outcome": pa.array(_OUTCOMES).take(pa.array(cols["outcome"])),
        }
    )


STAY_RULE: dict[str, Any] = {
    "name": "length_of_stay",
    "type": "numerical",
    "min_width": 1,
    "bins": [1, 3, 7, 14, 30],
    "group": [2],
    "above": "30+",
}


def dataset_io(
    input_path: str | Path, output_path: str | Path, chunk_rows: int, fmt: str
) -> dict[str, Any]:
    """A generated dataset's input, output and chunk settings (CSV: comma-separated)."""
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"fmt must be 'parquet' or 'csv', not {fmt!r}")
    source: dict[str, Any] = {"path": str(input_path), "format": fmt}
    if fmt == "csv":
        source["delimiter"] = ","
    return {
        "input": source,
        "output": {"path": str(output_path), "format": "parquet"},
        "chunk_rows": int(chunk_rows),
    }


def clinical_config_dict(
    input_path: str | Path, output_path: str | Path, chunk_rows: int, fmt: str = "parquet"
) -> dict[str, Any]:
    """The clinical table's skald.yaml: every QID's hierarchy built from a rule (docs/design.md §3a)."""
    return {
        **dataset_io(input_path, output_path, chunk_rows, fmt),
        "direct_identifiers": ["patient_id"],
        "sensitive_attributes": ["outcome"],
        "quasi_identifiers": [
            {"name": "birth_date", "type": "date"},
            {"name": "admitted", "type": "date", "levels": ["day", "week", "year"]},
            {"name": "zip", "type": "masked", "pad": "0", "align": "right"},
            {"name": "sex", "type": "categorical", "hierarchy": {"F": ["*"], "M": ["*"]}},
            {"name": "icd10", "type": "masked", "steps": [1, 3, 4]},
            dict(STAY_RULE),
        ],
        "privacy": {"k": 10, "suppression_limit": 0.02},
        "memory": {"histogram_bins": None},
        "suppressed_records": "mask",
    }
