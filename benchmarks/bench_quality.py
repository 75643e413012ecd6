"""Every quality objective's whole run against the DM* run (issue 22: each within 1.5x).

`skald run --objective O` in a fresh process per run (CPU = user + system, as
bench_arx_tables measures it) on Adult (ARX's 8 hierarchies, k = 5) and the 8-QID benchmark
tables of `arx_tables.py` (FARS-shaped; CUP with --tables), at suppression 0 and 0.05; prints
per case and objective the node, the score, the evaluated nodes and the CPU range over the
repeats, and the ratio of medians to the DM* run.

    python benchmarks/bench_quality.py [--repeats 3] [--tables adult,fars] [--limits 0,0.05]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import yaml
from arx_tables import write_table
from bench_arx_tables import run_once

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from airflow_skald.core.settings.quality import OBJECTIVES  # noqa: E402


def _config(work: Path, table: str, limit: float, objective: str) -> Path:
    folder = work / table
    if table == "adult":
        body = write_table(table, folder)
    elif (folder / "body.yaml").exists():
        body = yaml.safe_load((folder / "body.yaml").read_text())
    else:
        body = write_table(table, folder)
        (folder / "body.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    body["privacy"]["suppression_limit"] = limit
    body["quality"] = {"objective": objective}
    body["output"]["path"] = str(work / "out" / f"{table}-{limit}-{objective}")
    path = work / f"{table}-{limit}-{objective}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tables", default="adult,fars")
    p.add_argument("--limits", default="0,0.05")
    p.add_argument("--objectives", default=",".join(OBJECTIVES))
    p.add_argument("--work", type=Path, default=Path("/tmp/skald-bench-quality"))
    p.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for table in args.tables.split(","):
        for limit in [float(x) for x in args.limits.split(",")]:
            base = None
            for objective in args.objectives.split(","):
                config = _config(args.work, table, limit, objective)
                runs = [run_once(config) for _ in range(args.repeats)]
                cpu = [r["cpu_s"] for r in runs]
                manifest = json.loads(
                    (
                        Path(yaml.safe_load(config.read_text())["output"]["path"]) / "manifest.json"
                    ).read_text()
                )
                score = manifest["quality_models"]["scores"][objective]
                median = statistics.median(cpu)
                base = median if objective == "dm_star" else base
                row = {
                    "table": table,
                    "limit": limit,
                    "objective": objective,
                    "node": runs[0]["node"],
                    "score": score,
                    "evaluated": runs[0]["evaluated"],
                    "nodes": runs[0]["nodes"],
                    "cpu_s": [round(min(cpu), 2), round(max(cpu), 2)],
                    "vs_dm_star": round(median / base, 2) if base else None,
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
