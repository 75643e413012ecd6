"""The engine path against the work done by hand (docs/design.md §2b, issue 43, ADR 0053).

    python benchmarks/bench_engines.py [--rows 2000000] [--files 8] [--repeats 3]
    python benchmarks/bench_engines.py --engine postgresql | spark [--cases engine,by_hand]
    python benchmarks/bench_engines.py --paper DIR [--parts 125] [--repeats 1]

(PostgreSQL and Spark: `bench_engines_sql.py`; the paper's table: `bench_engines_paper.py`.)

A Parquet table of `--rows` rows in `--files` files (city, age, zip, income QIDs, a
diagnosis, identifiers) is written once; then, interleaved per repeat, each as a whole
process (`skald` or `python -c`), wall seconds and the process's CPU (user + sys):

- ``duckdb``: ``skald run`` with ``execution: {engine: duckdb}`` (k = 10, 1 % suppression);
- ``by_hand``: the same DuckDB doing the least a person would: one GROUP BY of the root
  node's codes (fetched as Arrow), then one COPY of the released rows at the chosen node
  (read from the run's manifest; every QID's label by arithmetic: the engine's release but
  for the suppressed records' mask) into Parquet, in one session;
- ``chunks``: ``skald run`` with ``execution: chunks`` on the same files, beside them.

Printed as JSON: per case the range (min-max) over the repeats, and ``duckdb_vs_by_hand`` =
duckdb / by_hand (issue 43's target: <= 1.5) and ``duckdb_vs_chunks``, each as a range of
the per-repeat ratios of wall seconds, and ``*_cpu`` the same of CPU seconds (on a shared
machine the wall ratio follows the others' load); the load average before each repeat.

Measured (ADR 0065, benchmarks/README.md "The engine path against DuckDB by hand"):
2M rows (3 repeats, load 11-12): engine / by hand 1.51-1.69 CPU, 1.46-1.96 wall; 10M rows
in 10 files (2 repeats, load 11-13): 1.61-1.77 CPU (engine 23.3-24.0 s, by hand 13.6-14.4 s,
chunks 5.7-7.4 s); with the grouped table at the estimated node (load 27): 1.38-1.90 at 10M,
1.41 on the paper's table at 10 x 1M rows; issue 43's 1.5 not yet met in every repeat.
The paper's 125 x 1M rows (`--paper DIR --parts 125 --repeats 2`, ADR 0081, load 1-2):
engine / by hand 1.61-1.62 CPU (engine 278-297 s, by hand 173-184 s, chunks 69-72 s),
2.04-2.05 wall; before ADR 0081 1.69-1.77 CPU (results/issue43/). With ADR 0083 (the
estimate from a hash sample of classes, one GROUP BY at the node estimated to fit; 2 repeats,
`--cases duckdb,by_hand`, load 12-22): 1.25-1.33 CPU (engine 154-178 s, by hand 117-143 s),
1.19-1.20 wall: issue 43's 1.5 met.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

CITIES = {"Oslo": ["Norway"], "Bergen": ["Norway"], "Lund": ["Sweden"], "Malmo": ["Sweden"]}

# the hand-written run: the root node's codes by arithmetic, counts fetched as Arrow; then
# each QID's label at the chosen node by arithmetic (a CASE for the city), '*' at its top
BY_HAND = r"""
import duckdb, json, sys
files, out, m = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute("CREATE TEMP VIEW t AS SELECT * FROM read_parquet(" + str(files) + ")")
lv, node, top = m["levels"], m["node"], m["top"]
con.execute(
    "SELECT CASE WHEN ? = 0 THEN city WHEN ? = 1 THEN CASE WHEN city IN ('Oslo', 'Bergen') "
    "THEN 'Norway' ELSE 'Sweden' END ELSE '*' END AS c, (age - 18) // ? AS a, "
    "(zip - 1000) // ? AS z, FLOOR(income / ?) AS i, COUNT(*) FROM t GROUP BY ALL",
    [lv["city"], lv["city"], 1 << lv["age"], 1 << lv["zip"], 0.25 * (1 << lv["income"])],
).fetch_arrow_table()


def whole(name, lo):
    if node[name] == top[name]:
        return "'*'"
    w = 1 << node[name]
    low = f"({lo} + ({name} - {lo}) // {w} * {w})"
    return f"'[' || {low} || '-' || ({low} + {w - 1}) || ']'"


city = {0: "city", 1: "CASE WHEN city IN ('Oslo', 'Bergen') THEN 'Norway' ELSE 'Sweden' END"}
w = 0.25 * (1 << node["income"])
income = "'*'" if node["income"] == top["income"] else (
    f"printf('[%.2f-%.2f)', FLOOR(income / {w}) * {w}, FLOOR(income / {w}) * {w} + {w})"
)
con.execute(
    f"COPY (SELECT {city.get(node['city'], repr('*'))} AS city, {whole('age', 18)} AS age, "
    f"{whole('zip', 1000)} AS zip, {income} AS income, diagnosis FROM t) "
    "TO '" + out + "' (FORMAT PARQUET)"
)
"""


def write_input(folder: Path, rows: int, files: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    paths = []
    per = rows // files
    for i in range(files):
        n = per if i < files - 1 else rows - per * (files - 1)
        table = pa.table(
            {
                "patient_id": np.arange(n, dtype=np.int64) + i * per,
                "city": pa.array(rng.choice(list(CITIES), n)),
                "age": pa.array(rng.integers(18, 90, n), pa.int64()),
                "zip": pa.array(rng.choice(np.arange(1000, 1064), n), pa.int64()),
                "income": pa.array(rng.integers(0, 40000, n) / 4, pa.float64()),
                "diagnosis": pa.array(rng.choice(["flu", "gout", "asthma", "none"], n)),
            }
        )
        path = folder / f"part-{i:03d}.parquet"
        pq.write_table(table, path)
        paths.append(str(path))
    return paths


def config(inp: Path, out: Path, engine: str) -> dict:
    return {
        "input": {"path": str(inp), "format": "parquet"},
        "output": {"path": str(out), "format": "parquet"},
        "execution": {"engine": engine},
        "chunk_rows": 500_000,
        "direct_identifiers": ["patient_id"],
        "sensitive_attributes": ["diagnosis"],
        "quasi_identifiers": [
            {"name": "city", "type": "categorical", "hierarchy": CITIES},
            {"name": "age", "type": "numerical", "min_width": 1},
            {"name": "zip", "type": "numerical", "min_width": 1},
            {"name": "income", "type": "numerical", "min_width": 0.25},
        ],
        "privacy": {"k": 10, "suppression_limit": 0.01},
    }


def timed(argv: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + sys) and peak RSS (MB) of one whole process."""
    t0 = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), argv)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--engine", choices=["duckdb", "postgresql", "spark"], default="duckdb")
    parser.add_argument("--cases", default="engine,by_hand,chunks")  # postgresql, spark
    parser.add_argument(
        "--manifest",
        help="postgresql, spark: an earlier engine run's manifest "
        "on the same --rows/--files (the by-hand node): no warm-up run",
    )
    parser.add_argument(
        "--database",
        help="postgresql: a database on 127.0.0.1:5432 already holding bench.people of the "
        "same --rows/--files (loaded by an earlier run's load_postgres): not loaded, not dropped",
    )
    parser.add_argument("--paper", help="folder of the paper table's generated parts")
    parser.add_argument("--parts", type=int, default=125)  # --paper: how many parts
    args = parser.parse_args()
    if args.paper:  # bench_engines_paper.py: DuckDB on the paper's table in Parquet
        return paper(args)
    if args.engine != "duckdb":  # bench_engines_sql.py: the same table in PostgreSQL / Spark
        return sql_engine(args)
    skald = [sys.executable, "-m", "airflow_skald.cli", "run", "-q", "--overwrite"]
    work = Path(tempfile.mkdtemp(prefix="bench-engines-"))
    try:
        inp = work / "in"
        files = write_input(inp, args.rows, args.files)
        configs = {}
        for engine in ("duckdb", "chunks"):
            configs[engine] = work / f"{engine}.yaml"
            configs[engine].write_text(yaml.safe_dump(config(inp, work / f"out-{engine}", engine)))
        subprocess.run([*skald, str(configs["duckdb"])], check=True, stdout=subprocess.DEVNULL)
        manifest = json.loads((work / "out-duckdb" / "manifest.json").read_text())
        hand = {
            "levels": manifest["root_node"],
            "node": manifest["node"],
            "top": manifest["top_node"],
        }
        results: dict[str, dict[str, list[float]]] = {}
        loads = []
        for _ in range(args.repeats):
            loads.append(round(os.getloadavg()[0], 1))
            cases = {
                "duckdb": [*skald, str(configs["duckdb"])],
                "by_hand": [
                    sys.executable,
                    "-c",
                    BY_HAND,
                    json.dumps(files),
                    str(work / "by-hand.parquet"),
                    json.dumps(hand),
                ],
                "chunks": [*skald, str(configs["chunks"])],
            }
            for name, argv in cases.items():
                wall, cpu, rss = timed(argv)
                results.setdefault(name, {"wall_s": [], "cpu_s": [], "peak_rss_mb": []})
                results[name]["wall_s"].append(wall)
                results[name]["cpu_s"].append(cpu)
                results[name]["peak_rss_mb"].append(rss)

        def ratios(a: str, b: str, what: str) -> list[float]:
            pairs = zip(results[a][what], results[b][what], strict=True)
            return [x / y for x, y in pairs]

        report = {
            "rows": args.rows,
            "files": args.files,
            "node": manifest["node"],
            "root": manifest["root_node"],
            "cases": {n: {k: span(v) for k, v in r.items()} for n, r in results.items()},
            "duckdb_vs_by_hand": span(ratios("duckdb", "by_hand", "wall_s")),
            "duckdb_vs_by_hand_cpu": span(ratios("duckdb", "by_hand", "cpu_s")),
            "duckdb_vs_chunks": span(ratios("duckdb", "chunks", "wall_s")),
            "duckdb_vs_chunks_cpu": span(ratios("duckdb", "chunks", "cpu_s")),
            "load_before_each_repeat": loads,
        }
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def paper(args: argparse.Namespace) -> None:
    import bench_engines_paper

    if args.cases == "engine,by_hand,chunks":
        args.cases = "duckdb,by_hand,chunks"
    work = Path(tempfile.mkdtemp(prefix="bench-paper-", dir=os.path.dirname(args.paper)))
    try:
        print(json.dumps(bench_engines_paper.run(args, work, timed, span), indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sql_engine(args: argparse.Namespace) -> None:
    import bench_engines_sql

    work = Path(tempfile.mkdtemp(prefix=f"bench-{args.engine}-"))
    try:
        # an already loaded database: no files to write (nor the bench's memory for them)
        files = [] if args.database else write_input(work / "in", args.rows, args.files)
        base = config(work / "in", work / "out", "chunks")
        report = bench_engines_sql.run(args, work, files, base, span)
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
