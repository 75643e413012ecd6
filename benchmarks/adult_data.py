"""The real Adult table (tests/data/adult, ARX's 8 hierarchies) for the benchmarks: its
config body, and a larger table resampled from its rows in chunk files."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # Adult as the tests read it

from adult_files import ADULT, adult_csv  # noqa: E402

ADULT_CSV = adult_csv()  # the table, decompressed once from tests/data/adult/adult.csv.gz
SENSITIVE = "salary-class"
# ARX ships a hierarchy per attribute; every attribute but the sensitive one is a QID
QIDS = sorted(
    name
    for name in (
        p.stem.removeprefix("adult_hierarchy_") for p in ADULT.glob("adult_hierarchy_*.csv")
    )
    if name != SENSITIVE
)


def adult_body(input_: dict, output: Path, k: int = 5, limit: float = 0.05) -> dict:
    """A config body over the Adult columns with ARX's hierarchies for the 8 QIDs."""
    return {
        "input": input_,
        "output": {"path": str(output)},
        "sensitive_attributes": [SENSITIVE],
        "quasi_identifiers": [
            {
                "name": q,
                "type": "categorical",
                "hierarchy_file": str(ADULT / f"adult_hierarchy_{q}.csv"),
            }
            for q in QIDS
        ],
        "privacy": {"k": k, "suppression_limit": limit},
    }


def resample_adult(rows: int, chunk_rows: int, out: Path, seed: int = 0) -> None:
    """`rows` records drawn with replacement from Adult, as Parquet files of `chunk_rows`
    (few distinct QID combinations however many rows: ~18 thousand at level 0)."""
    out.mkdir(parents=True, exist_ok=True)
    opts = pacsv.ParseOptions(delimiter=";")
    convert = pacsv.ConvertOptions(column_types={"age": "string"})
    table = pacsv.read_csv(ADULT_CSV, parse_options=opts, convert_options=convert)
    rng = np.random.default_rng(seed)
    for i, start in enumerate(range(0, rows, chunk_rows)):
        n = min(chunk_rows, rows - start)
        pq.write_table(
            table.take(rng.integers(0, table.num_rows, n)), out / f"chunk-{i:05d}.parquet"
        )
