"""The utility analysis's cost (issue 31 item 3): its CPU against the run's, fresh processes.

    python benchmarks/bench_utility.py [--rounds 3] [--chunks 10] [--work /tmp/skald-bench]

- Adult (tests/data/adult, ARX's 8 hierarchies, k = 5 at 5 %) with ARX's defaults
  (target salary-class, the three models, 10 folds, 100,000 records): `cpu_s.utility` of
  run.json (the chunks' shares and the analysis, scikit-learn's import included) and the whole
  process's CPU; target <= 2 s.
- The paper's data, `--chunks` x 1M rows (k = 50), target health_condition (30 classes),
  ARX's defaults otherwise: the analysis's CPU against the rest of the run's (the process's
  CPU less the analysis's); target <= 0.3x at 125 chunks.

Every figure is a range over `--rounds` runs (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

from adult_data import ADULT, ADULT_CSV, adult_body
from paper_data import generate

ADULT_UTILITY = {"target": "salary-class"}  # ARX's defaults for the rest
PAPER_UTILITY = {"target": "health_condition"}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(config: Path, output: Path, extra: list[str]) -> dict:
    """One `skald run` in a fresh process: its CPU (user + system) and its run.json's."""
    before = _children_cpu()
    cmd = [sys.executable, "-m", "airflow_skald.cli", "run", str(config), "--quiet"]
    cmd += ["--output", str(output), "--overwrite", *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    process = _children_cpu() - before
    record = json.loads((output / "run.json").read_text())
    utility = record["cpu_s"].get("utility", 0.0)
    return {"process_cpu_s": round(process, 2), "utility_cpu_s": round(utility, 2)}


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}" if len(values) > 1 else f"{values[0]:.2f}"


def bench_adult(work: Path, rounds: int) -> dict:
    source = {"path": str(ADULT_CSV), "format": "csv", "delimiter": ";"}
    body = {**adult_body(source, work / "out-adult-utility"), "utility": ADULT_UTILITY}
    cfg = work / "adult-utility.yaml"
    cfg.write_text(json.dumps(body))
    runs = [run_once(cfg, work / "out-adult-utility", []) for _ in range(rounds)]
    return {
        "runs": runs,
        "utility_cpu_s": _span([r["utility_cpu_s"] for r in runs]),
        "process_cpu_s": _span([r["process_cpu_s"] for r in runs]),
    }


def bench_paper(work: Path, chunks: int, rounds: int) -> dict:
    data = work / f"paper-{chunks}x1000000"
    generate(chunks * 1_000_000, 1_000_000, data)
    flags = ["--k", "50", "--utility-target", PAPER_UTILITY["target"]]
    runs = [run_once(data / "skald.yaml", work / "out-paper-utility", flags) for _ in range(rounds)]
    for r in runs:
        rest = r["process_cpu_s"] - r["utility_cpu_s"]
        r["utility_over_run"] = round(r["utility_cpu_s"] / rest, 3)
    return {
        "chunks": chunks,
        "runs": runs,
        "utility_cpu_s": _span([r["utility_cpu_s"] for r in runs]),
        "process_cpu_s": _span([r["process_cpu_s"] for r in runs]),
        "utility_over_run": _span([r["utility_over_run"] for r in runs]),
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--chunks", type=int, default=10, help="1M-row chunks of the paper's data")
    p.add_argument("--work", default="/tmp/skald-bench")
    p.add_argument("--skip-adult", action="store_true")
    args = p.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    report: dict = {}
    if ADULT.exists() and not args.skip_adult:
        report["adult"] = bench_adult(work, args.rounds)
        a = report["adult"]
        print(
            f"Adult, ARX's defaults: utility {a['utility_cpu_s']} CPU-s (<= 2), "
            f"whole process {a['process_cpu_s']} CPU-s",
            flush=True,
        )
    report["paper"] = bench_paper(work, args.chunks, args.rounds)
    b = report["paper"]
    print(
        f"paper data {args.chunks} x 1M rows, 30-class target: utility {b['utility_cpu_s']} "
        f"CPU-s, whole process {b['process_cpu_s']} CPU-s, utility / rest of the run "
        f"{b['utility_over_run']} (<= 0.3 at 125 chunks)",
        flush=True,
    )
    (work / f"bench_utility_{args.chunks}.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
