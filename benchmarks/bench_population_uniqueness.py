"""Population uniqueness on Adult against the k-only run (issue 21, "Speed").

`skald run` in a fresh process per run (CPU = user + system, `bench_arx_tables.run_once`) on
Adult as issue 21 names it (8 QIDs with ARX's hierarchies, salary-class sensitive:
`adult_data.adult_body`), at each suppression limit: k = 5 alone,
then `population_uniqueness: {max: 0.01, model: M, sampling_fraction: 0.1}` for each model,
without k and with k = 5. Prints per case the node, DM*, suppressed records, evaluated nodes,
the CPU range over the repeats and the ratio of medians to the k-only run; `--json` writes the
rows.

    python benchmarks/bench_population_uniqueness.py [--repeats 3] [--models pitman,dankar]
        [--limits 0,0.05] [--work /tmp/skald-bench-pu] [--json rows.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import yaml
from adult_data import ADULT_CSV, adult_body
from bench_arx_tables import run_once


def _config(work: Path, name: str, limit: float, privacy: dict) -> Path:
    source = {"path": str(ADULT_CSV), "format": "csv", "delimiter": ";"}
    body = adult_body(source, work / "out" / f"{name}-{limit}")
    body["privacy"] = {**privacy, "suppression_limit": limit}
    path = work / f"{name}-{limit}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--models", default="pitman,dankar")
    p.add_argument("--limits", default="0,0.05")
    p.add_argument("--work", type=Path, default=Path("/tmp/skald-bench-pu"))
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for limit in [float(x) for x in args.limits.split(",")]:
        cases = {"k5": {"k": 5}}
        for model in args.models.split(","):
            pu = {"max": 0.01, "model": model, "sampling_fraction": 0.1}
            cases[f"pu-{model}"] = {"population_uniqueness": pu}
            cases[f"pu-{model}-k5"] = {"k": 5, "population_uniqueness": pu}
        base = None
        for name, privacy in cases.items():
            config = _config(args.work, name, limit, privacy)
            runs = [run_once(config) for _ in range(args.repeats)]
            cpu = [r["cpu_s"] for r in runs]
            median = statistics.median(cpu)
            base = median if base is None else base
            row = {
                "case": name,
                "limit": limit,
                **{k: runs[0][k] for k in ("node", "dm_star", "n_suppressed", "evaluated")},
                "cpu_s": [round(c, 2) for c in cpu],
                "ratio_to_k5": round(median / base, 2),
            }
            assert all(r["dm_star"] == row["dm_star"] for r in runs)  # deterministic
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
