"""PostgreSQL in and out (SPEC §2a, issue 33): extraction and a table as the release.

    python benchmarks/bench_database.py [--rows 10000000] [--chunk-rows 1000000] [--repeats 2]

The paper's synthetic table (``skald generate``) is loaded into a database of its own on
127.0.0.1:5432 (dropped after) with a primary key on patient_id; then, interleaved per
repeat:

- ``copy``: ``psql -c "COPY (SELECT * FROM patients ORDER BY patient_id) TO STDOUT (FORMAT
  binary)" > /dev/null``: the floor of reading the table in key order;
- ``extract``: the same rows read by skald into staged Parquet chunks (ADBC, COPY binary);
  target: its rate >= 0.8x copy's (``extract_vs_copy`` = copy s / extract s);
- ``run_table_in``: ``skald run`` from the table into a folder; ``run_parquet``: the same run
  from the staged Parquet chunks; target: ``table_in_vs_parts`` = run_table_in /
  (extract + run_parquet) <= 1.2;
- ``run_table_out``: ``skald run`` from the Parquet chunks into a table (ingest, read back,
  verify, swap); ``table_out_vs_folder`` = run_table_out / run_parquet.

Wall seconds (the database server's work is not the client's CPU), and the CPU (user + sys) of
the skald processes; ranges over the repeats (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SERVER = os.environ.get("SKALD_BENCH_PG", "postgresql://postgres@127.0.0.1:5432")


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _timed(
    argv: list[str], env: dict | None = None, stdout=subprocess.DEVNULL
) -> tuple[float, float]:
    cpu0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=stdout)
    return time.perf_counter() - t0, _children_cpu() - cpu0


def _skald(*args: str) -> list[str]:
    return [sys.executable, "-m", "airflow_skald.cli", *args]


def _load(uri: str, data: Path) -> None:
    import adbc_driver_postgresql.dbapi as pg
    import pyarrow.parquet as pq

    with pg.connect(uri) as conn, conn.cursor() as cur:
        for i, chunk in enumerate(sorted(data.glob("chunk-*.parquet"))):
            cur.adbc_ingest("patients", pq.read_table(chunk), mode="create" if i == 0 else "append")
        cur.execute("ALTER TABLE patients ADD PRIMARY KEY (patient_id)")
        cur.execute("CREATE SCHEMA research")
        conn.commit()
    subprocess.run(["psql", "-Xq", uri, "-c", "VACUUM ANALYZE patients"], check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--chunk-rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--work", default="/tmp/skald-bench-db")
    args = ap.parse_args()
    work = Path(args.work)
    data = work / f"paper-{args.rows}"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if not (data / "skald.yaml").exists():
        shutil.rmtree(data, ignore_errors=True)
        subprocess.run(
            _skald("generate", "--rows", str(args.rows), "--chunk-rows", str(args.chunk_rows),
                   "--seed", "7", "--out", str(data)),
            check=True, env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    name = f"skald_bench_{uuid.uuid4().hex[:8]}"
    uri = f"{SERVER}/{name}"
    subprocess.run(
        ["psql", "-Xq", f"{SERVER}/postgres", "-c", f'CREATE DATABASE "{name}"'], check=True
    )
    results: dict[str, list] = {}
    try:
        t0 = time.perf_counter()
        _load(uri, data)
        load_s = time.perf_counter() - t0
        base = yaml.safe_load((data / "skald.yaml").read_text())
        base["chunk_rows"] = args.chunk_rows
        staged = work / "staged"
        configs = {
            "table_in": {**base, "input": {"table": "patients", "connection": uri},
                         "output": {"path": str(work / "out-table-in")}},
            "parquet": {**base, "input": {"path": str(staged)},
                        "output": {"path": str(work / "out-parquet")}},
            "table_out": {**base, "input": {"path": str(staged)},
                          "output": {"table": "research.patients_k50", "connection": uri,
                                     "path": str(work / "out-table-release")}},
        }  # fmt: skip
        paths = {}
        for key, body in configs.items():
            paths[key] = work / f"{key}.yaml"
            paths[key].write_text(yaml.safe_dump(body, sort_keys=False))
        copy_sql = "COPY (SELECT * FROM patients ORDER BY patient_id) TO STDOUT (FORMAT binary)"
        extract_code = (  # timed inside the process: the call, not the interpreter's start
            "import sys, time; from airflow_skald.core.data.database.extract import extract; "
            "from airflow_skald.core.data.database.source import DatabaseSource; "
            "t0 = time.perf_counter(); "
            f"extract(DatabaseSource('bench', table='patients'), sys.argv[1], {args.chunk_rows}, "
            "sys.argv[2]); print(time.perf_counter() - t0)"
        )
        for _ in range(args.repeats):
            with open(os.devnull, "wb") as null:
                wall, _cpu = _timed(["psql", "-Xq", uri, "-c", copy_sql], stdout=null)
            results.setdefault("copy", []).append((wall, None))
            argv = [sys.executable, "-c", extract_code, uri, str(staged)]
            cpu0 = _children_cpu()
            done = subprocess.run(argv, check=True, env=env, capture_output=True, text=True)
            results.setdefault("extract", []).append(
                (float(done.stdout.split()[-1]), _children_cpu() - cpu0)
            )
            for key in ("table_in", "parquet", "table_out"):
                run = _skald("run", str(paths[key]), "-q", "--overwrite")
                results.setdefault(f"run_{key}", []).append(_timed(run, env))
    finally:
        subprocess.run(
            ["psql", "-Xq", f"{SERVER}/postgres", "-c", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'],
            check=False,
        )  # fmt: skip
    walls = {k: [w for w, _ in v] for k, v in results.items()}
    ratios = {
        "extract_vs_copy": [c / e for c, e in zip(walls["copy"], walls["extract"], strict=True)],
        "table_in_vs_parts": [
            t / (e + p)
            for t, e, p in zip(walls["run_table_in"], walls["extract"], walls["run_parquet"], strict=True)
        ],
        "table_out_vs_folder": [
            t / p for t, p in zip(walls["run_table_out"], walls["run_parquet"], strict=True)
        ],
    }  # fmt: skip
    report = {
        "rows": args.rows,
        "chunk_rows": args.chunk_rows,
        "load_s": round(load_s, 1),
        "wall_s": {k: [round(x, 2) for x in v] for k, v in walls.items()},
        "cpu_s": {k: [round(c, 2) for _, c in v] for k, v in results.items() if k != "copy"},
        "ratios": {k: [round(x, 3) for x in v] for k, v in ratios.items()},
    }
    print(json.dumps(report, indent=1))
    print(
        " ".join(f"{k}={min(v):.2f}-{max(v):.2f}" for k, v in ratios.items()),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
