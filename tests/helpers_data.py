"""Tiny datasets, configs and CLI runners shared by the failure-safety tests.

The data are small (tens of rows) so each CLI run takes well under a second. Columns:

    pid, name, address   direct identifiers
    city                 categorical QID (hierarchy: city -> country -> *)
    age                  numerical QID (integers)
    zip                  numerical QID, rank-encoded
    disease              sensitive attribute
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import yaml

from airflow_skald.cli import main as cli_main

CITY_HIERARCHY = {
    "Oslo": ["Norway"],
    "Bergen": ["Norway"],
    "Lund": ["Sweden"],
    "Malmo": ["Sweden"],
}
CITIES = list(CITY_HIERARCHY)
DISEASES = ["flu", "asthma", "none", "gout"]
ZIPS = [1001, 1002, 1003, 1010, 1020, 1100]

# The canary: one record whose every raw value is unique and greppable.
CANARY = {
    "pid": "CANARY-PID-7f3a9c",
    "name": "Zebedee Quillfeather-Canary",
    "address": "42 Canary Wharf Lane Xyzzy",
    "city": "Oslo",
    "age": 987654,  # an extreme outlier: its class is tiny, so the record is suppressed
    "zip": 9876543,
    "disease": "canary-disease-q9",
}
CANARY_RAW = [
    CANARY["pid"],
    CANARY["name"],
    CANARY["address"],
    "987654",
    "9876543",
    CANARY["disease"],
]

REPO = Path(__file__).resolve().parents[1]


def make_table(n: int, seed: int = 0, start: int = 0) -> pa.Table:
    """n deterministic rows; ids start at `start` so several files never share ids."""
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n)
    return pa.table(
        {
            "pid": [f"P{i:06d}" for i in ids],
            "name": [f"Person {i}" for i in ids],
            "address": [f"{i} Main Street" for i in ids],
            "city": [CITIES[j] for j in rng.integers(0, len(CITIES), n)],
            "age": pa.array(rng.integers(20, 60, n), pa.int64()),
            "zip": pa.array([ZIPS[j] for j in rng.integers(0, len(ZIPS), n)], pa.int64()),
            "disease": [DISEASES[j] for j in rng.integers(0, len(DISEASES), n)],
        }
    )


def canary_table() -> pa.Table:
    return pa.table(
        {
            c: pa.array([v], pa.int64() if isinstance(v, int) else pa.string())
            for c, v in CANARY.items()
        }
    )


def write_table(table: pa.Table, path: Path, fmt: str = "parquet") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        pq.write_table(table, path)
    else:
        pacsv.write_csv(table, path)
    return path


def write_dataset(
    folder: Path,
    n_files: int = 3,
    rows: int = 40,
    fmt: str = "parquet",
    seed: int = 0,
    canary_in: int | None = None,
) -> list[Path]:
    """`n_files` files of `rows` rows each; optionally append the canary to file `canary_in`."""
    files = []
    for i in range(n_files):
        table = make_table(rows, seed=seed + i, start=i * rows)
        if canary_in == i:
            table = pa.concat_tables([table, canary_table()])
        files.append(write_table(table, folder / f"chunk-{i:03d}.{fmt}", fmt))
    return files


def config_dict(
    input_path: Path | str,
    output_path: Path | str,
    fmt: str = "parquet",
    out_fmt: str = "parquet",
    k: object = 3,
    suppression_limit: object = 0.1,
    chunk_rows: int = 1000,
) -> dict:
    return {
        "input": {"path": str(input_path), "format": fmt},
        "output": {"path": str(output_path), "format": out_fmt},
        "chunk_rows": chunk_rows,
        "direct_identifiers": ["pid", "name", "address"],
        "sensitive_attributes": ["disease"],
        "quasi_identifiers": [
            {"name": "city", "type": "categorical", "hierarchy": CITY_HIERARCHY},
            {"name": "age", "type": "numerical", "min_width": 1},
            {"name": "zip", "type": "numerical", "min_width": 1, "encode": True},
        ],
        "privacy": {"k": k, "suppression_limit": suppression_limit},
        "qid_priority": ["age", "city", "zip"],
    }


def write_config(path: Path, cfg: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def setup_run(
    tmp_path: Path, fmt: str = "parquet", n_files: int = 3, rows: int = 40, **kw
) -> tuple[Path, Path, Path, dict]:
    """A dataset in tmp/in, a config in tmp/skald.yaml with output tmp/out."""
    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=n_files, rows=rows, fmt=fmt)
    cfg = config_dict(inp, out, fmt=fmt, **kw)
    return inp, out, write_config(tmp_path / "skald.yaml", cfg), cfg


def run_inprocess(argv: Sequence[str], capsys) -> tuple[int, str, str]:
    """The CLI in this process; returns (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        code = cli_main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def run_subprocess(argv: Sequence[str], timeout: float = 120) -> subprocess.CompletedProcess:
    """The CLI as a real process (`python -m airflow_skald.cli ...`)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "airflow_skald.cli", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=str(REPO),
    )


def leftovers(out: Path) -> list[Path]:
    """The output folder and any staging/old sibling of it that exists."""
    parent = out.parent
    found = [p for p in parent.glob(f".{out.name}.skald-staging-*")]
    found += [p for p in parent.glob(f"{out.name}.skald-old*")]
    if out.exists():
        found.append(out)
    return found


def release_bytes(out: Path) -> dict[str, bytes]:
    """Every part file of a release, by name."""
    return {p.name: p.read_bytes() for p in sorted(out.glob("part-*"))}


def release_rows(out: Path) -> list[dict]:
    """The released rows in part order (Parquet or CSV)."""
    rows: list[dict] = []
    for p in sorted(out.glob("part-*")):
        table = pq.read_table(p) if p.suffix == ".parquet" else pacsv.read_csv(p)
        rows += table.to_pylist()
    return rows


def chart_labels(html: str, title: str) -> list[str]:
    """The bar labels of report.html's inline SVG chart titled `title` (each bar's tooltip)."""
    import re

    svg = re.search(rf"<svg[^>]*><title>{re.escape(title)}</title>(.*?)</svg>", html, re.S)
    assert svg, title
    return [t.rsplit(": ", 1)[0] for t in re.findall(r"<rect[^>]*><title>(.*?)</title>", svg[1])]


def where_rows(report: Path) -> dict[str, str]:
    """report.html's "Where" rows as a reader sees them: label -> the value's text."""
    import html
    import re

    text = report.read_text(encoding="utf-8")
    section = text[text.index("<h2>Where</h2>") :].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", section)
    return {label: html.unescape(re.sub(r"<[^>]+>", "", value)) for label, value in rows}


def worker_surroundings(group) -> tuple[str | None, str, int]:
    """What a worker process of `core.passes.parallel` sees: a test variable, its folder, its pid."""
    return os.environ.get("SKALD_TEST_MARK"), os.getcwd(), os.getpid()
