"""The SKALD paper's synthetic medical table (docs/design.md §8), chunk by chunk, and its config.

The paper evaluates SKALD on 125 chunks of 1M synthetic patient records; `chunk_table` rebuilds
any run of that dataset's rows without faker or a per-row Python loop: every column is drawn
with numpy (`random_streams`, from the distributions of `paper_distributions`) and its strings
are taken from pools or built as raw bytes.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from airflow_skald.core.data.clinical import dataset_io
from airflow_skald.core.data.paper_distributions import (
    AGE_FORCED,
    AGE_MIN,
    BLOOD_FREQ,
    BLOOD_GROUP_HIERARCHY,
    BMI_BAND_EDGES_T,
    BMI_FORCED,
    BMI_MIN_T,
    COLUMNS,
    CONDITIONS,
    FIRST_NAMES,
    LAST_NAMES,
    N_PIN_CODES,
    PIN_FORCE_START,
    PIN_FORCE_STRIDE,
    PROFESSION_HIERARCHY,
    PROFESSIONS,
    REFERENCE_YEAR,
    STREET_KINDS,
    STREET_NAMES,
    age_weights,
    bmi_weights,
    condition_weights,
    pin_code_pool,
    pin_weights,
)
from airflow_skald.core.data.random_streams import Sampler, Streams

# Random stream ids, one per drawn quantity (never reuse or renumber: that changes the data).
_S_FIRST, _S_LAST, _S_HOUSE_KIND, _S_HOUSE_A, _S_HOUSE_B, _S_HOUSE_C = 0, 1, 2, 3, 4, 5
_S_STREET, _S_STREET_KIND, _S_BLOOD, _S_PROFESSION, _S_AGE, _S_BMI = 6, 7, 8, 9, 10, 11
_S_PIN, _S_CONDITION, _S_BIRTH_MONTH, _S_VISIT = 12, 13, 14, 15


class PaperPools:
    """Pools and samplers built once per run (cheap, but not worth redoing per chunk)."""

    def __init__(self) -> None:
        self.names = pa.array([f"{f} {la}" for f in FIRST_NAMES for la in LAST_NAMES])
        self.streets = pa.array([f"{s} {k}" for s in STREET_NAMES for k in STREET_KINDS])
        # House numbers "001".."999", then "1/100".."99/999" (indexed in chunk_table).
        houses = [f"{a:03d}" for a in range(1, 1000)]
        houses += [f"{b}/{c}" for b in range(1, 100) for c in range(100, 1000)]
        self.houses = pa.array(houses)
        self.blood = pa.array(list(BLOOD_FREQ))
        self.blood_sampler = Sampler(np.array(list(BLOOD_FREQ.values())))
        self.professions = pa.array(list(PROFESSIONS))
        self.profession_sampler = Sampler(np.array([w for _, _, w in PROFESSIONS.values()]))
        self.age_sampler = Sampler(age_weights())
        self.bmi_sampler = Sampler(bmi_weights())
        self.pins = pin_code_pool()
        self.pin_sampler = Sampler(pin_weights(self.pins))
        self.conditions = pa.array(list(CONDITIONS))
        self.condition_sampler = Sampler(condition_weights(), cells=1 << 10)


def _patient_ids(number: np.ndarray, birth_yymm: np.ndarray, visit: np.ndarray) -> pa.Array:
    """``P{number:07d}-{yymm:04d}-{visit}`` built as raw bytes (faster than string kernels).

    ``number`` is ascending (consecutive rows), so it splits into runs of equal digit count,
    each a fixed-width byte matrix.
    """
    powers = [10**j for j in range(7, 19)]
    cuts = np.unique(np.searchsorted(number, powers))
    bounds = np.unique(np.r_[0, cuts[(cuts > 0) & (cuts < number.size)], number.size])
    data, lengths = [], []
    for lo, hi in itertools.pairwise(bounds.tolist()):
        width = max(7, len(str(int(number[lo]))))
        m = np.empty((hi - lo, width + 8), dtype=np.uint8)
        m[:, 0] = ord("P")
        _digits(m, 1, width, number[lo:hi])
        m[:, width + 1] = m[:, width + 6] = ord("-")
        _digits(m, width + 2, 4, birth_yymm[lo:hi])
        m[:, width + 7] = ord("0") + visit[lo:hi]
        data.append(m.ravel())
        lengths.append(np.full(hi - lo, width + 8, dtype=np.int64))
    offsets = np.zeros(number.size + 1, dtype=np.int32)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])
    return pa.StringArray.from_buffers(
        number.size, pa.py_buffer(offsets), pa.py_buffer(np.concatenate(data))
    )


def _digits(m: np.ndarray, col: int, width: int, values: np.ndarray) -> None:
    """Write values as zero-padded decimal ASCII into columns [col, col + width) of m."""
    v = values.astype(np.int64, copy=True)
    for j in range(col + width - 1, col - 1, -1):
        m[:, j] = ord("0") + v % 10
        v //= 10


def _join(*parts: pa.Array | str, sep: str = "") -> pa.Array:
    """Element-wise string concatenation (scalars broadcast)."""
    return pc.binary_join_element_wise(*parts, sep)


def chunk_table(seed: int, start: int, stop: int, tables: PaperPools | None = None) -> pa.Table:
    """The dataset's global rows [start, stop) as an Arrow table (columns in ``COLUMNS`` order)."""
    if not 0 <= start < stop:
        raise ValueError(f"need 0 <= start < stop, got start={start}, stop={stop}")
    t = tables or PaperPools()
    s = Streams(seed, start, stop)
    row = np.arange(start, stop, dtype=np.int64)

    age = AGE_MIN + s.choice(_S_AGE, t.age_sampler)
    s.force(age, *AGE_FORCED)
    bmi_t = BMI_MIN_T + s.choice(_S_BMI, t.bmi_sampler)
    s.force(bmi_t, *BMI_FORCED)
    pin_idx = s.choice(_S_PIN, t.pin_sampler)
    force_rows = PIN_FORCE_START + PIN_FORCE_STRIDE * np.arange(N_PIN_CODES, dtype=np.int64)
    s.force(pin_idx, force_rows, np.arange(N_PIN_CODES))

    # Condition depends on age and BMI band: each row inverts its (age, band) segment's CDF.
    band = np.searchsorted(np.array(BMI_BAND_EDGES_T), bmi_t, side="right")
    segment = (age - AGE_MIN) * (len(BMI_BAND_EDGES_T) + 1) + band
    condition = t.condition_sampler(s.uniform(_S_CONDITION), segment)

    # Patient id "P0000001-9112-1": row number, birth year-month (from age), visit digit.
    birth_yymm = ((REFERENCE_YEAR - age) % 100) * 100 + s.integers(_S_BIRTH_MONTH, 1, 12)
    patient_id = _patient_ids(row + 1, birth_yymm, s.integers(_S_VISIT, 1, 3))
    name_idx = s.integers(_S_FIRST, 0, len(FIRST_NAMES) - 1) * len(LAST_NAMES)
    name_idx += s.integers(_S_LAST, 0, len(LAST_NAMES) - 1)
    # Address "052, Kala Road" (60 %) or "15/402, Ganesh Chowk" (40 %): index into t.houses.
    house_idx = np.where(
        s.uniform(_S_HOUSE_KIND) < 0.6,
        s.integers(_S_HOUSE_A, 1, 999) - 1,
        999 + (s.integers(_S_HOUSE_B, 1, 99) - 1) * 900 + s.integers(_S_HOUSE_C, 100, 999) - 100,
    )
    street_idx = s.integers(_S_STREET, 0, len(STREET_NAMES) - 1) * len(STREET_KINDS)
    street_idx += s.integers(_S_STREET_KIND, 0, len(STREET_KINDS) - 1)
    address = _join(t.houses.take(house_idx), t.streets.take(street_idx), sep=", ")

    return pa.table(
        [
            patient_id,
            t.names.take(name_idx),
            address,
            t.blood.take(s.choice(_S_BLOOD, t.blood_sampler)),
            t.professions.take(s.choice(_S_PROFESSION, t.profession_sampler)),
            pa.array(age, type=pa.int64()),
            pa.array(bmi_t / 10.0, type=pa.float64()),
            pa.array(t.pins[pin_idx], type=pa.int64()),
            t.conditions.take(condition),
        ],
        names=list(COLUMNS),
    )


def write_csv(table: pa.Table, path: Path) -> None:
    """CSV with a header and commas; BMI is written as text with one decimal ("25.0", quoted
    like all strings) so that no chunk can look like integers to a type-inferring reader."""
    bmi_t = pc.round(pc.multiply(table["bmi"], 10.0)).cast(pa.int64())
    whole = pc.cast(pc.divide(bmi_t, 10), pa.string())  # integer division
    bmi = _join(whole, pc.cast(pc.remainder(bmi_t, 10), pa.string()), sep=".")
    table = table.set_column(COLUMNS.index("bmi"), "bmi", bmi)
    pacsv.write_csv(table, path)


def paper_config_dict(
    input_path: str | Path, output_path: str | Path, chunk_rows: int, fmt: str = "parquet"
) -> dict[str, Any]:
    """The docs/design.md §2 configuration of the paper's experiment, ready for ``yaml.safe_dump``.

    Hierarchies are inline so the config is self-contained; ``fmt`` is the input format.
    """
    return {
        **dataset_io(input_path, output_path, chunk_rows, fmt),
        "direct_identifiers": ["patient_id", "name", "address"],
        "sensitive_attributes": ["health_condition"],
        "quasi_identifiers": [
            {
                "name": "blood_group",
                "type": "categorical",
                "hierarchy": {k: list(v) for k, v in BLOOD_GROUP_HIERARCHY.items()},
            },
            {
                "name": "profession",
                "type": "categorical",
                "hierarchy": {k: list(v) for k, v in PROFESSION_HIERARCHY.items()},
            },
            {"name": "age", "type": "numerical", "min_width": 1},
            {"name": "bmi", "type": "numerical", "min_width": 0.1, "widths": [0.1, 1, 2, 4, 8]},
            {"name": "pin_code", "type": "numerical", "min_width": 1, "encode": True},
        ],
        "privacy": {"k": 50, "suppression_limit": 0.01},
        "memory": {"histogram_bins": None},
        "qid_priority": ["age", "bmi", "pin_code", "blood_group", "profession"],
        "suppressed_records": "mask",
    }
