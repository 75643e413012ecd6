"""`bench_engines.py --engine postgresql | spark` (docs/design.md §2b, issue 43, ADR 0061,
ADR 0069): the engine's whole run against the same engine by hand, the chunk path beside.

    python benchmarks/bench_engines.py --engine postgresql [--rows N] [--repeats R]
    python benchmarks/bench_engines.py --engine spark [--rows N] [--repeats R]

The table `bench_engines.write_input` generates is loaded once: for PostgreSQL into a database
of its own on 127.0.0.1:5432 (`bench.people`, keyed by `patient_id`; dropped at the end), for
Spark kept as the Parquet files (`--database NAME`: a database already holding `bench.people`
of the same --rows/--files, e.g. loaded by `load_postgres` once for several runs: not loaded,
not dropped). Then, interleaved per repeat, each as a whole process:

- ``engine``: ``skald run`` with ``execution: {engine: postgresql}`` (the table in, a table
  out) or ``{engine: spark, connection: "local[2]"}`` (the files in, a folder out);
- ``by_hand``: the same engine in one session doing one GROUP BY of the root node's codes
  (fetched as Arrow) and one write of the released rows at the chosen node (every QID's
  label by arithmetic, read from the engine run's manifest): ``CREATE TABLE AS`` in
  PostgreSQL, a Parquet write in Spark (local[2], its default partitions);
- ``by_hand_tuned`` (Spark): the same with the shuffle partitions the engine gives a local
  Spark it starts (`spark_session.PARTITIONS_PER_CORE` per core: 8 at local[2]), so the
  engine's own tuning is not counted as its gain;
- ``chunks``: ``skald run`` with ``execution: chunks`` on the same table / files.

CPU: the process's user + sys with every descendant's (the bench is a child subreaper, so a
JVM pyspark leaves running is reaped by it and counted); for PostgreSQL also the server's
CPU for the bench database (``server_cpu_s``): every backend whose command line names the
database, and each parallel worker of one, sampled from /proc/<pid>/stat every 50 ms (the
last sample of each process; a backend's last < 50 ms is missed). ``*_total_cpu`` ratios
compare process + server CPU. ``peak_rss_mb``: the process's peak RSS (wait4's ru_maxrss,
its largest descendant's if larger): never below the bench's own peak (~300 MB after writing
the files; `OwnPeak`); ``own_peak_rss_mb``: the process's own (its VmHWM), the worker's memory.

Measured (ADR 0061, ADR 0069, ADR 0082, results/issue43/*-2026-12-03*): Spark `local[2]` at
10M rows, engine / by hand 2.44x CPU (36c8677) and 2.02x with Spark's chain estimate (088e431);
1.09-1.21x with ADR 0082 (engine 131-136 CPU s, by hand 112-120; spark-10M-2026-12-03b.txt); the
PostgreSQL worker's peak RSS 303 MB at 10M rows and 437 MB at 100M (one session; the bench's
``peak_rss_mb``), its own peak (``own_peak_rss_mb``) 266 MiB and 273 MiB with ADR 0084
(postgresql-rss-10M-100M-2026-12-03b.txt).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import yaml

from airflow_skald.core.engine.sql.spark_session import PARTITIONS_PER_CORE

SERVER = "postgresql://postgres@127.0.0.1:5432"
ENV = "SKALD_BENCH_PG"
TICK = os.sysconf("SC_CLK_TCK")

# the by-hand programs: in one session, the root GROUP BY (fetched as Arrow), then the write
PG_BY_HAND = r"""
import adbc_driver_postgresql.dbapi as pg, sys
uri, grouped, released = sys.argv[1:]
con = pg.connect(uri, autocommit=True)
cur = con.cursor()
cur.execute(grouped)
cur.fetch_arrow_table()
cur.execute("DROP TABLE IF EXISTS bench.by_hand")
cur.execute("CREATE TABLE bench.by_hand AS " + released)
con.close()
"""

SPARK_BY_HAND = r"""
import json, sys
from pyspark.sql import SparkSession
files, out, grouped, released = json.loads(sys.argv[1]), *sys.argv[2:5]
builder = (
    SparkSession.builder.master("local[2]").appName("by-hand")
    .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
)
if len(sys.argv) > 5:  # by_hand_tuned: the shuffle partitions the engine gives a local Spark
    builder = builder.config("spark.sql.shuffle.partitions", sys.argv[5])
spark = builder.getOrCreate()
spark.read.parquet(*files).createOrReplaceTempView("t")
spark.sql(grouped).toArrow()
spark.sql(released).write.mode("overwrite").parquet(out)
spark.stop()
"""

CITY = {0: "city", 1: "CASE WHEN city IN ('Oslo', 'Bergen') THEN 'Norway' ELSE 'Sweden' END"}


def by_hand_sql(engine: str, table: str, m: dict) -> tuple[str, str]:
    """The root GROUP BY and the released rows' SELECT (every QID's label at the chosen node
    by arithmetic, as bench_engines.BY_HAND's) in PostgreSQL's or Spark's SQL."""
    lv, node, top = m["levels"], m["node"], m["top"]
    div = "/" if engine == "postgresql" else "div"
    grouped = (
        f"SELECT {CITY.get(lv['city'], repr('*'))} AS c, (age - 18) {div} {1 << lv['age']} AS a, "
        f"(zip - 1000) {div} {1 << lv['zip']} AS z, "
        f"FLOOR(income / {0.25 * (1 << lv['income'])}) AS i, COUNT(*) FROM {table} "
        "GROUP BY 1, 2, 3, 4"
    )

    def whole(name: str, lo: int) -> str:
        if node[name] == top[name]:
            return "'*'"
        w = 1 << node[name]
        low = f"({lo} + ({name} - {lo}) {div} {w} * {w})"
        return f"concat('[', {low}, '-', {low} + {w - 1}, ']')"

    w = 0.25 * (1 << node["income"])
    low = f"CAST(FLOOR(income / {w}) * {w} AS DOUBLE PRECISION)"
    if engine == "postgresql":
        income = f"concat('[', to_char({low}, 'FM9999990.00'), '-', to_char({low} + {w}, 'FM9999990.00'), ')')"
    else:
        income = f"format_string('[%.2f-%.2f)', {low.replace(' PRECISION', '')}, {low.replace(' PRECISION', '')} + {w})"
    if node["income"] == top["income"]:
        income = "'*'"
    released = (
        f"SELECT {CITY.get(node['city'], repr('*'))} AS city, {whole('age', 18)} AS age, "
        f"{whole('zip', 1000)} AS zip, {income} AS income, diagnosis FROM {table}"
    )
    return grouped, released


class ServerCpu:
    """CPU seconds of the PostgreSQL processes serving database `db` (backends whose command
    line names it, and their parallel workers), sampled from /proc every `every` seconds."""

    def __init__(self, db: str, every: float = 0.05):
        self.db, self.every = db, every
        self.last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> ServerCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._sample()
        self._stop.set()
        self._thread.join()

    @property
    def seconds(self) -> float:
        return sum(self.last.values())

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def _sample(self) -> None:
        ours: set[int] = set(self.last)
        found: dict[int, str] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if cmd.startswith("postgres: "):
                found[int(entry)] = cmd
        for pid, cmd in found.items():
            if f" {self.db} " in cmd:
                ours.add(pid)
        for pid, cmd in found.items():
            if "parallel worker for PID " in cmd:
                leader = int(cmd.split("parallel worker for PID ")[1].split()[0])
                if leader in ours:
                    ours.add(pid)
        for pid in ours & set(found):
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            self.last[pid] = (int(fields[11]) + int(fields[12])) / TICK


def subreaper() -> None:
    """Orphaned descendants (pyspark's JVM) become this process's children: reaped by
    `measure`, their CPU counted."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


class OwnPeak:
    """The process's own peak RSS: its VmHWM in /proc, read every `every` seconds until it
    ends (the last `every` of its life unseen). wait4's ru_maxrss is never below the bench's
    own peak: the child is spawned by vfork, and exec keeps the old (the bench's) address
    space's high-water mark (Linux `exec_mmap`), ~300 MB after writing 1M-row files."""

    def __init__(self, pid: int, every: float = 0.02):
        self.path, self.every, self.kb = f"/proc/{pid}/status", every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    @property
    def mb(self) -> float:
        return self.kb / 1024

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                with open(self.path) as fh:
                    text = fh.read()
            except OSError:
                return
            for line in text.splitlines():
                if line.startswith("VmHWM:"):
                    self.kb = max(self.kb, int(line.split()[1]))


def measure(argv: list[str], env: dict, db: str | None) -> dict[str, float]:
    """Wall, CPU (user + sys, descendants included), peak RSS (MB) of one whole process,
    and the server's CPU for database `db`."""
    server = ServerCpu(db) if db else None
    if server:
        server.__enter__()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    own = OwnPeak(proc.pid)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    own.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu, rss = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
    while True:  # the orphans this subreaper adopted (a JVM ends when its stdin closes)
        try:
            _, _, orphan = os.wait4(-1, 0)
        except ChildProcessError:
            break
        cpu += orphan.ru_utime + orphan.ru_stime
        rss = max(rss, orphan.ru_maxrss)
    if server:
        server.__exit__(None, None, None)
    if proc.returncode:
        raise SystemExit(f"{argv[:4]} exited {proc.returncode}")
    out = {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss / 1024, "own_peak_rss_mb": own.mb}
    if server:
        out["server_cpu_s"] = server.seconds
        out["total_cpu_s"] = cpu + server.seconds
    return out


def load_postgres(uri: str, files: list[str]) -> None:
    """The files into `bench.people` by ADBC's bulk ingest (COPY), keyed by patient_id."""
    import adbc_driver_postgresql.dbapi as pg
    import pyarrow.parquet as pq

    with pg.connect(uri, autocommit=True) as con, con.cursor() as cur:
        cur.execute("CREATE SCHEMA bench")
        for i, path in enumerate(files):
            mode = "create" if i == 0 else "append"
            cur.adbc_ingest("people", pq.read_table(path), mode=mode, db_schema_name="bench")
        cur.execute("ALTER TABLE bench.people ADD PRIMARY KEY (patient_id)")
        cur.execute("VACUUM ANALYZE bench.people")


def admin(sql: str) -> None:
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(f"{SERVER}/postgres", autocommit=True) as con, con.cursor() as cur:
        cur.execute(sql)


def configs(engine: str, work: Path, base: dict) -> dict[str, dict]:
    """The engine run's and the chunk path's configs (`base`: bench_engines.config's)."""
    out = {}
    for case in ("engine", "chunks"):
        cfg = dict(base)
        if engine == "postgresql":
            cfg["input"] = {"table": "bench.people", "connection": ENV}
            cfg["output"] = {
                "table": f"bench.release_{case}",
                "connection": ENV,
                "path": str(work / f"out-{case}"),
            }
            cfg["execution"] = {"engine": "postgresql"} if case == "engine" else "chunks"
        else:
            cfg["output"] = {"path": str(work / f"out-{case}"), "format": "parquet"}
            cfg["execution"] = (
                {"engine": "spark", "connection": "local[2]"} if case == "engine" else "chunks"
            )
        out[case] = cfg
    return out


def run(args, work: Path, files: list[str], base: dict, span) -> dict:
    """The interleaved repeats for `args.engine`; the report as a dict."""
    subreaper()
    engine, db = args.engine, None
    env = dict(os.environ)
    loaded = engine == "postgresql" and args.database is not None  # kept: no load, no drop
    if engine == "postgresql":
        db = args.database or f"skald_bench_{uuid.uuid4().hex[:10]}"
        if not loaded:
            admin(f'CREATE DATABASE "{db}"')
        env[ENV] = f"{SERVER}/{db}"
    try:
        t0 = time.perf_counter()
        if db and not loaded:
            load_postgres(env[ENV], files)
        load_s = time.perf_counter() - t0
        return _repeats(args, work, files, base, span, env, db) | {"load_s": round(load_s, 1)}
    finally:
        if db and not loaded:
            admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def progress(case: str, measured: dict[str, float]) -> None:
    """One measurement as a JSON line on stderr as soon as it is taken (a run cut short
    keeps what it measured), with the load average and the time."""
    line = {"case": case, **{k: round(v, 2) for k, v in measured.items()}}
    line |= {"load": round(os.getloadavg()[0], 1), "utc": time.strftime("%H:%M:%S", time.gmtime())}
    print(json.dumps(line), file=sys.stderr, flush=True)


def _repeats(args, work, files, base, span, env, db) -> dict:
    skald = [sys.executable, "-m", "airflow_skald.cli", "run", "-q", "--overwrite"]
    paths = {}
    for case, cfg in configs(args.engine, work, base).items():
        paths[case] = work / f"{case}.yaml"
        paths[case].write_text(yaml.safe_dump(cfg))
    if args.manifest:  # an earlier engine run's on the same generated data: no warm-up
        first, manifest = {}, json.loads(Path(args.manifest).read_text())
    else:
        first = measure([*skald, str(paths["engine"])], env, db)  # warm-up; its manifest
        manifest = json.loads((work / "out-engine" / "manifest.json").read_text())
        progress("warm_up_engine", first)
    hand = {"levels": manifest["root_node"], "node": manifest["node"], "top": manifest["top_node"]}
    if args.engine == "postgresql":
        sql = by_hand_sql(args.engine, "bench.people", hand)
        by_hand = [sys.executable, "-c", PG_BY_HAND, env[ENV], *sql]
    else:
        sql = by_hand_sql(args.engine, "t", hand)
        out = str(work / "by-hand")
        by_hand = [sys.executable, "-c", SPARK_BY_HAND, json.dumps(files), out, *sql]
    cases = {"engine": [*skald, str(paths["engine"])], "by_hand": by_hand}
    if args.engine == "spark":  # by hand with the engine's shuffle partitions (ADR 0082)
        cases["by_hand_tuned"] = [*by_hand, str(PARTITIONS_PER_CORE * 2)]
    if "chunks" in args.cases:
        cases["chunks"] = [*skald, str(paths["chunks"])]
    cases = {k: v for k, v in cases.items() if k in args.cases}
    results: dict[str, dict[str, list[float]]] = {}
    loads = []
    for _ in range(args.repeats):
        loads.append(round(os.getloadavg()[0], 1))
        for name, argv in cases.items():
            measured = measure(argv, env, db)
            progress(name, measured)
            for key, value in measured.items():
                results.setdefault(name, {}).setdefault(key, []).append(value)

    def ratios(a: str, b: str, what: str) -> str:
        pairs = zip(results[a][what], results[b][what], strict=True)
        return span([x / y for x, y in pairs])

    report = {
        "engine": args.engine,
        "rows": args.rows,
        "files": len(files),
        "node": manifest["node"],
        "root": manifest["root_node"],
        "warm_up_engine": {k: round(v, 2) for k, v in first.items()},
        "cases": {n: {k: span(v) for k, v in r.items()} for n, r in results.items()},
        "load_before_each_repeat": loads,
    }
    measures = ["wall_s", "cpu_s"] + (["total_cpu_s"] if db else [])
    for other in ("by_hand", "by_hand_tuned", "chunks"):
        if other in results and "engine" in results:
            for what in measures:
                suffix = {"wall_s": "", "cpu_s": "_cpu", "total_cpu_s": "_total_cpu"}[what]
                report[f"engine_vs_{other}{suffix}"] = ratios("engine", other, what)
    return report
