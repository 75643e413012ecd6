"""ARX's benchmark tables end to end (issue 23): CPU and wall of whole `skald run` processes
against ARX 3.9.2's CPU measured side by side on this machine, and against a plain exhaustive
search over the same lattice.

    python benchmarks/bench_arx_tables.py [--repeats 3] [--work DIR] [--no-exhaustive]
                                          [--only cup-0,fars-5,...]

Tables (`arx_tables.py`): CUP- and FARS-shaped generated tables (ARX's files are not
available here) and ARX's Adult; k = 5. Each case runs `--repeats` times, cases interleaved,
each run a fresh process (`python -m airflow_skald.cli run`, start-up included; CPU = user +
system of that child from `wait4`, peak RSS likewise). ARX itself does not run here: its
figures are the issue's (min-max of 3 interleaved runs, JVM start included), so `product/ARX`
divides the product's fastest run by ARX's range. Tables are built in a child process and the
exhaustive searches run after all timed runs, so this process stays small (a child's peak RSS
can never read below its parent's at fork).

`run/exhaustive`: the product's whole-run CPU over the CPU of a plain exhaustive search of the
same lattice (every node rolled up from its parent and judged, `bench_search.exhaustive`),
timed once in this process on the same histogram; it must find the same node and DM*.
The machine is shared: read ranges, not single figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml
from arx_tables import write_table  # Adult's body only: no table to build

# case: (table, suppression limit, criterion, ARX 3.9.2 CPU range in s from issue 23)
CASES: dict[str, tuple[str, float, str | None, tuple[float, float]]] = {
    "cup-0": ("cup", 0.0, None, (3.7, 3.9)),
    "cup-5": ("cup", 0.05, None, (5.5, 5.6)),
    "fars-0": ("fars", 0.0, None, (3.3, 3.8)),
    "fars-5": ("fars", 0.05, None, (7.4, 8.2)),
    "adult-0": ("adult", 0.0, None, (3.1, 4.7)),
    "adult-5": ("adult", 0.05, None, (3.1, 4.7)),
    "adult-l3-0": ("adult", 0.0, "l3", (2.9, 4.4)),
    "adult-l3-5": ("adult", 0.05, "l3", (2.9, 4.4)),
    "adult-t0.2-0": ("adult", 0.0, "t0.2", (2.9, 4.4)),
    "adult-t0.2-5": ("adult", 0.05, "t0.2", (2.9, 4.4)),
}


def _range(xs: list[float], digits: int = 2) -> str:
    lo, hi = min(xs), max(xs)
    return f"{lo:.{digits}f}" if lo == hi else f"{lo:.{digits}f}-{hi:.{digits}f}"


def write_configs(work: Path, cases: list[str]) -> dict[str, Path]:
    """A config file per case (tables generated once per work folder)."""
    paths = {}
    for case in cases:
        table, limit, criterion, _ = CASES[case]
        folder = work / table
        if table == "adult":
            body = write_table(table, folder, criterion=criterion)
        elif (folder / "body.yaml").exists():
            body = yaml.safe_load((folder / "body.yaml").read_text())
        else:  # in a child: Linux children inherit the parent's peak RSS (ru_maxrss)
            code = (
                "import sys, yaml; from pathlib import Path; from arx_tables import write_table;"
                "p = Path(sys.argv[2]); body = write_table(sys.argv[1], p);"
                "(p / 'body.yaml').write_text(yaml.safe_dump(body, sort_keys=False))"
            )
            here = Path(__file__).resolve().parent
            subprocess.run([sys.executable, "-c", code, table, str(folder)], check=True, cwd=here)
            body = yaml.safe_load((folder / "body.yaml").read_text())
        body["privacy"]["suppression_limit"] = limit
        body["output"]["path"] = str(work / "out" / case)
        paths[case] = work / f"{case}.yaml"
        paths[case].write_text(yaml.safe_dump(body, sort_keys=False))
    return paths


def run_once(config: Path) -> dict:
    """One `skald run` in a fresh process: CPU (user + system), wall, peak RSS, its answer."""
    body = yaml.safe_load(config.read_text())
    out = Path(body["output"]["path"])
    cmd = [sys.executable, "-m", "airflow_skald.cli", "run", str(config), "--quiet"]
    cmd += ["--overwrite"] if out.exists() else []
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{config.name}: skald run failed ({status})")
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": wall,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "node": manifest["node"],
        "dm_star": manifest["dm_star"],
        "n_suppressed": manifest["n_suppressed"],
        "evaluated": manifest["lattice"]["evaluated"],
        "nodes": manifest["lattice"]["nodes"],
    }


def exhaustive_cpu(config: Path, limit: float) -> dict:
    """The plain exhaustive search's CPU on the run's histogram (same node and DM* asserted)."""
    from bench_search import side_by_side

    got = side_by_side(config, limit, 1, True)
    return {k: got[k] for k in ("exhaustive_cpu_s", "search_cpu_s", "exhaustive_nodes")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/skald-arx-tables"))
    parser.add_argument("--no-exhaustive", action="store_true")
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated case names")
    args = parser.parse_args()
    cases = [c for c in args.only.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")
    args.work.mkdir(parents=True, exist_ok=True)
    configs = write_configs(args.work, cases)
    runs: dict[str, list[dict]] = {c: [] for c in cases}
    load = [os.getloadavg()[0]]
    for _ in range(args.repeats):  # interleaved: a burst of load hits every case alike
        for case in cases:
            runs[case].append(run_once(configs[case]))
    load.append(os.getloadavg()[0])
    results = {}
    for case in cases:
        table, limit, _, arx = CASES[case]
        rs = runs[case]
        answers = {json.dumps([r["node"], r["dm_star"], r["n_suppressed"]]) for r in rs}
        assert len(answers) == 1, f"{case}: runs disagree: {answers}"
        best = min(r["cpu_s"] for r in rs)
        row = {
            "cpu_s": _range([r["cpu_s"] for r in rs]),
            "wall_s": _range([r["wall_s"] for r in rs]),
            "peak_rss_mb": _range([r["peak_rss_mb"] for r in rs], 0),
            "arx_cpu_s": f"{arx[0]}-{arx[1]}",
            "product_over_arx": f"{best / arx[1]:.2f}-{best / arx[0]:.2f}",
            "evaluated": f"{rs[0]['evaluated']} of {rs[0]['nodes']}",
            "node": rs[0]["node"],
            "dm_star": rs[0]["dm_star"],
            "n_suppressed": rs[0]["n_suppressed"],
        }
        if table != "adult" and not args.no_exhaustive:
            ex = exhaustive_cpu(configs[case], limit)
            row["exhaustive_cpu_s"] = ex["exhaustive_cpu_s"]
            row["run_over_exhaustive"] = f"{best / float(ex['exhaustive_cpu_s']):.2f}"
        results[case] = row
        print(json.dumps({case: row}), flush=True)
    print(f"\nload average (1 min) at start / end: {load[0]:.1f} / {load[1]:.1f}")
    print(
        "| case | product CPU s | wall s | peak RSS MB | ARX CPU s | product/ARX | run/exhaustive |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case, r in results.items():
        print(
            f"| {case} | {r['cpu_s']} | {r['wall_s']} | {r['peak_rss_mb']} | {r['arx_cpu_s']} | "
            f"{r['product_over_arx']} | {r.get('run_over_exhaustive', '')} |"
        )
    (args.work / "results.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
