"""The DuckDB engine on the paper's table in Parquet (docs/design.md §2b, issue 43, ADR 0065).

    python benchmarks/bench_engines.py --paper DIR [--parts 125] [--repeats 1]
        [--cases duckdb,by_hand,chunks]

DIR holds `skald generate --schema paper --chunk-rows 1000000 --seed 1` parts
(chunk-NNNNN.parquet); the first `--parts` of them are read (a folder of links), with the
paper's configuration (`paper_config_dict`: five QIDs, k = 50, 1 % suppression). Cases, each
a whole process, interleaved per repeat (wall s, CPU s = user + sys, peak RSS MB):

- ``duckdb``: ``skald run`` with ``execution: {engine: duckdb}``;
- ``by_hand``: the same DuckDB doing the least a person would: one GROUP BY of the root
  node's codes (the two hierarchies as small mapping tables, age, bmi and pin code by
  arithmetic) fetched as Arrow, then one COPY of the released rows at the chosen node (each
  QID's label at the node; the engine's release but for the suppressed records' mask and
  the pin code binned by value, not by rank) into Parquet, in one session;
- ``chunks``: ``skald run`` with ``execution: chunks`` on the same files.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import yaml

from airflow_skald.core.data.generate import paper_config_dict

BY_HAND = r"""
import duckdb, json, sys
import pyarrow as pa
files, out, m = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute("CREATE TEMP VIEW t AS SELECT * FROM read_parquet(" + str(files) + ")")
q = {x["name"]: x for x in m["qids"]}
for name in ("blood_group", "profession"):
    h = q[name]["hierarchy"]
    cols = {"v": list(h)}
    for lv in range(1, m["top"][name]):
        cols[f"l{lv}"] = [h[v][lv - 1] for v in h]
    con.register(name + "_a", pa.table(cols))
    con.execute(f"CREATE TEMP TABLE {name}_map AS SELECT * FROM {name}_a")


def label(name, node):
    lv = node[name]
    if lv == m["top"][name]:
        return "'*'"
    if name in ("blood_group", "profession"):
        return f"t.{name}" if lv == 0 else f"{name}_map.l{lv}"
    w = q["bmi"]["widths"][lv] if name == "bmi" else 1 << lv
    if name == "bmi":
        low = f"FLOOR(t.bmi / {w}) * {w}"
        return f"printf('[%.2f-%.2f)', {low}, {low} + {w})"
    low = f"(t.{name} // {w} * {w})"
    return f"'[' || {low} || '-' || ({low} + {w - 1}) || ']'"


def code(name, node):
    lv = node[name]
    if lv == m["top"][name]:
        return "0"
    if name in ("blood_group", "profession"):
        return f"t.{name}" if lv == 0 else f"{name}_map.l{lv}"
    w = q["bmi"]["widths"][lv] if name == "bmi" else 1 << lv
    return f"FLOOR(t.bmi / {w})" if name == "bmi" else f"t.{name} // {w}"


def source(node):
    joins = " ".join(
        f"JOIN {n}_map ON t.{n} = {n}_map.v"
        for n in ("blood_group", "profession") if 0 < node[n] < m["top"][n]
    )
    return "t " + joins


root, node = m["levels"], m["node"]
codes = ", ".join(code(n, root) + f" AS c{i}" for i, n in enumerate(q))
con.execute(f"SELECT {codes}, COUNT(*) FROM {source(root)} GROUP BY ALL").fetch_arrow_table()
labels = ", ".join(label(n, node) + f" AS {n}" for n in q)
con.execute(
    f"COPY (SELECT {labels}, t.health_condition FROM {source(node)}) "
    "TO '" + out + "' (FORMAT PARQUET)"
)
"""


def paper_inputs(parts_dir: Path, parts: int, folder: Path) -> list[str]:
    """The first `parts` parts of the generated paper table, linked into `folder`."""
    found = sorted(parts_dir.glob("chunk-*.parquet"))[:parts]
    if len(found) < parts:
        raise SystemExit(f"--paper {parts_dir}: {len(found)} parts, {parts} asked")
    folder.mkdir(parents=True)
    for path in found:
        (folder / path.name).symlink_to(path.resolve())
    return [str(folder / path.name) for path in found]


def run(args, work: Path, timed, span) -> dict:
    """The cases of the module docstring, interleaved per repeat; a JSON-ready report."""
    inp = work / "in"
    files = paper_inputs(Path(args.paper), args.parts, inp)
    skald = [sys.executable, "-m", "airflow_skald.cli", "run", "-q", "--overwrite"]
    configs = {}
    for engine in ("duckdb", "chunks"):
        settings = paper_config_dict(inp, work / f"out-{engine}", 1_000_000)
        settings["execution"] = {"engine": engine}
        configs[engine] = work / f"{engine}.yaml"
        configs[engine].write_text(yaml.safe_dump(settings))
    cases = [c for c in args.cases.split(",") if c]
    first: dict[str, list[float]] = {}
    if "duckdb" in cases:  # the node by hand writes at; timed as the first repeat's run
        first["duckdb"] = list(timed([*skald, str(configs["duckdb"])]))
    manifest = json.loads((work / "out-duckdb" / "manifest.json").read_text())
    qids = yaml.safe_load(configs["duckdb"].read_text())["quasi_identifiers"]
    hand = {
        "levels": manifest["root_node"],
        "node": manifest["node"],
        "top": manifest["top_node"],
        "qids": qids,
    }
    argv = {
        "duckdb": [*skald, str(configs["duckdb"])],
        "by_hand": [sys.executable, "-c", BY_HAND, json.dumps(files), str(work / "h.parquet")]
        + [json.dumps(hand)],
        "chunks": [*skald, str(configs["chunks"])],
    }
    results: dict[str, dict[str, list[float]]] = {}
    loads = []
    for repeat in range(args.repeats):
        loads.append(round(os.getloadavg()[0], 1))
        for name in cases:
            measured = first.pop(name) if repeat == 0 and name in first else timed(argv[name])
            row = results.setdefault(name, {"wall_s": [], "cpu_s": [], "peak_rss_mb": []})
            for key, value in zip(row, measured, strict=True):
                row[key].append(value)
    report = {
        "paper_parts": args.parts,
        "rows": args.parts * 1_000_000,
        "node": manifest["node"],
        "root": manifest["root_node"],
        "cases": {n: {k: span(v) for k, v in r.items()} for n, r in results.items()},
        "load_before_each_repeat": loads,
    }
    for other in ("by_hand", "chunks"):
        if "duckdb" in results and other in results:
            for what, suffix in (("wall_s", ""), ("cpu_s", "_cpu")):
                pairs = zip(results["duckdb"][what], results[other][what], strict=True)
                report[f"duckdb_vs_{other}{suffix}"] = span([x / y for x, y in pairs])
    return report
