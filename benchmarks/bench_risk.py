"""What the risk-based models and the risk analysis cost (issue 21, "Speed").

    python benchmarks/bench_risk.py [--chunks 125] [--chunk-rows 1000000] [--repeats 2]
        [--work /tmp/skald-risk]

On the paper's synthetic dataset (`skald generate --seed 1`), runs `skald run` in a fresh
process for
- a: k = 50 (suppression 0.01, the generated config's);
- b: k = 50 + average risk 0.02;
- c: k = 50 + k-map (k = 50, sampling fraction 0.1, Poisson);
- d: k = 5 + average risk 0.1 (suppression 0.05): the model suppresses a prefix of classes
  that ends inside a run of one size, so the run makes the extra pass for their first rows;
  its ratio is to d0, k = 5 alone (suppression 0.05);
alternating within each round (the order rotates) so that drift in the load of this shared
machine hits them alike, each ratio to (a) taken within a round. Then `skald audit` of (a)'s
release (the risk analysis of the release as it is) against a bare pyarrow read of its QID
columns. Prints wall-time ranges and ratios (targets: b, c <= 1.3x a; audit <= 1.5x the read)
and writes `{work}/bench_risk-{chunks}x{chunk_rows}.json`.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from paper_data import generate

QIDS = ["blood_group", "profession", "age", "bmi", "pin_code"]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(cmd: list[str], cpu: list[float] | None = None) -> float:
    t, c = time.perf_counter(), _cpu()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if cpu is not None:
        cpu.append(round(_cpu() - c, 2))
    return time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--chunks", type=int, default=10)
    p.add_argument("--chunk-rows", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--work", default="/tmp/skald-risk")
    p.add_argument("--only", default="a,b,c,d,d0", help="configs to run (a always runs)")
    args = p.parse_args()
    work = Path(args.work)
    data = work / f"paper-{args.chunks}x{args.chunk_rows}"
    generate(args.chunks * args.chunk_rows, args.chunk_rows, data)
    base = yaml.safe_load((data / "skald.yaml").read_text())
    base["privacy"] = {"k": 50, "suppression_limit": 0.01}
    base["input"] = {**base["input"], "path": str(data)}  # configs are written outside it
    configs = {
        "a": base["privacy"],
        "b": {**base["privacy"], "average_risk": {"max": 0.02}},
        "c": {**base["privacy"], "k_map": {"k": 50, "sampling_fraction": 0.1}},
        "d": {"k": 5, "suppression_limit": 0.05, "average_risk": {"max": 0.1}},
        "d0": {"k": 5, "suppression_limit": 0.05},
    }
    keep = {"a", *args.only.split(",")}
    configs = {n: c for n, c in configs.items() if n in keep}
    baseline = {n: b for n, b in {"b": "a", "c": "a", "d": "d0"}.items() if {n, b} <= keep}
    paths = {}
    for name, privacy in configs.items():
        body = {**base, "privacy": privacy, "output": {**base["output"]}}
        body["output"]["path"] = str(work / f"out-{name}")
        paths[name] = work / f"{name}.yaml"
        paths[name].write_text(yaml.safe_dump(body))
    skald = [sys.executable, "-m", "airflow_skald.cli"]
    times: dict[str, list[float]] = {n: [] for n in configs}
    cpu: dict[str, list[float]] = {n: [] for n in configs}
    ratios: dict[str, list[float]] = {n: [] for n in baseline}
    names = list(configs)
    for r in range(args.repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        this = {
            n: _run([*skald, "run", str(paths[n]), "--overwrite", "--quiet"], cpu[n]) for n in order
        }
        for n, t in this.items():
            times[n].append(round(t, 2))
        for n in ratios:
            ratios[n].append(round(this[n] / this[baseline[n]], 3))
        print(f"round {r + 1}: {this}", flush=True)
    release = work / "out-a"
    parts = sorted(release.glob("part-*.parquet"))
    audit, read = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        for f in parts:
            pq.read_table(f, columns=QIDS)
        read.append(round(time.perf_counter() - t, 3))
        audit.append(round(_run([*skald, "audit", str(paths["a"]), "--input", str(release)]), 3))
    out = {
        "rows": args.chunks * args.chunk_rows,
        "chunks": args.chunks,
        "wall_s": times,
        "cpu_s": cpu,
        "ratio_to_baseline": ratios,
        "cpu_ratio_to_baseline": {
            n: [round(x / y, 3) for x, y in zip(cpu[n], cpu[b], strict=True)]
            for n, b in baseline.items()
        },
        "audit_s": audit,
        "qid_read_s": read,
        "audit_over_read": [round(a / b, 2) for a, b in zip(audit, read, strict=True)],
        "manifests": {
            n: {
                k: json.loads((work / f"out-{n}" / "manifest.json").read_text()).get(k)
                for k in ("node_paper", "dm_star", "n_suppressed")
            }
            for n in configs
        },
    }
    target = work / f"bench_risk-{args.chunks}x{args.chunk_rows}.json"
    target.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
