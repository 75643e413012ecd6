"""PostgreSQL in and out (docs/design.md §2a, issue 33): extraction and a table as the release.

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

Wall seconds (the database server's work is not the client's CPU), the CPU (user + sys) of
the client processes and of the server processes serving each (``server_cpu_s``: their /proc
figures; the bench's database is its own, no other connection reads it), the load average before each repeat; ranges over the
repeats (the machine is shared and noisy). ``fetch``: ADBC's batches of the same query read and
dropped (the driver's share of the extraction; the rest is staging).

``--extract-only`` measures copy, fetch and extract only; ``--client-cpus 1 --server-cpus 0``
pins the client processes (``sched_setaffinity``) and the server process serving each (as
``taskset -p`` does; needs the right to, e.g. root) to those cores: the same cores for both
show what sharing one costs, separate ones what a core of its own gives each side;
``--database NAME`` reads a database loaded by an earlier run (kept, ``--keep``) instead of
loading one.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
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


TICK = os.sysconf("SC_CLK_TCK")


def _cpus(text: str | None) -> set[int] | None:
    return {int(c) for c in text.split(",")} if text else None


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class _Backends(threading.Thread):
    """The server processes serving the other connections to the bench's database (its own:
    none but the one client's): each pinned to `cpus` (when given) as soon as it shows in
    pg_stat_activity; `cpu` their CPU seconds, read until they end."""

    def __init__(self, uri: str, cpus: set[int] | None) -> None:
        super().__init__(daemon=True)
        self.uri, self.cpus = uri, cpus
        self.seen: dict[int, float] = {}
        self.done = threading.Event()

    @property
    def cpu(self) -> float:
        return sum(self.seen.values())

    def run(self) -> None:
        import psycopg2

        conn = psycopg2.connect(self.uri)
        conn.autocommit = True
        sql = (
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        with conn.cursor() as cur:
            while not self.done.is_set():
                cur.execute(sql)
                for (pid,) in cur.fetchall():
                    if pid not in self.seen and self.cpus:
                        os.sched_setaffinity(pid, self.cpus)
                    with contextlib.suppress(OSError):  # it ended: the last reading stands
                        self.seen[pid] = _proc_cpu(pid)
                for pid in self.seen:
                    with contextlib.suppress(OSError):
                        self.seen[pid] = _proc_cpu(pid)
                self.done.wait(0.05)
        conn.close()


def _measured(
    argv: list[str], uri: str, env: dict, client: set[int] | None, server: set[int] | None
) -> tuple[float, float, float, str]:
    """Run `argv`: wall s, its CPU s, the CPU s of the server processes serving it, its stdout
    (psql's, COPY's bytes: to /dev/null)."""
    watch = _Backends(uri, server)
    watch.start()
    cpu0, t0 = _children_cpu(), time.perf_counter()
    with open(os.devnull, "wb") as null:
        done = subprocess.run(
            argv,
            check=True,
            env=env,
            stdout=null if argv[0] == "psql" else subprocess.PIPE,
            preexec_fn=(lambda: os.sched_setaffinity(0, client)) if client else None,
        )
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    watch.done.set()
    watch.join()
    return wall, cpu, watch.cpu, (done.stdout or b"").decode(errors="replace")


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
    ap.add_argument("--extract-only", action="store_true", help="copy, fetch and extract only")
    ap.add_argument("--client-cpus", help="pin the client processes to these cores: 1 or 0,1")
    ap.add_argument("--server-cpus", help="pin the server process serving each to these cores")
    ap.add_argument("--database", help="a database an earlier run loaded (--keep)")
    ap.add_argument("--keep", action="store_true", help="keep the database (its name printed)")
    args = ap.parse_args()
    client, server = _cpus(args.client_cpus), _cpus(args.server_cpus)
    work = Path(args.work)
    data = work / f"paper-{args.rows}"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if not args.database and not (data / "skald.yaml").exists():
        shutil.rmtree(data, ignore_errors=True)
        subprocess.run(
            _skald("generate", "--rows", str(args.rows), "--chunk-rows", str(args.chunk_rows),
                   "--seed", "7", "--out", str(data)),
            check=True, env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    name = args.database or f"skald_bench_{uuid.uuid4().hex[:8]}"
    uri = f"{SERVER}/{name}"
    if not args.database:
        subprocess.run(
            ["psql", "-Xq", f"{SERVER}/postgres", "-c", f'CREATE DATABASE "{name}"'], check=True
        )
    results: dict[str, list] = {}
    loads: list[float] = []
    load_s = None
    try:
        if not args.database:
            t0 = time.perf_counter()
            _load(uri, data)
            load_s = round(time.perf_counter() - t0, 1)
        staged = work / "staged"
        paths = {} if args.extract_only else _configs(data, work, staged, uri, args.chunk_rows)
        copy_sql = "COPY (SELECT * FROM patients ORDER BY patient_id) TO STDOUT (FORMAT binary)"
        fetch_code = (  # timed inside the process: the call, not the interpreter's start
            "import sys, time; import adbc_driver_postgresql.dbapi as pg; "
            "t0 = time.perf_counter(); conn = pg.connect(sys.argv[1]); cur = conn.cursor(); "
            "cur.execute('SELECT * FROM patients ORDER BY patient_id'); "
            "n = sum(b.num_rows for b in cur.fetch_record_batch()); conn.close(); "
            "print(n, time.perf_counter() - t0)"
        )
        extract_code = (
            "import sys, time; from airflow_skald.core.data.database.extract import extract; "
            "from airflow_skald.core.data.database.source import DatabaseSource; "
            "t0 = time.perf_counter(); "
            f"extract(DatabaseSource('bench', table='patients'), sys.argv[1], {args.chunk_rows}, "
            "sys.argv[2]); print(time.perf_counter() - t0)"
        )
        steps = {
            "copy": ["psql", "-Xq", uri, "-c", copy_sql],
            "fetch": [sys.executable, "-c", fetch_code, uri],
            "extract": [sys.executable, "-c", extract_code, uri, str(staged)],
        }
        for _ in range(args.repeats):
            loads.append(round(os.getloadavg()[0], 1))
            for key, argv in steps.items():
                wall, cpu, server_cpu, out = _measured(argv, uri, env, client, server)
                if key != "copy":  # the process's own timing of the call
                    wall = float(out.split()[-1])
                results.setdefault(key, []).append((wall, cpu, server_cpu))
            for key in paths:
                run = _skald("run", str(paths[key]), "-q", "--overwrite")
                results.setdefault(f"run_{key}", []).append(_timed(run, env) + (None,))
    finally:
        if args.keep or args.database:
            print(f"database kept: {name}", file=sys.stderr)
        else:
            subprocess.run(
                ["psql", "-Xq", f"{SERVER}/postgres", "-c", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'],
                check=False,
            )  # fmt: skip
    walls = {k: [r[0] for r in v] for k, v in results.items()}
    ratios = {
        "extract_vs_copy": [c / e for c, e in zip(walls["copy"], walls["extract"], strict=True)]
    }
    if paths:
        ratios["table_in_vs_parts"] = [
            t / (e + p)
            for t, e, p in zip(
                walls["run_table_in"], walls["extract"], walls["run_parquet"], strict=True
            )
        ]
        ratios["table_out_vs_folder"] = [
            t / p for t, p in zip(walls["run_table_out"], walls["run_parquet"], strict=True)
        ]  # fmt: skip
    report = {
        "rows": args.rows,
        "chunk_rows": args.chunk_rows,
        "load_s": load_s,
        "load_average": loads,
        "adbc_driver_postgresql": importlib.metadata.version("adbc-driver-postgresql"),
        "client_cpus": args.client_cpus,
        "server_cpus": args.server_cpus,
        "wall_s": {k: [round(x, 2) for x in v] for k, v in walls.items()},
        "cpu_s": {k: [round(r[1], 2) for r in v] for k, v in results.items()},
        "server_cpu_s": {
            k: [round(r[2], 2) for r in v] for k, v in results.items() if v[0][2] is not None
        },
        "ratios": {k: [round(x, 3) for x in v] for k, v in ratios.items()},
    }
    print(json.dumps(report, indent=1))
    print(
        " ".join(f"{k}={min(v):.2f}-{max(v):.2f}" for k, v in ratios.items()),
        file=sys.stderr,
    )
    return 0


def _configs(data: Path, work: Path, staged: Path, uri: str, chunk_rows: int) -> dict[str, Path]:
    """The three runs' config files: from the table, from the staged Parquet, into a table."""
    base = yaml.safe_load((data / "skald.yaml").read_text())
    base["chunk_rows"] = chunk_rows
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
    return paths


if __name__ == "__main__":
    sys.exit(main())
