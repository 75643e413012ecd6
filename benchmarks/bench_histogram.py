"""The histogram pass against a bare read of the same QID columns, both root modes (issue 13,
item 4: <= 1.5x, also with 250k-row chunks).

    python benchmarks/bench_histogram.py [--rows 5000000] [--chunk-rows 250000] [--rounds 3]
        [--work /tmp/skald-hist]

On the paper's data (`skald generate --seed 1`, files of `--chunk-rows` rows): per round, one
after the other, `pyarrow.parquet.read_table(file, columns=QIDs)` over every file (the floor,
pyarrow's default threads) and phase 2 (`count_histogram`, two chunk threads) with the adaptive
root and with `memory.root: paper`. Prints each round's times and ratio, then the best of each.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml

from airflow_skald.core import pipeline
from airflow_skald.core.config import load_config
from airflow_skald.core.plan import plan_root


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=5_000_000)
    p.add_argument("--chunk-rows", type=int, default=250_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--work", default="/tmp/skald-hist")
    args = p.parse_args()
    data = Path(args.work) / f"paper-{args.rows}x{args.chunk_rows}"
    if not (data / "skald.yaml").exists():
        cmd = [sys.executable, "-m", "airflow_skald.cli", "generate", "--rows", str(args.rows)]
        cmd += ["--chunk-rows", str(args.chunk_rows), "--seed", "1", "--out", str(data)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    body = yaml.safe_load((data / "skald.yaml").read_text())
    runs = {}
    for mode in ("adaptive", "paper"):
        body["memory"] = {**(body.get("memory") or {}), "root": mode}
        path = data / f"skald-{mode}.yaml"
        path.write_text(yaml.safe_dump(body))
        config = load_config(str(path))
        chunks = pipeline.list_chunks(config)
        plan = plan_root(config, pipeline.scan_domain(config, chunks))
        runs[mode] = (config, plan, chunks)
    files = sorted(data.glob("*.parquet"))
    qids = runs["paper"][0].qid_names
    best: dict[str, float] = {}
    for r in range(args.rounds):
        t = time.perf_counter()
        for f in files:
            pq.read_table(f, columns=qids)
        times = {"read": time.perf_counter() - t}
        for mode, (config, plan, chunks) in runs.items():
            t = time.perf_counter()
            counts = pipeline.count_histogram(config, plan, chunks)
            times[mode] = time.perf_counter() - t
            node = counts.node
        for k, v in times.items():
            best[k] = min(best.get(k, v), v)
        print(
            f"round {r}: read {times['read']:.2f} s, adaptive {times['adaptive']:.2f} s "
            f"({times['adaptive'] / times['read']:.2f}x), paper {times['paper']:.2f} s "
            f"({times['paper'] / times['read']:.2f}x), paper root {node}"
        )
    print(
        f"best: read {best['read']:.2f} s; histogram pass / read: adaptive "
        f"{best['adaptive'] / best['read']:.2f}, paper {best['paper'] / best['read']:.2f} "
        "(target <= 1.5)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
