"""Tables of the shape of ARX's benchmark data (CUP, FARS) and Adult, with their hierarchies,
for `bench_arx_tables.py`.

ARX ships CUP and FARS with its benchmark; they are not available here, so these are tables of
the same shape (issue 23): 8 categorical QIDs each, as ARX recodes them (integers and codes
as text, interval labels such as `[0,99]`).

- CUP: 63,441 rows; ZIP's hierarchy lists all 100,000 five-digit codes (`12345`, `1234*`,
  ..., `1****`, then `*` appended); the other 7 QIDs are amounts, ages, codes with interval or
  grouping hierarchies, skewed (Zipf-like) as donor data is. Heights (levels) zip 6, age 5,
  gender 3, income 2, minramnt 5, ngiftall 5, ramntall 5, state 3: 67,500 nodes; the search
  sees the 56,250 above its root (level-0 keys would pass 2^62, so the root raises ramntall
  by one level, ADR 0012).
- FARS: 100,937 rows; every hierarchy ends in one constant label (`[0,99]`) as ARX's recoded
  FARS hierarchies do, so no `*` is appended (docs/design.md §3): lattice 4^4 x 3^4 = 20,736 nodes.
- Adult: ARX's copy in tests/data/adult with its hierarchies; as in ARX's benchmark the
  sensitive attribute is `occupation` and the 8 others are the QIDs (4,320 nodes).

`write_table(name, folder)` writes `data.parquet`, the hierarchy files and returns the config
body; the same seed gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from adult_data import ADULT, ADULT_CSV

ADULT_SENSITIVE = "occupation"  # as in ARX's benchmark
# an explicit order of its values (roughly by pay; not their text order), one a line
ADULT_ORDER_FILE = Path(__file__).resolve().parent / "arx_ordered" / "adult-occupation-order.txt"
ADULT_ORDER = ADULT_ORDER_FILE.read_text(encoding="utf-8").splitlines()
CUP_ROWS = 63_441
FARS_ROWS = 100_937


def _zipf(rng: np.random.Generator, n: int, m: int, a: float) -> np.ndarray:
    """n draws from 0..m-1 with Zipf-like weights 1/(i+1)^a, in a random order of the values."""
    weights = 1.0 / np.arange(1, m + 1) ** a
    order = rng.permutation(m)
    return order[rng.choice(m, n, p=weights / weights.sum())]


def _intervals(values: np.ndarray, widths: list[int], lo: int = 0) -> list[np.ndarray]:
    """ARX's interval labels `[a,b]` of each value at each width (a level per width)."""
    out = []
    for w in widths:
        a = lo + (values - lo) // w * w
        out.append(
            np.char.add(np.char.add(np.char.add("[", a.astype(str)), ","), (a + w - 1).astype(str))
            + "]"
        )
    return out


def _write_hierarchy(path: Path, columns: list[np.ndarray]) -> None:
    """One row per value, `;`-separated, no header (ARX's format)."""
    rows = columns[0].astype(str)
    for col in columns[1:]:
        rows = np.char.add(np.char.add(rows, ";"), col.astype(str))
    path.write_text("\n".join(rows.tolist()) + "\n")


def _interval_qid(values: np.ndarray, widths: list[int], top: str | None = None) -> list:
    levels = [values.astype(str), *_intervals(values, widths)]
    return levels + ([np.full(len(values), top)] if top else [])


def _cup(folder: Path, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """CUP-shaped columns (text), and hierarchy files in `folder`."""
    n = CUP_ROWS
    codes = np.arange(100_000)
    zips = np.char.zfill(codes.astype(str), 5)
    # ZIP masked from the right: 12345, 1234*, 123**, 12***, 1**** (then `*` appended)
    masked = [zips] + [
        np.char.add(np.char.zfill((codes // 10**j).astype(str), 5 - j), "*" * j)
        for j in range(1, 5)
    ]
    _write_hierarchy(folder / "zip.csv", masked)
    # ~ 19,000 distinct ZIPs in use, clustered in some 3-digit areas
    used = np.sort(rng.choice(100_000, 19_000, replace=False))
    zip_col = zips[used[_zipf(rng, n, len(used), 0.6)]]
    cols = {"zip": zip_col}
    specs: dict[str, tuple[int, int, list[int], float]] = {
        # name: (low, high, widths, zipf exponent); levels: the value, each width, `*`
        "age": (0, 99, [5, 10, 20], 0.4),
        "income": (1, 7, [], 0.3),
        "minramnt": (0, 999, [10, 50, 100], 1.1),
        "ngiftall": (1, 237, [5, 10, 50], 1.0),
        "ramntall": (0, 9_999, [100, 500, 1_000], 1.0),
    }
    for name, (lo, hi, widths, a) in specs.items():
        values = np.arange(lo, hi + 1)
        _write_hierarchy(folder / f"{name}.csv", _interval_qid(values, widths, top="*"))
        cols[name] = (lo + _zipf(rng, n, hi - lo + 1, a)).astype(str)
    genders = np.array(["M", "F", "U", "J", "C", "A"])
    _write_hierarchy(
        folder / "gender.csv", [genders, np.where(np.isin(genders, ["M", "F"]), genders, "other")]
    )
    cols["gender"] = genders[rng.choice(6, n, p=[0.41, 0.54, 0.03, 0.01, 0.006, 0.004])]
    states = np.array([f"S{i:02d}" for i in range(57)])
    regions = np.array([f"R{i % 9}" for i in range(57)])
    _write_hierarchy(folder / "state.csv", [states, regions])
    cols["state"] = states[_zipf(rng, n, 57, 0.9)]
    return cols


def _fars(folder: Path, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """FARS-shaped columns and hierarchies, each ending in the constant `[0,99]`."""
    n = FARS_ROWS
    specs: dict[str, tuple[int, int, list[int], float]] = {
        # name: (low, high, widths below the top, zipf exponent); 4 QIDs of 4 levels, 4 of 3
        "iage": (0, 99, [10, 50], 0.2),
        "ideathday": (1, 31, [10, 50], 0.1),
        "irace": (0, 99, [10, 50], 1.4),
        "istatenum": (1, 56, [10, 50], 0.7),
        "ideathmon": (1, 12, [5], 0.1),
        "ihispanic": (0, 9, [5], 1.8),
        "iinjury": (0, 9, [5], 0.8),
        "isex": (1, 2, [10], 0.1),
    }
    cols = {}
    for name, (lo, hi, widths, a) in specs.items():
        values = np.arange(lo, hi + 1)
        _write_hierarchy(folder / f"{name}.csv", _interval_qid(values, widths, top="[0,99]"))
        cols[name] = (lo + _zipf(rng, n, hi - lo + 1, a)).astype(str)
    return cols


def _generated(
    make: Callable[[Path, np.random.Generator], dict[str, np.ndarray]],
    folder: Path,
    k: int,
    limit: float,
    seed: int,
) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    cols = make(folder, np.random.default_rng(seed))
    qids = sorted(cols)
    cols["payload"] = np.arange(len(cols[qids[0]])).astype(str)  # a non-QID column, kept
    pq.write_table(
        pa.table({c: pa.array(v.tolist()) for c, v in cols.items()}), folder / "data.parquet"
    )
    return {
        "input": {"path": str(folder / "data.parquet")},
        "output": {"path": str(folder / "out")},
        "quasi_identifiers": [
            {"name": q, "type": "categorical", "hierarchy_file": str(folder / f"{q}.csv")}
            for q in qids
        ],
        "privacy": {"k": k, "suppression_limit": limit},
    }


def _adult(folder: Path, k: int, limit: float) -> dict:
    qids = sorted(
        name
        for name in (p.stem.removeprefix("adult_hierarchy_") for p in ADULT.glob("adult_*.csv"))
        if name != ADULT_SENSITIVE
    )
    return {
        "input": {"path": str(ADULT_CSV), "format": "csv", "delimiter": ";"},
        "output": {"path": str(folder / "out")},
        "sensitive_attributes": [ADULT_SENSITIVE],
        "quasi_identifiers": [
            {
                "name": q,
                "type": "categorical",
                "hierarchy_file": str(ADULT / f"adult_hierarchy_{q}.csv"),
            }
            for q in qids
        ],
        "privacy": {"k": k, "suppression_limit": limit},
    }


CRITERIA = {
    "l3": {"l_diversity": [{"attribute": ADULT_SENSITIVE, "l": 3, "variant": "entropy"}]},
    "t0.2": {"t_closeness": [{"attribute": ADULT_SENSITIVE, "t": 0.2, "distance": "equal"}]},
    "l3g": {  # Grassberger's estimator (ARX's EntropyEstimator.GRASSBERGER)
        "l_diversity": [
            {"attribute": ADULT_SENSITIVE, "l": 3, "variant": "entropy", "estimator": "grassberger"}
        ]
    },
    # ordered distance over text in ARX's STRING order (issue 44 item 6, ADR 0044)
    "to0.2": {
        "t_closeness": [
            {"attribute": ADULT_SENSITIVE, "t": 0.2, "distance": "ordered", "order": "text"}
        ]
    },
    # ... and in an explicit order (`order: [...]`, ARX's DataType.createOrderedString): the
    # values as listed in benchmarks/arx_ordered/adult-occupation-order.txt, ARX's order file
    "to0.2-listed": {
        "t_closeness": [
            {"attribute": ADULT_SENSITIVE, "t": 0.2, "distance": "ordered", "order": ADULT_ORDER}
        ]
    },
}


def write_table(
    name: str,
    folder: Path,
    k: int = 5,
    limit: float = 0.0,
    criterion: str | None = None,
    seed: int = 23,
) -> dict:
    """The config body of table `name` ('cup', 'fars' or 'adult'), its files in `folder`;
    `criterion` ('l3', 't0.2', 'to0.2', 'to0.2-listed': Adult only) adds
    entropy-l-diversity, equal or ordered (text or listed) t-closeness on the sensitive
    attribute."""
    if name == "adult":
        body = _adult(folder, k, limit)
        body["privacy"].update(CRITERIA[criterion] if criterion else {})
        return body
    make = {"cup": _cup, "fars": _fars}[name]
    return _generated(make, folder, k, limit, seed)
